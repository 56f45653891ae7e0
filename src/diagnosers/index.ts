/**
 * Diagnosers over one trace, and the diagnose path: ground truth is stripped BEFORE any diagnoser sees a trace.
 */
import type { TraceRecord } from '../traces/model';
import { FaultlineInputError } from '../errors';
import type { HybridDiagnoserOptions } from './hybrid';
import type { LlmDiagnoserOptions } from './llm';
import { createRuleDiagnoser, type RuleDiagnoserOptions } from './rules';
import { stripGroundTruth } from './strip-ground-truth';
import {
  DIAGNOSER_NAMES,
  DiagnoserError,
  type Diagnoser,
  type DiagnoserName,
  type Diagnosis,
  type DiagnosisFailure,
  type DiagnosisOutcome,
} from './types';
import { defaultFindings } from './offline-detectors';
import { inInputOrder, traceDocuments, type TraceDocument } from './shape-memory';

export type {
  Diagnoser,
  DiagnoserName,
  Diagnosis,
  DiagnosisFailure,
  DiagnosisOutcome,
  RecoveredFault,
  StepKind,
} from './types';
export { DIAGNOSER_NAMES, DiagnoserError } from './types';
export { stripGroundTruth, hasGroundTruth } from './strip-ground-truth';
export {
  createRuleDiagnoser,
  diagnoseByRules,
  type RuleDiagnoserOptions,
  type Signal,
  type SpanFindings,
} from './rules';
export type { LlmDiagnoserOptions } from './llm';
export type { HybridDiagnoserOptions } from './hybrid';
export { renderTrace } from './render';

export interface DiagnoserOptions extends RuleDiagnoserOptions {
  llm?: LlmDiagnoserOptions;
}

export function isDiagnoserName(v: string): v is DiagnoserName {
  return (DIAGNOSER_NAMES as readonly string[]).includes(v);
}

// The LLM and hybrid diagnosers (zod, the answer schema, the HTTP client) are loaded on first use: the rule path, in
// every worker thread of a big diagnose run, never pays for them.

/** The LLM diagnoser (see ./llm). */
export function createLlmDiagnoser(options: LlmDiagnoserOptions = {}): Diagnoser {
  return (require('./llm') as typeof import('./llm')).createLlmDiagnoser(options);
}

/** The hybrid diagnoser: rules first, the LLM where they are unsure (see ./hybrid). */
export function createHybridDiagnoser(options: HybridDiagnoserOptions = {}): Diagnoser {
  return (require('./hybrid') as typeof import('./hybrid')).createHybridDiagnoser(options);
}

/** Build a diagnoser by name. The offline detectors are wired in unless `findings` is given. */
export function createDiagnoser(name: string, options: DiagnoserOptions = {}): Diagnoser {
  const withFindings: RuleDiagnoserOptions = { ...options, findings: options.findings ?? defaultFindings() };
  switch (name) {
    case 'rule':
      return createRuleDiagnoser(withFindings);
    case 'llm':
      return createLlmDiagnoser({ ...withFindings, ...options.llm });
    case 'hybrid':
      return createHybridDiagnoser({
        ...withFindings,
        ...(options.llm ? { llm: options.llm } : {}),
      } as HybridDiagnoserOptions);
    default:
      throw new FaultlineInputError(
        'FAULTLINE_USAGE',
        `unknown diagnoser ${JSON.stringify(name)}: expected one of ${DIAGNOSER_NAMES.join(', ')}`,
      );
  }
}

/** The diagnose path: strip the ground truth, then diagnose. */
export async function diagnoseTrace(diagnoser: Diagnoser, trace: TraceRecord): Promise<Diagnosis> {
  return diagnoser.diagnose(stripGroundTruth(trace));
}

/**
 * diagnoseTrace, with the trace's documents that the judgement across traces reads (shape-memory.ts; none for the
 * LLM diagnoser, or when reading them failed: the diagnosis stands without that judgement).
 */
export async function diagnoseWithDocuments(
  diagnoser: Diagnoser,
  trace: TraceRecord,
): Promise<{ diagnosis: Diagnosis; documents: TraceDocument[] }> {
  const stripped = stripGroundTruth(trace);
  const diagnosis = await diagnoser.diagnose(stripped);
  return { diagnosis, documents: traceDocuments(stripped, diagnoser.name) };
}

/**
 * `fn` over a stream with up to `concurrency` calls in flight (an LLM diagnoser waits on the network), yielding
 * results in input order. Reading stays bounded: at most `concurrency` items are held.
 */
export async function* mapOrdered<T, R>(
  items: AsyncIterable<T> | Iterable<T>,
  concurrency: number,
  fn: (item: T) => Promise<R>,
): AsyncGenerator<{ item: T; result: R }> {
  const window: Promise<{ item: T; result: R }>[] = [];
  const limit = Math.max(1, Math.floor(concurrency));
  for await (const item of items) {
    window.push(fn(item).then((result) => ({ item, result })));
    if (window.length >= limit) yield await window.shift()!;
  }
  while (window.length > 0) yield await window.shift()!;
}

/**
 * Diagnose every trace of a stream (ground truth stripped first), in order, one outcome per trace: a diagnosis, or
 * the failure of a trace the diagnoser could not diagnose (the other traces go on). Each diagnosis is judged against
 * the traces before it in the stream (shape-memory.ts), as `faultline diagnose` judges a file's traces.
 */
export async function* diagnoseEach(
  diagnoser: Diagnoser,
  traces: AsyncIterable<TraceRecord> | Iterable<TraceRecord>,
  options: { concurrency?: number } = {},
): AsyncGenerator<DiagnosisOutcome> {
  const settle = (t: TraceRecord): Promise<DiagnosisOutcome & { documents: TraceDocument[] }> =>
    diagnoseWithDocuments(diagnoser, t).then(
      ({ diagnosis, documents }) => ({ ok: true as const, diagnosis, documents }),
      (err: unknown) => {
        if (!(err instanceof DiagnoserError) && err instanceof FaultlineInputError) throw err; // a usage error is not per trace
        return {
          ok: false as const,
          failure: {
            traceId: t.traceId,
            diagnoser: diagnoser.name,
            error: err instanceof Error ? err.message : String(err),
          },
          documents: [],
        };
      },
    );
  const judged = inInputOrder(mapOrdered(traces, options.concurrency ?? 1, settle), ({ result }) => ({
    result: result.ok ? (result.diagnosis as Diagnosis | DiagnosisFailure) : result.failure,
    documents: result.documents,
    tag: undefined,
  }));
  for await (const { result } of judged)
    yield 'error' in result ? { ok: false, failure: result } : { ok: true, diagnosis: result };
}

/** Diagnose every trace of a stream (ground truth stripped first), in order, as diagnoseEach judges them. Rejects with
 * the first DiagnoserError. */
export async function* diagnoseAll(
  diagnoser: Diagnoser,
  traces: AsyncIterable<TraceRecord> | Iterable<TraceRecord>,
  options: { concurrency?: number } = {},
): AsyncGenerator<Diagnosis> {
  const diagnosed = mapOrdered(traces, options.concurrency ?? 1, (t) => diagnoseWithDocuments(diagnoser, t));
  for await (const { result } of inInputOrder(diagnosed, ({ result: r }) => ({
    result: r.diagnosis,
    documents: r.documents,
    tag: undefined,
  })))
    yield result;
}
