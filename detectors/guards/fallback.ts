/**
 * Fallback: once retries are exhausted, send the request to another route — another model or endpoint — chosen by
 * ARCF's hierarchical score (route health, capability, hierarchy, cost). A fallback whose circuit is open is skipped.
 */
import type { Dispatcher } from 'undici';
import type { Exchange } from '../../instrumentation/types';
import { withContentLength } from '../../instrumentation/request-body';
import type { Circuits } from './circuit';
import type { FallbackRoute } from './config';
import type { RouteHealth } from './health';
import { scoreFallbacks, type FallbackWeights } from './hierarchical-fallback';

export function fallbackLabel(route: string, fb: FallbackRoute): string {
  return `${route}→${fb.name ?? fb.model ?? fb.origin ?? fb.path ?? 'fallback'}`;
}

/**
 * The untried fallback ARCF's hierarchical selection scores best (hierarchical-fallback.ts: route health as the
 * reliability term, then capability, hierarchy and cost), skipping those whose circuit is open.
 */
export function chooseFallback(route: string, list: readonly FallbackRoute[] | undefined, tried: Set<number>, health: RouteHealth, circuits: Circuits, weights?: FallbackWeights): { index: number; fallback: FallbackRoute } | undefined {
  const all = list ?? [];
  const label = (i: number) => fallbackLabel(route, all[i]!);
  const eligible = (i: number): boolean => {
    if (tried.has(i)) return false;
    const c = circuits.peek(label(i));
    return !(c?.state === 'open' && c.retryInMs() > 0);
  };
  const best = scoreFallbacks(all, (i) => health.score(label(i)), eligible, weights)[0];
  return best ? { index: best.index, fallback: best.fallback } : undefined;
}

/** Dispatch options for the fallback: origin / path rewritten, and the body's `model` when a model is given. */
export function fallbackOptions(opts: Dispatcher.DispatchOptions, exchange: Exchange, fb: FallbackRoute): Dispatcher.DispatchOptions {
  const out: Dispatcher.DispatchOptions = { ...opts };
  if (fb.origin) out.origin = fb.origin;
  if (fb.path) out.path = fb.path;
  if (fb.model && typeof exchange.request === 'object' && exchange.request !== null) {
    const body = Buffer.from(JSON.stringify({ ...(exchange.request as Record<string, unknown>), model: fb.model }));
    out.body = body;
    out.headers = withContentLength(opts.headers, body.length);
  }
  if (fb.origin) out.headers = withHeader(out.headers, 'host', new URL(fb.origin).host);
  return out;
}

function withHeader(headers: Dispatcher.DispatchOptions['headers'], name: string, value: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const put = (k: string, v: unknown) => {
    if (k.toLowerCase() === name || v == null) return;
    out[k] = Array.isArray(v) ? v.map(String) : String(v);
  };
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) for (const [k, v] of headers as unknown as [string, string][]) put(k, v);
    else for (let i = 0; i + 1 < headers.length; i += 2) put(String(headers[i]), headers[i + 1]);
  } else if (headers && typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const [k, v] of headers as Iterable<[string, string]>) put(k, v);
  } else if (headers) {
    for (const [k, v] of Object.entries(headers)) put(k, v);
  }
  out[name] = value;
  return out;
}
