/**
 * Offline detection: observations built from exported spans (the normalised SpanRecord model), the online findings
 * recorded as `faultline.detection` events parsed back, and a walk over a trace that runs the detectors span by span
 * with the task's earlier observations as context. Ground truth (`faultline.fault.*`) is never read.
 *
 * GenAI attributes are written by other producers too, so they are read defensively: `gen_ai.input/output.messages`
 * as JSON strings in the semconv shape, the older indexed `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` forms,
 * `gen_ai.system` for the provider, legacy `prompt_tokens` / `completion_tokens` usage names.
 */
import {
  ATTR_ERROR_TYPE,
  ATTR_FL_DETECTION_CONFIDENCE,
  ATTR_FL_DETECTION_DETECTOR,
  ATTR_FL_DETECTION_EVIDENCE,
  ATTR_FL_DETECTION_FAULT_TYPE,
  ATTR_FL_DETECTION_LOCATION,
  ATTR_FL_DETECTION_SEVERITY,
  ATTR_FL_MESSAGE_BOUNDARY,
  ATTR_FL_MESSAGE_DELIVERED_COUNT,
  ATTR_FL_MESSAGE_DELIVERED_HASHES,
  ATTR_FL_MESSAGE_ID,
  ATTR_FL_MESSAGE_KEYS,
  ATTR_FL_MESSAGE_PAYLOAD,
  ATTR_FL_MESSAGE_PAYLOAD_BYTES,
  ATTR_FL_MESSAGE_PAYLOAD_HASH,
  ATTR_FL_MESSAGE_SESSION_ID,
  ATTR_FL_MESSAGE_SOURCE,
  ATTR_FL_MESSAGE_TARGET,
  ATTR_FL_MESSAGE_TASK_ID,
  ATTR_FL_MESSAGE_VERSION,
  ATTR_FL_RESPONSE_BODY_BYTES,
  ATTR_FL_RESPONSE_CHUNK_COUNT,
  ATTR_FL_RESPONSE_CONTENT_HASH,
  ATTR_FL_RESPONSE_CONTENT_TYPE,
  ATTR_FL_RESPONSE_CREATED,
  ATTR_FL_RESPONSE_DONE,
  ATTR_FL_RESPONSE_MALFORMED_EVENTS,
  ATTR_FL_RESPONSE_OUTPUT_CHARS,
  ATTR_FL_RESPONSE_TOOL_CALL_COUNT,
  ATTR_FL_TASK_ID,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_REQUEST_TEMPERATURE,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
  ATTR_GEN_AI_SYSTEM,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_GEN_AI_TOOL_DEFINITIONS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  EVENT_FL_DETECTION,
} from '../instrumentation/semconv';
import type { AgentMessage, GenAiMessage, GenAiPart, LlmRequestSummary, LlmResponseSummary, ToolCallSummary, ToolDefinition, UsageSummary } from '../instrumentation/types';
import { isFaultType } from '../src/taxonomy';
import { isLlmSpan, isMessageSpan, num, str, strList, type Attributes, type SpanRecord, type TraceRecord } from '../src/traces/model';
import { runDetectors } from './registry';

/** Name of the zero-length child span online detection uses when the exchange span already ended (see online.ts). */
const DETECTION_SPAN_NAME = 'faultline.detection';
import type { DetectionContext, Detector, Finding, FindingLocation, LlmObservation, MessageContract, MessageObservation, Observation, Severity } from './types';

// ------------------------------------------------------------------------------------------------ JSON attributes

function json(attrs: Attributes, key: string): unknown {
  const v = attrs[key];
  if (typeof v !== 'string') return Array.isArray(v) ? v : undefined;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return undefined;
  }
}

function asString(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  return JSON.stringify(v);
}

/** One message in any of the shapes producers write: semconv `{role, parts}`, or `{role, content}`. */
function toMessage(raw: unknown): GenAiMessage | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const m = raw as Record<string, unknown>;
  const role = typeof m.role === 'string' ? m.role : 'user';
  let parts: GenAiPart[] = [];
  if (Array.isArray(m.parts)) parts = m.parts.filter((p): p is GenAiPart => typeof p === 'object' && p !== null && typeof (p as { type?: unknown }).type === 'string');
  else if (typeof m.content === 'string') parts = [{ type: 'text', content: m.content }];
  else if (Array.isArray(m.content)) {
    for (const c of m.content as unknown[]) {
      if (typeof c === 'string') parts.push({ type: 'text', content: c });
      else if (typeof c === 'object' && c !== null && typeof (c as { text?: unknown }).text === 'string') parts.push({ type: 'text', content: (c as { text: string }).text });
    }
  }
  const out: GenAiMessage = { role, parts };
  if (typeof m.finish_reason === 'string') out.finish_reason = m.finish_reason;
  return out;
}

function messagesAttr(attrs: Attributes, key: string): GenAiMessage[] | undefined {
  const v = json(attrs, key);
  if (!Array.isArray(v)) return undefined;
  return v.map(toMessage).filter((m): m is GenAiMessage => m !== undefined);
}

/** The older indexed form: `gen_ai.prompt.0.role`, `gen_ai.prompt.0.content`, `gen_ai.completion.0.tool_calls.0.name` … */
function indexedMessages(attrs: Attributes, prefix: string): GenAiMessage[] | undefined {
  if (attrs[`${prefix}.0.content`] === undefined && attrs[`${prefix}.0.role`] === undefined && attrs[`${prefix}.0.tool_calls.0.name`] === undefined) return undefined;
  const out: GenAiMessage[] = [];
  for (let i = 0; i < 1000; i++) {
    const role = str(attrs, `${prefix}.${i}.role`);
    const content = str(attrs, `${prefix}.${i}.content`);
    if (role === undefined && content === undefined && attrs[`${prefix}.${i}.tool_calls.0.name`] === undefined) break;
    const parts: GenAiPart[] = content !== undefined ? [{ type: 'text', content }] : [];
    for (let j = 0; j < 128; j++) {
      const name = str(attrs, `${prefix}.${i}.tool_calls.${j}.name`);
      if (name === undefined) break;
      parts.push({ type: 'tool_call', id: str(attrs, `${prefix}.${i}.tool_calls.${j}.id`) ?? null, name, arguments: str(attrs, `${prefix}.${i}.tool_calls.${j}.arguments`) ?? '' });
    }
    const m: GenAiMessage = { role: role ?? 'assistant', parts };
    const fr = str(attrs, `${prefix}.${i}.finish_reason`);
    if (fr !== undefined) m.finish_reason = fr;
    out.push(m);
  }
  return out;
}

function textOf(parts: readonly GenAiPart[]): string {
  return parts
    .filter((p) => p.type === 'text')
    .map((p) => asString((p as { content?: unknown }).content))
    .join('');
}

function toolCallsOf(messages: readonly GenAiMessage[]): ToolCallSummary[] {
  const out: ToolCallSummary[] = [];
  for (const m of messages) {
    for (const p of m.parts) {
      if (p.type !== 'tool_call') continue;
      const t = p as { id?: unknown; name?: unknown; arguments?: unknown };
      const call: ToolCallSummary = { name: typeof t.name === 'string' ? t.name : '', arguments: asString(t.arguments) };
      if (typeof t.id === 'string') call.id = t.id;
      out.push(call);
    }
  }
  return out;
}

function toolDefinitions(attrs: Attributes): ToolDefinition[] {
  const v = json(attrs, ATTR_GEN_AI_TOOL_DEFINITIONS);
  if (!Array.isArray(v)) return [];
  const out: ToolDefinition[] = [];
  for (const raw of v) {
    if (typeof raw !== 'object' || raw === null) continue;
    const t = raw as Record<string, unknown>;
    const fn = typeof t.function === 'object' && t.function !== null ? (t.function as Record<string, unknown>) : t; // OpenAI shape too
    if (typeof fn.name !== 'string') continue;
    const def: ToolDefinition = { name: fn.name };
    if (typeof fn.description === 'string') def.description = fn.description;
    const params = fn.parameters ?? fn.input_schema ?? t.input_schema;
    if (params !== undefined) def.parameters = params;
    out.push(def);
  }
  return out;
}

/** Provider finish reasons in one vocabulary-preserving list (string, array or JSON-array string). */
function finishReasons(attrs: Attributes, output: GenAiMessage[] | undefined): string[] {
  const listed = strList(attrs, ATTR_GEN_AI_RESPONSE_FINISH_REASONS);
  if (listed && listed.length > 0) return listed.filter((f) => f !== '');
  return (output ?? []).map((m) => m.finish_reason).filter((f): f is string => typeof f === 'string' && f !== '');
}

// ------------------------------------------------------------------------------------------------ observations

/** An LlmObservation from an LLM span (chat / text_completion / generate_content). */
export function llmObservationFromSpan(span: SpanRecord): LlmObservation {
  const a = span.attributes;
  const input = messagesAttr(a, ATTR_GEN_AI_INPUT_MESSAGES) ?? indexedMessages(a, 'gen_ai.prompt');
  const output = messagesAttr(a, ATTR_GEN_AI_OUTPUT_MESSAGES) ?? indexedMessages(a, 'gen_ai.completion');
  const sys = json(a, ATTR_GEN_AI_SYSTEM_INSTRUCTIONS);
  const system = Array.isArray(sys) ? textOf(sys as GenAiPart[]) : str(a, ATTR_GEN_AI_SYSTEM_INSTRUCTIONS);
  const request: LlmRequestSummary = {
    provider: str(a, ATTR_GEN_AI_PROVIDER_NAME) ?? str(a, ATTR_GEN_AI_SYSTEM) ?? 'unknown',
    operation: str(a, ATTR_GEN_AI_OPERATION_NAME) ?? 'chat',
    stream: a[ATTR_GEN_AI_REQUEST_STREAM] === true || a[ATTR_FL_RESPONSE_CHUNK_COUNT] !== undefined,
    messages: (input ?? []).filter((m) => m.role !== 'system'),
    tools: toolDefinitions(a),
    time: span.start,
  };
  const model = str(a, ATTR_GEN_AI_REQUEST_MODEL);
  if (model !== undefined) request.model = model;
  const maxTokens = num(a, ATTR_GEN_AI_REQUEST_MAX_TOKENS);
  if (maxTokens !== undefined) request.maxTokens = maxTokens;
  const temperature = num(a, ATTR_GEN_AI_REQUEST_TEMPERATURE);
  if (temperature !== undefined) request.temperature = temperature;
  const systemText = system || (input ?? []).filter((m) => m.role === 'system').map((m) => textOf(m.parts)).join('\n');
  if (systemText) request.systemInstructions = systemText;

  const usage: UsageSummary = {};
  const inTok = num(a, ATTR_GEN_AI_USAGE_INPUT_TOKENS) ?? num(a, 'gen_ai.usage.prompt_tokens');
  const outTok = num(a, ATTR_GEN_AI_USAGE_OUTPUT_TOKENS) ?? num(a, 'gen_ai.usage.completion_tokens');
  const cache = num(a, ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS);
  const reasoning = num(a, ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS);
  if (inTok !== undefined) usage.inputTokens = inTok;
  if (outTok !== undefined) usage.outputTokens = outTok;
  if (cache !== undefined) usage.cacheReadInputTokens = cache;
  if (reasoning !== undefined) usage.reasoningOutputTokens = reasoning;

  const hasContent = output !== undefined;
  const response: LlmResponseSummary = {
    finishReasons: finishReasons(a, output),
    text: output ? output.map((m) => textOf(m.parts)).join('') : '',
    toolCalls: output ? toolCallsOf(output) : [],
    durationMs: Math.max(0, span.end - span.start),
  };
  const status = num(a, ATTR_HTTP_RESPONSE_STATUS_CODE);
  if (status !== undefined) response.status = status;
  const id = str(a, ATTR_GEN_AI_RESPONSE_ID);
  if (id !== undefined) response.id = id;
  const rmodel = str(a, ATTR_GEN_AI_RESPONSE_MODEL);
  if (rmodel !== undefined) response.model = rmodel;
  const created = num(a, ATTR_FL_RESPONSE_CREATED);
  if (created !== undefined) response.created = created;
  if (Object.keys(usage).length > 0) response.usage = usage;
  const ct = str(a, ATTR_FL_RESPONSE_CONTENT_TYPE);
  if (ct !== undefined) response.contentType = ct;
  const bytes = num(a, ATTR_FL_RESPONSE_BODY_BYTES);
  if (bytes !== undefined) response.bodyBytes = bytes;
  const chunks = num(a, ATTR_FL_RESPONSE_CHUNK_COUNT);
  if (chunks !== undefined) {
    response.stream = { chunks, done: a[ATTR_FL_RESPONSE_DONE] === true };
    const ttfc = num(a, ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK);
    if (ttfc !== undefined) response.stream.timeToFirstChunkMs = ttfc * 1000;
    const malformed = num(a, ATTR_FL_RESPONSE_MALFORMED_EVENTS);
    if (malformed !== undefined && malformed > 0) response.stream.malformedEvents = malformed;
  }
  const errorType = str(a, ATTR_ERROR_TYPE);
  if (errorType !== undefined && !(status !== undefined && errorType === String(status) && status < 400)) response.errorType = errorType;
  if (a['faultline.response.aborted'] === true) response.aborted = true;

  const obs: LlmObservation = { kind: 'llm', spanId: span.spanId, request, response, hasContent };
  const facts: NonNullable<LlmObservation['facts']> = {};
  const chars = num(a, ATTR_FL_RESPONSE_OUTPUT_CHARS);
  const calls = num(a, ATTR_FL_RESPONSE_TOOL_CALL_COUNT);
  const hash = str(a, ATTR_FL_RESPONSE_CONTENT_HASH);
  if (chars !== undefined) facts.outputChars = chars;
  if (calls !== undefined) facts.toolCallCount = calls;
  if (hash !== undefined) facts.contentHash = hash;
  if (Object.keys(facts).length > 0) obs.facts = facts;
  return obs;
}

/** A MessageObservation from a handoff / A2A / MCP span. The delivered copies are known only by their hashes unless
 * the payload was captured; copies whose hash matches the payload's are the payload. */
export function messageObservationFromSpan(span: SpanRecord): MessageObservation {
  const a = span.attributes;
  const captured = str(a, ATTR_FL_MESSAGE_PAYLOAD);
  let payload: unknown;
  let hasContent = false;
  if (captured !== undefined) {
    try {
      payload = JSON.parse(captured) as unknown;
      hasContent = true;
    } catch {
      payload = captured;
    }
  }
  const message: AgentMessage = {
    id: str(a, ATTR_FL_MESSAGE_ID) ?? str(a, 'a2a.message.id') ?? span.spanId,
    source: str(a, ATTR_FL_MESSAGE_SOURCE) ?? '',
    target: str(a, ATTR_FL_MESSAGE_TARGET) ?? str(a, 'gen_ai.agent.name') ?? str(a, 'gen_ai.tool.name') ?? '',
    payload,
  };
  const boundary = str(a, ATTR_FL_MESSAGE_BOUNDARY);
  if (boundary !== undefined) message.boundary = boundary;
  const task = str(a, ATTR_FL_MESSAGE_TASK_ID);
  if (task !== undefined) message.taskId = task;
  const session = str(a, ATTR_FL_MESSAGE_SESSION_ID) ?? str(a, ATTR_GEN_AI_CONVERSATION_ID);
  if (session !== undefined) message.sessionId = session;
  const version = num(a, ATTR_FL_MESSAGE_VERSION);
  if (version !== undefined) message.version = version;

  const hash = str(a, ATTR_FL_MESSAGE_PAYLOAD_HASH);
  const deliveredHashes = strList(a, ATTR_FL_MESSAGE_DELIVERED_HASHES);
  const count = num(a, ATTR_FL_MESSAGE_DELIVERED_COUNT);
  const delivered: AgentMessage[] = [];
  if (hasContent && deliveredHashes) for (const h of deliveredHashes) if (h === hash) delivered.push(message);
  const facts: NonNullable<MessageObservation['facts']> = {};
  const keys = strList(a, ATTR_FL_MESSAGE_KEYS);
  const bytes = num(a, ATTR_FL_MESSAGE_PAYLOAD_BYTES);
  if (keys !== undefined) facts.keys = keys;
  if (hash !== undefined) facts.payloadHash = hash;
  if (bytes !== undefined) facts.payloadBytes = bytes;
  if (count !== undefined) facts.deliveredCount = count;
  if (deliveredHashes !== undefined) facts.deliveredHashes = deliveredHashes;
  // Offline the original is only known when its content was captured; compare by hash otherwise.
  const obs: MessageObservation = { kind: 'message', spanId: span.spanId, delivered, hasContent: hasContent && delivered.length === (count ?? delivered.length), facts, latencyMs: Math.max(0, span.end - span.start) };
  if (hasContent) obs.original = message;
  return obs;
}

/** The observation a span carries, or undefined for spans that are neither LLM calls nor messages. */
export function observationFromSpan(span: SpanRecord): Observation | undefined {
  if (isLlmSpan(span)) return llmObservationFromSpan(span);
  if (isMessageSpan(span)) return messageObservationFromSpan(span);
  return undefined;
}

// ------------------------------------------------------------------------------------------------ online findings

const SEVERITIES: readonly Severity[] = ['info', 'warning', 'error', 'critical'];

/** The findings recorded online as `faultline.detection` events on this span. */
export function detectionsFromSpan(span: SpanRecord): Finding[] {
  const out: Finding[] = [];
  for (const e of span.events) {
    if (e.name !== EVENT_FL_DETECTION) continue;
    const a = e.attributes;
    const faultType = str(a, ATTR_FL_DETECTION_FAULT_TYPE);
    const detector = str(a, ATTR_FL_DETECTION_DETECTOR);
    if (detector === undefined || !isFaultType(faultType)) continue;
    const sev = str(a, ATTR_FL_DETECTION_SEVERITY) as Severity | undefined;
    const f: Finding = {
      detector,
      faultType,
      severity: sev && SEVERITIES.includes(sev) ? sev : 'warning',
      confidence: num(a, ATTR_FL_DETECTION_CONFIDENCE) ?? 0.5,
      evidence: str(a, ATTR_FL_DETECTION_EVIDENCE) ?? '',
    };
    const location: FindingLocation = { spanId: span.spanId };
    const field = str(a, ATTR_FL_DETECTION_LOCATION);
    if (field !== undefined) location.field = field;
    f.location = location;
    out.push(f);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ trace walk

export interface DetectSpansOptions {
  /** Detector names or instances; default: every registered detector. */
  detectors?: readonly (string | Detector)[];
  contracts?: readonly MessageContract[];
  ttlMs?: number;
  /** Also return the online findings recorded on the spans (default true). */
  includeOnline?: boolean;
}

/** The task a span belongs to: its own / an ancestor's `faultline.task.id`, else the trace. */
function taskOf(span: SpanRecord, byId: Map<string, SpanRecord>): string {
  for (let s: SpanRecord | undefined = span, i = 0; s && i < 64; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined, i++) {
    const t = str(s.attributes, ATTR_FL_TASK_ID);
    if (t !== undefined) return t;
  }
  return span.traceId;
}

/**
 * Run the detectors over every LLM and message span of a trace, in start order, each with the earlier observations of
 * its task as context; merge the online findings recorded on the spans (deduplicated by detector, type and field).
 */
export function detectSpans(trace: TraceRecord, options: DetectSpansOptions = {}): Map<string, Finding[]> {
  const out = new Map<string, Finding[]>();
  const byId = new Map(trace.spans.map((s) => [s.spanId, s]));
  // Detections recorded after the exchange span ended ride on a `faultline.detection` child: credit the parent.
  const carried = new Map<string, Finding[]>();
  for (const s of trace.spans) {
    if (s.name !== DETECTION_SPAN_NAME || s.parentSpanId === undefined) continue;
    const list = carried.get(s.parentSpanId) ?? [];
    for (const f of detectionsFromSpan(s)) list.push({ ...f, location: { ...f.location, spanId: s.parentSpanId } });
    carried.set(s.parentSpanId, list);
  }
  const earlier = new Map<string, Observation[]>();
  for (const span of trace.spans) {
    const obs = observationFromSpan(span);
    if (span.name === DETECTION_SPAN_NAME) continue;
    const online = options.includeOnline === false ? [] : [...detectionsFromSpan(span), ...(carried.get(span.spanId) ?? [])];
    if (!obs && online.length === 0) continue;
    const findings: Finding[] = [];
    if (obs) {
      const task = taskOf(span, byId);
      const prior = earlier.get(task) ?? [];
      const ctx: DetectionContext = { earlier: prior, now: span.end };
      if (options.contracts) ctx.contracts = options.contracts;
      if (options.ttlMs !== undefined) ctx.ttlMs = options.ttlMs;
      findings.push(...runDetectors(obs, ctx, options.detectors));
      prior.push(obs);
      earlier.set(task, prior);
    }
    const seen = new Set(findings.map((f) => `${f.detector}|${f.faultType}|${f.location?.field ?? ''}`));
    for (const f of online) if (!seen.has(`${f.detector}|${f.faultType}|${f.location?.field ?? ''}`)) findings.push(f);
    if (findings.length > 0) out.set(span.spanId, findings);
  }
  return out;
}
