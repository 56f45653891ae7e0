/**
 * Traces straight from a Jaeger query service (backends.md §2.3): a search by service, operation, tags and time
 * range, or a list of trace ids. The v1 HTTP API (`/api/traces`, every release up to v2.20) is asked first; where it
 * is gone (404, Jaeger main after #9260) the v2 `api_v3` HTTP gateway (`/api/v3/traces`) is used instead.
 *
 * Pagination: Jaeger's search has a `limit` and no offset, and answers the newest traces first, so pages are time
 * windows — when a page is full, the next one ends where the oldest trace of this page began. Traces already
 * seen are skipped, and a page with nothing new ends the search.
 */
import { FaultlineInputError } from '../errors';
import type { TraceRecord } from './model';
import { tracesOfResponse, type Backend } from './backend-http';

export interface JaegerQuery {
  service?: string;
  operation?: string;
  /** Span / resource attributes to match, compared as strings by Jaeger. */
  tags?: Record<string, string>;
  /** Epoch ms. */
  start: number;
  end: number;
  /** Traces in all (default 100). */
  limit?: number;
  /** Traces per request (default 50). */
  pageSize?: number;
  /** Fetch exactly these traces instead of searching. */
  traceIds?: string[];
}

export interface QueryHooks {
  /** A trace that could not be fetched (not found, damaged): reported, and the others go on. */
  onProblem?: (error: FaultlineInputError) => void;
  /** After each response: traces so far and requests made. */
  onProgress?: (traces: number, requests: number) => void;
}

const rfc3339 = (ms: number): string => new Date(ms).toISOString();

export async function* jaegerTraces(
  backend: Backend,
  q: JaegerQuery,
  hooks: QueryHooks = {},
): AsyncGenerator<TraceRecord> {
  const limit = q.limit ?? 100;
  const pageSize = Math.min(q.pageSize ?? 50, limit);
  let requests = 0;
  let count = 0;
  const seen = new Set<string>();
  const get = async (path: string): Promise<unknown> => {
    requests++;
    return backend.getJson(path, { allow404: true });
  };

  if (q.traceIds && q.traceIds.length > 0) {
    for (const raw of q.traceIds) {
      const id = raw.trim().toLowerCase();
      let path = `/api/traces/${encodeURIComponent(id)}`;
      let doc = await get(path);
      if (doc === undefined) doc = await get((path = `/api/v3/traces/${encodeURIComponent(id)}`));
      const traces = doc === undefined ? [] : tracesOfResponse(backend, path, doc);
      if (traces.length === 0)
        hooks.onProblem?.(
          new FaultlineInputError(
            'FAULTLINE_FILE_NOT_FOUND',
            `${backend.name} at ${backend.base}: trace ${id} not found`,
          ),
        );
      for (const t of traces) {
        if (seen.has(t.traceId)) continue;
        seen.add(t.traceId);
        count++;
        yield t;
      }
      hooks.onProgress?.(count, requests);
    }
    return;
  }

  if (!q.service)
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      '--jaeger needs --service (Jaeger searches one service at a time) or --trace-id',
    );
  let api: 'v1' | 'v3' = 'v1';
  let end = q.end;
  while (count < limit && end > q.start) {
    const n = Math.min(pageSize, limit - count);
    const path = api === 'v1' ? v1Search(q, end, n) : v3Search(q, end, n);
    let doc = await get(path);
    if (doc === undefined && api === 'v1') {
      api = 'v3';
      doc = await get(v3Search(q, end, n));
    }
    // v3 answers 404 "No traces found" for an empty result.
    const page = doc === undefined ? [] : tracesOfResponse(backend, path, doc);
    let fresh = 0;
    let oldest = Number.POSITIVE_INFINITY;
    for (const t of page) {
      oldest = Math.min(oldest, t.spans[0]?.start ?? oldest);
      if (seen.has(t.traceId) || count >= limit) continue;
      seen.add(t.traceId);
      fresh++;
      count++;
      yield t;
    }
    hooks.onProgress?.(count, requests);
    if (page.length < n || fresh === 0 || !Number.isFinite(oldest)) break;
    // The next window ends just before the oldest trace of this one (1 µs, Jaeger's resolution).
    end = Math.min(oldest, end) - 0.001;
  }
}

function v1Search(q: JaegerQuery, end: number, limit: number): string {
  const p = new URLSearchParams();
  p.set('service', q.service ?? '');
  if (q.operation) p.set('operation', q.operation);
  if (q.tags && Object.keys(q.tags).length > 0) p.set('tags', JSON.stringify(q.tags));
  p.set('start', String(Math.floor(q.start * 1000)));
  p.set('end', String(Math.floor(end * 1000)));
  p.set('limit', String(limit));
  return `/api/traces?${p.toString()}`;
}

function v3Search(q: JaegerQuery, end: number, limit: number): string {
  const p = new URLSearchParams();
  p.set('query.serviceName', q.service ?? '');
  if (q.operation) p.set('query.operationName', q.operation);
  if (q.tags && Object.keys(q.tags).length > 0) p.set('query.attributes', JSON.stringify(q.tags));
  p.set('query.startTimeMin', rfc3339(q.start));
  p.set('query.startTimeMax', rfc3339(end));
  p.set('query.searchDepth', String(limit));
  return `/api/v3/traces?${p.toString()}`;
}
