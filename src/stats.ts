/**
 * Statistics, one implementation each: the median and quantiles, Wilson score intervals for success rates, percentile
 * bootstrap intervals for quantities computed from several of them (a product of agents' success probabilities), and
 * a seeded random source so a report is the same every time it is computed from the same traces. At the base of the
 * layers (docs/architecture.md): the detectors, the reliability report and the campaigns use it.
 */

export interface Interval {
  /** Point estimate. */
  p: number;
  lo: number;
  hi: number;
}

export interface Proportion extends Interval {
  k: number;
  n: number;
}

const Z95 = 1.959963984540054;

/** k successes in n trials: the rate and its 95 % Wilson score interval (sound for small n and rates near 0 or 1). */
export function wilson(k: number, n: number, z = Z95): Proportion {
  if (n === 0) return { k, n, p: NaN, lo: 0, hi: 1 };
  const p = k / n;
  const z2 = z * z;
  const den = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / den;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / den;
  return { k, n, p, lo: Math.max(0, centre - half), hi: Math.min(1, centre + half) };
}

/** mulberry32: a small, fast, seeded PRNG (uniform in [0, 1)). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Percentile bootstrap: resample the units with replacement `reps` times, compute `stat` on each resample, and take
 * the 2.5th and 97.5th percentiles. NaN results (a resample where the statistic is undefined) are left out.
 */
export function bootstrap<T>(
  units: readonly T[],
  stat: (sample: readonly T[]) => number,
  options: { reps?: number; seed?: number } = {},
): Interval {
  const p = stat(units);
  if (units.length === 0) return { p, lo: NaN, hi: NaN };
  const reps = options.reps ?? 1000;
  const rand = seeded(options.seed ?? 1);
  const values: number[] = [];
  const sample: T[] = new Array<T>(units.length);
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < units.length; i++) sample[i] = units[Math.floor(rand() * units.length)]!;
    const v = stat(sample);
    if (Number.isFinite(v)) values.push(v);
  }
  if (values.length === 0) return { p, lo: NaN, hi: NaN };
  values.sort((a, b) => a - b);
  const at = (q: number) => values[Math.min(values.length - 1, Math.max(0, Math.floor(q * (values.length - 1))))]!;
  return { p, lo: at(0.025), hi: at(0.975) };
}

/** The median: the middle value, or the mean of the two middle ones; NaN for no values. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The q-quantile (0..1) of a list of numbers, by linear interpolation. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = q * (s.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}
