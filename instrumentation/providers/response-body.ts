/**
 * The response-body tap shared by the LLM readers: counts what the application receives and turns a copy of it into
 * either SSE events (parsed incrementally, as chunks arrive) or one JSON document (parsed at the end). It never holds
 * back or changes a chunk. Encoded bodies (gzip, br, deflate: what the dispatcher sees before fetch decodes them) are
 * kept as copies and decoded once at the end, tolerating truncation; the application still gets the original bytes.
 */
import { performance } from 'node:perf_hooks';
import { StringDecoder } from 'node:string_decoder';
import * as zlib from 'node:zlib';
import type { IncomingHttpHeaders } from 'node:http';
import { SseParser, type SseEvent } from './sse';

/** Bodies above this are counted but not parsed (a 10 MB JSON answer is still parsed). */
const MAX_PARSE_BYTES = 32 * 1024 * 1024;
const UNPARSED_PREVIEW = 4096;

export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export class ResponseBody {
  status = 0;
  contentType: string | undefined;
  encoding: string | undefined;
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
  /** Encoded bodies: our own copies of the chunks, decompressed at the end. */
  #copies: Buffer[] | undefined;
  /** Plain bodies: decoded as they arrive (no copy, no concat), joined at the end. */
  #decoder: StringDecoder | undefined;
  #texts: string[] | undefined;

  constructor(t0: number, onEvent: (e: SseEvent) => void) {
    this.#t0 = t0;
    this.#onEvent = onEvent;
  }

  onStart(status: number, headers: IncomingHttpHeaders): void {
    this.status = status;
    this.contentType = headerValue(headers, 'content-type');
    const enc = headerValue(headers, 'content-encoding')?.trim().toLowerCase();
    this.encoding = enc && enc !== 'identity' ? enc : undefined;
    this.sse = this.contentType?.toLowerCase().includes('text/event-stream') === true;
    if (this.encoding !== undefined) this.#copies = [];
    else if (this.sse) this.#parser = new SseParser(this.#onEvent);
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
    } else if (this.bytes > MAX_PARSE_BYTES) {
      if (this.#copies || this.#texts) this.overflow = true;
      this.#copies = undefined;
      this.#texts = undefined;
    } else if (this.#texts) {
      this.#texts.push((this.#decoder as StringDecoder).write(chunk));
    } else if (this.#copies) {
      // A step upstream may reuse its buffers: keep our own copy.
      this.#copies.push(Buffer.from(chunk));
    }
  }

  onEnd(): void {
    this.ended = true;
  }

  /** The decoded body (non-SSE, or SSE that was encoded), once. SSE that was encoded is replayed as events. */
  text(): string | undefined {
    if (this.#texts) {
      const texts = this.#texts;
      this.#texts = undefined;
      const tail = (this.#decoder as StringDecoder).end();
      if (tail) texts.push(tail);
      return texts.length === 1 ? texts[0] : texts.join('');
    }
    if (!this.#copies) {
      this.#parser?.end();
      return undefined;
    }
    let raw: Buffer = Buffer.concat(this.#copies);
    this.#copies = undefined;
    if (this.encoding !== undefined) raw = decode(raw, this.encoding);
    if (this.sse) {
      const parser = new SseParser(this.#onEvent);
      parser.push(raw);
      parser.end();
      return undefined;
    }
    return raw.toString('utf8');
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

function decode(raw: Buffer, encoding: string): Buffer {
  // Truncated bodies decode as far as they go instead of throwing.
  const flush = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  try {
    let out = raw;
    // content-encoding may list several codings, applied in order: undo them in reverse.
    for (const coding of encoding.split(',').map((s) => s.trim()).reverse()) {
      if (coding === 'gzip' || coding === 'x-gzip') out = zlib.gunzipSync(out, flush);
      else if (coding === 'deflate') out = inflate(out);
      else if (coding === 'br') out = zlib.brotliDecompressSync(out, { finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
      else if (coding === 'zstd' && 'zstdDecompressSync' in zlib) out = (zlib as unknown as { zstdDecompressSync(b: Buffer): Buffer }).zstdDecompressSync(out);
      else return Buffer.alloc(0);
    }
    return out;
  } catch {
    return Buffer.alloc(0);
  }
}

function inflate(raw: Buffer): Buffer {
  // "deflate" is zlib-wrapped per the RFC, but some servers send raw deflate (fetch accepts both).
  try {
    return zlib.inflateSync(raw, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
  } catch {
    return zlib.inflateRawSync(raw, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
  }
}
