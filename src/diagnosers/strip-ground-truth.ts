/**
 * Ground truth stays out: every attribute whose key, and every event whose name, starts with `faultline.fault.`
 * is removed before any diagnoser sees a trace. Returns a deep copy; the input is not touched (evaluation still
 * reads the truth from it).
 */
import { FAULT_PREFIX } from '../../instrumentation/semconv';
import type { Attributes, SpanRecord, TraceRecord } from '../traces/model';

function stripAttributes(attrs: Attributes): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith(FAULT_PREFIX)) continue;
    out[k] = Array.isArray(v) ? [...v] : v;
  }
  return out;
}

export function stripSpan(span: SpanRecord): SpanRecord {
  const copy: SpanRecord = {
    traceId: span.traceId,
    spanId: span.spanId,
    name: span.name,
    kind: span.kind,
    start: span.start,
    end: span.end,
    attributes: stripAttributes(span.attributes),
    events: span.events
      .filter((e) => !e.name.startsWith(FAULT_PREFIX))
      .map((e) => (e.body === undefined ? { name: e.name, time: e.time, attributes: stripAttributes(e.attributes) } : { name: e.name, time: e.time, attributes: stripAttributes(e.attributes), body: structuredClone(e.body) })),
    links: span.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: stripAttributes(l.attributes) })),
    status: { ...span.status },
    resource: stripAttributes(span.resource),
    scope: { ...span.scope },
  };
  if (span.parentSpanId !== undefined) copy.parentSpanId = span.parentSpanId;
  return copy;
}

export function stripGroundTruth(trace: TraceRecord): TraceRecord {
  return { traceId: trace.traceId, spans: trace.spans.map(stripSpan) };
}

/** True when anything under the ground-truth prefix is left (used by tests and as a guard in the diagnose path). */
export function hasGroundTruth(trace: TraceRecord): boolean {
  const has = (a: Attributes): boolean => Object.keys(a).some((k) => k.startsWith(FAULT_PREFIX));
  return trace.spans.some(
    (s) =>
      has(s.attributes) ||
      has(s.resource) ||
      s.events.some((e) => e.name.startsWith(FAULT_PREFIX) || has(e.attributes)) ||
      s.links.some((l) => has(l.attributes)),
  );
}
