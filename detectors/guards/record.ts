/**
 * Record: every guard action is a `faultline.guard` span event (action, route, reason, attempt), so a trace shows
 * what the guards did and why. Never throws.
 */
import type { Span } from '@opentelemetry/api';
import { now } from '../../src/clock';
import {
  ATTR_FL_GUARD_ACTION,
  ATTR_FL_GUARD_ATTEMPT,
  ATTR_FL_GUARD_REASON,
  ATTR_FL_GUARD_ROUTE,
  EVENT_FL_GUARD,
} from '../../instrumentation/semconv';

export type GuardAction =
  | 'record'
  | 'reject'
  | 'retry'
  | 'fallback'
  | 'reacquire'
  | 'accept'
  | 'drop'
  | 'circuit_open'
  | 'circuit_half_open'
  | 'circuit_closed'
  | 'fail_fast'
  | 'duplicate_suppressed'
  | 'receipt_replayed'
  | 'resubmit'
  | 'verify_pass'
  | 'verify_fail';

export function recordGuard(
  span: Span | undefined,
  action: GuardAction,
  route: string,
  reason: string,
  attempt?: number,
): void {
  if (!span || !span.isRecording()) return;
  try {
    const attrs: Record<string, string | number> = {
      [ATTR_FL_GUARD_ACTION]: action,
      [ATTR_FL_GUARD_ROUTE]: route,
      [ATTR_FL_GUARD_REASON]: reason.slice(0, 300),
    };
    if (attempt !== undefined) attrs[ATTR_FL_GUARD_ATTEMPT] = attempt;
    span.addEvent(EVENT_FL_GUARD, attrs, now());
  } catch {
    /* recording is best effort */
  }
}
