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
