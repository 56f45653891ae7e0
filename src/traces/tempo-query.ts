/**
 * Traces straight from Grafana Tempo (backends.md §2.4): a TraceQL search over a time range
 * (`GET /api/search?q=…&start=…&end=…&limit=…`, which lists trace ids), then each trace by id
 * (`GET /api/v2/traces/<id>`, or v1 `/api/traces/<id>` on a Tempo without v2). Multi-tenant Tempo needs
 * `X-Scope-OrgID` (backend-http.ts).
 *
 * Pagination: search has a `limit` and no offset and keeps the most recent matches, so pages are time windows —
 * when a page is full, the next one ends at the second the oldest trace of this page began (Tempo's times are whole
 * seconds); traces already seen are skipped, and a page with nothing new ends the search.
 */
import { FaultlineInputError } from '../errors';
import type { TraceRecord } from './model';
import { isRecord } from './normalize';
import { seenShape, tracesOfResponse, type Backend } from './backend-http';
import type { QueryHooks } from './jaeger-query';

export interface TempoQuery {
  /** TraceQL, default `{}` (every trace). */
  query?: string;
  /** Epoch ms. */
  start: number;
  end: number;
  /** Traces in all (default 100). */
  limit?: number;
  /** Traces per search request (default 50). */
  pageSize?: number;
  /** Fetch exactly these traces instead of searching. */
  traceIds?: string[];
}

interface Hit {
  traceId: string;
  /** Epoch ms, when given. */
  start?: number;
}

function hitsOf(backend: Backend, path: string, doc: unknown): Hit[] {
  // gogo JSON leaves an empty list out: no matches is `{"metrics":{…}}`.
  if (!isRecord(doc) || !(Array.isArray(doc.traces) || (doc.traces === undefined && isRecord(doc.metrics)))) {
    throw new FaultlineInputError(
      'FAULTLINE_TRACE_UNKNOWN_FORMAT',
      `${backend.name} at ${backend.base}${path}: expected a search result {"traces":[…]}, found ${seenShape(doc)}`,
    );
  }
  const hits: Hit[] = [];
  for (const t of (doc.traces as unknown[] | undefined) ?? []) {
    if (!isRecord(t) || typeof t.traceID !== 'string' || !/^[0-9a-fA-F]{1,32}$/.test(t.traceID)) continue;
    const ns = Number(t.startTimeUnixNano);
    hits.push({
      traceId: t.traceID.toLowerCase().padStart(32, '0'),
      ...(Number.isFinite(ns) && ns > 0 ? { start: ns / 1e6 } : {}),
    });
  }
  return hits;
}

export async function* tempoTraces(
  backend: Backend,
  q: TempoQuery,
  hooks: QueryHooks = {},
): AsyncGenerator<TraceRecord> {
  const limit = q.limit ?? 100;
  const pageSize = Math.min(q.pageSize ?? 50, limit);
  let requests = 0;
  let count = 0;
  let v2 = true;
  const seen = new Set<string>();

  const fetchTrace = async (id: string): Promise<TraceRecord[]> => {
    const byId = (v: 'v1' | 'v2'): string =>
      `${v === 'v2' ? '/api/v2/traces/' : '/api/traces/'}${encodeURIComponent(id)}`;
    let path = byId(v2 ? 'v2' : 'v1');
    requests++;
    let doc = await backend.getJson(path, { allow404: true });
    if (doc === undefined && v2) {
      // An older Tempo without the v2 API, or simply no such trace: v1 says which.
      path = byId('v1');
      requests++;
      doc = await backend.getJson(path, { allow404: true });
      if (doc !== undefined) v2 = false;
    }
    const traces = doc === undefined ? [] : tracesOfResponse(backend, path, doc);
    if (traces.length === 0)
      hooks.onProblem?.(
        new FaultlineInputError(
          'FAULTLINE_FILE_NOT_FOUND',
          `${backend.name} at ${backend.base}: trace ${id} not found`,
        ),
      );
    return traces;
  };

  if (q.traceIds && q.traceIds.length > 0) {
    for (const raw of q.traceIds) {
      for (const t of await fetchTrace(raw.trim().toLowerCase())) {
        if (seen.has(t.traceId)) continue;
        seen.add(t.traceId);
        count++;
        yield t;
      }
      hooks.onProgress?.(count, requests);
    }
    return;
  }

  const query = q.query?.trim() || '{}';
  let endS = Math.ceil(q.end / 1000);
  const startS = Math.floor(q.start / 1000);
  while (count < limit && endS > startS) {
    const n = Math.min(pageSize, limit - count);
    const p = new URLSearchParams({ q: query, start: String(startS), end: String(endS), limit: String(n), spss: '1' });
    const path = `/api/search?${p.toString()}`;
    requests++;
    const hits = hitsOf(backend, path, await backend.getJson(path));
    let fresh = 0;
    let oldest = Number.POSITIVE_INFINITY;
    for (const h of hits) {
      if (h.start !== undefined) oldest = Math.min(oldest, h.start);
      if (seen.has(h.traceId) || count >= limit) continue;
      seen.add(h.traceId);
      fresh++;
      for (const t of await fetchTrace(h.traceId)) {
        count++;
        yield t;
      }
      hooks.onProgress?.(count, requests);
    }
    if (hits.length < n || fresh === 0 || !Number.isFinite(oldest)) break;
    endS = Math.min(Math.floor(oldest / 1000), endS - 1);
  }
}
