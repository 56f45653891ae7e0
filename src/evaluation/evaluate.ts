/**
 * Evaluation over labelled traces: for each trace, read the truth from the ORIGINAL trace, strip it, and let every
 * diagnoser diagnose the stripped copy. Streams: only the per-trace rows are kept, never the traces.
 */
import { groundTruth, type GroundTruth } from '../diagnosers/ground-truth';
import { stripGroundTruth } from '../diagnosers/strip-ground-truth';
import type { Diagnoser, Diagnosis } from '../diagnosers/types';
import { mapOrdered } from '../diagnosers/index';
import { ShapeMemory, traceDocuments, type TraceDocument } from '../diagnosers/shape-memory';
import type { TraceRecord } from '../traces/model';
import { accuracy, falsePositives, type Accuracy, type EvalRow, type FalsePositives } from './accuracy';
import { confusion, type ConfusionMatrix } from './confusion';
import { kappaBetween, type KappaPair } from './kappa';

export interface DiagnoserScore {
  diagnoser: string;
  accuracy: Accuracy;
  falsePositives: FalsePositives;
  confusion: ConfusionMatrix;
  /** Diagnosis throughput of this diagnoser alone. */
  spansPerSecond: number;
  msPerTrace: number;
}

export interface EvalReport {
  traces: number;
  faulty: number;
  clean: number;
  /** Planned faults that never fired: excluded from accuracy, as AgentChaos does. */
  untriggered: number;
  spans: number;
  diagnosers: DiagnoserScore[];
  kappa: KappaPair[];
  rows: EvalRow[];
  /** Traces a diagnoser could not diagnose (scored as wrong, never as `none`). */
  failures: EvalFailure[];
}

export interface EvalFailure {
  traceId: string;
  diagnoser: string;
  error: string;
}

export interface EvaluateOptions {
  onTrace?: (done: number, truth: GroundTruth) => void;
  /** Traces evaluated at once (LLM diagnosers wait on the network). Default 1. */
  concurrency?: number;
}

export async function evaluate(
  traces: AsyncIterable<TraceRecord> | Iterable<TraceRecord>,
  diagnosers: readonly Diagnoser[],
  options: EvaluateOptions = {},
): Promise<EvalReport> {
  const rows: EvalRow[] = [];
  const time = new Map<string, number>(diagnosers.map((d) => [d.name, 0]));
  let spans = 0;
  const failures: EvalFailure[] = [];
  const one = async (trace: TraceRecord): Promise<{ row: EvalRow; documents: TraceDocument[] }> => {
    const truth = groundTruth(trace);
    const predictions: EvalRow['predictions'] = {};
    let documents: TraceDocument[] = [];
    if (truth.status !== 'untriggered') {
      const stripped = stripGroundTruth(trace);
      spans += trace.spans.length;
      for (const d of diagnosers) {
        const t0 = performance.now();
        try {
          predictions[d.name] = await d.diagnose(stripped);
        } catch (err) {
          // No prediction: accuracy counts it wrong; it is not a `none`.
          failures.push({
            traceId: trace.traceId,
            diagnoser: d.name,
            error: err instanceof Error ? err.message : String(err),
          });
        }
        time.set(d.name, time.get(d.name)! + performance.now() - t0);
      }
      documents = traceDocuments(stripped);
    }
    return { row: { truth, predictions }, documents };
  };
  // Each diagnosis judged against the other traces, as `faultline diagnose` does (diagnosers/shape-memory.ts).
  const memories = new Map(diagnosers.map((d) => [d.name, new ShapeMemory<Diagnosis, EvalRow>()]));
  const settle = (name: string, released: Array<{ result: Diagnosis; tag: EvalRow }>): void => {
    for (const { result, tag } of released) tag.predictions[name] = result;
  };
  for await (const { result } of mapOrdered(traces, options.concurrency ?? 1, one)) {
    const { row, documents } = result;
    for (const [name, p] of Object.entries(row.predictions))
      if (p !== undefined) settle(name, memories.get(name)!.add(p, documents, row));
    rows.push(row);
    options.onTrace?.(rows.length, row.truth);
  }
  for (const [name, memory] of memories) settle(name, memory.end());
  return {
    ...summarize(
      rows,
      diagnosers.map((d) => d.name),
      spans,
      time,
    ),
    failures,
  };
}

export function summarize(
  rows: EvalRow[],
  names: readonly string[],
  spans = 0,
  time = new Map<string, number>(),
): Omit<EvalReport, 'failures'> {
  const scored = rows.filter((r) => r.truth.status !== 'untriggered').length;
  const scores: DiagnoserScore[] = names.map((name) => {
    const ms = time.get(name) ?? 0;
    return {
      diagnoser: name,
      accuracy: accuracy(rows, name),
      falsePositives: falsePositives(rows, name),
      confusion: confusion(rows, name),
      spansPerSecond: ms > 0 ? Math.round((spans / ms) * 1000) : 0,
      msPerTrace: scored > 0 ? Math.round((ms / scored) * 1000) / 1000 : 0,
    };
  });
  const kappa: KappaPair[] = [];
  for (let i = 0; i < names.length; i++)
    for (let j = i + 1; j < names.length; j++) kappa.push(kappaBetween(rows, names[i]!, names[j]!));
  return {
    traces: rows.length,
    faulty: rows.filter((r) => r.truth.status === 'faulty').length,
    clean: rows.filter((r) => r.truth.status === 'clean').length,
    untriggered: rows.filter((r) => r.truth.status === 'untriggered').length,
    spans,
    diagnosers: scores,
    kappa,
    rows,
  };
}
