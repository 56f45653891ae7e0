/**
 * Output-quality degradation against the task's own baseline (ARCF: verification; MAST 3.2, nearest): an agent's
 * answer far below what the same agent answered earlier in the same task — a finished text answer (no tool call,
 * not cut by a token limit: that is truncation, finish_reason's) of under a quarter of the agent's median length,
 * after at least two full answers. Length is the one quality signal every trace carries; ARCF's own evaluation
 * found subtle quality drops the hardest to see, and this catches only the gross ones.
 */
import type { Detector, Finding, LlmObservation } from '../types';
import { answered, median, monitorFinding, sameAgent } from './common';

export const QUALITY_DEGRADATION = 'quality_degradation';

/** Earlier full answers needed for a baseline. */
const BASELINE = 2;
const RATIO = 0.25;
/** Baselines below this many characters are too short to compare. */
const MIN_BASELINE_CHARS = 80;

const LIMITS = /^(length|max_tokens|max_output_tokens|MAX_TOKENS|model_context_window_exceeded)$/;

function textChars(o: LlmObservation): number | undefined {
  const calls = o.facts?.toolCallCount ?? o.response.toolCalls.length;
  if (calls > 0) return undefined;
  if (!answered(o) || o.response.finishReasons.some((f) => LIMITS.test(f))) return undefined;
  return o.hasContent ? o.response.text.length : o.facts?.outputChars;
}

export const qualityDegradationDetector: Detector = {
  name: QUALITY_DEGRADATION,
  applies: (obs) => obs.kind === 'llm' && obs.scope?.agent !== undefined,
  detect(obs, ctx): Finding[] {
    const o = obs as LlmObservation;
    const now = textChars(o);
    if (now === undefined) return [];
    const baseline = sameAgent(o, ctx.earlier)
      .map(textChars)
      .filter((n): n is number => n !== undefined && n > 0);
    if (baseline.length < BASELINE) return [];
    const m = median(baseline);
    if (m < MIN_BASELINE_CHARS || now >= RATIO * m) return [];
    return [monitorFinding(QUALITY_DEGRADATION, 'quality_degradation', 'semantic', 'warning', 0.6, `${o.scope?.agent}'s answer of ${now} chars against a median of ${Math.round(m)} over its ${baseline.length} earlier answers in the task`)];
  },
};
