/**
 * Deadlines and latency outliers: a message delivered after its deadline (or, when nothing was delivered, a timeout),
 * and an LLM call far slower than the route's baseline (median + 5 robust deviations, at least 2× the median and
 * 1 s more). The baseline comes from the context, or from the earlier calls of the task when there are enough.
 */
import { median } from '../src/stats';
import type { DetectionContext, Detector, Finding, LlmObservation, MessageObservation, Observation } from './types';

const MAD_SCALE = 1.4826;

function baseline(ctx: DetectionContext): { medianMs: number; madMs: number } | undefined {
  if (ctx.latency) return ctx.latency;
  const d: number[] = [];
  for (const e of ctx.earlier)
    if (e.kind === 'llm' && e.response.durationMs > 0 && e.response.status !== undefined && e.response.status < 400)
      d.push(e.response.durationMs);
  if (d.length < 4) return undefined;
  const m = median(d);
  return { medianMs: m, madMs: median(d.map((x) => Math.abs(x - m))) };
}

export const latencyDetector: Detector = {
  name: 'latency',
  applies: (obs) => (obs.kind === 'message' ? obs.latencyMs !== undefined : obs.response.durationMs > 0),
  detect(obs: Observation, ctx): Finding[] {
    if (obs.kind === 'message') {
      const m = obs as MessageObservation;
      if (m.deadlineMs === undefined || m.latencyMs === undefined || m.latencyMs <= m.deadlineMs) return [];
      const nothing = m.delivered.length === 0 && (m.facts?.deliveredCount ?? 0) === 0;
      return [
        {
          detector: 'latency',
          faultType: nothing ? 'timeout' : 'delay',
          severity: 'error',
          confidence: 0.9,
          evidence: `${nothing ? 'nothing delivered' : 'delivered'} after ${Math.round(m.latencyMs)} ms, deadline ${m.deadlineMs} ms`,
          location: { spanId: m.spanId },
        },
      ];
    }
    const o = obs as LlmObservation;
    const b = baseline(ctx);
    if (!b) return [];
    const d = o.response.durationMs;
    const limit = Math.max(b.medianMs + 5 * MAD_SCALE * b.madMs, 2 * b.medianMs, b.medianMs + 1000);
    if (d <= limit) return [];
    return [
      {
        detector: 'latency',
        faultType: 'delay',
        severity: 'warning',
        confidence: 0.7,
        evidence: `${Math.round(d)} ms against a baseline median of ${Math.round(b.medianMs)} ms`,
        location: { spanId: o.spanId },
      },
    ];
  },
};
