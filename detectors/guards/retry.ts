/**
 * Retry with adaptive exponential back-off and jitter (ARCF, ../shared/papers/arcf-reliability-control.txt §4.3):
 * the interval doubles with every attempt and is scaled by a factor from the route's present success rate r —
 * 2.0 when r < 0.5, 1.5 when r < 0.75, else 1.0 — then jittered and capped. A server's Retry-After (or
 * retry-after-ms) wins when it asks for longer, up to `maxRetryAfterMs`.
 */
export interface RetryPolicy {
  /** Retries after the first attempt (default 2). */
  maxRetries?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** full: uniform in [0, d]; equal: d/2 + uniform in [0, d/2]; none: d. Default equal. */
  jitter?: 'full' | 'equal' | 'none';
  honourRetryAfter?: boolean;
  /** The longest Retry-After honoured; a longer one ends retrying (default 30 s). */
  maxRetryAfterMs?: number;
}

/** ARCF's AdaptFactor(r), in the order the paper intends (the lower band wins). */
export function adaptFactor(successRate: number): number {
  if (successRate < 0.5) return 2.0;
  if (successRate < 0.75) return 1.5;
  return 1.0;
}

/** Delay before retry number `retry` (0-based), for a route whose health is `successRate`. */
export function backoffDelay(
  retry: number,
  policy: RetryPolicy,
  successRate: number,
  random: () => number = Math.random,
): number {
  const base = policy.baseDelayMs ?? 200;
  const max = policy.maxDelayMs ?? 10_000;
  const d = Math.min(max, base * 2 ** retry * adaptFactor(successRate));
  switch (policy.jitter ?? 'equal') {
    case 'none':
      return d;
    case 'full':
      return random() * d;
    default:
      return d / 2 + (random() * d) / 2;
  }
}

/** Retry-After as ms: `retry-after-ms`, delta-seconds or an HTTP date. */
export function retryAfterMs(
  headers: Record<string, string | string[] | undefined> | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const get = (k: string) => {
    const v = headers[k] ?? headers[k.toLowerCase()];
    return Array.isArray(v) ? v[0] : v;
  };
  const ms = get('retry-after-ms');
  if (ms !== undefined && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const ra = get('retry-after');
  if (ra === undefined) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(ra)) return Math.max(0, Number(ra) * 1000);
  const t = Date.parse(ra);
  return Number.isFinite(t) ? Math.max(0, t - now) : undefined;
}

/** The wait before the next attempt, or undefined when the policy says to stop. */
export function nextDelay(
  retry: number,
  policy: RetryPolicy,
  successRate: number,
  retryAfter: number | undefined,
  random?: () => number,
): number | undefined {
  if (retry >= (policy.maxRetries ?? 2)) return undefined;
  const computed = backoffDelay(retry, policy, successRate, random);
  if (retryAfter !== undefined && policy.honourRetryAfter !== false) {
    if (retryAfter > (policy.maxRetryAfterMs ?? 30_000)) return undefined;
    return Math.max(computed, retryAfter);
  }
  return computed;
}

/** Statuses worth retrying: timeouts, rate limits, overload and server errors. */
export function retryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}
