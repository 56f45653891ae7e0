/**
 * The message rules' review of a trace's verdicts (messages.ts), once every span's signals are in: what the run
 * recovered from on its own, detector readings of a message's other ends moved onto the span that stands for it, and
 * the readings its two ends contradict dropped.
 */
import type { SpanRecord } from '../traces/model';
import { edgeKey } from '../traces/view';
import { CONTENT_TYPES, DELIVERY_TYPES, short, type Logical } from './message-record';
import type { Signal, SpanVerdict } from './signals';

/**
 * A fault the run recovered from on its own: a failed or lost message the sender sent again and got through (same
 * id or payload, same edge), or a failed tool / agent call after which the caller carried on successfully. Its
 * signals are kept only as a weak note.
 */
export function recoveries(messages: Logical[]): void {
  for (let i = 0; i < messages.length; i++) {
    const l = messages[i]!;
    const send = l.send;
    if (!send) continue;
    const top = l.signals.reduce<Signal | undefined>(
      (b, s) => (b === undefined || s.confidence > b.confidence ? s : b),
      undefined,
    );
    if (!top || top.confidence < 0.55 || !['error', 'timeout', 'non_delivery'].includes(top.faultType)) continue;
    // A silent drop is invisible to the sender: only a failure it saw can be recovered from on its own.
    if (top.faultType === 'non_delivery' && !send.failure) continue;
    const ok = (o: Logical): boolean =>
      o.send !== undefined &&
      o.send.failure === undefined &&
      (o.delivered ?? 1) > 0 &&
      !o.signals.some((s) => s.confidence >= 0.55);
    const applicationError =
      send.failure?.errorType === 'tool_error' || (send.failure?.rpc !== undefined && send.failure.http === undefined);
    const later = messages.slice(i + 1);
    const retry = later.find(
      (o) =>
        ok(o) &&
        edgeKey(o) === edgeKey(l) &&
        ((o.send!.id !== undefined && o.send!.id === send.id) ||
          (o.send!.payload?.hash !== undefined && o.send!.payload.hash === send.payload?.hash)),
    );
    const carriedOn = applicationError
      ? later.find((o) => ok(o) && o.source !== undefined && o.source === l.source)
      : undefined;
    const by = retry ?? carriedOn;
    if (!by) continue;
    l.recovered = retry
      ? `recovered: the same message was sent again and got through`
      : `recovered: the caller went on after the failed call`;
    l.signals.splice(0, l.signals.length, { ...top, confidence: 0.3, evidence: `${l.recovered} (${top.evidence})` });
  }
}

/**
 * Receive spans that failed (the receiver's own handler threw) for a message its sender then sent again and got
 * through: the failure, and every failed span inside that receiver's run, is one the run recovered from.
 */
function recoveredReceives(messages: Logical[]): {
  spans: Map<string, string>;
  windows: { from: number; to: number; why: string }[];
} {
  const spans = new Map<string, string>();
  const windows: { from: number; to: number; why: string }[] = [];
  for (let i = 0; i < messages.length; i++) {
    const l = messages[i]!;
    const id = l.send?.id ?? l.receives[0]?.id;
    if (id === undefined || l.system === 'mcp') continue;
    const again = messages
      .slice(i + 1)
      .find(
        (o) =>
          (o.send?.id ?? o.receives[0]?.id) === id &&
          o.target === l.target &&
          o.delivered !== 0 &&
          !o.receives.some((r) => r.span.status.code === 'ERROR') &&
          !o.signals.some((x) => x.confidence >= 0.55),
      );
    if (!again) continue;
    const why = `recovered: the receiver failed on message ${short(id)} and its sender sent it again`;
    for (const r of l.receives) if (r.span.status.code === 'ERROR') spans.set(r.span.spanId, why);
    // Without receive spans the receiver's failure shows only as failed spans between the send and the resend.
    if (l.send && again.send) windows.push({ from: l.send.start, to: again.send.start, why });
  }
  return { spans, windows };
}

export function review(verdicts: SpanVerdict[], ofSpan: Map<string, Logical>): void {
  const bySpan = new Map<string, SpanVerdict>();
  for (const v of verdicts) bySpan.set(v.span.spanId, v);
  const recovered = recoveredReceives([...new Set(ofSpan.values())].sort((a, b) => a.start - b.start));
  const note = (v: SpanVerdict, why: string): void => {
    const top = v.signals.reduce<Signal | undefined>(
      (b, x) => (b === undefined || x.confidence > b.confidence ? x : b),
      undefined,
    );
    v.signals = top
      ? [{ ...top, confidence: Math.min(top.confidence, 0.3), evidence: `${why} (${top.evidence})` }]
      : [];
  };
  if (recovered.spans.size > 0 || recovered.windows.length > 0) {
    for (const v of verdicts) {
      if (v.signals.length === 0) continue;
      // The failed receive span and every span under it; without receive spans, a failed span (not a message)
      // between the send and the resend.
      let cur: SpanRecord | undefined = v.span;
      let why: string | undefined;
      for (let depth = 0; cur && depth < 64 && why === undefined; depth++) {
        why = recovered.spans.get(cur.spanId);
        cur = cur.parentSpanId ? bySpan.get(cur.parentSpanId)?.span : undefined;
      }
      if (why === undefined && v.stepKind === null) {
        why = recovered.windows.find(
          (w) =>
            v.span.start >= w.from &&
            v.span.end <= w.to + 1 &&
            v.signals.every((x) => x.faultType === 'error' || x.faultType === 'timeout'),
        )?.why;
      }
      if (why !== undefined) note(v, why);
    }
  }
  for (const v of verdicts) {
    if (v.stepKind !== 'message') continue;
    const l = ofSpan.get(v.span.spanId);
    if (!l || l.step.spanId === v.span.spanId) continue;
    // Another end of a message: what detectors said about it counts for the message, on the span standing for it.
    const step = bySpan.get(l.step.spanId);
    if (step) step.signals.push(...v.signals.filter((s) => s.source === 'detection' || s.source === 'detector'));
    v.signals = [];
  }
  const seen = new Set<Logical>();
  for (const l of ofSpan.values()) {
    if (seen.has(l)) continue;
    seen.add(l);
    const v = bySpan.get(l.step.spanId);
    if (!v) continue;
    const fromDetectors = (s: Signal): boolean => s.source === 'detection' || s.source === 'detector';
    v.signals = v.signals.filter((s) => {
      if (!fromDetectors(s)) return true;
      if (l.recovered) return false;
      // Both ends agree (delivered once, as sent): a reading of the content or the delivery is not a message fault.
      if (l.intact && (CONTENT_TYPES.has(s.faultType) || DELIVERY_TYPES.has(s.faultType))) return false;
      // The two ends say what changed: another reading of the change is overruled.
      if (l.changeType !== undefined && CONTENT_TYPES.has(s.faultType) && s.faultType !== l.changeType) return false;
      // A detector reads non-delivery into a message span that records no delivered copies; only a count this
      // module knows to be zero says so.
      if (s.faultType === 'non_delivery' && l.delivered !== 0) return false;
      if (l.renamed && s.faultType === 'partial') return false;
      if (
        l.sameIdCopies !== undefined &&
        l.sameIdCopies <= 1 &&
        l.send?.id !== undefined &&
        s.faultType === 'duplicate'
      )
        return false;
      return true;
    });
  }
}
