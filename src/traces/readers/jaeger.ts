/**
 * Jaeger JSON (the v1 "UI model"): the query API envelope `{data:[trace], total, limit, offset, errors}`, the UI's
 * "Download Results" file `{data:[…]}`, a single trace `{traceID, spans, processes}`, an array of traces, or the
 * anonymizer's array of spans with an embedded `process`. Times are microseconds; tags are `{key, type, value}`.
 * The tags the OTLP→Jaeger translator adds (`span.kind`, `otel.status_code`, `otel.status_description`, `error`,
 * `otel.scope.name`/`version`, `w3c.tracestate`) are mapped back to the span's fields.
 */
import type { AttrValue, Attributes, SpanKindName, SpanLinkRecord, SpanRecord } from '../model';
import type { JsonPath } from '../json-stream';
import {
  TraceDataError,
  describe,
  isRecord,
  microsToMs,
  normId,
  normInt64,
  normKind,
  normParentId,
  normStatusCode,
  plainToAttr,
} from '../normalize';

export const format = 'jaeger' as const;

export function sniff(topKeys: readonly string[]): boolean {
  return ['data', 'traceID', 'spans', 'spanID', 'processes'].some((k) => topKeys.includes(k));
}

/** One Jaeger tag value → attribute value. Arrays and maps arrive as JSON text: arrays of scalars are restored. */
export function tagValue(tag: Record<string, unknown>, path: string): AttrValue | undefined {
  const { type, value } = tag;
  switch (typeof type === 'string' ? type.toLowerCase() : 'string') {
    case 'bool':
      return value === true || value === 'true';
    case 'int64':
      return normInt64(value, `${path}.value`);
    case 'float64':
      return Number(value);
    case 'binary':
      return String(value);
    default: {
      if (typeof value === 'string' && value.startsWith('[')) {
        try {
          const parsed = plainToAttr(JSON.parse(value));
          if (Array.isArray(parsed)) return parsed;
        } catch {
          /* not JSON after all: keep the text */
        }
      }
      return plainToAttr(value);
    }
  }
}

function tagsToAttrs(list: unknown, path: string): Attributes {
  const out: Attributes = {};
  if (list === undefined || list === null) return out;
  if (!Array.isArray(list)) throw new TraceDataError(path, `expected a list of tags, got ${describe(list)}`);
  list.forEach((t: unknown, i) => {
    if (!isRecord(t) || typeof t.key !== 'string')
      throw new TraceDataError(`${path}[${i}]`, `expected {key, type, value}, got ${describe(t)}`);
    const v = tagValue(t, `${path}[${i}]`);
    if (v !== undefined) out[t.key] = v;
  });
  return out;
}

interface Process {
  resource: Attributes;
}

function processOf(p: unknown, path: string): Process {
  if (!isRecord(p)) return { resource: {} };
  const resource = tagsToAttrs(p.tags, `${path}.tags`);
  if (typeof p.serviceName === 'string') resource['service.name'] = p.serviceName;
  return { resource };
}

/** One Jaeger span → SpanRecord. `processes` is the trace's process map (absent for embedded processes). */
export function spanFromJaeger(span: unknown, processes: Record<string, Process>, path: string): SpanRecord {
  if (!isRecord(span)) throw new TraceDataError(path, `expected a span object, got ${describe(span)}`);
  const traceId = normId(span.traceID, 16, `${path}.traceID`);
  const spanId = normId(span.spanID, 8, `${path}.spanID`);
  if (traceId === undefined) throw new TraceDataError(`${path}.traceID`, 'missing');
  if (spanId === undefined) throw new TraceDataError(`${path}.spanID`, 'missing');
  const start = microsToMs(span.startTime ?? 0, `${path}.startTime`);
  const duration = microsToMs(span.duration ?? 0, `${path}.duration`);
  const attributes = tagsToAttrs(span.tags, `${path}.tags`);

  // Mapped tags: the translator's additions become span fields again.
  let kind: SpanKindName = 'UNSPECIFIED';
  if (typeof attributes['span.kind'] === 'string') {
    kind = normKind(attributes['span.kind']);
    delete attributes['span.kind'];
  }
  let code = normStatusCode(attributes['otel.status_code']);
  delete attributes['otel.status_code'];
  const message = attributes['otel.status_description'];
  delete attributes['otel.status_description'];
  if (attributes.error === true || attributes.error === 'true') {
    if (code === 'UNSET') code = 'ERROR';
    delete attributes.error;
  }
  const scope: SpanRecord['scope'] = {
    name: typeof attributes['otel.scope.name'] === 'string' ? attributes['otel.scope.name'] : '',
  };
  if (typeof attributes['otel.scope.version'] === 'string') scope.version = attributes['otel.scope.version'];
  for (const k of [
    'otel.scope.name',
    'otel.scope.version',
    'otel.library.name',
    'otel.library.version',
    'w3c.tracestate',
  ])
    delete attributes[k];

  // The parent is the first CHILD_OF reference into the same trace (as Jaeger's own model does); other references
  // are links.
  let parentSpanId: string | undefined;
  const links: SpanLinkRecord[] = [];
  const refs = span.references ?? [];
  if (!Array.isArray(refs)) throw new TraceDataError(`${path}.references`, `expected a list, got ${describe(refs)}`);
  refs.forEach((r: unknown, i) => {
    const p = `${path}.references[${i}]`;
    if (!isRecord(r)) throw new TraceDataError(p, `expected a reference object, got ${describe(r)}`);
    const refTrace = normId(r.traceID, 16, `${p}.traceID`) ?? traceId;
    const refSpan = normId(r.spanID, 8, `${p}.spanID`);
    if (refSpan === undefined) return;
    const type = typeof r.refType === 'string' ? r.refType.toUpperCase() : 'CHILD_OF';
    if (type === 'CHILD_OF' && parentSpanId === undefined && refTrace === traceId) parentSpanId = refSpan;
    else links.push({ traceId: refTrace, spanId: refSpan, attributes: { 'opentracing.ref_type': type.toLowerCase() } });
  });
  if (parentSpanId === undefined) parentSpanId = normParentId(span.parentSpanID, `${path}.parentSpanID`);

  const logs = span.logs ?? [];
  if (!Array.isArray(logs)) throw new TraceDataError(`${path}.logs`, `expected a list, got ${describe(logs)}`);
  const events = logs.map((l: unknown, i) => {
    const p = `${path}.logs[${i}]`;
    if (!isRecord(l)) throw new TraceDataError(p, `expected a log object, got ${describe(l)}`);
    const attrs = tagsToAttrs(l.fields, `${p}.fields`);
    // The translator writes the event name as the `event` field (older ones: `message`).
    let name = 'log';
    for (const k of ['event', 'message']) {
      if (typeof attrs[k] === 'string') {
        name = attrs[k] as string;
        delete attrs[k];
        break;
      }
    }
    return { name, time: microsToMs(l.timestamp ?? 0, `${p}.timestamp`), attributes: attrs };
  });

  const proc =
    span.process !== undefined
      ? processOf(span.process, `${path}.process`)
      : ((typeof span.processID === 'string' ? processes[span.processID] : undefined) ?? { resource: {} });

  const rec: SpanRecord = {
    traceId,
    spanId,
    name: typeof span.operationName === 'string' ? span.operationName : '',
    kind,
    start,
    end: start + duration,
    attributes,
    events,
    links,
    status: { code },
    resource: proc.resource,
    scope,
  };
  if (parentSpanId !== undefined) rec.parentSpanId = parentSpanId;
  if (typeof message === 'string' && message !== '') rec.status.message = message;
  return rec;
}

/** The spans of one Jaeger trace `{traceID, spans, processes}`, or of a lone span. */
export function* spansOfJaegerTrace(trace: unknown, path: string): Generator<SpanRecord> {
  if (!isRecord(trace)) throw new TraceDataError(path, `expected a Jaeger trace object, got ${describe(trace)}`);
  if (!('spans' in trace) && 'spanID' in trace) {
    yield spanFromJaeger(trace, {}, path);
    return;
  }
  const processes: Record<string, Process> = {};
  if (isRecord(trace.processes)) {
    for (const [id, p] of Object.entries(trace.processes)) processes[id] = processOf(p, `${path}.processes.${id}`);
  }
  const spans = trace.spans ?? [];
  if (!Array.isArray(spans)) throw new TraceDataError(`${path}.spans`, `expected a list, got ${describe(spans)}`);
  for (let i = 0; i < spans.length; i++) yield spanFromJaeger(spans[i], processes, `${path}.spans[${i}]`);
}

/** All spans of a Jaeger JSON document: `{data:[…]}`, `{data:{…}}`, `[…]` or a single trace. */
export function* spansOfJaegerDocument(doc: unknown, base = ''): Generator<SpanRecord> {
  if (Array.isArray(doc)) {
    for (let i = 0; i < doc.length; i++) yield* spansOfJaegerTrace(doc[i], `${base}[${i}]`);
    return;
  }
  if (isRecord(doc) && 'data' in doc) {
    const data = doc.data;
    if (Array.isArray(data))
      for (let i = 0; i < data.length; i++) yield* spansOfJaegerTrace(data[i], `${base}data[${i}]`);
    else if (data !== null) yield* spansOfJaegerTrace(data, `${base}data`);
    return;
  }
  yield* spansOfJaegerTrace(doc, base || '$');
}

/** Streaming selection: each trace of `data[]` (or of a top-level array) is handed out when complete. */
export function selectJaeger(path: JsonPath): boolean {
  return (
    (path.length === 2 && path[0] === 'data' && typeof path[1] === 'number') ||
    (path.length === 1 && typeof path[0] === 'number')
  );
}
