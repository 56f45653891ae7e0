/**
 * `faultline collect --diagnose`: the traces the assembler completes are diagnosed here, one at a time in completion
 * order (ground truth stripped first, as in `faultline diagnose`), and each diagnosis is written as a JSON line (the
 * shape `faultline diagnose --format jsonl` prints) and, when asked, counted in an OTLP metric:
 * `faultline.diagnoses` (a counter, unit `{trace}`) with attributes `faultline.diagnosis.fault_type` (`none` for a
 * clean trace) and `faultline.diagnosis.diagnoser`, exported over OTLP/HTTP as the OTEL_EXPORTER_OTLP_* variables
 * say, every OTEL_METRIC_EXPORT_INTERVAL ms (default 60 s) and once more at shutdown.
 *
 * A diagnosis does not wait for the line before it to reach the disk (the file stream queues the lines; `close()`
 * waits for them all). What is handed in faster than it is diagnosed waits here: `stats.waitingSpans` tells how much,
 * so that the collector can refuse new requests while it is behind (collect.ts `backpressure`).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { FaultlineInputError } from '../errors';
import { logger } from '../diag';
import { metricExportIntervalFromEnv, processEnv } from '../env';
import { createDiagnoser, diagnoseWithDocuments } from '../diagnosers/index';
import { ShapeMemory } from '../diagnosers/shape-memory';
import type { Diagnosis } from '../diagnosers/types';
import { diagnosisLine } from '../report/diagnoses';
import type { TraceRecord } from './model';

const log = logger('collect');

export interface OnlineDiagnosisOptions {
  /** JSON-lines file the diagnoses are appended to. */
  out: string;
  /** Default `rule`. */
  diagnoser?: string;
  /** Export the per-fault-type counter over OTLP/HTTP. */
  metrics?: boolean;
  /** Resource attributes of the metrics (service.instance.id defaults to a random id per process). */
  resource?: Record<string, string>;
}

export interface OnlineDiagnosisStats {
  diagnosed: number;
  faulty: number;
  /** Spans of the traces handed in and not diagnosed yet. */
  waitingSpans: number;
  /** Per fault type, `none` included. */
  byFault: Record<string, number>;
}

export interface OnlineDiagnosis {
  /** A completed trace: diagnosed after the ones before it. */
  diagnose(trace: TraceRecord): void;
  stats: OnlineDiagnosisStats;
  /** Every trace handed in is diagnosed and written, the metrics flushed, the file closed. */
  close(): Promise<void>;
}

interface Counter {
  add(n: number, attributes: Record<string, string>): void;
}

async function metricsCounter(
  resourceAttrs: Record<string, string>,
): Promise<{ counter: Counter; shutdown(): Promise<void> }> {
  const { MeterProvider, PeriodicExportingMetricReader } = await import('@opentelemetry/sdk-metrics');
  const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-http');
  const { defaultResource, detectResources, envDetector, resourceFromAttributes } =
    await import('@opentelemetry/resources');
  const resource = defaultResource()
    .merge(
      resourceFromAttributes({
        'service.name': 'faultline-collect',
        'service.instance.id': randomUUID(),
        ...resourceAttrs,
      }),
    )
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter(),
        exportIntervalMillis: metricExportIntervalFromEnv(processEnv()),
      }),
    ],
  });
  const counter = provider.getMeter('faultline').createCounter('faultline.diagnoses', {
    description: 'Traces diagnosed by faultline collect, by the fault type diagnosed (none for a clean trace)',
    unit: '{trace}',
  });
  return { counter, shutdown: () => provider.shutdown() };
}

export async function startOnlineDiagnosis(options: OnlineDiagnosisOptions): Promise<OnlineDiagnosis> {
  const diagnoser = createDiagnoser(options.diagnoser ?? 'rule');
  const stream: WriteStream = createWriteStream(options.out, { flags: 'a' });
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  }).catch((err: NodeJS.ErrnoException) => {
    throw new FaultlineInputError('FAULTLINE_USAGE', `cannot write ${options.out}: ${err.code ?? err.message}`, {
      cause: err,
    });
  });
  const metrics = options.metrics ? await metricsCounter(options.resource ?? {}) : undefined;
  const stats: OnlineDiagnosisStats = { diagnosed: 0, faulty: 0, waitingSpans: 0, byFault: {} };
  let writeError: Error | undefined;
  stream.on('error', (err) => {
    writeError ??= err;
    log.error(`collect: could not write ${options.out}:`, err);
  });
  let queue = Promise.resolve();
  // Traces are diagnosed one after another, live: each is judged at once against those before it (shape-memory.ts).
  const memory = new ShapeMemory<Diagnosis>(0);
  let closed: Promise<void> | undefined;
  const record = async (d: Diagnosis): Promise<void> => {
    stats.diagnosed++;
    if (d.faultType !== 'none') stats.faulty++;
    stats.byFault[d.faultType] = (stats.byFault[d.faultType] ?? 0) + 1;
    metrics?.counter.add(1, {
      'faultline.diagnosis.fault_type': d.faultType,
      'faultline.diagnosis.diagnoser': d.diagnoser,
    });
    // Queued, not awaited: only a full stream buffer holds the next diagnosis back.
    if (!stream.write(`${diagnosisLine(d)}\n`) && writeError === undefined) await drained(stream);
  };
  return {
    stats,
    diagnose(trace) {
      const spans = trace.spans.length;
      stats.waitingSpans += spans;
      queue = queue
        .then(() => diagnoseWithDocuments(diagnoser, trace))
        .then(async ({ diagnosis, documents }) => {
          for (const o of memory.add(diagnosis, documents, undefined)) await record(o.result);
        })
        .catch((err: unknown) => log.error(`collect: could not diagnose trace ${trace.traceId}:`, err))
        .finally(() => {
          stats.waitingSpans -= spans;
        });
    },
    close() {
      closed ??= (async () => {
        await queue;
        const ended = await new Promise<Error | undefined>((resolve) =>
          stream.end((err?: Error | null) => resolve(err ?? writeError)),
        );
        await metrics?.shutdown().catch((err: unknown) => log.error('collect: the final metrics export failed:', err));
        if (ended !== undefined) throw ended;
      })();
      return closed;
    },
  };
}

/** Until the stream can take more, or has failed (then no 'drain' comes). */
function drained(stream: WriteStream): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('error', done);
      resolve();
    };
    stream.once('drain', done);
    stream.once('error', done);
  });
}
