/**
 * Fallback: once retries are exhausted, send the request to another route — another model or endpoint — chosen by
 * ARCF's hierarchical score (route health, capability, hierarchy, cost). A fallback whose circuit is open is skipped.
 */
import type { Dispatcher } from 'undici';
import type { Exchange } from '../../instrumentation/types';
import { withContentLength, withHeaders } from '../../instrumentation/request-body';
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
export function chooseFallback(
  route: string,
  list: readonly FallbackRoute[] | undefined,
  tried: Set<number>,
  health: RouteHealth,
  circuits: Circuits,
  weights?: FallbackWeights,
): { index: number; fallback: FallbackRoute } | undefined {
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
export function fallbackOptions(
  opts: Dispatcher.DispatchOptions,
  exchange: Exchange,
  fb: FallbackRoute,
): Dispatcher.DispatchOptions {
  const out: Dispatcher.DispatchOptions = { ...opts };
  if (fb.origin) out.origin = fb.origin;
  if (fb.path) out.path = fb.path;
  if (fb.model && typeof exchange.request === 'object' && exchange.request !== null) {
    const body = Buffer.from(JSON.stringify({ ...(exchange.request as Record<string, unknown>), model: fb.model }));
    out.body = body;
    out.headers = withContentLength(opts.headers, body.length);
  }
  if (fb.origin) out.headers = withHeaders(out.headers, { host: new URL(fb.origin).host }, 'replace');
  return out;
}
