/**
 * The one clock of faultline's spans: the monotonic clock (`performance.now()`) on one wall-clock anchor. Every span
 * faultline starts (LLM calls, agents, workflows, handoffs, receives, framework mirrors), every end, every event and
 * every exception it records reads it, so its spans keep the order their work had.
 *
 * The OTel SDK stamps a span given no start time with `Date.now()`, which has whole milliseconds, and a span given one
 * takes `Date.now()` again for an end or event given none. Two calls less than a millisecond apart could come out in
 * the wrong order, a step of the wall clock between two calls reorders them too, and a span on that clock next to one
 * on this could start before one that ended ahead of it. One anchor for the process keeps the spans in the order they
 * were made, with their exact durations. The anchor follows the wall clock when the two differ by more than
 * `FOLLOW_MS` (an NTP step or a long slew), so the spans stay next to those of other producers; only a reading of the
 * two clocks that nothing interrupted counts.
 */
import type { HrTime } from '@opentelemetry/api';

/** More than the whole-millisecond truncation of `Date.now()`, far less than anything a trace reader compares. */
const FOLLOW_MS = 5;
/** A reading of the two clocks that took longer than this was interrupted (a GC pause, the thread descheduled). */
const READ_MS = 0.5;

/**
 * Wall clock minus monotonic clock, or undefined when the reading was interrupted between the two clocks: such a
 * reading is off by the pause, and following it would move every span after it (and end a span begun before it
 * earlier than it started). `Date.now()` truncates: the true offset lies within a millisecond above `wall - mono`.
 */
function offset(): number | undefined {
  const before = performance.now();
  const wall = Date.now();
  const after = performance.now();
  return after - before <= READ_MS ? wall + 0.5 - (before + after) / 2 : undefined;
}

let anchor = offset() ?? offset() ?? Date.now() + 0.5 - performance.now();

/** The wall-clock time of a `performance.now()` reading, as an OTel HrTime. */
export function spanTime(perfMs: number): HrTime {
  const seen = offset();
  if (seen !== undefined && Math.abs(seen - anchor) > FOLLOW_MS) anchor = seen;
  const ms = anchor + perfMs;
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.floor((ms - seconds * 1000) * 1e6)];
}

/** Now, on the span clock: the time to give a span's start, end, event or exception. */
export function now(): HrTime {
  return spanTime(performance.now());
}
