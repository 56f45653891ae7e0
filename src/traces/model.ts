/**
 * The one span model every trace reader normalises into, and every offline consumer (detectors, diagnosers,
 * evaluation, campaign reports) reads. Plain data: JSON-serialisable, no OTel SDK types. What counts as an LLM call
 * or a message step is the view's (src/traces/view), read through src/traces/steps.ts.
 */
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
  /** The body of an OTLP log record joined to its span as an event (plain JSON data), e.g. the message of a
   * `gen_ai.choice` record; span events have none. */
  body?: unknown;
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
  // Exporters mostly write a trace's spans in this order already (every trace of the bench file): then there is
  // nothing to move, and the check costs less than the sort, which sets up its merge state whatever the input. The
  // check is the sort's own first step (it finds the run of spans none of which sorts before the one before it, and
  // a run that covers the list is left as it is), so the result is the sort's even where the tie rules disagree.
  for (let i = 1; i < spans.length; i++) if (spanOrder(spans[i]!, spans[i - 1]!) < 0) return spans.sort(spanOrder);
  return spans;
}

function spanOrder(a: SpanRecord, b: SpanRecord): number {
  return (
    a.start - b.start ||
    (a.spanId === b.parentSpanId ? -1 : b.spanId === a.parentSpanId ? 1 : 0) ||
    a.end - b.end ||
    (a.spanId < b.spanId ? -1 : a.spanId > b.spanId ? 1 : 0)
  );
}

export function str(attrs: Attributes, key: string): string | undefined {
  const v = attrs[key];
  return typeof v === 'string' ? v : undefined;
}

export function num(attrs: Attributes, key: string): number | undefined {
  const v = attrs[key];
  if (typeof v === 'number') return v;
  if (typeof v !== 'string') return undefined;
  // Number() of a blank string is 0, which is no number here; any other string's Number() is parsed once.
  const n = Number(v);
  return Number.isFinite(n) && (n !== 0 || v.trim() !== '') ? n : undefined;
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
