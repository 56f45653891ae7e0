/**
 * HTTP for the trace-backend query sources (jaeger-query.ts, tempo-query.ts): the auth people put in front of
 * Jaeger and Tempo (a bearer token, basic auth — also given as `user:pass@` in the URL —, Tempo's `X-Scope-OrgID`,
 * any header), a deadline on every request, and one-line errors that say which backend, which URL (credentials
 * removed) and what came back instead of what was expected.
 */
import { FaultlineInputError } from '../errors';
import { TraceGrouper } from './group';
import type { TraceRecord } from './model';
import { isRecord } from './normalize';
import { spansOfDocument } from './readers/document';

export interface BackendAuth {
  /** `Authorization: Bearer <token>`. */
  token?: string;
  /** `user:password` for `Authorization: Basic`. */
  basic?: string;
  /** Tempo / Mimir multi-tenancy: `X-Scope-OrgID`. */
  orgId?: string;
  /** Further headers, e.g. `{ 'CF-Access-Client-Id': '…' }`. */
  headers?: Record<string, string>;
}

export interface BackendOptions extends BackendAuth {
  /** Per-request deadline, ms (default 30 s). */
  timeoutMs?: number;
}

export interface Backend {
  /** `Jaeger` or `Tempo`, for messages. */
  readonly name: string;
  /** The base URL without credentials. */
  readonly base: string;
  /** GET `path` (with query) as JSON; `undefined` for a 404 when `allow404`. */
  getJson(path: string, options?: { allow404?: boolean; accept?: string }): Promise<unknown>;
}

function cause(err: unknown): string {
  let e = err as { code?: string; message?: string; cause?: unknown; name?: string } | undefined;
  // fetch wraps the socket error: `TypeError: fetch failed` with the real one as cause.
  while (e?.cause !== undefined && typeof e.cause === 'object') e = e.cause as typeof e;
  if (e?.name === 'TimeoutError') return 'no answer before the deadline';
  if (e?.message === 'bad port') return 'fetch refuses to connect to this port (a blocked port such as 1, 25 or 6000)';
  switch (e?.code) {
    case 'ECONNREFUSED':
      return 'connection refused (is it running, and on this port?)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the connection was reset';
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'ETIMEDOUT':
      return 'connection timed out';
    default:
      return e?.code ? `${e.code}${e.message ? `: ${e.message}` : ''}` : (e?.message ?? String(err));
  }
}

function snippet(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(t.length > 80 ? `${t.slice(0, 80)}…` : t);
}

/** A message from a JSON error body: Jaeger `{errors:[{msg}]}`, gRPC-gateway `{message}`, Tempo plain text. */
function errorText(body: string): string | undefined {
  try {
    const o: unknown = JSON.parse(body);
    if (isRecord(o)) {
      const errs = o.errors;
      if (Array.isArray(errs) && isRecord(errs[0]) && typeof errs[0].msg === 'string') return errs[0].msg;
      if (typeof o.message === 'string') return o.message;
      if (typeof o.error === 'string') return o.error;
    }
  } catch {
    /* not JSON */
  }
  const t = body.trim();
  return t !== '' && t.length < 300 && !t.startsWith('<') ? t : undefined;
}

export function createBackend(
  name: string,
  baseUrl: string,
  options: BackendOptions = {},
  flag = `--${name.toLowerCase()}`,
): Backend {
  let url: URL;
  try {
    url = new URL(baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `${flag} expects an http(s) URL, e.g. ${name === 'Tempo' ? 'http://localhost:3200' : 'http://localhost:16686'}; got ${JSON.stringify(baseUrl)}`,
    );
  }
  const headers: Record<string, string> = { accept: 'application/json', ...lower(options.headers) };
  // fetch refuses URLs with credentials: they become a Basic header (an explicit --user wins).
  const basic =
    options.basic ??
    (url.username !== '' ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined);
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  else if (basic !== undefined) headers.authorization = `Basic ${Buffer.from(basic, 'utf8').toString('base64')}`;
  if (options.orgId !== undefined) headers['x-scope-orgid'] = options.orgId;
  url.username = '';
  url.password = '';
  const base = url.href.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 30_000;

  const fail = (
    target: string,
    problem: string,
    code: 'FAULTLINE_ENDPOINT_UNREACHABLE' | 'FAULTLINE_TRACE_UNKNOWN_FORMAT' = 'FAULTLINE_ENDPOINT_UNREACHABLE',
    err?: unknown,
  ): FaultlineInputError =>
    new FaultlineInputError(code, `${name} at ${target}: ${problem}`, err !== undefined ? { cause: err } : undefined);

  return {
    name,
    base,
    async getJson(path, opts = {}) {
      const target = `${base}${path}`;
      let res: Response;
      let body: string;
      try {
        res = await fetch(target, {
          headers: opts.accept ? { ...headers, accept: opts.accept } : headers,
          signal: AbortSignal.timeout(timeoutMs),
          redirect: 'follow',
        });
        body = await res.text();
      } catch (err) {
        throw fail(target, `cannot reach it: ${cause(err)}`, 'FAULTLINE_ENDPOINT_UNREACHABLE', err);
      }
      if (res.status === 404 && opts.allow404) return undefined;
      if (!res.ok) {
        const said = errorText(body);
        const hint =
          res.status === 401 || res.status === 403
            ? ` (check --token / --user${name === 'Tempo' ? ' / --org-id' : ''})`
            : res.status === 404
              ? ` (is ${base} the ${name} ${name === 'Jaeger' ? 'query service, port 16686' : 'HTTP API, port 3200'}?)`
              : '';
        throw fail(target, `answered ${res.status} ${res.statusText}${said ? `: ${said}` : ''}${hint}`);
      }
      const type = res.headers.get('content-type') ?? '';
      try {
        return JSON.parse(body) as unknown;
      } catch (err) {
        // The gRPC gateway streams results as concatenated JSON objects, one per line.
        const lines = body.split('\n').filter((l) => l.trim() !== '');
        if (lines.length > 1) {
          try {
            return lines.map((l) => JSON.parse(l) as unknown);
          } catch {
            /* fall through */
          }
        }
        throw fail(
          target,
          `answered ${type || 'no content type'}, not JSON: it starts with ${snippet(body)} (is this the ${name} API?)`,
          'FAULTLINE_TRACE_UNKNOWN_FORMAT',
          err,
        );
      }
    },
  };
}

function lower(h: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h ?? {})) out[k.toLowerCase()] = v;
  return out;
}

/** `Name: value` (as curl -H takes it) → [name, value]. */
export function parseHeader(text: string): [string, string] {
  const i = text.indexOf(':');
  const name = i > 0 ? text.slice(0, i).trim() : '';
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `--header expects "Name: value", got ${JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)}`,
    );
  }
  return [name, text.slice(i + 1).trim()];
}

/** What a document that is not the expected response looked like, for the error. */
export function seenShape(doc: unknown): string {
  if (Array.isArray(doc)) return `a JSON array of ${doc.length}`;
  if (isRecord(doc)) {
    const keys = Object.keys(doc);
    return keys.length === 0
      ? 'an empty JSON object'
      : `a JSON object with keys ${keys
          .slice(0, 6)
          .map((k) => JSON.stringify(k))
          .join(', ')}`;
  }
  return `JSON ${typeof doc}`;
}

/** A time given as ISO 8601 or epoch seconds/milliseconds → epoch ms. */
export function parseTime(flag: string, v: string): number {
  const t = v.trim();
  if (/^\d+(\.\d+)?$/.test(t)) {
    const n = Number(t);
    return n < 1e11 ? n * 1000 : n; // seconds unless it is clearly milliseconds
  }
  const ms = Date.parse(t);
  if (!Number.isFinite(ms))
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `${flag} expects an ISO 8601 time (2026-01-31T12:00:00Z) or epoch seconds; got ${JSON.stringify(v)}`,
    );
  return ms;
}

/** A duration such as `90s`, `15m`, `2h`, `7d`, `500ms` → ms. */
export function parseDuration(flag: string, v: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/.exec(v.trim());
  if (!m)
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `${flag} expects a duration such as 30s, 15m, 2h or 7d; got ${JSON.stringify(v)}`,
    );
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[
    (m[2] ?? 's') as 'ms' | 's' | 'm' | 'h' | 'd'
  ];
  const ms = Number(m[1]) * unit;
  if (!(ms > 0))
    throw new FaultlineInputError('FAULTLINE_USAGE', `${flag} must be longer than 0; got ${JSON.stringify(v)}`);
  return ms;
}

/** The traces in one API response (any shape the trace readers know), grouped and sorted as the file readers do. */
export function tracesOfResponse(backend: Backend, path: string, doc: unknown): TraceRecord[] {
  const grouper = new TraceGrouper(Number.POSITIVE_INFINITY);
  const docs =
    Array.isArray(doc) && doc.every((d) => isRecord(d) && ('result' in d || 'resourceSpans' in d)) ? doc : [doc];
  try {
    for (const d of docs) for (const s of spansOfDocument(d)) grouper.add(s);
  } catch (err) {
    const what = err instanceof Error ? err.message : String(err);
    throw new FaultlineInputError(
      'FAULTLINE_TRACE_UNKNOWN_FORMAT',
      `${backend.name} at ${backend.base}${path}: answered something that is not a trace (${what})`,
      { cause: err },
    );
  }
  return grouper.flush();
}
