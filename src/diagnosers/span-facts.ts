/**
 * Reads what a diagnoser needs from one span, defensively: faultline's own content-free facts when present, else
 * the GenAI conventions any other producer writes (finish reasons as array or JSON string, legacy token names,
 * content in gen_ai.output.messages JSON).
 */
import {
  ATTR_ERROR_TYPE,
  ATTR_FL_DETECTION_CONFIDENCE,
  ATTR_FL_DETECTION_DETECTOR,
  ATTR_FL_DETECTION_EVIDENCE,
  ATTR_FL_DETECTION_FAULT_TYPE,
  ATTR_FL_RESPONSE_ABORTED,
  ATTR_FL_RESPONSE_CHUNK_COUNT,
  ATTR_FL_RESPONSE_DONE,
  ATTR_FL_RESPONSE_OUTPUT_CHARS,
  ATTR_FL_RESPONSE_TOOL_CALL_COUNT,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  ATTR_FL_GUARD_ACTION,
  ATTR_FL_MESSAGE_DELIVERED_CHANGES,
  ATTR_FL_MESSAGE_DELIVERED_IDS,
  ATTR_FL_MESSAGE_DELIVERED_PAYLOADS,
  ATTR_FL_MESSAGE_DELIVERED_SESSION_IDS,
  ATTR_FL_MESSAGE_DELIVERED_TASK_IDS,
  ATTR_FL_MESSAGE_DELIVERED_VERSIONS,
  ATTR_FL_MESSAGE_ID,
  ATTR_FL_MESSAGE_PAYLOAD,
  ATTR_FL_MESSAGE_SESSION_ID,
  ATTR_FL_MESSAGE_VERSION,
  ATTR_FL_GUARD_REASON,
  EVENT_FL_DETECTION,
  EVENT_FL_GUARD,
} from '../../instrumentation/semconv';
import { payloadChanges } from '../../instrumentation/agents/message';
import { isFaultType, type FaultType } from '../taxonomy';
import { num, str, strList, type SpanRecord } from '../traces/model';

export interface OutputFacts {
  /** Characters of text output, when known (faultline fact or counted from gen_ai.output.messages). */
  chars?: number;
  toolCalls?: number;
  /** Text of the output, when content was captured (first choice). */
  text?: string;
}

export interface DetectionEvent {
  detector: string;
  faultType: FaultType;
  confidence: number;
  evidence: string;
}

export function durationMs(span: SpanRecord): number {
  return Math.max(0, span.end - span.start);
}

export function finishReasons(span: SpanRecord): string[] {
  const fromAttr = strList(span.attributes, ATTR_GEN_AI_RESPONSE_FINISH_REASONS);
  if (fromAttr && fromAttr.length > 0) return fromAttr.map((r) => r.toLowerCase());
  const msgs = outputMessages(span);
  return msgs.map((m) => (typeof m.finish_reason === 'string' ? m.finish_reason.toLowerCase() : '')).filter((r) => r !== '');
}

export function outputTokens(span: SpanRecord): number | undefined {
  return num(span.attributes, ATTR_GEN_AI_USAGE_OUTPUT_TOKENS) ?? num(span.attributes, 'gen_ai.usage.completion_tokens');
}

export function inputTokens(span: SpanRecord): number | undefined {
  return num(span.attributes, ATTR_GEN_AI_USAGE_INPUT_TOKENS) ?? num(span.attributes, 'gen_ai.usage.prompt_tokens');
}

export function model(span: SpanRecord): string | undefined {
  return str(span.attributes, ATTR_GEN_AI_RESPONSE_MODEL) ?? str(span.attributes, ATTR_GEN_AI_REQUEST_MODEL);
}

export function agentName(span: SpanRecord, byId: Map<string, SpanRecord>): string | undefined {
  // The nearest ancestor-or-self naming an agent; else the service.
  let cur: SpanRecord | undefined = span;
  for (let depth = 0; cur && depth < 32; depth++) {
    const name = str(cur.attributes, ATTR_GEN_AI_AGENT_NAME);
    if (name !== undefined) return name;
    cur = cur.parentSpanId ? byId.get(cur.parentSpanId) : undefined;
  }
  return str(span.resource, 'service.name');
}

interface LooseMessage {
  role?: unknown;
  parts?: unknown;
  finish_reason?: unknown;
  content?: unknown;
}

function parseJsonArray(v: unknown): LooseMessage[] {
  if (Array.isArray(v)) {
    // An array attribute of JSON strings (one message per entry) is also seen in the wild.
    return v.flatMap((x) => (typeof x === 'string' ? parseJsonArray(x) : typeof x === 'object' && x !== null ? [x as LooseMessage] : []));
  }
  if (typeof v !== 'string' || v === '') return [];
  try {
    const parsed: unknown = JSON.parse(v);
    if (Array.isArray(parsed)) return parsed.filter((m): m is LooseMessage => typeof m === 'object' && m !== null);
    if (typeof parsed === 'object' && parsed !== null) return [parsed as LooseMessage];
  } catch {
    /* not JSON: ignore */
  }
  return [];
}

const parsedOutput = new WeakMap<SpanRecord, LooseMessage[]>();

/** gen_ai.output.messages, parsed once per span (several rules read it). */
export function outputMessages(span: SpanRecord): LooseMessage[] {
  let msgs = parsedOutput.get(span);
  if (!msgs) {
    msgs = parseJsonArray(span.attributes[ATTR_GEN_AI_OUTPUT_MESSAGES]);
    parsedOutput.set(span, msgs);
  }
  return msgs;
}

export function inputMessages(span: SpanRecord): LooseMessage[] {
  return parseJsonArray(span.attributes['gen_ai.input.messages']);
}

/** Text of a semconv message (text parts joined), or a legacy `content` string. */
export function messageText(m: LooseMessage): string {
  if (Array.isArray(m.parts)) {
    return m.parts
      .map((p: unknown) => {
        if (typeof p !== 'object' || p === null) return '';
        const part = p as { type?: unknown; content?: unknown; text?: unknown };
        if (part.type === 'text' || part.type === undefined) {
          return typeof part.content === 'string' ? part.content : typeof part.text === 'string' ? part.text : '';
        }
        return '';
      })
      .join('');
  }
  return typeof m.content === 'string' ? m.content : '';
}

function toolCallParts(m: LooseMessage): number {
  if (!Array.isArray(m.parts)) return 0;
  return m.parts.filter((p: unknown) => typeof p === 'object' && p !== null && (p as { type?: unknown }).type === 'tool_call').length;
}

export function outputFacts(span: SpanRecord): OutputFacts {
  const facts: OutputFacts = {};
  const chars = num(span.attributes, ATTR_FL_RESPONSE_OUTPUT_CHARS);
  const tools = num(span.attributes, ATTR_FL_RESPONSE_TOOL_CALL_COUNT);
  const msgs = outputMessages(span);
  if (msgs.length > 0) {
    // First choice only: n>1 responses report one message per choice.
    const first = msgs[0]!;
    facts.text = messageText(first);
    facts.chars = chars ?? facts.text.length;
    facts.toolCalls = tools ?? toolCallParts(first);
  } else {
    if (chars !== undefined) facts.chars = chars;
    if (tools !== undefined) facts.toolCalls = tools;
  }
  return facts;
}

export function errorType(span: SpanRecord): string | undefined {
  return str(span.attributes, ATTR_ERROR_TYPE) ?? (typeof span.attributes[ATTR_ERROR_TYPE] === 'number' ? String(span.attributes[ATTR_ERROR_TYPE]) : undefined);
}

export function httpStatus(span: SpanRecord): number | undefined {
  return num(span.attributes, ATTR_HTTP_RESPONSE_STATUS_CODE) ?? num(span.attributes, 'http.status_code');
}

export function rpcStatus(span: SpanRecord): string | undefined {
  const v = span.attributes[ATTR_RPC_RESPONSE_STATUS_CODE];
  return v === undefined ? undefined : String(v);
}

export function streamFacts(span: SpanRecord): { stream: boolean; done?: boolean; chunks?: number; aborted: boolean } {
  const a = span.attributes;
  const done = a[ATTR_FL_RESPONSE_DONE];
  const chunks = num(a, ATTR_FL_RESPONSE_CHUNK_COUNT);
  return {
    stream: a[ATTR_GEN_AI_REQUEST_STREAM] === true || a[ATTR_GEN_AI_REQUEST_STREAM] === 'true',
    ...(done !== undefined ? { done: done === true || done === 'true' } : {}),
    ...(chunks !== undefined ? { chunks } : {}),
    aborted: a[ATTR_FL_RESPONSE_ABORTED] === true || a[ATTR_FL_RESPONSE_ABORTED] === 'true',
  };
}

/** The online detectors' findings recorded on the span as `faultline.detection` events. */
export function detectionEvents(span: SpanRecord): DetectionEvent[] {
  const out: DetectionEvent[] = [];
  for (const e of span.events) {
    if (e.name !== EVENT_FL_DETECTION) continue;
    const t = e.attributes[ATTR_FL_DETECTION_FAULT_TYPE];
    if (!isFaultType(t) || t === 'none') continue;
    const c = num(e.attributes, ATTR_FL_DETECTION_CONFIDENCE);
    out.push({
      detector: str(e.attributes, ATTR_FL_DETECTION_DETECTOR) ?? 'detector',
      faultType: t,
      confidence: c === undefined ? 0.8 : Math.min(1, Math.max(0, c)),
      evidence: str(e.attributes, ATTR_FL_DETECTION_EVIDENCE) ?? '',
    });
  }
  return out;
}

export interface GuardEvent {
  action: string;
  reason: string;
}

/** The guards' `faultline.guard` events: what a protection did on this span (recovered faults leave these). */
export function guardEvents(span: SpanRecord): GuardEvent[] {
  return span.events
    .filter((e) => e.name === EVENT_FL_GUARD)
    .map((e) => ({ action: str(e.attributes, ATTR_FL_GUARD_ACTION) ?? '', reason: str(e.attributes, ATTR_FL_GUARD_REASON) ?? '' }));
}

const TIMEOUT_RE = /time[_ -]?out|timedout|etimedout|deadline|headers_timeout|body_timeout|connect_timeout|\b408\b|\b504\b/i;

/** Whether an error type / status message names a timeout or an exceeded deadline. */
export function looksLikeTimeout(...texts: (string | undefined)[]): boolean {
  return texts.some((t) => t !== undefined && TIMEOUT_RE.test(t));
}

/** What a message span says the receiver got, beyond count and hashes (recorded only when a copy differed). */
export interface DeliveredFacts {
  /** The message id as sent, and per delivered copy (only when some copy carries another id). */
  sentId?: string;
  ids?: string[];
  sentSession?: string;
  sessionIds?: string[];
  sentVersion?: number;
  versions?: (number | undefined)[];
  /** Per delivered copy (only when some copy is bound to another task than the message as sent). */
  taskIds?: string[];
  /** Structural changes of the first copy whose payload differs (`op:path`), recorded or computed from content. */
  changes?: string[];
}

function parseJson(text: string | undefined): { ok: boolean; value?: unknown } {
  if (text === undefined || text === '') return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/**
 * The delivered facts of a message span. The content-free `delivered_changes` when recorded; else, when content
 * was captured (`payload` and `delivered_payloads`), the same changes computed from the content.
 */
export function deliveredFacts(span: SpanRecord): DeliveredFacts {
  const a = span.attributes;
  const facts: DeliveredFacts = {};
  const sentId = str(a, ATTR_FL_MESSAGE_ID);
  if (sentId !== undefined) facts.sentId = sentId;
  const ids = strList(a, ATTR_FL_MESSAGE_DELIVERED_IDS);
  if (ids) facts.ids = ids;
  const sentSession = str(a, ATTR_FL_MESSAGE_SESSION_ID);
  if (sentSession !== undefined) facts.sentSession = sentSession;
  const sessions = strList(a, ATTR_FL_MESSAGE_DELIVERED_SESSION_IDS);
  if (sessions) facts.sessionIds = sessions;
  const tasks = strList(a, ATTR_FL_MESSAGE_DELIVERED_TASK_IDS);
  if (tasks) facts.taskIds = tasks;
  const sentVersion = num(a, ATTR_FL_MESSAGE_VERSION);
  if (sentVersion !== undefined) facts.sentVersion = sentVersion;
  const versions = strList(a, ATTR_FL_MESSAGE_DELIVERED_VERSIONS);
  if (versions) facts.versions = versions.map((v) => (v === '' || !Number.isFinite(Number(v)) ? undefined : Number(v)));
  const changes = strList(a, ATTR_FL_MESSAGE_DELIVERED_CHANGES);
  if (changes) {
    facts.changes = changes;
  } else {
    const sent = parseJson(str(a, ATTR_FL_MESSAGE_PAYLOAD));
    const got = strList(a, ATTR_FL_MESSAGE_DELIVERED_PAYLOADS);
    if (sent.ok && got) {
      for (const text of got) {
        const d = parseJson(text);
        if (!d.ok) continue;
        const c = payloadChanges(sent.value, d.value);
        if (c.length > 0) {
          facts.changes = c;
          break;
        }
      }
    }
  }
  return facts;
}
