/**
 * Internal contracts between the interceptor and the per-protocol modules. MUST NOT be exported from the package,
 * directly or transitively.
 */
import type { Attributes, SpanKind } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import type { AgentMessage, Exchange, ExchangeOutcome, LlmRequestSummary, Protocol } from './types';

/** The body `start` is given when it is not read yet (see ProtocolModule.start). */
export const UNREAD: Readonly<Record<string, never>> = Object.freeze({});

export type LlmRequestHead = Pick<LlmRequestSummary, 'operation' | 'provider' | 'model'>;

/** What a protocol module decides when a request is recognised. */
export interface ProtocolStart {
  /** Span name, e.g. `chat gpt-4o`, `invoke_agent planner`, `execute_tool get_weather`. */
  name: string;
  kind: SpanKind;
  /** Attributes known at span start (sampling-relevant ones included): the fault plan selects on these. */
  attributes: Attributes;
  /** True when the response will be a stream (SSE). */
  stream: boolean;
  operation: string;
  provider: string;
  llmRequest?: LlmRequestSummary;
  /** What the metrics need of `llmRequest`, when building all of it costs more (set iff `llmRequest` is). */
  llmHead?: LlmRequestHead;
  message?: AgentMessage;
  /**
   * Optional: produce the request body to send, given the started span's context (MCP puts `traceparent` into
   * `params._meta`). Return undefined to send the original bytes.
   */
  rewriteBody?: (traceparent: string, tracestate: string | undefined) => Buffer | undefined;
}

/**
 * Incremental response reader. Called with what the application receives, decoded: when the response has a
 * `Content-Encoding`, the span layer undoes it (streaming and bounded, src/wire/decompress.ts) and hands the
 * reader the decoded bytes and headers without `content-encoding`. It must never hold back or modify a chunk, and
 * must be cheap (it runs on every chunk). `finish` runs once the decoded body has been handed over in full.
 */
export interface ResponseReader {
  onStart(status: number, headers: IncomingHttpHeaders): void;
  onData(chunk: Buffer): void;
  /** The response ended normally. */
  onEnd(): void;
  /** Attributes to set on the span at its end (response id/model, finish reasons, usage, content-free facts, and
   * content when captured), and the outcome handed to `onExchangeEnd`. */
  finish(
    exchange: Exchange,
    failure: { errorType?: string; aborted?: boolean } | undefined,
    durationMs: number,
  ): {
    attributes: Attributes;
    outcome: ExchangeOutcome;
    /** Span status error description, if the call failed at the protocol level (HTTP >= 400, JSON-RPC error). */
    error?: string;
  };
}

export interface ProtocolModule {
  readonly protocol: Protocol;
  /**
   * Cheap pre-check on method, URL and (when known) the request headers, before any body is read. Called once per
   * route without headers (cached: "could this route be ours?") and again per call with them (credentials removed,
   * names lower-case). The span layer itself rules out a body whose content-type is neither JSON nor text/plain.
   */
  matches(method: string, url: URL, headers?: Record<string, string>): boolean;
  /**
   * Optional cheap check on the raw request bytes before they are parsed (a JSON-RPC module looks for `jsonrpc`):
   * false = not ours, and the body is never parsed. For modules whose URL alone says the call is theirs, leave it out.
   */
  sniff?(body: Buffer, url: URL): boolean;
  /**
   * Decide from the parsed request body; undefined = not ours after all, pass through untouched.
   *
   * Also called with {@link UNREAD} (a frozen empty object) when a span must start before the body can be read — a
   * streamed request body is never waited for — and then again with the body once it has flowed past: return what the
   * URL and headers alone say (name, operation, provider, server.*), or undefined when only the body can tell (JSON-RPC).
   */
  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined;
  /** A reader for this exchange's response. */
  reader(exchange: Exchange, captureContent: boolean): ResponseReader;
}
