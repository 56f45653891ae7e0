/**
 * Internal contracts between the interceptor and the per-protocol modules. MUST NOT be exported from the package,
 * directly or transitively.
 */
import type { Attributes, SpanKind } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import type { AgentMessage, Exchange, ExchangeOutcome, LlmRequestSummary, Protocol } from './types';

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
 * Incremental response reader. Called with exactly what the application receives; it must never hold back or
 * modify a chunk, and must be cheap (it runs on every chunk).
 */
export interface ResponseReader {
  onStart(status: number, headers: IncomingHttpHeaders): void;
  onData(chunk: Buffer): void;
  /** The response ended normally. */
  onEnd(): void;
  /** Attributes to set on the span at its end (response id/model, finish reasons, usage, content-free facts, and
   * content when captured), and the outcome handed to `onExchangeEnd`. */
  finish(exchange: Exchange, failure: { errorType?: string; aborted?: boolean } | undefined, durationMs: number): {
    attributes: Attributes;
    outcome: ExchangeOutcome;
    /** Span status error description, if the call failed at the protocol level (HTTP >= 400, JSON-RPC error). */
    error?: string;
  };
}

export interface ProtocolModule {
  readonly protocol: Protocol;
  /** Cheap pre-check on method and URL, before any body is buffered. */
  matches(method: string, url: URL): boolean;
  /** Decide from the parsed request body; undefined = not ours after all, pass through untouched. */
  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined;
  /** A reader for this exchange's response. */
  reader(exchange: Exchange, captureContent: boolean): ResponseReader;
}
