/**
 * Ground truth stays out: every attribute whose key, and every event whose name, starts with `faultline.fault.`
 * is removed before any diagnoser sees a trace. Returns a deep copy; the input is not touched (evaluation still
 * reads the truth from it).
 */
import { FAULT_PREFIX } from '../../instrumentation/semconv';
import type { Attributes, SpanRecord, TraceRecord } from '../traces/model';

function stripAttributes(attrs: Attributes): Attributes {
  const out: Attributes = {};
  for (const k of Object.keys(attrs)) {
    if (k.startsWith(FAULT_PREFIX)) continue;
    const v = attrs[k]!;
    out[k] = Array.isArray(v) ? [...v] : v;
  }
  return out;
}

/**
 * A copy of one span without its ground truth. `resources` holds the copies of the resources already stripped: the
 * spans of one resource share its attributes object, and so do their copies (one copy per resource, not per span).
 */
export function stripSpan(span: SpanRecord, resources?: Map<Attributes, Attributes>): SpanRecord {
  let resource = resources?.get(span.resource);
  if (resource === undefined) {
    resource = stripAttributes(span.resource);
    resources?.set(span.resource, resource);
  }
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
      .map((e) =>
        e.body === undefined
          ? { name: e.name, time: e.time, attributes: stripAttributes(e.attributes) }
          : { name: e.name, time: e.time, attributes: stripAttributes(e.attributes), body: structuredClone(e.body) },
      ),
    links: span.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: stripAttributes(l.attributes) })),
    status: { ...span.status },
    resource,
    scope: { ...span.scope },
  };
  if (span.parentSpanId !== undefined) copy.parentSpanId = span.parentSpanId;
  return copy;
}

export function stripGroundTruth(trace: TraceRecord): TraceRecord {
  const resources = new Map<Attributes, Attributes>();
  return { traceId: trace.traceId, spans: trace.spans.map((s) => stripSpan(s, resources)) };
}

function stripOwnAttributes(attrs: Attributes): void {
  for (const k in attrs) if (k.startsWith(FAULT_PREFIX)) delete attrs[k];
}

/**
 * The same removal done to the trace's own objects, for a trace nothing else reads (the diagnose path over files and
 * workers: the reader made it, the diagnosis is all that is kept). Copying every span's attributes there cost about a
 * tenth of the diagnosis; this visits each key once and allocates only for the rare span that carries ground truth.
 * What a diagnoser sees is exactly what stripGroundTruth would give it (same keys, same order, same values).
 */
export function stripOwnGroundTruth(trace: TraceRecord): TraceRecord {
  const resources = new Set<Attributes>();
  for (const span of trace.spans) {
    if (!resources.has(span.resource)) {
      resources.add(span.resource);
      stripOwnAttributes(span.resource);
    }
    stripOwnAttributes(span.attributes);
    if (span.events.some((e) => e.name.startsWith(FAULT_PREFIX)))
      span.events = span.events.filter((e) => !e.name.startsWith(FAULT_PREFIX));
    for (const e of span.events) stripOwnAttributes(e.attributes);
    for (const l of span.links) stripOwnAttributes(l.attributes);
  }
  return trace;
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
