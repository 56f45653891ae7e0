/**
 * JSON-RPC over HTTP, as A2A and MCP Streamable HTTP speak it: recognise a request body, and read the response the
 * application receives — one JSON document, or a `text/event-stream` whose events each carry one JSON-RPC message.
 * The body reader only reads copies of the chunks; SSE is parsed incrementally, JSON is kept up to a size cap and
 * parsed at the end.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Attributes } from '@opentelemetry/api';
import {
  ATTR_FL_RESPONSE_BODY_BYTES,
  ATTR_FL_RESPONSE_CHUNK_COUNT,
  ATTR_FL_RESPONSE_CONTENT_TYPE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ERROR_TYPE_OTHER,
} from '../semconv';
import { SseParser } from '../../src/wire/sse';
import { header } from './message';

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  method: string;
  id?: JsonRpcId;
  params?: unknown;
}

export interface JsonRpcError {
  code: number;
  message?: string;
  data?: unknown;
}

/** A JSON-RPC request body (a single call; batches are not ours). */
export function asJsonRpcRequest(body: unknown): JsonRpcRequest | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const b = body as Record<string, unknown>;
  if (b.jsonrpc !== '2.0' || typeof b.method !== 'string') return undefined;
  if (b.id !== undefined && typeof b.id !== 'string' && typeof b.id !== 'number') return undefined;
  return b as unknown as JsonRpcRequest;
}

/**
 * Cheap pre-check before any body is read: JSON-RPC over HTTP is a POST with a JSON body. When the request's headers
 * are known, a non-JSON content type (a multipart upload, say) rules it out.
 */
export function mayBeJson(method: string, headers?: Record<string, string>): boolean {
  if (method !== 'POST') return false;
  const contentType = headers === undefined ? undefined : header(headers, 'content-type');
  return contentType === undefined || /^application\/([\w.-]+\+)?json\b/i.test(contentType);
}

const JSONRPC = Buffer.from('jsonrpc');

/**
 * Cheap check on the raw bytes before they are parsed: a JSON-RPC request is a JSON object with a `jsonrpc` member.
 * An API's other JSON POSTs (a bulk upload of 0.7 MB, say) are told apart without parsing them. The member name is
 * looked for anywhere (encoders put it first or last), so this only rules out; `asJsonRpcRequest` decides.
 */
export function sniffJsonRpc(body: Buffer): boolean {
  let i = 0;
  while (i < body.length && (body[i] === 0x20 || body[i] === 0x0a || body[i] === 0x0d || body[i] === 0x09)) i++;
  return body[i] === 0x7b /* { */ && body.indexOf(JSONRPC, i) !== -1;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** `server.address` / `server.port` of a URL (the port defaulted from the scheme, as the spec asks). */
export function serverAttributes(url: URL): Attributes {
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return { [ATTR_SERVER_ADDRESS]: url.hostname, [ATTR_SERVER_PORT]: port };
}

/** Largest JSON body kept for parsing; a larger one is counted but not parsed (its facts still are recorded). */
const MAX_JSON_BYTES = 8 * 1024 * 1024;

/**
 * Reads a JSON-RPC response body and hands every JSON-RPC message in it to `onMessage` (for SSE as each event
 * arrives, for JSON at the end). Never throws: malformed input just yields no message.
 */
export class JsonRpcBody {
  status = 0;
  contentType = '';
  bodyBytes = 0;
  /** SSE events seen (0 for a JSON body). */
  events = 0;
  /** The body was not parsable JSON (or too large to parse). */
  unparsed = false;
  readonly #onMessage: (message: unknown) => void;
  #sse: SseParser | undefined;
  #chunks: Buffer[] = [];
  #kept = 0;

  constructor(onMessage: (message: unknown) => void) {
    this.#onMessage = onMessage;
  }

  get sse(): boolean {
    return this.#sse !== undefined;
  }

  onStart(status: number, headers: IncomingHttpHeaders): void {
    this.status = status;
    const ct = headers['content-type'];
    this.contentType = (Array.isArray(ct) ? ct[0] : (ct ?? '')).split(';')[0].trim().toLowerCase();
    if (this.contentType === 'text/event-stream') {
      this.#sse = new SseParser((event) => {
        this.events++;
        this.#parse(event.data);
      });
    }
  }

  onData(chunk: Buffer): void {
    this.bodyBytes += chunk.length;
    if (this.#sse !== undefined) {
      this.#sse.push(chunk);
      return;
    }
    if (this.#kept + chunk.length > MAX_JSON_BYTES) {
      this.#chunks = [];
      this.#kept = Infinity;
      return;
    }
    // Copy: the application may reuse or mutate the buffer it was given.
    this.#chunks.push(Buffer.from(chunk));
    this.#kept += chunk.length;
  }

  onEnd(): void {
    if (this.#sse !== undefined) {
      this.#sse.end();
      return;
    }
    if (this.#kept === Infinity) {
      this.unparsed = true;
      return;
    }
    const text = Buffer.concat(this.#chunks).toString('utf8');
    this.#chunks = [];
    if (text.trim() === '') return;
    this.#parse(text);
  }

  /** Content-free facts about the body, for the span. */
  facts(): Attributes {
    const attrs: Attributes = { [ATTR_FL_RESPONSE_BODY_BYTES]: this.bodyBytes };
    if (this.contentType !== '') attrs[ATTR_FL_RESPONSE_CONTENT_TYPE] = this.contentType;
    if (this.sse) attrs[ATTR_FL_RESPONSE_CHUNK_COUNT] = this.events;
    return attrs;
  }

  #parse(text: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      if (!this.sse) this.unparsed = true;
      return;
    }
    // A JSON body may be a batch; each element is one message.
    for (const message of Array.isArray(parsed) ? parsed : [parsed]) this.#onMessage(message);
  }
}

/** The error of a JSON-RPC response message, if it is one. */
export function rpcError(message: unknown): JsonRpcError | undefined {
  if (!isObject(message) || !isObject(message.error)) return undefined;
  const code = message.error.code;
  return typeof code === 'number' ? (message.error as unknown as JsonRpcError) : { code: Number.NaN, ...message.error };
}

/** A low-cardinality error.type for a failed exchange: transport failure, then HTTP status, then JSON-RPC code. */
export function exchangeErrorType(
  failure: { errorType?: string; aborted?: boolean } | undefined,
  status: number,
  error: JsonRpcError | undefined,
): string | undefined {
  if (failure?.aborted) return undefined; // the application cancelled: not an error of the call
  if (failure?.errorType !== undefined) return failure.errorType;
  if (status >= 400) return String(status);
  if (error !== undefined) return Number.isFinite(error.code) ? String(error.code) : ERROR_TYPE_OTHER;
  return undefined;
}
