/**
 * Public types of faultline's instrumentation: its config, what it observed of each call (the summaries the
 * detectors read), and the two extension points where faults and guards plug in:
 *
 *  - HTTP: an {@link Exchange} rides along in the undici dispatch options (see `getExchange`), so the fault and guard
 *    steps are plain undici interceptors composed *inside* the GenAI span layer:
 *        app fetch → [GenAI span layer] → [guard step] → [fault step] → previous global dispatcher → network
 *  - In-process messages: a {@link MessageChannel} runs {@link DeliverStep}s between sender and receiver; a step
 *    returns the messages the receiver gets (zero, one or more).
 */
import type { Context, Span } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import type { WorkflowEvent } from './agents/declarations';

// ------------------------------------------------------------------------------------------------ messages

/** A message in the GenAI semconv shape (gen_ai.input.messages / gen_ai.output.messages). */
export interface GenAiMessage {
  role: string;
  parts: GenAiPart[];
  finish_reason?: string;
  name?: string;
}

export type GenAiPart =
  | { type: 'text'; content: string }
  | { type: 'tool_call'; id?: string | null; name: string; arguments?: unknown }
  | { type: 'tool_call_response'; id?: string | null; response?: unknown; result?: unknown }
  | { type: string; [key: string]: unknown };

export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments, as the request gave it. */
  parameters?: unknown;
  type?: string;
}

export interface ToolCallSummary {
  id?: string;
  name: string;
  /** Raw arguments text as the model produced it (OpenAI: a JSON string; Anthropic: JSON of `input`). */
  arguments: string;
}

export interface UsageSummary {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadInputTokens?: number;
  cacheCreationInputTokens?: number;
  reasoningOutputTokens?: number;
}

/** What faultline saw of an LLM request. */
export interface LlmRequestSummary {
  provider: string;
  operation: string;
  model?: string;
  maxTokens?: number;
  temperature?: number;
  stream: boolean;
  /** Input messages in semconv shape (system instructions excluded). */
  messages: GenAiMessage[];
  systemInstructions?: string;
  tools: ToolDefinition[];
  /** Epoch ms when the request was sent. */
  time: number;
}

/** What the application received for an LLM request (after any fault and guard). */
export interface LlmResponseSummary {
  status?: number;
  id?: string;
  model?: string;
  /** Provider `created` time in epoch seconds, when given. */
  created?: number;
  finishReasons: string[];
  /** Concatenated text output of the first choice / all text blocks. */
  text: string;
  toolCalls: ToolCallSummary[];
  usage?: UsageSummary;
  contentType?: string;
  bodyBytes?: number;
  /** The body as text when it was not the expected JSON / SSE (an HTML error page, say), first 4 KiB. */
  unparsedBody?: string;
  /** For streams: chunks seen, whether the terminal marker arrived, time to first chunk, and how many events had a
   * `data:` payload that did not parse as JSON (present only when > 0). */
  stream?: { chunks: number; done: boolean; timeToFirstChunkMs?: number; malformedEvents?: number };
  /** Low-cardinality error type when the call failed (HTTP status, timeout, connection error code). */
  errorType?: string;
  /** The provider's error code from an error body (`context_length_exceeded`, `rate_limit_exceeded`), if any. */
  errorCode?: string;
  /** Offline: the error message the span recorded (status or exception message), read for what kind of refusal it
   * is; never put into a finding's evidence. */
  errorMessage?: string;
  aborted?: boolean;
  durationMs: number;
}

/** A message between agents: an in-process handoff, an A2A message, or an MCP tool call / result. */
export interface AgentMessage<P = unknown> {
  id: string;
  source: string;
  target: string;
  /** Boundary label: I1 plan, I2 action request, I3 observation, I4 evidence handoff, or a user label. */
  boundary?: string;
  taskId?: string;
  sessionId?: string;
  version?: number;
  /** Epoch ms when the sender handed it over. */
  sentAt?: number;
  payload: P;
}

// ------------------------------------------------------------------------------------------------ HTTP exchanges

/**
 * The wire format of a recognised call: LLM APIs (`<family>.<api>`), embeddings per family, and the inter-agent
 * protocols. The fault step reads it to apply each fault in the call's own format.
 */
export type Protocol =
  | 'openai.chat'
  | 'openai.responses'
  | 'openai.embeddings'
  | 'anthropic.messages'
  | 'gemini.generate_content'
  | 'gemini.embeddings'
  | 'bedrock.converse'
  | 'bedrock.invoke'
  | 'ollama.chat'
  | 'ollama.generate'
  | 'ollama.embeddings'
  | 'a2a'
  | 'mcp';

/**
 * One recognised HTTP call, shared by the GenAI span layer and the steps inside it. Read it in an undici interceptor
 * with `getExchange(opts)`; undefined means the request is not one of ours and must pass through untouched.
 */
export interface Exchange {
  readonly protocol: Protocol;
  /** Our span for this call (chat / invoke_agent / execute_tool). */
  readonly span: Span;
  /** Context with `span` active. */
  readonly context: Context;
  readonly operation: string;
  readonly provider: string;
  readonly url: URL;
  readonly method: string;
  /**
   * Request body exactly as the application sent it. A streamed body is read as it flows: until
   * `requestBodyComplete`, this is empty (and `request` undefined).
   */
  readonly requestBody: Buffer;
  /** The whole request body is in `requestBody` (always, for a body that was not streamed). */
  readonly requestBodyComplete?: boolean;
  /** Parsed JSON request body (undefined if it was not JSON). */
  readonly request: unknown;
  readonly stream: boolean;
  readonly llmRequest?: LlmRequestSummary;
  /** For A2A / MCP calls: the call as an agent message (payload = JSON-RPC params). */
  readonly message?: AgentMessage;
  /** 0 for the first attempt; a guard's re-dispatch within the same span increments it. */
  attempt: number;
  /** Scratch space for the steps (e.g. what the fault step did, for the guard to see). */
  readonly notes: Map<string, unknown>;
}

export interface ExchangeOutcome {
  /** LLM exchanges: what the application received. */
  response?: LlmResponseSummary;
  /** A2A / MCP exchanges: the JSON-RPC result or error the application received, when it was JSON. */
  result?: unknown;
  status?: number;
  errorType?: string;
  durationMs: number;
}

export type Interceptor = Dispatcher.DispatcherComposeInterceptor;

/** An undici dispatch function, as an interceptor receives and returns it. */
export type DispatchFn = (opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => boolean;

// ------------------------------------------------------------------------------------------------ channel

export interface DeliveryContext {
  /** The handoff span. */
  readonly span: Span;
  readonly context: Context;
  readonly channel: string;
  readonly notes: Map<string, unknown>;
}

/**
 * One step between sender and receiver. Call `next(message)` to pass a message on (any number of times, or not at
 * all); return what the receiver gets.
 */
export type DeliverStep = (
  message: AgentMessage,
  ctx: DeliveryContext,
  next: (message: AgentMessage) => Promise<AgentMessage[]>,
) => Promise<AgentMessage[]>;

// ------------------------------------------------------------------------------------------------ config

export interface FaultlineInstrumentationConfig {
  /** Enable at construction, as OpenTelemetry instrumentations do. Default true. */
  enabled?: boolean;
  /** Record gen_ai.input/output.messages, system instructions, tool definitions and message payloads. Default: off,
   * or OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (true | SPAN_ONLY | SPAN_AND_EVENT). */
  captureMessageContent?: boolean;
  /** undici interceptors run inside the GenAI span layer, outermost first (guard step, then fault step). */
  steps?: Interceptor[];
  /** Steps every in-process channel runs, outermost first (guard step, then fault step). */
  channelSteps?: DeliverStep[];
  /** Called once per exchange when it ends, with what the application received (runs detectors online). */
  onExchangeEnd?: (exchange: Exchange, outcome: ExchangeOutcome) => void;
  /** Called once per channel delivery with the original and delivered messages (runs detectors online). */
  onDelivery?: (ctx: DeliveryContext, original: AgentMessage, delivered: AgentMessage[]) => void;
  /** Called for each workflow step, at a workflow's deadline and at its end (runs the workflow monitors online). */
  onWorkflowEvent?: (event: WorkflowEvent) => void;
  /**
   * Extra hosts (`host` or `host:port`) never intercepted. The OTLP export requests of the endpoints in the
   * environment (their signal paths, not the whole host:port) are always excluded.
   */
  ignoreHosts?: string[];
  /** OTLP per-signal export URLs besides those in the environment (e.g. from a configuration file): never intercepted. */
  otlpEndpoints?: string[];
  /**
   * Put each recognised call's trace context (OTEL_PROPAGATORS) on its request headers, unless the application set
   * its own, so an agent in another process continues the trace. Default false: an HTTP instrumentation
   * (instrumentation-undici) usually does it; register turns it on when it runs without one.
   */
  propagateContext?: boolean;
}
