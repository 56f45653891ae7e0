/**
 * Which calls are the span layer's, on evidence: the method and URL (a protocol module's `matches`, cached per route),
 * a JSON body declared by the headers, and never the hosts the user excluded or the OTLP export requests. The headers
 * a module sees are copied once, lower-cased, without credentials (which so never reach a span).
 */
import type { Dispatcher } from 'undici';
import { serverPort } from './providers/request-attributes';
import type { ProtocolModule } from './internal-types';

/** Credentials never reach a protocol module (and so never a span). */
const CREDENTIAL_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'x-api-key',
  'api-key',
  'cookie',
  'x-goog-api-key',
  'x-amz-security-token',
]);

export interface Match {
  /**
   * The modules that may take the route, in order, from the first whose `matches` accepted the request: the first of
   * them whose `matches` and `start` accept it wins. The later ones are asked only when the earlier ones' `start`
   * declined: most calls are taken by the first.
   */
  modules: readonly ProtocolModule[];
  first: number;
  url: URL;
  /** The URL's port, the scheme's default when it has none (URL getters are not free: read once per route). */
  port: number;
  method: string;
  headers: Record<string, string>;
}

/**
 * Which modules may accept a method + origin + path (asked without headers), and its parsed URL; null when none may
 * (or the host is ignored). Apps call the same few endpoints over and over, so this saves a URL parse and the module
 * checks on every request, ours or not. The URL is shared by the exchanges of one route: it is read, never written
 * (Exchange.url is readonly).
 */
export type RouteCache = Map<string, { url: URL; port: number; modules: ProtocolModule[] } | null>;
export const MAX_ROUTES = 512;

export function recognise(
  opts: Dispatcher.DispatchOptions,
  modules: readonly ProtocolModule[],
  ignore: Ignored,
  enabled: (() => boolean) | undefined,
  routes: RouteCache,
): Match | undefined {
  if (enabled && !enabled()) return undefined;
  if (opts.upgrade) return undefined;
  const method = (opts.method ?? 'GET').toUpperCase();
  const origin = opts.origin;
  if (origin === undefined || opts.path === undefined) return undefined;
  const route = routeOf(method, origin, opts.path, modules, ignore, routes);
  if (route === null) return undefined;
  const headers = headerRecord(opts.headers);
  if (!jsonBody(headers['content-type'])) return undefined;
  const url = route.url;
  const first = route.modules.findIndex((module) => module.matches(method, url, headers));
  return first >= 0 ? { modules: route.modules, first, url, port: route.port, method, headers } : undefined;
}

export function routeOf(
  method: string,
  origin: string | URL,
  path: string,
  modules: readonly ProtocolModule[],
  ignore: Ignored,
  routes: RouteCache,
) {
  const key = `${method} ${String(origin)} ${path}`;
  let route = routes.get(key);
  if (route === undefined) {
    route = resolveRoute(method, new URL(path, origin), modules, ignore);
    // A cheap bound for apps with unbounded paths (ids in the path or query): start over rather than track recency.
    if (routes.size >= MAX_ROUTES) routes.clear();
    routes.set(key, route);
  }
  return route;
}

/** What is never intercepted: the hosts the user excluded, and the OTLP export requests (`host:port/path`). */
export interface Ignored {
  hosts: Set<string>;
  otlp: Set<string>;
}

function resolveRoute(
  method: string,
  url: URL,
  modules: readonly ProtocolModule[],
  ignore: Ignored,
): { url: URL; port: number; modules: ProtocolModule[] } | null {
  const hosts = ignore.hosts;
  if (hosts.size > 0 && (hosts.has(url.host.toLowerCase()) || hosts.has(url.hostname.toLowerCase()))) return null;
  // An OTLP export sent through fetch (protobuf bodies are never read anyway, see jsonBody; this covers OTLP/JSON).
  if (ignore.otlp.size > 0 && ignore.otlp.has(`${url.host.toLowerCase()}${url.pathname}`)) return null;
  const matching = modules.filter((module) => module.matches(method, url));
  return matching.length > 0 ? { url, port: serverPort(url), modules: matching } : null;
}

/**
 * Every call we read carries JSON: a body declared as anything else (an octet-stream or multipart upload, a form) is
 * not ours, whatever its URL. text/plain is what fetch declares for a string body sent without a content-type.
 */
function jsonBody(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return type === '' || type === 'application/json' || type.endsWith('+json') || type === 'text/plain';
}

export function headerRecord(headers: Dispatcher.DispatchOptions['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers == null) return out;
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0]))
      for (const pair of headers as unknown as [unknown, unknown][]) putHeader(out, pair[0], pair[1]);
    else for (let i = 0; i + 1 < headers.length; i += 2) putHeader(out, headers[i], headers[i + 1]);
  } else if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const pair of headers as Iterable<[unknown, unknown]>) putHeader(out, pair[0], pair[1]);
  } else {
    for (const k of Object.keys(headers)) putHeader(out, k, (headers as Record<string, unknown>)[k]);
  }
  return out;
}

function putHeader(out: Record<string, string>, k: unknown, v: unknown): void {
  const key = String(k).toLowerCase();
  if (CREDENTIAL_HEADERS.has(key) || v == null) return;
  out[key] = Array.isArray(v) ? v.map(String).join(', ') : String(v);
}
