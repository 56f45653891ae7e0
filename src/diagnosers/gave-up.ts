/**
 * Calls the client gave up on. faultline's own span of a call the application aborted records a cancel
 * (`faultline.response.aborted`, no error): the fetch level sees only the abort, and an SDK that aborts its own
 * timeout without a reason (openai-node does) looks exactly like a user's cancel there. Whether the cancel was a
 * timeout is told by the rest of the trace, so it is judged here and not by the layer:
 *
 *  - a span above the call failed with a timeout after the call ended (openai-node's `APIConnectionTimeoutError`,
 *    "Request timed out.", recorded by the app or by a client instrumentation's span around faultline's);
 *  - or the call was held a multiple (GAVE_UP_RATIO, thresholds.ts) of the longest call of the trace that was
 *    answered: a client waited past any normal answer and gave up, which is what a client timeout is.
 *
 * A cancel with neither (the user closed the tab; the app raced two calls) is the application's decision, not a fault
 * of the call, and the application's own record of it (`APIUserAbortError`, an `AbortError`) is not one either.
 */
import type { SpanRecord } from '../traces/model';
import type { LlmCall, SpanFailure, TraceView } from '../traces/view';
import { ancestors, durationMs, type Signal } from './signals';
import { GAVE_UP_RATIO, LATENCY_MIN_CALLS } from './thresholds';

/** openai-node's `APIUserAbortError` ("Request was aborted."), the platform's `AbortError`: a cancel, not a timeout. */
const CANCEL = /^(APIUserAbortError|AbortError)$|^Request was aborted\.?$|^This operation was aborted\.?$/;

/** Whether a failure is the application's own cancel (and not a timeout). */
export function isCancel(f: SpanFailure): boolean {
  return !f.timeout && [f.errorType, f.message].some((t) => t !== undefined && CANCEL.test(t.trim()));
}

/** When a span's failure was recorded: its exception event, else its end. */
function failedAt(span: SpanRecord): number {
  return span.events.find((e) => e.name === 'exception')?.time ?? span.end;
}

/** The timeout evidence for an aborted call, or undefined when the trace says it was a cancel. */
export function gaveUpOn(call: LlmCall, view: TraceView): Signal | undefined {
  const d = durationMs(call.span);
  for (const a of ancestors(view, call.span)) {
    const f = view.failureOf(a);
    if (f === undefined) continue;
    if (!f.timeout || failedAt(a) < call.span.end - 1) break; // the nearest failure above says what ended the call
    const what = [f.errorType, f.message].filter((t) => t !== undefined && t !== '').join(': ');
    return {
      faultType: 'timeout',
      confidence: 0.95,
      evidence: `the client gave up on the call after ${Math.round(d)} ms (${a.name}: ${what.slice(0, 80)})`,
      source: 'metadata',
    };
  }
  const answered = view.llm
    .filter((c) => c.failure === undefined && c.faultline?.aborted !== true)
    .map((c) => durationMs(c.span));
  if (answered.length < LATENCY_MIN_CALLS) return undefined;
  const longest = Math.max(...answered);
  if (d < GAVE_UP_RATIO * Math.max(longest, 1)) return undefined;
  return {
    faultType: 'timeout',
    confidence: 0.8,
    evidence: `the client gave up on the call after ${Math.round(d)} ms, ${Math.round(d / Math.max(longest, 1))}× the longest answered call of the trace (${Math.round(longest)} ms)`,
    source: 'metadata',
  };
}

/** Whether an aborted call runs under `span` (the span's failure is then that abort's consequence). */
export function abortedBelow(span: SpanRecord, view: TraceView): boolean {
  return view.llm.some((c) => c.faultline?.aborted === true && ancestors(view, c.span).includes(span));
}
