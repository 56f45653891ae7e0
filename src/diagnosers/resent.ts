/**
 * A model call the SDK's own retry recovered. openai-node (and the other Stainless SDKs) resend a request that failed
 * with a transient status (408, 409, 429, 5xx) or a connection error or timeout, under the same parent and with
 * `x-stainless-retry-count` counting the attempts (faultline records it per attempt). When a resend of the same
 * request was answered and the run completed, the failed attempt is reported as recovered, not as the run's fault: the
 * application never saw it.
 */
import type { LlmCall, TraceView } from '../traces/view';

/** Statuses the SDKs document as retried (openai-node `shouldRetry`): request timeout, conflict, rate limit, 5xx. */
function transient(call: LlmCall): boolean {
  const f = call.failure;
  if (f === undefined) return call.faultline?.aborted === true;
  if (f.timeout) return true;
  const status =
    f.httpStatus ?? (f.errorType !== undefined && /^\d{3}$/.test(f.errorType) ? Number(f.errorType) : undefined);
  return status === 408 || status === 409 || status === 429 || (status !== undefined && status >= 500);
}

/** Whether `later` sends `call`'s request again: same parent, operation and model, and a higher SDK retry count (or,
 * without one, the same input messages as captured). */
function sameRequest(call: LlmCall, later: LlmCall): boolean {
  if (
    later.span.parentSpanId !== call.span.parentSpanId ||
    later.operation !== call.operation ||
    later.requestModel !== call.requestModel
  )
    return false;
  const [a, b] = [call.faultline, later.faultline];
  if (a?.retryCount !== undefined && b?.retryCount !== undefined)
    return b.retryCount > a.retryCount && a.messageCount === b.messageCount;
  return (
    call.input !== undefined && later.input !== undefined && JSON.stringify(call.input) === JSON.stringify(later.input)
  );
}

/** The answered resend of a failed call, if the SDK's retry recovered it. */
export function answeredResend(call: LlmCall, view: TraceView): LlmCall | undefined {
  if (!transient(call)) return undefined;
  return view.llm.find(
    (c) =>
      c.step > call.step &&
      c.span.start >= call.span.end - 1 &&
      c.failure === undefined &&
      c.faultline?.aborted !== true &&
      sameRequest(call, c),
  );
}
