/**
 * The steps of a trace: which spans are LLM calls and which are messages, and their order (`step` is a 1-based index
 * into these lists). What counts as either is the normalisation layer's (src/traces/view): these delegate to it so
 * that ground truth, the rules and the LLM diagnoser count steps the same way. Above both the model and the view, so
 * that the model stays plain data the view reads.
 */
import { isLlmCallSpan, isMessageSpan, viewTrace } from './view';
import type { SpanRecord, TraceRecord } from './model';

/** An LLM call span, in any producer's convention (see src/traces/view/recognize.ts). */
export function isLlmSpan(span: SpanRecord): boolean {
  return isLlmCallSpan(span);
}

export { isMessageSpan };

/** LLM call spans of a trace ordered by start time: `step` is a 1-based index into this list. A span wrapping
 * another LLM span (a framework's around the client's) is not a call of its own. */
export function llmSpans(trace: TraceRecord): SpanRecord[] {
  return viewTrace(trace).llm.map((c) => c.span);
}

/** Message spans of a trace ordered by start time: `step` of a message fault is a 1-based index into this list. */
export function messageSpans(trace: TraceRecord): SpanRecord[] {
  return viewTrace(trace).messages.map((m) => m.span);
}

/**
 * The 1-based step of a span: its index among the LLM call spans if it is one, else among the message spans.
 * Returns undefined for any other span.
 */
export function stepOf(trace: TraceRecord, spanId: string): number | undefined {
  const v = viewTrace(trace);
  const call = v.llmOf(spanId);
  if (call) return call.step;
  return v.messages.find((m) => m.span.spanId === spanId)?.step;
}
