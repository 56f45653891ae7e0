/**
 * What the project-written wire bodies (openai-wire.ts, anthropic-wire.ts, gemini-wire.ts, ollama-wire.ts,
 * embeddings-wire.ts) share: fresh ids as a live provider makes them, an answer's text cut into the pieces a stream
 * carries, a rough token count, and an exchange in the shape of a recorded one (wire-record.ts) so that
 * llm-server.ts's corpusReply serves it as it serves a corpus record.
 */
import type { CorpusRecord } from './wire-record';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
let serial = 0;

/** A fresh id: `prefix` and a base-62 tail of `length` characters, different on every call. */
export function freshId(prefix: string, length = 24): string {
  let n = ++serial * 7919 + Date.now();
  let tail = '';
  for (let i = 0; i < length; i++) {
    tail += ALPHABET[n % 62];
    n = Math.floor(n / 62) + (i + 1) * 131;
  }
  return `${prefix}${tail}`;
}

/** Text cut where a tokenizer would roughly cut it: each piece a word with its leading space or punctuation. */
export function textPieces(text: string): string[] {
  return text.match(/\s*[^\s]+|\s+$/g) ?? [text];
}

/** A JSON text (tool arguments) cut into the small pieces a stream carries them in. */
export function jsonPieces(json: string): string[] {
  return json.match(/.{1,6}/gs) ?? [json];
}

/** A token count of the order a tokenizer gives (about four characters a token), at least 1. */
export function roughTokens(text: string | undefined): number {
  return Math.max(1, Math.ceil((text?.length ?? 20) / 4));
}

export const unixNow = (): number => Math.floor(Date.now() / 1000);

/** What a generated exchange is: the request the app sends and the provider's answer (one body, SSE, or a stream). */
export interface ExchangeSpec {
  endpoint: string;
  request: Record<string, unknown>;
  /** The model the call names (default: the request's `model`; Gemini names it in the path). */
  model?: string;
  status?: number;
  /** A JSON body. */
  response?: unknown;
  /** SSE events, each with its blank line. */
  sse?: string[];
  /** A stream that is not SSE: Gemini's JSON array or Ollama's NDJSON, as the pieces a server flushes. */
  stream?: string[];
  framing?: 'json-array' | 'ndjson';
  tags?: string[];
}

/** A project-written exchange in the shape of a recorded one (what corpusReply, recordBody and sseEvents take). */
export function exchange(spec: ExchangeSpec): CorpusRecord {
  return {
    id: freshId('project-', 8),
    endpoint: spec.endpoint,
    status: spec.status ?? 200,
    model: spec.model ?? (typeof spec.request.model === 'string' ? spec.request.model : undefined),
    tags: spec.tags ?? [],
    request: spec.request,
    ...(spec.response !== undefined ? { response: spec.response } : {}),
    ...(spec.sse !== undefined ? { sse: spec.sse.join(''), framing: 'sse' as const } : {}),
    ...(spec.stream !== undefined ? { stream: spec.stream.join(''), framing: spec.framing ?? 'ndjson' } : {}),
  };
}
