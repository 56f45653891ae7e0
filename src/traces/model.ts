/**
 * The one span model every trace reader normalises into, and every offline consumer (detectors, diagnosers,
 * evaluation, campaign reports) reads. Plain data: JSON-serialisable, no OTel SDK types.
 */
import {
  ATTR_A2A_METHOD_NAME,
  ATTR_FL_MESSAGE_BOUNDARY,
  ATTR_FL_MESSAGE_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_MCP_METHOD_NAME,
  LLM_OPERATIONS,
} from '../../instrumentation/semconv';

export type AttrScalar = string | number | boolean;
export type AttrValue = AttrScalar | AttrScalar[];
export type Attributes = Record<string, AttrValue>;

export type SpanKindName = 'INTERNAL' | 'SERVER' | 'CLIENT' | 'PRODUCER' | 'CONSUMER' | 'UNSPECIFIED';
export type StatusCodeName = 'UNSET' | 'OK' | 'ERROR';

export interface SpanEventRecord {
  name: string;
  /** Epoch milliseconds (fractional). */
  time: number;
  attributes: Attributes;
}

export interface SpanLinkRecord {
  traceId: string;
  spanId: string;
  attributes: Attributes;
}

export interface SpanRecord {
  /** 32 lowercase hex characters. */
  traceId: string;
  /** 16 lowercase hex characters. */
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: SpanKindName;
  /** Epoch milliseconds (fractional, microsecond precision kept). */
  start: number;
  end: number;
  attributes: Attributes;
  events: SpanEventRecord[];
  links: SpanLinkRecord[];
  status: { code: StatusCodeName; message?: string };
  resource: Attributes;
  scope: { name: string; version?: string };
}

export interface TraceRecord {
  traceId: string;
  /** Sorted by start time, then by span id (stable). */
  spans: SpanRecord[];
}

/**
 * Sort spans by start time in place and return them. The OTel JS SDK stamps span starts from `Date.now()` (whole
 * milliseconds) while durations are sub-millisecond, so sequential siblings often share a start: ties go parent
 * first, then by end time (the earlier call ended first), then by span id (stable).
 */
export function sortSpans(spans: SpanRecord[]): SpanRecord[] {
  return spans.sort(
    (a, b) =>
      a.start - b.start ||
      (a.spanId === b.parentSpanId ? -1 : b.spanId === a.parentSpanId ? 1 : 0) ||
      a.end - b.end ||
      (a.spanId < b.spanId ? -1 : a.spanId > b.spanId ? 1 : 0),
  );
}

export function str(attrs: Attributes, key: string): string | undefined {
  const v = attrs[key];
  return typeof v === 'string' ? v : undefined;
}

export function num(attrs: Attributes, key: string): number | undefined {
  const v = attrs[key];
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
}

export function strList(attrs: Attributes, key: string): string[] | undefined {
  const v = attrs[key];
  if (Array.isArray(v)) return v.map(String);
  if (typeof v === 'string') {
    // Some producers write arrays as JSON strings.
    if (v.startsWith('[')) {
      try {
        const parsed: unknown = JSON.parse(v);
        if (Array.isArray(parsed)) return parsed.map(String);
      } catch {
        /* fall through */
      }
    }
    return [v];
  }
  return undefined;
}

/** An LLM call span: operation chat / text_completion / generate_content. */
export function isLlmSpan(span: SpanRecord): boolean {
  const op = str(span.attributes, ATTR_GEN_AI_OPERATION_NAME);
  return op !== undefined && LLM_OPERATIONS.includes(op);
}

/**
 * A message span: an in-process handoff through faultline's channel, an A2A client call, or an MCP tool call.
 * These are the spans inter-agent message faults land on.
 */
export function isMessageSpan(span: SpanRecord): boolean {
  const a = span.attributes;
  if (a[ATTR_FL_MESSAGE_BOUNDARY] !== undefined || a[ATTR_FL_MESSAGE_ID] !== undefined) return true;
  if (span.kind === 'CLIENT' && (a[ATTR_A2A_METHOD_NAME] !== undefined || a[ATTR_MCP_METHOD_NAME] !== undefined)) return true;
  return false;
}

/** LLM call spans of a trace ordered by start time: `step` is a 1-based index into this list. */
export function llmSpans(trace: TraceRecord): SpanRecord[] {
  return trace.spans.filter(isLlmSpan);
}

/** Message spans of a trace ordered by start time: `step` of a message fault is a 1-based index into this list. */
export function messageSpans(trace: TraceRecord): SpanRecord[] {
  return trace.spans.filter(isMessageSpan);
}

/**
 * The 1-based step of a span: its index among the LLM call spans if it is one, else among the message spans.
 * Returns undefined for any other span.
 */
export function stepOf(trace: TraceRecord, spanId: string): number | undefined {
  const llm = llmSpans(trace);
  const i = llm.findIndex((s) => s.spanId === spanId);
  if (i >= 0) return i + 1;
  const msg = messageSpans(trace);
  const j = msg.findIndex((s) => s.spanId === spanId);
  return j >= 0 ? j + 1 : undefined;
}
