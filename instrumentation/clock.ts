/**
 * Span times for the calls of one process: the monotonic clock (`performance.now()`) on one wall-clock anchor.
 *
 * Given a `performance.now()` time, the OTel SDK anchors each span to `Date.now()` when the span starts, which has
 * whole milliseconds: two calls less than a millisecond apart could come out in the wrong order, and a step of the
 * wall clock between two calls reorders them too. One anchor for the process keeps the calls in the order they were
 * made, with their exact durations. The anchor follows the wall clock when the two differ by more than `FOLLOW_MS`
 * (an NTP step or a long slew), so the spans stay next to those of other producers.
 */
import type { HrTime } from '@opentelemetry/api';

/** More than the whole-millisecond truncation of `Date.now()`, far less than anything a trace reader compares. */
const FOLLOW_MS = 5;

// Date.now() truncates: the true anchor lies within a millisecond above this reading, half a millisecond on average.
let anchor = Date.now() - performance.now() + 0.5;

/** The wall-clock time of a `performance.now()` reading, as an OTel HrTime. */
export function spanTime(perfMs: number): HrTime {
  const seen = Date.now() - performance.now() + 0.5;
  if (Math.abs(seen - anchor) > FOLLOW_MS) anchor = seen;
  const ms = anchor + perfMs;
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.floor((ms - seconds * 1000) * 1e6)];
}
