/**
 * The response-body tap shared by the LLM readers: counts what the application receives and turns a copy of it into
 * either SSE events (parsed incrementally, as chunks arrive) or one JSON document (parsed at the end). It never holds
 * back or changes a chunk. It reads the decoded body: the span layer undoes a `Content-Encoding` (gzip, br, deflate,
 * zstd: what the dispatcher sees before fetch decodes it) with the one streaming, bounded decoder
 * (src/wire/decompress.ts) before a reader sees it, and hands it headers without the encoding.
 */
import { performance } from 'node:perf_hooks';
import { StringDecoder } from 'node:string_decoder';
import type { IncomingHttpHeaders } from 'node:http';
import { SseParser, type SseEvent } from '../../src/wire/sse';

/** Bodies above this are counted but not parsed (a 10 MB JSON answer is still parsed). */
export const MAX_PARSE_BYTES = 32 * 1024 * 1024;
const UNPARSED_PREVIEW = 4096;

export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export class ResponseBody {
  status = 0;
  contentType: string | undefined;
  sse = false;
  bytes = 0;
  chunks = 0;
  /** ms since the request was dispatched, at the first body byte. */
  firstChunkMs: number | undefined;
  ended = false;
  /** True when the body was too big to parse. */
  overflow = false;
  readonly #t0: number;
  readonly #onEvent: (e: SseEvent) => void;
  #parser: SseParser | undefined;
  /** Non-SSE bodies: decoded as they arrive (no copy, no concat), joined at the end. */
  #decoder: StringDecoder | undefined;
  #texts: string[] | undefined;
  /** A binary framing's reader (event-stream), when a reader took the bytes over (`takeBytes`). */
  #bytes: ((chunk: Buffer) => void) | undefined;

  constructor(t0: number, onEvent: (e: SseEvent) => void) {
    this.#t0 = t0;
    this.#onEvent = onEvent;
  }

  onStart(status: number, headers: IncomingHttpHeaders): void {
    this.status = status;
    this.contentType = headerValue(headers, 'content-type');
    this.sse = this.contentType?.toLowerCase().includes('text/event-stream') === true;
    if (this.sse) this.#parser = new SseParser(this.#onEvent);
    else {
      this.#decoder = new StringDecoder('utf8');
      this.#texts = [];
    }
  }

  onData(chunk: Buffer): void {
    if (this.chunks === 0) this.firstChunkMs = performance.now() - this.#t0;
    this.chunks++;
    this.bytes += chunk.length;
    if (this.#parser) {
      this.#parser.push(chunk);
    } else if (this.#bytes) {
      this.#bytes(chunk);
    } else if (this.bytes > MAX_PARSE_BYTES) {
      if (this.#texts) this.overflow = true;
      this.#texts = undefined;
    } else if (this.#texts) {
      this.#texts.push((this.#decoder as StringDecoder).write(chunk));
    }
  }

  onEnd(): void {
    this.ended = true;
  }

  /**
   * A body in a binary framing of the reader's own (AWS event-stream): from now on each chunk goes to `read` as it
   * arrives, and none is kept as text. Called from the reader's `onStart`, after this one's.
   */
  takeBytes(read: (chunk: Buffer) => void): void {
    this.#bytes = read;
    this.#decoder = undefined;
    this.#texts = undefined;
  }

  /** The body as text (non-SSE), once; for SSE it ends the parser and returns undefined. */
  text(): string | undefined {
    if (this.#texts) {
      const texts = this.#texts;
      this.#texts = undefined;
      const tail = (this.#decoder as StringDecoder).end();
      if (tail) texts.push(tail);
      return texts.length === 1 ? texts[0] : texts.join('');
    }
    this.#parser?.end();
    return undefined;
  }

  /** The body as JSON, or undefined plus a short preview when it is not JSON. */
  json(): { value?: unknown; preview?: string } {
    const text = this.text();
    if (text === undefined || text.length === 0) return {};
    try {
      return { value: JSON.parse(text) };
    } catch {
      return { preview: text.slice(0, UNPARSED_PREVIEW) };
    }
  }
}

/**
 * The part every LLM response reader shares: the bytes go to one ResponseBody, which hands each SSE event (or, for a
 * body that is not a stream, nothing until the end) to `onEvent`.
 */
export abstract class BodyReader {
  protected readonly body: ResponseBody;

  constructor() {
    this.body = new ResponseBody(performance.now(), (e) => this.onEvent(e));
  }

  onStart(status: number, headers: IncomingHttpHeaders): void {
    this.body.onStart(status, headers);
  }

  onData(chunk: Buffer): void {
    this.body.onData(chunk);
  }

  onEnd(): void {
    this.body.onEnd();
  }

  /** One SSE event of the answer. Default: none is read (a format that does not stream over SSE). */
  protected onEvent(_e: SseEvent): void {}
}

/** An SSE event's data as JSON; undefined (and counted in `malformedEvents`) when it is not JSON. */
export function eventJson(e: SseEvent, acc: { malformedEvents?: number }): unknown {
  try {
    return JSON.parse(e.data) as unknown;
  } catch {
    acc.malformedEvents = (acc.malformedEvents ?? 0) + 1;
    return undefined;
  }
}

/** Longest string a bounded scan reads (a delta is a few characters; a longer one is left to JSON.parse). */
const MAX_SCAN_CHARS = 4096;

/**
 * The JSON string literal whose opening quote is at `data[open]`, decoded, and the index after its closing quote;
 * undefined when it is longer than MAX_SCAN_CHARS or not a valid literal (the caller then parses the whole event,
 * which decides and counts it). A bounded scan in place of a JSON.parse of the whole event: a literal without escapes
 * is a slice, one with escapes is handed to JSON.parse on its own.
 */
export function jsonStringAt(data: string, open: number): { value: string; end: number } | undefined {
  const limit = Math.min(data.length, open + 1 + MAX_SCAN_CHARS);
  // The literal's text so far, for one with escapes (`\"` and `\\` decoded here; any other escape: JSON.parse).
  let value = '';
  let from = open + 1;
  let other = false;
  for (let i = open + 1; i < limit; i++) {
    const c = data.charCodeAt(i);
    if (c === 34 /* " */) {
      if (!other) return { value: from === open + 1 ? data.slice(from, i) : value + data.slice(from, i), end: i + 1 };
      try {
        return { value: JSON.parse(data.slice(open, i + 1)) as string, end: i + 1 };
      } catch {
        return undefined;
      }
    }
    if (c === 92 /* \ */) {
      const next = data.charCodeAt(i + 1);
      if (next === 34 || next === 92) {
        value += data.slice(from, i);
        from = i + 1; // the escaped character is kept, the backslash dropped
      } else other = true;
      i++;
    } else if (c < 32) return undefined; // a raw control character: not JSON
  }
  return undefined;
}
