/**
 * Reading trace files: format auto-detection, streaming readers, grouping into traces, and errors that name the
 * file and the place. Entry points: `readSpans` (one file) and `readTraces` (several files, grouped).
 */
import { FaultlineInputError, type FaultlineErrorCode } from '../errors';
import type { SpanRecord, TraceRecord } from './model';
import { JsonStreamParser, JsonSyntaxError } from './json-stream';
import { TraceDataError } from './normalize';
import { openSource, type Source } from './source';
import { DEFAULT_IDLE_SPANS, TraceGrouper } from './group';
import {
  TRACE_FORMATS,
  UnknownShapeError,
  spanStreamParser,
  spansOfDocument,
  type TraceFormat,
} from './readers/document';
import * as otlpJson from './readers/otlp-json';
import * as otlpProto from './readers/otlp-proto';
import * as jaeger from './readers/jaeger';
import * as tempo from './readers/tempo';
import * as jsonl from './readers/jsonl';
import { readLogFiles } from './readers/otlp-logs';

export type { TraceFormat } from './readers/document';
export { TRACE_FORMATS } from './readers/document';

export interface ReadSpansOptions {
  /** Skip detection and read the file as this format. */
  format?: TraceFormat;
  /**
   * Called for each problem instead of throwing. JSON lines continue with the next line; other formats stop reading
   * that file (the spans before the damage were already yielded).
   */
  onError?: (error: FaultlineInputError) => void;
  /**
   * JSON documents up to this size are parsed with JSON.parse, bigger ones streamed (default 16 MiB); the same holds
   * for each line of a JSON-lines file.
   */
  streamThresholdBytes?: number;
  /** Largest single OTLP protobuf message accepted (default 512 MiB). */
  maxProtoMessageBytes?: number;
}

export interface ReadTracesOptions extends ReadSpansOptions {
  /** See group.ts: a trace is emitted after this many spans in a row without one of its own (default 20,000). */
  idleSpans?: number;
}

const DEFAULT_STREAM_THRESHOLD = 16 * 1024 * 1024;
const DEFAULT_MAX_PROTO = 512 * 1024 * 1024;

function inputError(
  code: FaultlineErrorCode,
  file: string,
  where: string,
  problem: string,
  cause?: unknown,
): FaultlineInputError {
  return new FaultlineInputError(code, `${file}: ${where ? `${where}: ` : ''}${problem}`, {
    cause,
    details: { file, where },
  });
}

/** Any error from a reader → a FaultlineInputError naming the file and the place. */
export function toInputError(file: string, err: unknown, where = ''): FaultlineInputError {
  if (err instanceof FaultlineInputError) return err;
  if (err instanceof jsonl.JsonLineError) return toInputError(file, err.error, `line ${err.line}`);
  const at = (inner: string): string => (where && inner ? `${where}: ${inner}` : where || inner);
  if (err instanceof JsonSyntaxError) {
    // In a JSON line (`where` names it) the column says where in the line; in a document, line and column.
    const pos = where ? `column ${err.column}` : `line ${err.line} column ${err.column}`;
    return inputError(
      'FAULTLINE_TRACE_MALFORMED',
      file,
      at(`${pos}${err.jsonPath ? ` (in ${err.jsonPath})` : ''}`),
      `invalid JSON: ${err.problem}`,
      err,
    );
  }
  if (err instanceof SyntaxError)
    return inputError('FAULTLINE_TRACE_MALFORMED', file, where, `invalid JSON: ${err.message}`, err);
  if (err instanceof TraceDataError)
    return inputError('FAULTLINE_TRACE_MALFORMED', file, at(err.path), err.problem, err);
  if (err instanceof UnknownShapeError) {
    // Inside a JSON-lines file the format is known; a line of another shape is damage.
    return inputError(
      where ? 'FAULTLINE_TRACE_MALFORMED' : 'FAULTLINE_TRACE_UNKNOWN_FORMAT',
      file,
      where,
      err.message,
      err,
    );
  }
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'Z_DATA_ERROR' || e?.code === 'Z_BUF_ERROR') {
    return inputError('FAULTLINE_TRACE_MALFORMED', file, where, `damaged gzip data (${e.message})`, err);
  }
  return inputError('FAULTLINE_TRACE_MALFORMED', file, where, `cannot read: ${e?.message ?? String(err)}`, err);
}

/** Text-like: no NUL or other control bytes besides tab, newline, carriage return (UTF-8 beyond ASCII is fine). */
function looksLikeText(head: Buffer): boolean {
  for (let i = 0; i < head.length; i++) {
    const b = head[i] as number;
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return false;
  }
  return true;
}

/** Keys of the top-level object (or of the first element of a top-level array) seen in the head, by the tokenizer. */
function topKeys(text: string): string[] {
  const keys: string[] = [];
  const FIRST_DONE = new Error('first document read');
  const parser = new JsonStreamParser({
    onKey(key, path) {
      if (path.length === 0 || (path.length === 1 && path[0] === 0)) keys.push(key);
    },
    onDocument() {
      throw FIRST_DONE;
    },
  });
  try {
    parser.write(text);
  } catch {
    // The end of the first document, or damage: the keys read so far are what the head says.
  }
  return keys;
}

function headSummary(head: Buffer): string {
  if (head.length === 0) return 'the file is empty';
  if (looksLikeText(head)) {
    const t = head.toString('utf8', 0, Math.min(head.length, 40)).replace(/\s+/g, ' ').trim();
    return `it starts with ${JSON.stringify(t)}`;
  }
  return `it starts with bytes ${head.subarray(0, 8).toString('hex').replace(/(..)/g, '$1 ').trim()}`;
}

/** Which format a file is in, from its first bytes. Throws FAULTLINE_TRACE_UNKNOWN_FORMAT naming what was seen. */
export function detectFormat(src: Source): TraceFormat {
  const head = src.head;
  const text = looksLikeText(head) ? head.toString('utf8').replace(/^\uFEFF/, '') : undefined;
  const first = text?.trimStart()[0];
  if (text !== undefined && (first === '{' || first === '[')) {
    if (jsonl.sniff(text, src.nextLineStart)) return 'jsonl';
    const keys = topKeys(text);
    if (tempo.sniff(keys)) return 'tempo';
    if (otlpJson.sniff(keys)) return 'otlp-json';
    if (jaeger.sniff(keys)) return 'jaeger';
    if (keys.includes('traceId') && keys.includes('spanId')) return 'jsonl';
    throw inputError(
      'FAULTLINE_TRACE_UNKNOWN_FORMAT',
      src.file,
      '',
      `not a trace file this reader knows: expected OTLP/JSON (resourceSpans), JSON lines, Jaeger JSON (data / traceID), Tempo JSON (batches / trace) or OTLP protobuf; found a JSON document with keys ${
        keys
          .slice(0, 8)
          .map((k) => JSON.stringify(k))
          .join(', ') || '(none)'
      }`,
    );
  }
  if (text === undefined && otlpProto.sniffFramed(head, src.gzip ? Infinity : src.size)) return 'otlp-proto';
  if (text === undefined && otlpProto.sniffSingle(head)) return 'otlp-proto';
  throw inputError(
    'FAULTLINE_TRACE_UNKNOWN_FORMAT',
    src.file,
    '',
    `not a trace file this reader knows (OTLP/JSON, JSON lines, Jaeger JSON, Tempo JSON, OTLP protobuf): ${headSummary(head)}`,
  );
}

async function readAll(src: Source): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of src.open()) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** A single JSON document (OTLP/JSON, Jaeger, Tempo): JSON.parse when small, the streaming parser when big. */
async function* readJsonDocument(src: Source, fmt: TraceFormat, threshold: number): AsyncGenerator<SpanRecord> {
  if (!src.gzip && src.size <= threshold) {
    const text = (await readAll(src)).toString('utf8').replace(/^\uFEFF/, '');
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      // Re-parse with the streaming parser: it says where (line, column, JSON path), and accepts concatenated documents.
      yield* streamJson(src, fmt, text);
      return;
    }
    yield* spansOfDocument(doc, '', fmt);
    return;
  }
  yield* streamJson(src, fmt);
}

async function* streamJson(src: Source, fmt: TraceFormat, text?: string): AsyncGenerator<SpanRecord> {
  const out: SpanRecord[] = [];
  const parser = spanStreamParser(fmt, (s) => out.push(s));
  let failed: unknown;
  try {
    if (text !== undefined) parser.write(text);
    else {
      const stream = src.open();
      stream.setEncoding('utf8');
      for await (const chunk of stream) {
        parser.write(chunk as string);
        if (out.length > 0) yield* out.splice(0, out.length);
      }
    }
    parser.end();
  } catch (err) {
    failed = err;
  }
  // Spans completed before the damage are still delivered.
  yield* out.splice(0, out.length);
  if (failed !== undefined) throw failed;
}

/** OTLP protobuf: a single ExportTraceServiceRequest, or the collector's length-prefixed stream of them. */
async function* readProto(src: Source, maxMessage: number): AsyncGenerator<SpanRecord> {
  if (otlpProto.sniffFramed(src.head, src.gzip ? Infinity : src.size) && !otlpProto.sniffSingle(src.head)) {
    let pending: Buffer = Buffer.alloc(0);
    let offset = 0;
    for await (const chunk of src.open()) {
      pending = pending.length === 0 ? (chunk as Buffer) : Buffer.concat([pending, chunk as Buffer]);
      while (pending.length >= 4) {
        const len = pending.readUInt32BE(0);
        if (len > maxMessage)
          throw new TraceDataError(`byte ${offset}`, `message length ${len} exceeds the limit of ${maxMessage} bytes`);
        if (pending.length < 4 + len) break;
        yield* spansOfDoc(otlpProto.decodeExportTraceRequest(pending, 4, 4 + len), `message at byte ${offset}`);
        offset += 4 + len;
        pending = pending.subarray(4 + len);
      }
    }
    if (pending.length > 0)
      throw new TraceDataError(
        `byte ${offset}`,
        `truncated: ${pending.length} bytes left over after the last complete message`,
      );
    return;
  }
  if (src.size > maxMessage && !src.gzip)
    throw new TraceDataError(
      '',
      `a single protobuf message of ${src.size} bytes exceeds the limit of ${maxMessage} bytes`,
    );
  const buf = await readAll(src);
  yield* spansOfDoc(otlpProto.decodeExportTraceRequest(buf), '');
}

function* spansOfDoc(doc: Record<string, unknown>, where: string): Generator<SpanRecord> {
  try {
    yield* otlpJson.spansOfOtlpDocument(doc);
  } catch (err) {
    if (err instanceof TraceDataError && where) throw new TraceDataError(`${where}, ${err.path}`, err.problem);
    throw err;
  }
}

/**
 * The spans of one trace file, in file order, normalised to SpanRecord. The format is detected from the content
 * (`options.format` overrides). Gzip-compressed files are read transparently.
 *
 * Errors are FaultlineInputErrors: FAULTLINE_FILE_NOT_FOUND, FAULTLINE_TRACE_UNKNOWN_FORMAT, FAULTLINE_TRACE_MALFORMED,
 * with the file and the place (line, line:column and JSON path, protobuf field and byte offset) in the message.
 */
export async function* readSpans(file: string, options: ReadSpansOptions = {}): AsyncGenerator<SpanRecord> {
  for await (const batch of readSpanBatches(file, options)) yield* batch;
}

/** Batches a span generator, delivering what was batched before an error. */
async function* batched(gen: AsyncIterable<SpanRecord>, size = 512): AsyncGenerator<SpanRecord[]> {
  let b: SpanRecord[] = [];
  try {
    for await (const s of gen) {
      b.push(s);
      if (b.length >= size) {
        yield b;
        b = [];
      }
    }
  } catch (err) {
    if (b.length > 0) yield b;
    throw err;
  }
  if (b.length > 0) yield b;
}

/** readSpans in batches (what readTraces consumes: one async step per batch, not per span). */
async function* readSpanBatches(file: string, options: ReadSpansOptions): AsyncGenerator<SpanRecord[]> {
  const report = (err: unknown, where?: string): void => {
    const e = toInputError(file, err, where);
    if (options.onError === undefined) throw e;
    options.onError(e);
  };
  let src: Source;
  let fmt: TraceFormat;
  try {
    if (options.format !== undefined && !TRACE_FORMATS.includes(options.format)) {
      throw new FaultlineInputError(
        'FAULTLINE_USAGE',
        `unknown trace format ${JSON.stringify(options.format)}: expected one of ${TRACE_FORMATS.join(', ')}`,
      );
    }
    src = await openSource(file);
    fmt = options.format ?? detectFormat(src);
  } catch (err) {
    if (err instanceof FaultlineInputError && err.code === 'FAULTLINE_USAGE') throw err;
    report(err);
    return;
  }
  try {
    switch (fmt) {
      case 'jsonl':
        yield* jsonl.readJsonLines(
          src.open(),
          options.onError === undefined ? undefined : (p) => report(p.error, `line ${p.line}`),
          options.streamThresholdBytes ?? DEFAULT_STREAM_THRESHOLD,
        );
        return;
      case 'otlp-proto':
        yield* batched(readProto(src, options.maxProtoMessageBytes ?? DEFAULT_MAX_PROTO));
        return;
      default:
        yield* batched(readJsonDocument(src, fmt, options.streamThresholdBytes ?? DEFAULT_STREAM_THRESHOLD));
    }
  } catch (err) {
    report(err);
  }
}

/**
 * The traces of one or more files, grouped by trace id with bounded memory (rule in group.ts: a trace is emitted
 * when `idleSpans` spans in a row passed without one of its own, or at the end of the last file; spans of one trace
 * spread over several files are merged). Each trace's spans are sorted by start time.
 *
 * A bad file never costs the others: with `onError`, each problem is reported as it happens and reading goes on;
 * without it, problems are collected and thrown together after every readable trace was yielded (one error as is;
 * several as one FaultlineInputError whose `details.errors` lists them).
 */
export async function* readTraces(
  paths: readonly string[],
  options: ReadTracesOptions = {},
): AsyncGenerator<TraceRecord> {
  const errors: FaultlineInputError[] = [];
  const onError = options.onError ?? ((e: FaultlineInputError) => void errors.push(e));
  const grouper = new TraceGrouper(options.idleSpans ?? DEFAULT_IDLE_SPANS);
  // OTLP logs files among the inputs are read first; their records join their spans as events (readers/otlp-logs.ts).
  const { join: logs, traceFiles } = await readLogFiles(paths, (file, err) => onError(toInputError(file, err)));
  for (const file of traceFiles) {
    for await (const batch of readSpanBatches(file, { ...options, onError })) {
      for (const span of batch) {
        const done = grouper.add(span);
        if (done.length > 0) for (const t of done) yield logs.attach(t);
      }
    }
  }
  for (const t of grouper.flush()) yield logs.attach(t);
  throwCollected(errors);
}

/** The problems collected over a read, thrown together: one as is, several as one error listing them. */
export function throwCollected(errors: readonly FaultlineInputError[]): void {
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) {
    const first = errors[0] as FaultlineInputError;
    throw new FaultlineInputError(
      first.code,
      `${errors.length} problems reading traces:\n${errors.map((e) => `  ${e.message}`).join('\n')}`,
      {
        details: { errors },
      },
    );
  }
}

/** Detect the format of a file without reading it all. */
export async function detectFileFormat(file: string): Promise<TraceFormat> {
  return detectFormat(await openSource(file));
}
