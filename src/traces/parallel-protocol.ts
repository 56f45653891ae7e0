/**
 * What the trace coordinator (parallel.ts) and its workers (parallel-worker.ts) say to each other, and the two
 * things both sides do: load the task, and carry a reader's problem across the thread boundary as the same error.
 */
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { JsonSyntaxError } from './json-stream';
import type { TraceRecord } from './model';
import { TraceDataError } from './normalize';
import { UnknownShapeError } from './readers/document';

/**
 * The per-trace work, named so a worker can load it: `import(module)[name](options)` returns the function applied
 * to every trace (its result must be structured-cloneable). Both threads load it the same way.
 */
export interface TraceTask {
  /** Absolute path (or resolvable id) of the module. */
  module: string;
  /** The export that builds the function. */
  name: string;
  /** Passed to the export (structured-cloneable). */
  options?: unknown;
}

export type TraceFn<R> = (trace: TraceRecord) => R | Promise<R>;

export async function loadTask<R>(task: TraceTask): Promise<TraceFn<R>> {
  // import(), not require(): the same call loads compiled CommonJS in a worker and TypeScript sources under a loader.
  const ns = (await import(isAbsolute(task.module) ? pathToFileURL(task.module).href : task.module)) as Record<
    string,
    unknown
  >;
  const make = ns[task.name] ?? (ns.default as Record<string, unknown> | undefined)?.[task.name];
  if (typeof make !== 'function')
    throw new Error(`trace task: ${task.module} has no function export ${JSON.stringify(task.name)}`);
  const fn: unknown = await (make as (o: unknown) => unknown)(task.options);
  if (typeof fn !== 'function')
    throw new Error(`trace task: ${task.name}() of ${task.module} did not return a function`);
  return fn as TraceFn<R>;
}

export interface WorkerSetup {
  task: TraceTask;
  idleSpans: number;
  maxLineBytes: number;
}

/** A chunk of a block of whole lines (the last chunk of a block is `final`); the bytes are transferred. */
export interface ChunkMessage {
  t: 'chunk';
  block: number;
  bytes: ArrayBuffer;
  offset: number;
  length: number;
  final: boolean;
  /** The block is the first of its file (a byte-order mark may lead its first line). */
  startsFile: boolean;
}

/**
 * Decisions on pieces, four numbers each: block, piece index, output slot, part (0: the piece is a whole trace, run
 * the task; k > 0: it is part k of a trace, send its spans).
 */
export interface RunMessage {
  t: 'run';
  items: number[];
}

export type ToWorker = ChunkMessage | RunMessage;

export interface SerializedProblem {
  kind: 'syntax' | 'data' | 'shape' | 'other';
  message: string;
  problem?: string;
  path?: string;
  line?: number;
  column?: number;
  jsonPath?: string;
}

/** The pieces of a block (traces or parts of traces), in order of their last span; positions are 1-based in the block. */
export interface SummaryMessage {
  t: 'summary';
  block: number;
  spans: number;
  lines: number;
  problems: { line: number; error: SerializedProblem }[];
  ids: string[];
  firsts: number[];
  lasts: number[];
}

export interface ResultsMessage {
  t: 'results';
  results: [slot: number, result: unknown][];
  parts: [slot: number, part: number, spans: TraceRecord['spans']][];
}

export interface ErrorMessage {
  t: 'error';
  message: string;
  stack: string | undefined;
}

export type FromWorker = SummaryMessage | ResultsMessage | ErrorMessage;

export function serializeProblem(err: unknown): SerializedProblem {
  if (err instanceof JsonSyntaxError)
    return {
      kind: 'syntax',
      message: err.message,
      problem: err.problem,
      line: err.line,
      column: err.column,
      jsonPath: err.jsonPath,
    };
  if (err instanceof TraceDataError)
    return { kind: 'data', message: err.message, problem: err.problem, path: err.path };
  if (err instanceof UnknownShapeError) return { kind: 'shape', message: err.message };
  return { kind: 'other', message: err instanceof Error ? err.message : String(err) };
}

/** The error a reader raised in a worker, as the same class here (`line` made absolute by the caller). */
export function deserializeProblem(p: SerializedProblem, line: number): Error {
  switch (p.kind) {
    case 'syntax':
      return new JsonSyntaxError(p.problem ?? p.message, line, p.column ?? 0, p.jsonPath ?? '');
    case 'data':
      return new TraceDataError(p.path ?? '', p.problem ?? p.message);
    case 'shape':
      return new UnknownShapeError(p.message);
    default:
      return new Error(p.message);
  }
}
