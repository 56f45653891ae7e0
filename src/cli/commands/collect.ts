import type { Command } from '../types';
import { FaultlineInputError } from '../../errors';

/** `500ms`, `10s`, `2m`, or a bare number of seconds → milliseconds. */
function duration(flag: string, v: unknown, fallbackMs: number): number {
  if (v === undefined) return fallbackMs;
  const m = typeof v === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(v) : undefined;
  if (!m) throw usage(`--${flag}: expected a duration such as 500ms, 10s or 2m, got ${JSON.stringify(v)}`);
  const n = Number(m[1]);
  return Math.round(m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000);
}

function usage(message: string): Error {
  return new FaultlineInputError('FAULTLINE_USAGE', message);
}

function portOf(flag: string, raw: unknown): number {
  const port = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535)
    throw usage(`--${flag}: expected a port number 0-65535, got ${JSON.stringify(raw)}`);
  return port;
}

function countOf(flag: string, raw: unknown, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw usage(`--${flag}: expected a positive whole number, got ${JSON.stringify(raw)}`);
  return n;
}

const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;

/** Why a request is refused for now: more spans of completed traces wait for diagnosis than `max`. */
function behind(online: import('../../traces/collect-diagnose').OnlineDiagnosis, max: number): string | undefined {
  const waiting = online.stats.waitingSpans;
  return waiting > max
    ? `diagnosis is behind (${waiting} spans of completed traces wait, more than --max-open-spans ${max}); retry later`
    : undefined;
}

/**
 * `faultline collect`: the embedded OTLP receiver writing JSON lines, until SIGINT/SIGTERM; with `--diagnose`, traces
 * are assembled as their spans arrive and diagnosed once complete (see src/traces/assemble.ts, docs/collect.md).
 */
export const command: Command = {
  name: 'collect',
  summary:
    'Receive OTLP traces (HTTP: JSON or protobuf; gRPC), write them as JSON lines, and diagnose them as they complete',
  usage:
    'faultline collect [--port 4318] [--grpc-port 4317] [--host 127.0.0.1] [--out traces.jsonl] [--diagnose [--diagnoses FILE] [--trace-idle 30s] [--state FILE] [--metrics]]',
  options: [
    { name: 'port', short: 'p', value: 'PORT', description: 'OTLP/HTTP port (0 picks a free one)', default: 4318 },
    {
      name: 'grpc-port',
      value: 'PORT',
      description: 'also receive OTLP/gRPC on this port (what the OTel Collector loadbalancing exporter sends)',
    },
    { name: 'host', value: 'HOST', description: 'address to listen on', default: '127.0.0.1' },
    {
      name: 'out',
      short: 'o',
      value: 'FILE',
      description: 'JSON-lines file the traces are appended to',
      default: 'traces.jsonl',
    },
    { name: 'diagnose', description: 'assemble traces as their spans arrive and diagnose each once it is complete' },
    {
      name: 'diagnoses',
      value: 'FILE',
      description: 'JSON-lines file the diagnoses are appended to (default: diagnoses.jsonl)',
    },
    {
      name: 'trace-idle',
      value: 'DURATION',
      description:
        "a trace is complete when no span of it arrived for this long, like tail sampling's decision_wait (default: 30s)",
    },
    {
      name: 'max-open-spans',
      value: 'N',
      description:
        'spans held in open traces (past it the longest-idle traces are diagnosed early) and waiting for diagnosis (past it requests are refused with 503, which exporters retry) (default: 200000)',
    },
    {
      name: 'state',
      value: 'FILE',
      description: 'on SIGTERM save the open traces here, and take them back at start (graceful restarts)',
    },
    {
      name: 'metrics',
      description:
        'export the faultline.diagnoses counter (per fault type) over OTLP/HTTP (OTEL_EXPORTER_OTLP_* variables)',
    },
    {
      name: 'read-timeout',
      value: 'DURATION',
      description: 'close a connection that sends nothing for this long',
      default: '10s',
    },
    {
      name: 'drain-timeout',
      value: 'DURATION',
      description: 'on SIGTERM, how long requests in flight may take to finish',
      default: '10s',
    },
  ],
  details: [
    'Point any OTLP exporter at it, e.g.',
    '  faultline collect --out run.jsonl &',
    '  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 node --import faultline/register app.js',
    '  faultline diagnose run.jsonl',
    'Online, behind an OTel Collector routing by trace id to several instances (docs/collect.md):',
    '  faultline collect --host 0.0.0.0 --grpc-port 4317 --diagnose --state /var/lib/faultline/state.jsonl --metrics',
    'Stop it with Ctrl-C (SIGINT) or SIGTERM: it stops accepting, lets requests in flight finish (--drain-timeout),',
    'flushes the files; with --diagnose it saves the open traces to --state, or without one diagnoses them as they are.',
  ].join('\n'),
  async run({ options }) {
    const { resolve } = await import('node:path');
    const { rm } = await import('node:fs/promises');
    const { startCollector } = await import('../../traces/collect.js');
    const port = portOf('port', options.port ?? 4318);
    const grpcPort = options['grpc-port'] === undefined ? undefined : portOf('grpc-port', options['grpc-port']);
    const host = typeof options.host === 'string' ? options.host : '127.0.0.1';
    const out = resolve(typeof options.out === 'string' ? options.out : 'traces.jsonl');
    const diagnose = options.diagnose === true;
    for (const flag of ['diagnoses', 'trace-idle', 'max-open-spans', 'state', 'metrics']) {
      if (!diagnose && options[flag] !== undefined) throw usage(`--${flag} needs --diagnose`);
    }
    const readTimeoutMs = duration('read-timeout', options['read-timeout'], 10_000);
    const drainTimeoutMs = duration('drain-timeout', options['drain-timeout'], 10_000);
    const idleMs = duration('trace-idle', options['trace-idle'], 30_000);
    const maxSpans = countOf('max-open-spans', options['max-open-spans'], 200_000);
    const statePath = typeof options.state === 'string' ? resolve(options.state) : undefined;
    const diagnosesPath = resolve(typeof options.diagnoses === 'string' ? options.diagnoses : 'diagnoses.jsonl');

    let online: import('../../traces/collect-diagnose').OnlineDiagnosis | undefined;
    let assembler: import('../../traces/assemble').TraceAssembler | undefined;
    if (diagnose) {
      const { startOnlineDiagnosis } = await import('../../traces/collect-diagnose.js');
      const { TraceAssembler } = await import('../../traces/assemble.js');
      const diagnosis = await startOnlineDiagnosis({ out: diagnosesPath, metrics: options.metrics === true });
      online = diagnosis;
      assembler = new TraceAssembler({ idleMs, maxSpans, onTrace: (trace) => diagnosis.diagnose(trace) });
    }
    // The state of the last run comes back before anything is received (and its file goes once this run listens).
    let restored = '';
    if (assembler !== undefined && statePath !== undefined) {
      const back = await assembler.load(statePath).catch(async (err: unknown) => {
        await online?.close();
        throw usage(`--state: ${(err as Error).message}`);
      });
      if (back.traces > 0)
        restored = `faultline collect: took back ${plural(back.traces, 'open trace')} (${plural(back.spans, 'span')}) from ${statePath}\n`;
    }
    const collector = await startCollector({
      port,
      host,
      out,
      readTimeoutMs,
      drainTimeoutMs,
      ...(grpcPort !== undefined ? { grpcPort } : {}),
      ...(assembler !== undefined
        ? { onSpans: (spans: import('../../traces/model').SpanRecord[]) => assembler.add(spans) }
        : {}),
      // While more spans wait for diagnosis than the assembler may hold open, new requests wait for their exporters'
      // retry: memory stays bounded however fast the traces come, and nothing answered 200 is lost.
      ...(online !== undefined ? { backpressure: () => behind(online, maxSpans) } : {}),
    }).catch(async (err: unknown) => {
      await online?.close();
      throw err;
    });
    if (statePath !== undefined) await rm(statePath, { force: true });
    assembler?.start();
    process.stdout.write(
      `faultline collect: receiving OTLP/HTTP traces (JSON or protobuf, gzip) on ${collector.tracesUrl}\n` +
        (collector.grpcUrl !== undefined
          ? `faultline collect: receiving OTLP/gRPC traces on ${collector.grpcUrl}\n`
          : '') +
        `faultline collect: appending JSON lines to ${out}\n` +
        (diagnose
          ? `faultline collect: diagnosing traces ${idleMs} ms after their last span, appending diagnoses to ${diagnosesPath}\n`
          : '') +
        restored +
        `faultline collect: exporters: OTEL_EXPORTER_OTLP_ENDPOINT=${collector.url}; stop with Ctrl-C\n`,
    );
    const signal = await new Promise<NodeJS.Signals>((done) => {
      const onInt = (): void => stop('SIGINT');
      const onTerm = (): void => stop('SIGTERM');
      const stop = (sig: NodeJS.Signals): void => {
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
        done(sig);
      };
      process.on('SIGINT', onInt);
      process.on('SIGTERM', onTerm);
    });
    // Drain: no new requests; those in flight finish (or are cut at the deadline); every accepted span is on disk.
    await collector.close();
    let held = '';
    if (assembler !== undefined) {
      assembler.stop();
      const open = assembler.stats.openTraces;
      if (statePath !== undefined) {
        await assembler.save(statePath);
        held = `, ${plural(open, 'open trace')} saved to ${statePath}`;
      } else {
        assembler.drain();
        held = open > 0 ? `, ${plural(open, 'open trace')} diagnosed as they were` : '';
      }
    }
    await online?.close();
    const { requests, spans, rejected, busy, cut } = collector.stats;
    const extra = [
      rejected > 0 ? `${rejected} rejected` : '',
      busy > 0 ? `${busy} refused while busy` : '',
      cut > 0 ? `${cut} cut` : '',
    ]
      .filter(Boolean)
      .join(', ');
    process.stdout.write(
      `faultline collect: ${signal}: stopped after ${plural(requests, 'request')}, ${plural(spans, 'span')} written to ${out}${extra ? `, ${extra}` : ''}\n` +
        (online !== undefined
          ? `faultline collect: ${plural(online.stats.diagnosed, 'trace')} diagnosed (${online.stats.faulty} faulty) to ${diagnosesPath}${held}${assembler!.stats.late > 0 ? `; ${plural(assembler!.stats.late, 'late span')} of traces already diagnosed` : ''}\n`
          : ''),
    );
    return 0;
  },
};
