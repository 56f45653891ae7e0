/**
 * Output-quality degradation against the task's own baseline (ARCF: verification; MAST 3.2, nearest): an agent
 * doing the same job again in the same task, and answering far below its earlier runs — the first answer of an agent
 * turn (a finished text answer: no tool call, not cut by a token limit, which is truncation and finish_reason's)
 * under a quarter of the median of the first answers of the agent's earlier turns, after at least three that agree
 * with each other (none under half their median: an agent whose answers vary by nature has no baseline). Only first
 * answers are compared: within one turn an agent's answers change kind (a ReAct step, then a short final answer).
 * Length is the one quality signal every trace carries; ARCF's own evaluation found subtle quality drops the hardest
 * to see, and this catches only the gross ones.
 */
import type { Detector, Finding, LlmObservation } from '../types';
import { answered, median, monitorFinding, sameAgent } from './common';

export const QUALITY_DEGRADATION = 'quality_degradation';

/** Earlier turns needed for a baseline, and how steady it must be (its shortest at least this share of its median):
 * an agent whose answers vary widely by nature has no baseline to fall below. */
const BASELINE = 3;
const STEADY = 0.5;
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

/** The first call of each agent turn, in order. */
function firstOfTurns(calls: readonly LlmObservation[]): LlmObservation[] {
  const seen = new Set<string | undefined>();
  const out: LlmObservation[] = [];
  for (const c of calls) {
    if (seen.has(c.scope?.turn)) continue;
    seen.add(c.scope?.turn);
    out.push(c);
  }
  return out;
}

export const qualityDegradationDetector: Detector = {
  name: QUALITY_DEGRADATION,
  level: 'workflow',
  applies: (obs) => obs.kind === 'llm' && obs.scope?.agent !== undefined,
  detect(obs, ctx): Finding[] {
    const o = obs as LlmObservation;
    if (o.scope?.turn === undefined) return [];
    const mine = sameAgent(o, ctx.earlier);
    if (mine.some((e) => e.scope?.turn === o.scope?.turn)) return []; // not the turn's first answer
    const now = textChars(o);
    if (now === undefined) return [];
    const baseline = firstOfTurns(mine)
      .map(textChars)
      .filter((n): n is number => n !== undefined && n > 0);
    if (baseline.length < BASELINE) return [];
    const m = median(baseline);
    if (m < MIN_BASELINE_CHARS || Math.min(...baseline) < STEADY * m || now >= RATIO * m) return [];
    return [monitorFinding(QUALITY_DEGRADATION, 'quality_degradation', 'semantic', 'warning', 0.6, `${o.scope?.agent}'s answer of ${now} chars against a median of ${Math.round(m)} over its ${baseline.length} earlier turns in the task`)];
  },
};
