/**
 * A loopback Jaeger query service and a loopback Tempo, each answering like the real one (backends.md §2.3, §2.4):
 * the recorded API responses of ../shared/reference/formats/, and traces given as OTLP/JSON documents served in each
 * API's own encoding — Jaeger's api_v3 wraps OTLP/JSON in {"result": …}; Tempo answers gogo JSON (base64 ids, enum
 * names, int64 as strings). Searches honour the time window and the limit (newest first), so pagination is real.
 * Every request is recorded with its headers; `auth` makes the server answer 401 unless the header matches.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { FORMATS } from '../../support/shared';

export { FORMATS };
export const recorded = (name: string): string => readFileSync(join(FORMATS, name), 'utf8');

export interface Seen {
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
}

export interface Backend {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

type Doc = { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }> };

export interface ServedTrace {
  traceId: string;
  /** Epoch ms of its first span. */
  start: number;
  /** OTLP/JSON (hex ids, integer enums), as the exporters send it. */
  otlp: Doc;
}

/** Split OTLP/JSON documents into one document per trace. */
export function perTrace(docs: Doc[]): ServedTrace[] {
  const by = new Map<string, ServedTrace>();
  for (const doc of docs) {
    for (const rs of doc.resourceSpans) {
      for (const ss of rs.scopeSpans) {
        for (const s of ss.spans) {
          const id = String(s.traceId);
          let t = by.get(id);
          if (!t) by.set(id, (t = { traceId: id, start: Infinity, otlp: { resourceSpans: [] } }));
          t.start = Math.min(t.start, Number(BigInt(String(s.startTimeUnixNano)) / 1_000_000n));
          t.otlp.resourceSpans.push({ ...rs, scopeSpans: [{ ...ss, spans: [s] }] });
        }
      }
    }
  }
  return [...by.values()];
}

const KINDS = [
  'SPAN_KIND_UNSPECIFIED',
  'SPAN_KIND_INTERNAL',
  'SPAN_KIND_SERVER',
  'SPAN_KIND_CLIENT',
  'SPAN_KIND_PRODUCER',
  'SPAN_KIND_CONSUMER',
];
const CODES = ['STATUS_CODE_UNSET', 'STATUS_CODE_OK', 'STATUS_CODE_ERROR'];
const b64 = (hex: unknown): unknown =>
  typeof hex === 'string' && hex !== '' ? Buffer.from(hex, 'hex').toString('base64') : hex;

/** OTLP/JSON as Tempo's trace-by-id answers it (gogo jsonpb). */
export function tempoFlavour(doc: Doc): unknown {
  const copy = structuredClone(doc);
  for (const rs of copy.resourceSpans) {
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) {
        s.traceId = b64(s.traceId);
        s.spanId = b64(s.spanId);
        if (s.parentSpanId) s.parentSpanId = b64(s.parentSpanId);
        if (typeof s.kind === 'number') s.kind = KINDS[s.kind];
        const st = s.status as { code?: number } | undefined;
        if (st && typeof st.code === 'number') (st as Record<string, unknown>).code = CODES[st.code];
        for (const l of (s.links as Array<Record<string, unknown>> | undefined) ?? []) {
          l.traceId = b64(l.traceId);
          l.spanId = b64(l.spanId);
        }
      }
    }
  }
  return { trace: copy, metrics: { inspectedBytes: '1024' } };
}

async function listen(
  handler: (
    path: string,
    q: URLSearchParams,
    headers: IncomingHttpHeaders,
  ) => { status: number; body: string; type?: string },
): Promise<Backend> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    seen.push({ path: u.pathname, query: u.searchParams, headers: req.headers });
    req.resume();
    const r = handler(u.pathname, u.searchParams, req.headers);
    res.writeHead(r.status, { 'content-type': r.type ?? 'application/json' });
    res.end(r.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface Auth {
  header: string;
  value: string;
}

function denied(h: IncomingHttpHeaders, auth: Auth | undefined): boolean {
  return auth !== undefined && h[auth.header] !== auth.value;
}

/**
 * Jaeger: the v1 HTTP API (`/api/traces` search and by id, answered from `v1` — recorded Jaeger JSON traces), or,
 * with `v3`, only the api_v3 gateway (v1 answers 404, as on Jaeger main) serving OTLP traces.
 */
export async function startJaeger(o: {
  v1?: Array<{ traceID: string; spans: Array<{ startTime: number }> }>;
  v3?: ServedTrace[];
  auth?: Auth;
}): Promise<Backend> {
  return listen((path, q, h) => {
    if (denied(h, o.auth)) return { status: 401, body: '{"error":"unauthorized"}' };
    if (o.v1 && path === '/api/traces') {
      const end = Number(q.get('end')) / 1000;
      const start = Number(q.get('start')) / 1000;
      const limit = Number(q.get('limit'));
      const hits = o.v1
        .map((t) => ({ t, s: Math.min(...t.spans.map((s) => s.startTime)) / 1000 }))
        .filter((x) => x.s >= start && x.s <= end)
        .sort((a, b) => b.s - a.s)
        .slice(0, limit)
        .map((x) => x.t);
      return {
        status: 200,
        body: JSON.stringify({ data: hits, total: hits.length, limit: 0, offset: 0, errors: null }),
      };
    }
    if (o.v1 && path.startsWith('/api/traces/')) {
      const t = o.v1.find((x) => x.traceID === path.slice('/api/traces/'.length));
      return t
        ? { status: 200, body: JSON.stringify({ data: [t], total: 0, limit: 0, offset: 0, errors: null }) }
        : {
            status: 404,
            body: '{"data":null,"total":0,"limit":0,"offset":0,"errors":[{"code":404,"msg":"trace not found"}]}',
          };
    }
    if (o.v3 && path === '/api/v3/traces') {
      const min = Date.parse(q.get('query.startTimeMin') ?? '');
      const max = Date.parse(q.get('query.startTimeMax') ?? '');
      const depth = Number(q.get('query.searchDepth') ?? 100);
      const hits = o.v3
        .filter((t) => t.start >= min && t.start <= max)
        .sort((a, b) => b.start - a.start)
        .slice(0, depth);
      if (hits.length === 0) return { status: 404, body: '{"code":5,"message":"No traces found"}' };
      // The gateway streams one {"result": …} chunk per trace.
      return { status: 200, body: hits.map((t) => JSON.stringify({ result: t.otlp })).join('\n') };
    }
    if (o.v3 && path.startsWith('/api/v3/traces/')) {
      const t = o.v3.find((x) => x.traceId === path.slice('/api/v3/traces/'.length));
      return t
        ? { status: 200, body: JSON.stringify({ result: t.otlp }) }
        : { status: 404, body: '{"code":5,"message":"No traces found"}' };
    }
    return { status: 404, body: '404 page not found', type: 'text/plain' };
  });
}

/** Tempo: `/api/search` over `traces` (or the recorded search answer), `/api/v2/traces/<id>` in gogo JSON. */
export async function startTempo(o: {
  traces?: ServedTrace[];
  recorded?: { search: string; byId: Record<string, string> };
  auth?: Auth;
  v1Only?: boolean;
}): Promise<Backend> {
  return listen((path, q, h) => {
    if (denied(h, o.auth)) return { status: 401, body: 'unauthorized', type: 'text/plain' };
    if (path === '/api/search') {
      if (o.recorded) return { status: 200, body: o.recorded.search };
      const start = Number(q.get('start')) * 1000;
      const end = Number(q.get('end')) * 1000 + 999;
      const limit = Number(q.get('limit') ?? 20);
      const hits = (o.traces ?? [])
        .filter((t) => t.start >= start && t.start <= end)
        .sort((a, b) => b.start - a.start)
        .slice(0, limit);
      return {
        status: 200,
        body: JSON.stringify({
          traces: hits.map((t) => ({
            traceID: t.traceId,
            rootServiceName: 'svc',
            startTimeUnixNano: String(BigInt(t.start) * 1_000_000n),
            durationMs: 1,
          })),
          metrics: { completedJobs: 1, totalJobs: 1 },
        }),
      };
    }
    const m = /^\/api\/(v2\/)?traces\/([0-9a-f]+)$/.exec(path);
    if (m) {
      if (o.v1Only && m[1]) return { status: 404, body: '404 page not found', type: 'text/plain' };
      if (o.recorded) {
        const body = o.recorded.byId[m[2]!];
        return body ? { status: 200, body } : { status: 404, body: 'trace not found', type: 'text/plain' };
      }
      const t = (o.traces ?? []).find((x) => x.traceId === m[2]);
      if (!t) return { status: 404, body: 'trace not found', type: 'text/plain' };
      const flavoured = tempoFlavour(t.otlp) as { trace: Doc };
      return { status: 200, body: JSON.stringify(m[1] ? flavoured : { batches: flavoured.trace.resourceSpans }) };
    }
    return { status: 404, body: '404 page not found', type: 'text/plain' };
  });
}
