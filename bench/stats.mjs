// Bench-only statistics shared by the benches.

/** The median of a list of numbers (the mean of the two middle ones for an even count). */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * Median of per-round paired differences, with its 95% distribution-free confidence interval (the sign test's order
 * statistics: no assumption about the shape of the noise, which on a shared machine is anything but normal).
 */
export function pairedMedian(diffs) {
  const s = [...diffs].sort((a, b) => a - b);
  const k = Math.max(0, Math.floor(s.length / 2 - 0.98 * Math.sqrt(s.length)));
  return { median: median(s), lo: s[k], hi: s[s.length - 1 - k] };
}

/**
 * Median of per-round paired differences with its 95% percentile-bootstrap interval: the rounds resampled with
 * replacement `reps` times, the median of each resample taken, and the 2.5th and 97.5th percentiles of those medians.
 * Seeded, so the same rounds give the same interval.
 */
export function bootstrapMedian(diffs, reps = 4000, seed = 0x9e3779b9) {
  const n = diffs.length;
  if (n === 0) return { median: NaN, lo: NaN, hi: NaN };
  let s = seed >>> 0;
  const random = () => {
    // mulberry32
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const medians = new Float64Array(reps);
  const sample = new Float64Array(n);
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < n; i++) sample[i] = diffs[Math.floor(random() * n)];
    sample.sort();
    const m = n >> 1;
    medians[r] = n % 2 ? sample[m] : (sample[m - 1] + sample[m]) / 2;
  }
  medians.sort();
  return {
    median: median(diffs),
    lo: medians[Math.floor(0.025 * (reps - 1))],
    hi: medians[Math.ceil(0.975 * (reps - 1))],
  };
}
