/**
 * The one reading of a trace's spans that every offline consumer (the detectors' observations, the diagnosers, the
 * LLM diagnoser's rendering) reads instead of raw attributes. Plain data built by `viewTrace` (index.ts).
 */
import type { UsageSummary } from '../../../instrumentation/types';
import type { SpanRecord, TraceRecord } from '../model';
import type { GenAiMessage, ToolCallPart, ToolDefinition } from './content';
import type { SpanFailure } from './failure';
import type { MessageExchange, MessageFacts } from './message';

/** Whose attribute names the span was read from (for evidence and the LLM rendering; rules never branch on it). */
export type Convention = 'genai' | 'openinference' | 'openllmetry' | 'faultline';

export type { SpanFailure } from './failure';

/** Content-free facts faultline's own span layer records; used when present, never required. */
export interface FaultlineFacts {
  outputChars?: number;
  toolCallCount?: number;
  contentHash?: string;
  bodyBytes?: number;
  contentType?: string;
  created?: number;
  chunks?: number;
  /** Whether the stream reached its terminal event. */
  done?: boolean;
  aborted?: boolean;
  malformedEvents?: number;
  /** The SDK's own count of this request's earlier attempts (`x-stainless-retry-count`), and its message count. */
  retryCount?: number;
  messageCount?: number;
  /** Verdicts made at capture time, without the content (instrumentation/providers/verdicts.ts): per tool call, in
   * order, `ok` / `failed` (arguments parse as JSON), `valid` / `invalid` / `undeclared` / `no_schema` / `unparsed`
   * against the request's declaration, and the first breach as `keyword path` ('' when none). */
  argumentsParse?: string[];
  toolSchema?: string[];
  toolSchemaIssue?: string[];
  /** Garbled characters in the text or arguments: `replacement_char`, `mojibake`. */
  garbled?: string[];
  /** The text was blank (empty or whitespace only) and no tool call came. */
  blank?: boolean;
  /** A structured answer against the request's response_format schema: `valid` / `invalid` / `unparsed`, and the
   * first breach. */
  responseSchema?: string;
  responseSchemaIssue?: string;
}

/** A named unit of work that LLM calls and tools run under: an agent, a workflow, a task / chain node. */
export interface AgentSpan {
  span: SpanRecord;
  name: string;
  kind: 'agent' | 'workflow' | 'task';
}

export interface LlmCall {
  kind: 'llm';
  span: SpanRecord;
  /** 1-based index among the trace's LLM calls in start order. */
  step: number;
  /** chat / text_completion / generate_content. */
  operation: string;
  convention: Convention;
  provider?: string;
  requestModel?: string;
  responseModel?: string;
  /** Whether the response was streamed, when the span says. */
  stream?: boolean;
  maxTokens?: number;
  temperature?: number;
  /** Input messages (system instructions excluded) and output messages (one per choice), when content was captured. */
  input?: GenAiMessage[];
  system?: string;
  output?: GenAiMessage[];
  /** Output content was captured: `text` and `toolCalls` are what the model returned (even when empty). */
  hasContent: boolean;
  /** Text of the first choice ('' when unknown). */
  text: string;
  toolCalls: ToolCallPart[];
  /** Characters of text output and tool-call count of the first choice, when known (content or faultline facts). */
  outputChars?: number;
  toolCallCount?: number;
  tools: ToolDefinition[];
  /** The JSON Schema the request asked the answer to follow (`response_format: {type: 'json_schema'}`), when the
   * producer kept the request's parameters. */
  responseSchema?: unknown;
  /** Finish reasons as recorded (provider vocabulary, original case). */
  finishReasons: string[];
  /** The producer recorded finish reasons for this call (an empty list counts): a missing one then means none came. */
  finishReasonsRecorded: boolean;
  usage: UsageSummary;
  responseId?: string;
  /** Provider `created` time, epoch seconds. */
  created?: number;
  timeToFirstChunkMs?: number;
  durationMs: number;
  failure?: SpanFailure;
  /** The nearest agent (or workflow / task) this call ran under. */
  agent?: AgentSpan;
  faultline?: FaultlineFacts;
}

/** A tool execution: `execute_tool`, OpenLLMetry `tool`, OpenInference `TOOL`. */
export interface ToolStep {
  kind: 'tool';
  span: SpanRecord;
  name: string;
  callId?: string;
  arguments?: string;
  result?: string;
  failure?: SpanFailure;
  agent?: AgentSpan;
}

export interface MessageStep {
  kind: 'message';
  span: SpanRecord;
  /** 1-based index among the trace's message spans in start order. */
  step: number;
  agent?: AgentSpan;
  /** What the message span says about the message and what its end saw (src/traces/view/message.ts). */
  facts: MessageFacts;
}

export type Step = LlmCall | MessageStep;

export interface TraceView {
  trace: TraceRecord;
  byId: ReadonlyMap<string, SpanRecord>;
  /** LLM calls in start order (a wrapper span around another LLM span is not a call of its own). */
  llm: LlmCall[];
  /** Message spans, one step each (either end of a message). */
  messages: MessageStep[];
  /** The messages themselves, each span's ends joined (a send and what arrived), in causal order. */
  exchanges: MessageExchange[];
  tools: ToolStep[];
  agents: AgentSpan[];
  /** LLM calls and messages in start order: the spans a fault can be placed on. */
  steps: Step[];
  /** Spans online detection hung under an exchange span that had ended (credited to that parent). */
  detectionChildren: ReadonlyMap<string, SpanRecord[]>;
  /** The step, tool or agent reading of a span, by span id. */
  llmOf(spanId: string): LlmCall | undefined;
  /** The message a message span is an end of. */
  exchangeOf(spanId: string): MessageExchange | undefined;
  agentOf(span: SpanRecord): AgentSpan | undefined;
  failureOf(span: SpanRecord): SpanFailure | undefined;
}
