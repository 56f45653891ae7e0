/** ReadableSpans of the real OTel SDK → the normalised TraceRecords every offline consumer reads. */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { HrTime } from '@opentelemetry/api';
import {
  sortSpans,
  type AttrValue,
  type Attributes,
  type SpanKindName,
  type SpanRecord,
  type TraceRecord,
} from '../../src/traces/model';

const KINDS: SpanKindName[] = ['INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];

const ms = (t: HrTime): number => t[0] * 1000 + t[1] / 1e6;

function attrs(a: Record<string, unknown> | undefined): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(a ?? {})) {
    if (v === undefined || v === null) continue;
    out[k] = (Array.isArray(v) ? v.filter((x) => x !== null && x !== undefined) : v) as AttrValue;
  }
  return out;
}

export function spanRecord(s: ReadableSpan): SpanRecord {
  const ctx = s.spanContext();
  const rec: SpanRecord = {
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    name: s.name,
    kind: KINDS[s.kind] ?? 'UNSPECIFIED',
    start: ms(s.startTime),
    end: ms(s.endTime),
    attributes: attrs(s.attributes),
    events: s.events.map((e) => ({ name: e.name, time: ms(e.time), attributes: attrs(e.attributes) })),
    links: s.links.map((l) => ({
      traceId: l.context.traceId,
      spanId: l.context.spanId,
      attributes: attrs(l.attributes),
    })),
    status: {
      code: s.status.code === 2 ? 'ERROR' : s.status.code === 1 ? 'OK' : 'UNSET',
      ...(s.status.message ? { message: s.status.message } : {}),
    },
    resource: attrs(s.resource.attributes),
    scope: {
      name: s.instrumentationScope.name,
      ...(s.instrumentationScope.version ? { version: s.instrumentationScope.version } : {}),
    },
  };
  const parent = s.parentSpanContext?.spanId;
  if (parent) rec.parentSpanId = parent;
  return rec;
}

export function toTraces(spans: readonly ReadableSpan[]): TraceRecord[] {
  const by = new Map<string, SpanRecord[]>();
  for (const s of spans) {
    const r = spanRecord(s);
    const list = by.get(r.traceId) ?? [];
    list.push(r);
    by.set(r.traceId, list);
  }
  return [...by.entries()].map(([traceId, list]) => ({ traceId, spans: sortSpans(list) }));
}
