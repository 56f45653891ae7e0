/**
 * The diagnose path over trace files on worker threads (src/traces/parallel.ts): each worker loads `diagnosisTask`
 * by name, builds its own diagnoser once and diagnoses the traces it holds, ground truth stripped first as
 * `diagnoseTrace` does (in place: the reader made each trace for this task alone); a diagnoser that fails on a trace
 * gives a failure for that trace, not an error of the run. With `lines`, a diagnosis comes back as the JSON line
 * the CLI prints (made where it was diagnosed: one string crosses the thread boundary, not the object's tree).
 */
import type { FaultlineInputError } from '../errors';
import type { TraceRecord } from '../traces/model';
import { diagnosisLine } from '../report/diagnoses';
import { createDiagnoser } from './index';
import { inInputOrder, traceDocuments, type TraceDocument } from './shape-memory';
import { stripOwnGroundTruth } from './strip-ground-truth';
import type { Diagnosis, DiagnosisText } from './types';

export type { DiagnosisText } from './types';

export interface TaskOptions {
  diagnoser?: string;
  /** Spans of these instrumentation scopes are not part of the trace (faultline's own exported diagnoses). */
  withoutScopes?: string[];
  /** A diagnosis as its JSON line (report/diagnoses.ts diagnosisLine) and whether it names a fault. */
  lines?: boolean;
}

/** A trace that could not be diagnosed (the shape report/diagnoses.ts prints). */
export interface TraceFailure {
  traceId: string;
  diagnoser: string;
  error: string;
}

/** One trace's outcome, and its documents for the judgement across traces (shape-memory.ts, on the reading thread). */
export interface TaskResult {
  result: Diagnosis | DiagnosisText | TraceFailure;
  documents: TraceDocument[];
}

/** What a worker runs per trace: null when nothing of the trace is left once `withoutScopes` are dropped. */
export function diagnosisTask(options: TaskOptions = {}): (trace: TraceRecord) => Promise<TaskResult | null> {
  const name = options.diagnoser ?? 'rule';
  const diagnoser = createDiagnoser(name);
  const drop = new Set(options.withoutScopes ?? []);
  const lines = options.lines === true;
  return async (trace) => {
    const t =
      drop.size === 0 || !trace.spans.some((s) => drop.has(s.scope.name))
        ? trace
        : { traceId: trace.traceId, spans: trace.spans.filter((s) => !drop.has(s.scope.name)) };
    if (t.spans.length === 0) return null;
    let d: Diagnosis;
    let stripped: TraceRecord;
    try {
      stripped = stripOwnGroundTruth(t);
      d = await diagnoser.diagnose(stripped);
    } catch (err) {
      return {
        result: { traceId: t.traceId, diagnoser: name, error: err instanceof Error ? err.message : String(err) },
        documents: [],
      };
    }
    return {
      result: lines
        ? { traceId: d.traceId, line: diagnosisLine(d), faulty: d.faultType !== 'none', spanId: d.spanId }
        : d,
      documents: traceDocuments(stripped, name),
    };
  };
}

export interface DiagnoseFilesOptions extends TaskOptions {
  /** Worker threads (see mapTraces: default one per core for big JSON-lines input, else this thread). */
  workers?: number;
  /** Each problem reading the files (the run goes on). */
  onError(error: FaultlineInputError): void;
}

/**
 * Every trace of `files` diagnosed (in readTraces' order), on worker threads when the input is big enough, each judged
 * against the input's other traces (shape-memory.ts) here, in that order.
 */
export async function* diagnoseFiles(
  files: readonly string[],
  options: DiagnoseFilesOptions,
): AsyncGenerator<{ result: Diagnosis | DiagnosisText | TraceFailure }> {
  const { mapTraces } = await import('../traces/parallel.js');
  const task = {
    module: __filename,
    name: 'diagnosisTask',
    options: {
      diagnoser: options.diagnoser ?? 'rule',
      withoutScopes: options.withoutScopes ?? [],
      lines: options.lines === true,
    },
  };
  const run = mapTraces<TaskResult | null>(files, task, {
    onError: options.onError,
    ...(options.workers !== undefined ? { workers: options.workers } : {}),
  });
  async function* diagnosed(): AsyncGenerator<TaskResult> {
    for await (const r of run) if (r !== null) yield r;
  }
  for await (const { result } of inInputOrder(diagnosed(), (r) => ({ ...r, tag: undefined }))) yield { result };
}
