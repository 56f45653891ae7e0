/**
 * JSON lines: one JSON document per line — the OTel Collector file exporter (`format: json`, one OTLP TracesData per
 * line), faultline's collector and file output, and lines of Jaeger or Tempo documents or of normalised span
 * records. A trace's spans may be spread over many lines (readTraces groups them). A bad line is reported with its
 * line number and the following lines are still read.
 *
 * The fast path is one `JSON.parse` per line and no per-token work: lines are cut on the bytes and each is decoded
 * on its own, so an ASCII line stays a one-byte string whatever the rest of the file holds (a chunk decoded whole
 * becomes two-byte at its first non-ASCII character, which halves `JSON.parse`'s speed on every line in it). The
 * streaming tokenizer (json-stream.ts) runs only where a line needs it: a line longer than `maxLineBytes` is
 * streamed through it as it arrives (memory holds one span, not the line), and a line `JSON.parse` refuses is
 * re-read by it to say where (column and JSON path).
 */
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { SpanRecord } from '../model';
import { JsonStreamParser, JsonSyntaxError } from '../json-stream';
import { appendSpansOfDocument, spanStreamParser } from './document';

export const format = 'jsonl' as const;

/** Lines longer than this are streamed through the tokenizer instead of parsed whole (default 16 MiB). */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;

/**
 * JSON lines, by content: the file starts an object and the line after the first line break starts another
 * (`nextLineStart`, see source.ts). No object key starts with `{`, so a pretty-printed document never reads so,
 * whatever its indentation; and the first line need not fit the head nor be valid (a damaged first line is then
 * named like any other, and the lines after it are read).
 */
export function sniff(headText: string, nextLineStart: string): boolean {
  return (
    headText
      .replace(/^\uFEFF/, '')
      .trimStart()
      .startsWith('{') && nextLineStart === '{'
  );
}

export interface LineProblem {
  /** 1-based line number (counted from the first line this parser was given). */
  line: number;
  /** A JsonSyntaxError (whose `line` is this line), UnknownShapeError, TraceDataError, … */
  error: unknown;
  /** How many spans of `spans` were complete before this problem (the lines before it). */
  spansBefore: number;
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

/** Where `JSON.parse` failed on a line, by the tokenizer: line (the file's), column and JSON path. */
function whereInLine(text: string, line: number, fallback: unknown): unknown {
  try {
    const p = new JsonStreamParser();
    p.write(text);
    p.end();
  } catch (err) {
    if (err instanceof JsonSyntaxError) return new JsonSyntaxError(err.problem, line, err.column, err.jsonPath);
  }
  return fallback;
}

const NO_BYTES = Buffer.alloc(0);

interface StreamedLine {
  parser: JsonStreamParser;
  decoder: StringDecoder;
  /** The line was refused: the rest of it is skipped. */
  failed: boolean;
  /** Nothing was fed yet (a byte-order mark may lead the first line). */
  fresh: boolean;
}

/**
 * Incremental JSON-lines parsing over byte chunks: `write` cuts complete lines, parses them and appends their spans
 * to `spans` (the caller takes them); problems are appended to `problems` in line order. A line counts whole or not
 * at all, except a streamed one, whose spans completed before its damage are kept (as for a streamed document).
 * Chunks are kept by reference while a line is incomplete: a caller must not reuse a buffer it wrote.
 */
export class JsonLinesParser {
  spans: SpanRecord[] = [];
  problems: LineProblem[] = [];
  /** Lines completed so far. */
  lines = 0;

  private parts: Buffer[] = [];
  private partBytes = 0;
  private streamed: StreamedLine | undefined;

  /**
   * @param startsFile whether the first line given is the first of a file (where a byte-order mark may stand); false
   * for a block cut from the middle of one.
   */
  constructor(
    private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES,
    private readonly startsFile = true,
  ) {}

  write(chunk: Buffer): void {
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf(10, from);
      if (nl < 0) break;
      this.endLine(chunk, from, nl);
      from = nl + 1;
    }
    if (from < chunk.length) this.hold(from === 0 ? chunk : chunk.subarray(from));
  }

  /** No more input: the last line may lack its newline. */
  end(): void {
    if (this.partBytes > 0 || this.streamed !== undefined) this.endLine(NO_BYTES, 0, 0);
  }

  /** Take the spans parsed so far (handle `problems` first: their `spansBefore` index into `spans`). */
  take(): SpanRecord[] {
    const s = this.spans;
    this.spans = [];
    return s;
  }

  private hold(rest: Buffer): void {
    if (this.streamed !== undefined) {
      this.feed(rest);
      return;
    }
    this.parts.push(rest);
    this.partBytes += rest.length;
    // Too long to hold: the tokenizer reads the rest of this line as it arrives.
    if (this.partBytes > this.maxLineBytes) this.stream();
  }

  /** The line in progress goes through the tokenizer from here on (what was held is fed first). */
  private stream(): void {
    const parser = spanStreamParser(undefined, (s) => this.spans.push(s));
    this.streamed = { parser, decoder: new StringDecoder('utf8'), failed: false, fresh: true };
    const parts = this.parts;
    this.parts = [];
    this.partBytes = 0;
    for (const p of parts) this.feed(p);
  }

  private feed(bytes: Buffer): void {
    const s = this.streamed as StreamedLine;
    if (s.failed) return;
    try {
      let text = s.decoder.write(bytes);
      if (s.fresh && text !== '') {
        s.fresh = false;
        if (this.startsFile && this.lines === 0 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      }
      s.parser.write(text);
    } catch (error) {
      s.failed = true;
      this.problem(
        this.lines + 1,
        error instanceof JsonSyntaxError
          ? new JsonSyntaxError(error.problem, this.lines + 1, error.column, error.jsonPath)
          : error,
      );
    }
  }

  private endLine(chunk: Buffer, from: number, to: number): void {
    // A line past the limit is read by the tokenizer even when it arrived whole: the same rule for every chunking.
    if (this.streamed === undefined && this.partBytes + to - from > this.maxLineBytes) this.stream();
    if (this.streamed !== undefined) {
      if (to > from) this.feed(chunk.subarray(from, to));
      const s = this.streamed;
      this.streamed = undefined;
      this.lines++;
      if (s.failed) return;
      try {
        s.parser.write(s.decoder.end());
        s.parser.end();
      } catch (error) {
        this.problem(
          this.lines,
          error instanceof JsonSyntaxError
            ? new JsonSyntaxError(error.problem, this.lines, error.column, error.jsonPath)
            : error,
        );
      }
      return;
    }
    let text: string;
    if (this.partBytes === 0) text = chunk.toString('utf8', from, to);
    else {
      this.parts.push(chunk.subarray(from, to));
      text = Buffer.concat(this.parts, this.partBytes + to - from).toString('utf8');
      this.parts = [];
      this.partBytes = 0;
    }
    this.lines++;
    this.parseLine(text);
  }

  private parseLine(text: string): void {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      if (this.startsFile && this.lines === 1 && text.charCodeAt(0) === 0xfeff) {
        this.parseLine(text.slice(1));
        return;
      }
      if (!/\S/.test(text)) return; // a blank line
      this.problem(this.lines, whereInLine(text, this.lines, err));
      return;
    }
    try {
      appendSpansOfDocument(doc, this.spans); // a line counts whole or not at all
    } catch (error) {
      this.problem(this.lines, error);
    }
  }

  private problem(line: number, error: unknown): void {
    this.problems.push({ line, error, spansBefore: this.spans.length });
  }
}

/**
 * Spans of every line, in batches (one per chunk read: async iteration per span would cost more than parsing it).
 * A line that fails (bad JSON, unknown shape, bad value) is passed to `onLineError` and skipped; without a handler
 * the error is thrown, after the spans of the lines before it were yielded.
 */
export async function* readJsonLines(
  stream: Readable,
  onLineError?: (p: LineProblem) => void,
  maxLineBytes?: number,
): AsyncGenerator<SpanRecord[]> {
  const parser = new JsonLinesParser(maxLineBytes);
  const drain = function* (): Generator<SpanRecord[]> {
    if (parser.problems.length > 0) {
      const problems = parser.problems;
      parser.problems = [];
      for (const p of problems) {
        if (onLineError === undefined) {
          const before = parser.spans.slice(0, p.spansBefore);
          parser.spans = [];
          if (before.length > 0) yield before;
          throw new JsonLineError(p.line, p.error);
        }
        onLineError(p);
      }
    }
    if (parser.spans.length > 0) yield parser.take();
  };
  for await (const chunk of stream) {
    parser.write(chunk as Buffer);
    yield* drain();
  }
  parser.end();
  yield* drain();
}
