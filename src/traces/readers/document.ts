/**
 * One parsed JSON document (a whole small file, or one line of a JSON-lines file) → spans, by its shape. The
 * shapes are those of backends.md §2.5; a document that is none of them is an `UnknownShapeError` saying what
 * was seen.
 */
import type { SpanRecord } from '../model';
import {
  TraceDataError,
  describe,
  isRecord,
  normId,
  normKind,
  normParentId,
  normStatusCode,
  plainObjectToAttrs,
} from '../normalize';
import { JsonStreamParser, formatJsonPath, type JsonPath } from '../json-stream';
import { appendOtlpSpans, resourceSpansOf, selectOtlp, spansOfOtlpDocument, spansOfSelected } from './otlp-json';
import { selectJaeger, spansOfJaegerDocument, spansOfJaegerTrace } from './jaeger';
import { SEARCH_RESULT_HINT, isSearchResult, spansOfTempoDocument } from './tempo';

export type TraceFormat = 'otlp-json' | 'jsonl' | 'jaeger' | 'tempo' | 'otlp-proto';
export const TRACE_FORMATS: readonly TraceFormat[] = ['otlp-json', 'jsonl', 'jaeger', 'tempo', 'otlp-proto'];

export class UnknownShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnknownShapeError';
  }
}

type Shape = 'otlp-json' | 'tempo' | 'jaeger' | 'span-record';

export function shapeOf(doc: unknown): Shape | undefined {
  if (Array.isArray(doc)) return 'jaeger';
  if (!isRecord(doc)) return undefined;
  if ('batches' in doc || (isRecord(doc.trace) && ('resourceSpans' in doc.trace || 'services' in doc.trace)))
    return 'tempo';
  if (resourceSpansOf(doc) !== undefined) return 'otlp-json';
  if ('data' in doc || 'traceID' in doc || 'spanID' in doc) return 'jaeger';
  if (typeof doc.traceId === 'string' && typeof doc.spanId === 'string' && typeof doc.start === 'number')
    return 'span-record';
  return undefined;
}

function seen(doc: unknown): string {
  if (Array.isArray(doc)) return `an array of ${doc.length}`;
  if (isRecord(doc)) {
    const keys = Object.keys(doc);
    return keys.length === 0
      ? 'an empty object'
      : `an object with keys ${keys
          .slice(0, 8)
          .map((k) => JSON.stringify(k))
          .join(', ')}${keys.length > 8 ? ', …' : ''}`;
  }
  return describe(doc);
}

/**
 * The spans of one document. `expect` restricts the accepted shape (a `--format` override); JSON lines accept any.
 * An empty OTLP request (`{}`, as exporters may send) has no spans and is fine.
 */
export function* spansOfDocument(doc: unknown, base = '', expect?: TraceFormat): Generator<SpanRecord> {
  if (isSearchResult(doc)) throw new UnknownShapeError(SEARCH_RESULT_HINT);
  if (isRecord(doc) && Object.keys(doc).length === 0) return;
  const shape = shapeOf(doc);
  if (shape === undefined) {
    throw new UnknownShapeError(
      `expected OTLP/JSON (resourceSpans), Jaeger JSON (data / traceID) or Tempo JSON (batches / trace), found ${seen(doc)}`,
    );
  }
  if (expect !== undefined && expect !== 'jsonl' && expect !== shape) {
    throw new UnknownShapeError(`expected ${expect} but this is ${shape} (found ${seen(doc)})`);
  }
  switch (shape) {
    case 'otlp-json':
      yield* spansOfOtlpDocument(doc as Record<string, unknown>, base);
      return;
    case 'tempo':
      yield* spansOfTempoDocument(doc as Record<string, unknown>, base);
      return;
    case 'jaeger':
      if (Array.isArray(doc) && doc.length > 0 && isRecord(doc[0]) && resourceSpansOf(doc[0]) !== undefined) {
        // An array of OTLP requests (some tools save a batch like this).
        for (let i = 0; i < doc.length; i++)
          yield* spansOfOtlpDocument(doc[i] as Record<string, unknown>, `${base}[${i}].`);
        return;
      }
      yield* spansOfJaegerDocument(doc, base);
      return;
    case 'span-record':
      yield spanFromRecord(doc as Record<string, unknown>, base || '$');
      return;
  }
}

/**
 * spansOfDocument appended to `out` (a line counts whole or not at all: on an error nothing is appended). OTLP/JSON,
 * what nearly every line is, goes without a generator step per span.
 */
export function appendSpansOfDocument(doc: unknown, out: SpanRecord[]): void {
  if (isRecord(doc) && 'resourceSpans' in doc && !('batches' in doc) && !isSearchResult(doc)) {
    appendOtlpSpans(doc, out);
    return;
  }
  const before = out.length;
  try {
    for (const span of spansOfDocument(doc)) out.push(span);
  } catch (err) {
    out.length = before;
    throw err;
  }
}

/** A line holding one normalised SpanRecord (faultline's own span lines): validated and normalised again. */
export function spanFromRecord(o: Record<string, unknown>, path: string): SpanRecord {
  const traceId = normId(o.traceId, 16, `${path}.traceId`) as string;
  const spanId = normId(o.spanId, 8, `${path}.spanId`) as string;
  const num = (v: unknown, p: string): number => {
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw new TraceDataError(p, `expected epoch milliseconds, got ${describe(v)}`);
    return v;
  };
  const arr = (v: unknown, p: string): unknown[] => {
    if (v === undefined) return [];
    if (!Array.isArray(v)) throw new TraceDataError(p, `expected a list, got ${describe(v)}`);
    return v;
  };
  const status = isRecord(o.status) ? o.status : {};
  const scope = isRecord(o.scope) ? o.scope : {};
  const rec: SpanRecord = {
    traceId,
    spanId,
    name: typeof o.name === 'string' ? o.name : '',
    kind: normKind(o.kind),
    start: num(o.start, `${path}.start`),
    end: num(o.end ?? o.start, `${path}.end`),
    attributes: plainObjectToAttrs(o.attributes, `${path}.attributes`),
    events: arr(o.events, `${path}.events`).map((e, i) => {
      const ep = `${path}.events[${i}]`;
      if (!isRecord(e)) throw new TraceDataError(ep, `expected an event object, got ${describe(e)}`);
      return {
        name: String(e.name ?? ''),
        time: num(e.time, `${ep}.time`),
        attributes: plainObjectToAttrs(e.attributes, `${ep}.attributes`),
      };
    }),
    links: arr(o.links, `${path}.links`).map((l, i) => {
      const lp = `${path}.links[${i}]`;
      if (!isRecord(l)) throw new TraceDataError(lp, `expected a link object, got ${describe(l)}`);
      return {
        traceId: normId(l.traceId, 16, `${lp}.traceId`) ?? '',
        spanId: normId(l.spanId, 8, `${lp}.spanId`) ?? '',
        attributes: plainObjectToAttrs(l.attributes, `${lp}.attributes`),
      };
    }),
    status: { code: normStatusCode(status.code) },
    resource: plainObjectToAttrs(o.resource, `${path}.resource`),
    scope: { name: typeof scope.name === 'string' ? scope.name : '' },
  };
  if (typeof scope.version === 'string') rec.scope.version = scope.version;
  const parent = normParentId(o.parentSpanId, `${path}.parentSpanId`);
  if (parent !== undefined) rec.parentSpanId = parent;
  if (typeof status.message === 'string' && status.message !== '') rec.status.message = status.message;
  return rec;
}

/**
 * Longest string kept whole from a streamed document or line (1 Mi characters): a diagnosis reads error types,
 * statuses, fragments of text, never megabytes of a prompt. A longer value keeps its head and a marker saying how much
 * was left out, so a 100 MB attribute costs its chunks instead of copies of itself. Strings in what `JSON.parse`
 * reads whole (up to the stream threshold, 16 MiB) are already bounded by it and kept as they are.
 */
export const MAX_STREAMED_STRING_CHARS = 1 << 20;

/**
 * The streaming tokenizer set up to hand out the spans of a document as they complete (a document too big for
 * `JSON.parse`: a big file, or a JSON line past the line limit). `fmt` says which selection to use; undefined (a
 * JSON line, whose shape is not known before it is read) selects both OTLP's and Jaeger's units, which never share
 * a path. What is not handed out on the way (a lone Jaeger trace, Tempo's LLM form, deferred spans) is read from
 * the completed document.
 */
export function spanStreamParser(
  fmt: TraceFormat | undefined,
  push: (span: SpanRecord) => void,
  base = '',
): JsonStreamParser {
  const jaeger = fmt === 'jaeger';
  const any = fmt === undefined || fmt === 'jsonl';
  return new JsonStreamParser(
    {
      select: jaeger
        ? selectJaeger
        : any
          ? (path, ancestor) => selectJaeger(path) || selectOtlp(path, ancestor)
          : selectOtlp,
      onSelect(value: unknown, path: JsonPath, ancestors: readonly unknown[]) {
        const where = base + formatJsonPath(path);
        if (jaeger || (any && selectJaeger(path))) {
          // A top-level array element may be an OTLP request (an array of them) rather than a Jaeger trace.
          const otlp = any && isRecord(value) && resourceSpansOf(value) !== undefined;
          for (const s of otlp
            ? spansOfOtlpDocument(value as Record<string, unknown>, `${where}.`)
            : spansOfJaegerTrace(value, where))
            push(s);
        } else {
          for (const s of spansOfSelected(value, path, ancestors, where)) push(s);
        }
      },
      onDocument(doc: unknown, index: number) {
        for (const s of spansOfDocument(
          doc,
          `${base}${index > 0 ? `[document ${index + 1}] ` : ''}`,
          any ? undefined : fmt,
        ))
          push(s);
      },
    },
    { maxStringChars: MAX_STREAMED_STRING_CHARS },
  );
}
