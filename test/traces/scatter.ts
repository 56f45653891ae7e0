/** Spans as a fleet of exporters delivers them: a trace's spans in several batches, out of order, interleaved. */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every trace's spans shuffled and cut into batches of 1–3, the batches of all traces interleaved. */
export function scatter(spans: readonly ReadableSpan[], seed: number): ReadableSpan[][] {
  const r = rng(seed);
  const byTrace = new Map<string, ReadableSpan[]>();
  for (const s of spans) {
    const id = s.spanContext().traceId;
    byTrace.set(id, [...(byTrace.get(id) ?? []), s]);
  }
  const queues = [...byTrace.values()].map((list) => {
    const l = [...list];
    for (let i = l.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [l[i], l[j]] = [l[j]!, l[i]!];
    }
    const batches: ReadableSpan[][] = [];
    for (let i = 0; i < l.length;) {
      const n = 1 + Math.floor(r() * 3);
      batches.push(l.slice(i, i + n));
      i += n;
    }
    return batches;
  });
  const out: ReadableSpan[][] = [];
  // A few traces at a time are in flight, as in a service: their batches interleave.
  const active: ReadableSpan[][][] = [];
  while (queues.length > 0 || active.length > 0) {
    while (active.length < 4 && queues.length > 0) active.push(queues.shift()!);
    const k = Math.floor(r() * active.length);
    out.push(active[k]!.shift()!);
    if (active[k]!.length === 0) active.splice(k, 1);
  }
  return out;
}
