/**
 * The longest duration a Node timer can hold. Above 2^31-1 ms Node prints a TimeoutOverflowWarning on the app's
 * stderr and fires after 1 ms instead: a plan's `delayMs: 3e9` would become no delay and a guard's backoff a
 * hammering retry. Every duration a plan or a guard config gives is refused above it, at validation, naming the field.
 */
import type { z } from 'zod';

export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `schema` (a number of milliseconds) bounded by what a timer can hold. */
export function timerMs(schema: z.ZodNumber): z.ZodNumber {
  return schema.max(MAX_TIMER_MS, `a duration above ${MAX_TIMER_MS} ms (about 24.8 days, the longest a timer holds)`);
}
