/**
 * OTLP/JSON (ExportTraceServiceRequest / TracesData): `{resourceSpans:[{resource, scopeSpans:[{scope, spans}]}]}`.
 * Accepts every flavour seen in practice: hex or base64 ids, int64 as strings or numbers, enums as integers or
 * names, the pre-1.0 `instrumentationLibrarySpans`, Tempo's `batches` and `trace.resourceSpans` wrappers and
 * Jaeger v3's `result.resourceSpans` wrapper.
 */
import type { Attributes, SpanRecord } from '../model';
import type { JsonPath } from '../json-stream';
import { ObjectMemo } from '../../memo';
import {
  TraceDataError,
  describe,
  isRecord,
  keyValuesToAttrs,
  nanosToMs,
  normId,
  normKind,
  normParentId,
  normStatusCode,
  under,
} from '../normalize';

export const format = 'otlp-json' as const;

/** Top-level keys that hold a list of ResourceSpans, directly or one level down. */
const RS_KEYS = ['resourceSpans', 'batches'];
const SS_KEYS = ['scopeSpans', 'instrumentationLibrarySpans'];
const WRAPPERS = ['trace', 'result'];

/** Claims a JSON document whose top-level keys say OTLP (including the Jaeger v3 `result` wrapper). */
export function sniff(topKeys: readonly string[]): boolean {
  return topKeys.includes('resourceSpans') || topKeys.includes('result');
}

/** The list of ResourceSpans in a document and its JSON path, or undefined if the document has none. */
export function resourceSpansOf(doc: Record<string, unknown>): { list: unknown; path: string } | undefined {
  for (const k of RS_KEYS) if (k in doc) return { list: doc[k], path: k };
  for (const w of WRAPPERS) {
    const inner = doc[w];
    if (isRecord(inner)) for (const k of RS_KEYS) if (k in inner) return { list: inner[k], path: `${w}.${k}` };
  }
  return undefined;
}

export interface ScopeInfo {
  name: string;
  version?: string;
}

export function scopeOf(ss: Record<string, unknown>): ScopeInfo {
  const s = isRecord(ss.scope) ? ss.scope : isRecord(ss.instrumentationLibrary) ? ss.instrumentationLibrary : {};
  const out: ScopeInfo = { name: typeof s.name === 'string' ? s.name : '' };
  if (typeof s.version === 'string' && s.version !== '') out.version = s.version;
  return out;
}

export function resourceOf(rs: Record<string, unknown>, path: string): Attributes {
  const r = rs.resource;
  return isRecord(r) ? keyValuesToAttrs(r.attributes, `${path}.resource.attributes`) : {};
}

/** One OTLP/JSON span → SpanRecord. */
export function spanFromOtlp(span: unknown, resource: Attributes, scope: ScopeInfo, path: string): SpanRecord {
  try {
    return otlpSpan(span, resource, scope);
  } catch (err) {
    throw under(path, err);
  }
}

/** spanFromOtlp with paths relative to the span (built only when a value is bad: this runs once per span). */
function otlpSpan(span: unknown, resource: Attributes, scope: ScopeInfo): SpanRecord {
  if (!isRecord(span)) throw new TraceDataError('', `expected a span object, got ${describe(span)}`);
  const traceId = normId(span.traceId, 16, '.traceId');
  const spanId = normId(span.spanId, 8, '.spanId');
  if (traceId === undefined) throw new TraceDataError('.traceId', 'missing');
  if (spanId === undefined) throw new TraceDataError('.spanId', 'missing');
  const status = isRecord(span.status) ? span.status : NO_STATUS;
  // Read in the record's field order, so that of several bad values the first is reported.
  const name = typeof span.name === 'string' ? span.name : '';
  const kind = normKind(span.kind);
  const start = nanosToMs(span.startTimeUnixNano, '.startTimeUnixNano');
  const end = nanosToMs(span.endTimeUnixNano, '.endTimeUnixNano');
  const attributes = keyValuesToAttrs(span.attributes, '.attributes');
  const events = eventsOf(span.events);
  const links = linksOf(span.links);
  const code = normStatusCode(status.code);
  const parentSpanId = parentOf(span.parentSpanId);
  // The parent id is the last field when there is one. Made in one literal, a span with a parent (most spans) is
  // one object; a field added after it would give it a second store for its fields, held as long as the span.
  const rec: SpanRecord =
    parentSpanId === undefined
      ? { traceId, spanId, name, kind, start, end, attributes, events, links, status: { code }, resource, scope }
      : {
          traceId,
          spanId,
          name,
          kind,
          start,
          end,
          attributes,
          events,
          links,
          status: { code },
          resource,
          scope,
          parentSpanId,
        };
  if (typeof status.message === 'string' && status.message !== '') rec.status.message = status.message;
  return rec;
}

function parentOf(v: unknown): string | undefined {
  return v !== undefined && v !== '' ? normParentId(v, '.parentSpanId') : undefined;
}

const NO_STATUS: Record<string, unknown> = {};

/**
 * `span` holding the same strings as `prev`, the span read before it, where they are equal: its trace id and name,
 * and its parent id (a child often comes right after its parent, and siblings share a parent). A trace's spans come
 * in runs, and every span keeps these for as long as its trace is open (the idle window): one string instead of one
 * per span is less for every garbage collection to copy.
 */
function shareStrings(span: SpanRecord, prev: SpanRecord | undefined): SpanRecord {
  if (prev === undefined) return span;
  if (span.traceId === prev.traceId) span.traceId = prev.traceId;
  if (span.name === prev.name) span.name = prev.name;
  const parent = span.parentSpanId;
  if (parent === undefined) return span;
  if (parent === prev.parentSpanId) span.parentSpanId = prev.parentSpanId;
  else if (parent === prev.spanId) span.parentSpanId = prev.spanId;
  return span;
}

function eventsOf(v: unknown): SpanRecord['events'] {
  const list = listOf(v, '.events');
  if (list.length === 0) return [];
  const out: SpanRecord['events'] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    try {
      if (!isRecord(e)) throw new TraceDataError('', `expected an event object, got ${describe(e)}`);
      out[i] = {
        name: typeof e.name === 'string' ? e.name : '',
        time: nanosToMs(e.timeUnixNano, '.timeUnixNano'),
        attributes: keyValuesToAttrs(e.attributes, '.attributes'),
      };
    } catch (err) {
      throw under(`.events[${i}]`, err);
    }
  }
  return out;
}

function linksOf(v: unknown): SpanRecord['links'] {
  const list = listOf(v, '.links');
  if (list.length === 0) return [];
  const out: SpanRecord['links'] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const l = list[i];
    try {
      if (!isRecord(l)) throw new TraceDataError('', `expected a link object, got ${describe(l)}`);
      out[i] = {
        traceId: normId(l.traceId, 16, '.traceId') ?? '',
        spanId: normId(l.spanId, 8, '.spanId') ?? '',
        attributes: keyValuesToAttrs(l.attributes, '.attributes'),
      };
    } catch (err) {
      throw under(`.links[${i}]`, err);
    }
  }
  return out;
}

const NO_ITEMS: unknown[] = [];

function listOf(v: unknown, path: string): unknown[] {
  if (v === undefined || v === null) return NO_ITEMS;
  if (!Array.isArray(v)) throw new TraceDataError(path, `expected a list, got ${describe(v)}`);
  return v;
}

/**
 * The spans of an OTLP/JSON document appended to `out` (what spansOfOtlpDocument yields, without a generator step per
 * span: the JSON-lines fast path). On a bad value, nothing of the document is appended.
 */
export function appendOtlpSpans(doc: Record<string, unknown>, out: SpanRecord[], base = ''): void {
  const found = resourceSpansOf(doc);
  if (found === undefined) return;
  const before = out.length;
  const path = base + found.path;
  const list = listOf(found.list, path);
  try {
    for (let i = 0; i < list.length; i++) {
      const rs = list[i];
      const rsPath = `${path}[${i}]`;
      if (!isRecord(rs)) throw new TraceDataError(rsPath, `expected a ResourceSpans object, got ${describe(rs)}`);
      const resource = resourceOf(rs, rsPath);
      const ssKey = 'scopeSpans' in rs ? 'scopeSpans' : (SS_KEYS.find((k) => k in rs) ?? 'scopeSpans');
      const ssList = listOf(rs[ssKey], `${rsPath}.${ssKey}`);
      for (let j = 0; j < ssList.length; j++) {
        const ss = ssList[j];
        if (!isRecord(ss))
          throw new TraceDataError(`${rsPath}.${ssKey}[${j}]`, `expected a ScopeSpans object, got ${describe(ss)}`);
        const scope = scopeOf(ss);
        const spans = listOf(ss.spans, `${rsPath}.${ssKey}[${j}].spans`);
        for (let k = 0; k < spans.length; k++) {
          try {
            out.push(shareStrings(otlpSpan(spans[k], resource, scope), out[out.length - 1]));
          } catch (err) {
            throw under(`${rsPath}.${ssKey}[${j}].spans[${k}]`, err);
          }
        }
      }
    }
  } catch (err) {
    out.length = before;
    throw err;
  }
}

/** The spans of one ResourceSpans element. */
export function* spansOfResourceSpans(rs: unknown, path: string): Generator<SpanRecord> {
  if (!isRecord(rs)) throw new TraceDataError(path, `expected a ResourceSpans object, got ${describe(rs)}`);
  const resource = resourceOf(rs, path);
  const ssKey = 'scopeSpans' in rs ? 'scopeSpans' : (SS_KEYS.find((k) => k in rs) ?? 'scopeSpans');
  const list = listOf(rs[ssKey], `${path}.${ssKey}`);
  for (let j = 0; j < list.length; j++) {
    const ss = list[j];
    if (!isRecord(ss))
      throw new TraceDataError(`${path}.${ssKey}[${j}]`, `expected a ScopeSpans object, got ${describe(ss)}`);
    const scope = scopeOf(ss);
    const spans = listOf(ss.spans, `${path}.${ssKey}[${j}].spans`);
    for (let k = 0; k < spans.length; k++) {
      let rec: SpanRecord;
      try {
        rec = otlpSpan(spans[k], resource, scope);
      } catch (err) {
        throw under(`${path}.${ssKey}[${j}].spans[${k}]`, err);
      }
      yield rec;
    }
  }
}

/** All spans of an OTLP/JSON document (or of one of the wrappers around its resourceSpans). */
export function* spansOfOtlpDocument(doc: Record<string, unknown>, base = ''): Generator<SpanRecord> {
  const found = resourceSpansOf(doc);
  if (found === undefined) return;
  const path = base + found.path;
  const list = listOf(found.list, path);
  for (let i = 0; i < list.length; i++) yield* spansOfResourceSpans(list[i], `${path}[${i}]`);
}

function isRsPath(path: JsonPath, at: number): boolean {
  // [...prefix, rsKey, i] with an optional wrapper (trace / result) as prefix
  if (at !== 1 && at !== 2) return false;
  if (at === 2 && !WRAPPERS.includes(path[0] as string)) return false;
  return RS_KEYS.includes(path[at - 1] as string) && typeof path[at] === 'number';
}

/**
 * Streaming selection (see json-stream.ts): a span is handed out as soon as it is complete if its resource and
 * scope were already seen (producers write them first, in protobuf field order); otherwise it stays in its
 * ResourceSpans, which is handed out whole when it closes. Memory stays bounded by one ResourceSpans element in
 * the worst case, one span in the usual one.
 */
export function selectOtlp(path: JsonPath, ancestor: (depth: number) => unknown): boolean {
  const n = path.length;
  if (isRsPath(path, n - 1)) return true;
  if (
    n >= 6 &&
    path[n - 2] === 'spans' &&
    typeof path[n - 1] === 'number' &&
    isRsPath(path, n - 5) &&
    SS_KEYS.includes(path[n - 4] as string)
  ) {
    // ancestors: …, ResourceSpans (n-4), scopeSpans list, ScopeSpans (n-2), spans list
    const rs = ancestor(n - 4);
    const ss = ancestor(n - 2);
    return isRecord(rs) && 'resource' in rs && isRecord(ss) && ('scope' in ss || 'instrumentationLibrary' in ss);
  }
  return false;
}

/** Converts what `selectOtlp` handed out: a span (with its ancestors) or a whole ResourceSpans. */
export function* spansOfSelected(
  value: unknown,
  path: JsonPath,
  ancestors: readonly unknown[],
  where: string,
): Generator<SpanRecord> {
  const n = path.length;
  if (path[n - 2] === 'spans') {
    const rs = ancestors[n - 4] as Record<string, unknown>;
    const ss = ancestors[n - 2] as Record<string, unknown>;
    const rsPath = where.slice(0, where.lastIndexOf(`.${String(path[n - 4])}[`));
    yield spanFromOtlp(value, cachedResource(rs, rsPath), scopeOf(ss), where);
    return;
  }
  yield* spansOfResourceSpans(value, where);
}

// The resource of a streamed ResourceSpans is converted once, not once per span.
const resourceCache = new ObjectMemo<object, Attributes>('faultline.resource');
function cachedResource(rs: Record<string, unknown>, path: string): Attributes {
  let r = resourceCache.get(rs);
  if (r === undefined) {
    r = resourceOf(rs, path);
    resourceCache.set(rs, r);
  }
  return r;
}

const KIND_NUM: Record<string, number> = {
  UNSPECIFIED: 0,
  INTERNAL: 1,
  SERVER: 2,
  CLIENT: 3,
  PRODUCER: 4,
  CONSUMER: 5,
};
const STATUS_NUM: Record<string, number> = { UNSET: 0, OK: 1, ERROR: 2 };

function int64String(v: unknown): unknown {
  return typeof v === 'number' && Number.isInteger(v) ? String(v) : v;
}

function canonicalAnyValue(v: unknown): unknown {
  if (!isRecord(v)) return v;
  if ('intValue' in v) return { ...v, intValue: int64String(v.intValue) };
  if (isRecord(v.arrayValue) && Array.isArray(v.arrayValue.values)) {
    return { arrayValue: { values: v.arrayValue.values.map(canonicalAnyValue) } };
  }
  if (isRecord(v.kvlistValue) && Array.isArray(v.kvlistValue.values)) {
    return { kvlistValue: { values: canonicalKeyValues(v.kvlistValue.values) } };
  }
  return v;
}

function canonicalKeyValues(list: unknown): unknown {
  return Array.isArray(list)
    ? list.map((kv) => (isRecord(kv) ? { ...kv, value: canonicalAnyValue(kv.value) } : kv))
    : list;
}

function withAttrs<T extends Record<string, unknown>>(o: T): T {
  return 'attributes' in o ? { ...o, attributes: canonicalKeyValues(o.attributes) } : o;
}

/**
 * An already validated OTLP/JSON document in the spec's canonical encoding: lowercase hex ids, integer enums,
 * int64 as decimal strings, `resourceSpans`/`scopeSpans` keys. Unknown fields are kept.
 */
export function canonicalOtlp(doc: Record<string, unknown>): { resourceSpans: unknown[] } {
  const found = resourceSpansOf(doc);
  const list = found && Array.isArray(found.list) ? found.list : [];
  return {
    resourceSpans: list.map((rs: unknown, i) => {
      const r = rs as Record<string, unknown>;
      const ssKey = SS_KEYS.find((k) => k in r) ?? 'scopeSpans';
      const { [ssKey]: ssList, ...rest } = r;
      const out: Record<string, unknown> = { ...rest };
      if (isRecord(r.resource)) out.resource = withAttrs(r.resource);
      out.scopeSpans = (Array.isArray(ssList) ? ssList : []).map((ss: unknown, j) => {
        const s = ss as Record<string, unknown>;
        const { instrumentationLibrary, spans, ...sRest } = s;
        const o: Record<string, unknown> = { ...sRest };
        const scope = isRecord(s.scope)
          ? s.scope
          : isRecord(instrumentationLibrary)
            ? instrumentationLibrary
            : undefined;
        if (scope) o.scope = withAttrs(scope);
        o.spans = (Array.isArray(spans) ? spans : []).map((sp: unknown, k) =>
          canonicalSpan(sp as Record<string, unknown>, `resourceSpans[${i}].scopeSpans[${j}].spans[${k}]`),
        );
        return o;
      });
      return out;
    }),
  };
}

function canonicalSpan(s: Record<string, unknown>, path: string): Record<string, unknown> {
  const o: Record<string, unknown> = withAttrs({ ...s });
  o.traceId = normId(s.traceId, 16, `${path}.traceId`);
  o.spanId = normId(s.spanId, 8, `${path}.spanId`);
  const parent = normId(s.parentSpanId, 8, `${path}.parentSpanId`);
  if (parent === undefined) delete o.parentSpanId;
  else o.parentSpanId = parent;
  if ('kind' in s) o.kind = KIND_NUM[normKind(s.kind)];
  o.startTimeUnixNano = int64String(s.startTimeUnixNano);
  o.endTimeUnixNano = int64String(s.endTimeUnixNano);
  if (isRecord(s.status)) {
    o.status = { ...s.status };
    if ('code' in s.status) (o.status as Record<string, unknown>).code = STATUS_NUM[normStatusCode(s.status.code)];
  }
  if (Array.isArray(s.events)) {
    o.events = s.events.map((e: unknown) =>
      isRecord(e) ? withAttrs({ ...e, timeUnixNano: int64String(e.timeUnixNano) }) : e,
    );
  }
  if (Array.isArray(s.links)) {
    o.links = s.links.map((l: unknown, i) =>
      isRecord(l)
        ? withAttrs({
            ...l,
            traceId: normId(l.traceId, 16, `${path}.links[${i}].traceId`),
            spanId: normId(l.spanId, 8, `${path}.links[${i}].spanId`),
          })
        : l,
    );
  }
  return o;
}
