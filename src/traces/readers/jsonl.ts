/**
 * JSON lines: one JSON document per line — the OTel Collector file exporter (`format: json`, one OTLP TracesData per
 * line), faultline's collector and file output, and lines of Jaeger or Tempo documents or of normalised span
 * records. Lines are parsed one at a time, so memory holds one line; a trace's spans may be spread over many lines
 * (readTraces groups them). A bad line is reported with its line number and the following lines are still read.
 */
import type { Readable } from 'node:stream';
import type { SpanRecord } from '../model';
import { spansOfDocument } from './document';

export const format = 'jsonl' as const;

/** The head is JSON lines if its first line is a complete JSON object and another line follows. */
export function sniff(headText: string): boolean {
  const text = headText.replace(/^\uFEFF/, '');
  const nl = text.indexOf('\n');
  if (nl < 0) return false;
  const first = text.slice(0, nl).trim();
  if (!first.startsWith('{')) return false;
  try {
    JSON.parse(first);
  } catch {
    return false;
  }
  const rest = text.slice(nl + 1).trimStart();
  return rest === '' || rest.startsWith('{');
}

export interface LineProblem {
  line: number;
  error: unknown;
}

/** A line that failed, thrown when there is no `onLineError` handler. */
export class JsonLineError extends Error {
  constructor(
    readonly line: number,
    readonly error: unknown,
  ) {
    super(`line ${line}: ${error instanceof Error ? error.message : String(error)}`);
    this.name = 'JsonLineError';
  }
}

/**
 * Spans of every line, in batches (one per chunk read: async iteration per span would cost more than parsing it).
 * A line that fails (bad JSON, unknown shape, bad value) is passed to `onLineError` and skipped; without a handler
 * the error is thrown, after the spans of the lines before it were yielded.
 */
export async function* readJsonLines(stream: Readable, onLineError?: (p: LineProblem) => void): AsyncGenerator<SpanRecord[]> {
  let lineNo = 0;
  let batch: SpanRecord[] = [];
  const handle = (line: string): void => {
    lineNo++;
    const t = lineNo === 1 ? line.replace(/^\uFEFF/, '') : line;
    if (!/\S/.test(t)) return;
    const before = batch.length;
    try {
      for (const span of spansOfDocument(JSON.parse(t))) batch.push(span);
    } catch (error) {
      batch.length = before; // a line counts whole or not at all
      if (onLineError === undefined) throw new JsonLineError(lineNo, error);
      onLineError({ line: lineNo, error });
    }
  };
  const take = (): SpanRecord[] => {
    const b = batch;
    batch = [];
    return b;
  };
  // Text of the line in progress (a line may span many chunks). The stream decodes UTF-8 itself, so a multi-byte
  // character split between chunks is never broken.
  stream.setEncoding('utf8');
  let pending = '';
  for await (const chunk of stream) {
    const c = chunk as string;
    const last = c.lastIndexOf('\n');
    if (last < 0) {
      pending += c;
      continue;
    }
    const text = pending + c.slice(0, last);
    pending = c.slice(last + 1);
    let from = 0;
    try {
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', from)) {
        handle(text.slice(from, nl));
        from = nl + 1;
      }
      handle(text.slice(from));
    } catch (err) {
      if (batch.length > 0) yield take();
      throw err;
    }
    if (batch.length > 0) yield take();
  }
  if (pending !== '') {
    try {
      handle(pending);
    } catch (err) {
      if (batch.length > 0) yield take();
      throw err;
    }
    if (batch.length > 0) yield take();
  }
}
