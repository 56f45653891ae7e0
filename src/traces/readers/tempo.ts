/**
 * Grafana Tempo trace-by-id responses: v1 `GET /api/traces/<id>` → `{batches:[ResourceSpans]}`, v2
 * `GET /api/v2/traces/<id>` → `{trace:{resourceSpans}, metrics, status?}` (both gogo JSON: base64 ids, enum names,
 * int64 strings, handled by the OTLP/JSON reader), and v2 with `Accept: application/vnd.grafana.llm` →
 * `{trace:{traceId, services:[{serviceName, scopes:[{name, version, spans}]}]}}` with hex ids and plain attributes.
 * Search results (`/api/search`) list matching traces, not their spans: they are refused with a hint.
 */
import type { SpanRecord } from '../model';
import {
  TraceDataError,
  describe,
  isRecord,
  nanosToMs,
  normId,
  normKind,
  normParentId,
  normStatusCode,
  plainObjectToAttrs,
} from '../normalize';
import { spansOfOtlpDocument } from './otlp-json';

export const format = 'tempo' as const;

export function sniff(topKeys: readonly string[]): boolean {
  return topKeys.includes('batches') || topKeys.includes('trace') || topKeys.includes('traces');
}

/** Tempo search results hold no complete spans. */
export function isSearchResult(doc: unknown): boolean {
  return isRecord(doc) && Array.isArray(doc.traces) && !('batches' in doc) && !('trace' in doc);
}

export const SEARCH_RESULT_HINT =
  'this is a Tempo search result (/api/search): it lists matching traces, not their spans; fetch each trace with GET /api/v2/traces/<traceID> and read that';

function list(v: unknown, path: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new TraceDataError(path, `expected a list, got ${describe(v)}`);
  return v;
}

/** The `application/vnd.grafana.llm` form. */
function* spansOfLlmTrace(trace: Record<string, unknown>, path: string): Generator<SpanRecord> {
  const traceId = normId(trace.traceId, 16, `${path}.traceId`);
  if (traceId === undefined) throw new TraceDataError(`${path}.traceId`, 'missing');
  const services = list(trace.services, `${path}.services`);
  for (let i = 0; i < services.length; i++) {
    const svc = services[i];
    const sp = `${path}.services[${i}]`;
    if (!isRecord(svc)) throw new TraceDataError(sp, `expected a service object, got ${describe(svc)}`);
    const resource = plainObjectToAttrs(svc.resource ?? svc.attributes, `${sp}.resource`);
    if (typeof svc.serviceName === 'string') resource['service.name'] = svc.serviceName;
    const scopes = list(svc.scopes, `${sp}.scopes`);
    for (let j = 0; j < scopes.length; j++) {
      const sc = scopes[j];
      const scp = `${sp}.scopes[${j}]`;
      if (!isRecord(sc)) throw new TraceDataError(scp, `expected a scope object, got ${describe(sc)}`);
      const scope: SpanRecord['scope'] = { name: typeof sc.name === 'string' ? sc.name : '' };
      if (typeof sc.version === 'string' && sc.version !== '') scope.version = sc.version;
      const spans = list(sc.spans, `${scp}.spans`);
      for (let k = 0; k < spans.length; k++) {
        const s = spans[k];
        const p = `${scp}.spans[${k}]`;
        if (!isRecord(s)) throw new TraceDataError(p, `expected a span object, got ${describe(s)}`);
        const spanId = normId(s.spanId, 8, `${p}.spanId`);
        if (spanId === undefined) throw new TraceDataError(`${p}.spanId`, 'missing');
        const status = isRecord(s.status) ? s.status : {};
        const start = nanosToMs(s.startTimeUnixNano, `${p}.startTimeUnixNano`);
        const rec: SpanRecord = {
          traceId,
          spanId,
          name: typeof s.name === 'string' ? s.name : '',
          kind: normKind(s.kind),
          start,
          end:
            s.endTimeUnixNano !== undefined
              ? nanosToMs(s.endTimeUnixNano, `${p}.endTimeUnixNano`)
              : start + Number(s.durationMs ?? 0),
          attributes: plainObjectToAttrs(s.attributes, `${p}.attributes`),
          events: list(s.events, `${p}.events`).map((e, m) => {
            const ep = `${p}.events[${m}]`;
            if (!isRecord(e)) throw new TraceDataError(ep, `expected an event object, got ${describe(e)}`);
            return {
              name: typeof e.name === 'string' ? e.name : '',
              time: nanosToMs(e.timeUnixNano, `${ep}.timeUnixNano`),
              attributes: plainObjectToAttrs(e.attributes, `${ep}.attributes`),
            };
          }),
          links: list(s.links, `${p}.links`).map((l, m) => {
            const lp = `${p}.links[${m}]`;
            if (!isRecord(l)) throw new TraceDataError(lp, `expected a link object, got ${describe(l)}`);
            return {
              traceId: normId(l.traceId, 16, `${lp}.traceId`) ?? traceId,
              spanId: normId(l.spanId, 8, `${lp}.spanId`) ?? '',
              attributes: plainObjectToAttrs(l.attributes, `${lp}.attributes`),
            };
          }),
          status: { code: normStatusCode(status.code) },
          resource,
          scope,
        };
        const parent = normParentId(s.parentSpanId, `${p}.parentSpanId`);
        if (parent !== undefined) rec.parentSpanId = parent;
        if (typeof status.message === 'string' && status.message !== '') rec.status.message = status.message;
        yield rec;
      }
    }
  }
}

/** All spans of a Tempo trace-by-id response. */
export function* spansOfTempoDocument(doc: Record<string, unknown>, base = ''): Generator<SpanRecord> {
  if (isRecord(doc.trace) && 'services' in doc.trace && !('resourceSpans' in doc.trace)) {
    yield* spansOfLlmTrace(doc.trace, `${base}trace`);
    return;
  }
  yield* spansOfOtlpDocument(doc, base);
}
