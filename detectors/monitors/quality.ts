/**
 * Output-quality degradation against the task's own baseline (ARCF: verification; MAST 3.2, nearest): an agent
 * doing the same job again in the same task, and answering far below its earlier runs — the first answer of an agent
 * turn (a finished text answer: no tool call, not cut by a token limit, which is truncation and finish_reason's)
 * under a quarter of the median of the first answers of the agent's earlier turns, after at least three that agree
 * with each other (none under half their median: an agent whose answers vary by nature has no baseline). Only first
 * answers are compared: within one turn an agent's answers change kind (a ReAct step, then a short final answer).
 * Length is the one quality signal every trace carries; ARCF's own evaluation found subtle quality drops the hardest
 * to see, and this catches only the gross ones.
 *
 * Offline, any producer's spans (`outputCollapse`): an agent's finished text answers across the run, sized by their
 * characters when content is captured and by `gen_ai.usage.output_tokens` when not (a call that asked for a tool —
 * by its finish reason, its recorded tool calls, or the tools the turn ran after it — is not an answer). When the
 * agent's last answers, at least TAIL of them and to the end of the run, are each under RATIO of the median of its
 * earlier ones (at least BASELINE_ANSWERS, their median not too short to compare), its output collapsed: one short
 * sign-off after long parts is a close, two or more in a row with nothing better after is a collapse. One earlier
 * answer is not a baseline; with content, a brief answer to a question is not compared (it may be all that was asked).
 */
import type { SpanRecord } from '../../src/traces/model';
import type { Detector, Finding, LlmObservation } from '../types';
import { answered, median, monitorFinding, sameAgent } from './common';
import type { WorkflowRun } from './read';

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

/** The request's last user message asks a question: a brief answer may be all it needs. */
function asksQuestion(o: LlmObservation): boolean {
  const users = (o.request?.messages ?? []).filter((m) => m.role === 'user');
  const last = users[users.length - 1];
  const text = last
    ? last.parts
        .map((p) => (p.type === 'text' && typeof p.content === 'string' ? p.content : ''))
        .join(' ')
        .trim()
    : '';
  return text.endsWith('?');
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
    if (now === undefined || (o.hasContent && asksQuestion(o))) return [];
    const baseline = firstOfTurns(mine)
      .map(textChars)
      .filter((n): n is number => n !== undefined && n > 0);
    if (baseline.length < BASELINE) return [];
    const m = median(baseline);
    if (m < MIN_BASELINE_CHARS || Math.min(...baseline) < STEADY * m || now >= RATIO * m) return [];
    return [
      monitorFinding(
        QUALITY_DEGRADATION,
        'quality_degradation',
        'semantic',
        'warning',
        0.6,
        `${o.scope?.agent}'s answer of ${now} chars against a median of ${Math.round(m)} over its ${baseline.length} earlier turns in the task`,
      ),
    ];
  },
};

/** Collapsed answers in a row, at the end, that make a collapse; earlier answers needed for a baseline. */
const TAIL = 2;
const BASELINE_ANSWERS = 2;
/** Baselines below this many output tokens are too short to compare (MIN_BASELINE_CHARS in tokens, 4 chars each). */
const MIN_BASELINE_TOKENS = MIN_BASELINE_CHARS / 4;

const TOOL_FINISH = /tool|function/i;

/** An agent's answers collapsing at the end of the run, from characters or output tokens. */
export function outputCollapse(run: WorkflowRun): Array<{ finding: Finding; span: SpanRecord }> {
  const byAgent = new Map<string, Array<{ obs: LlmObservation; span: SpanRecord }>>();
  for (const step of run.steps) {
    const o = step.observation;
    if (o?.kind !== 'llm' || o.scope?.agent === undefined || !answered(o)) continue;
    if (o.response.finishReasons.some((f) => LIMITS.test(f) || TOOL_FINISH.test(f))) continue;
    if (o.response.toolCalls.length > 0 || (o.facts?.toolCallCount ?? 0) > 0 || (step.ranTools?.length ?? 0) > 0)
      continue;
    // A brief answer to a question (the request's last user message asks one) may be all it needs: not compared.
    if (o.hasContent && asksQuestion(o)) continue;
    const list = byAgent.get(o.scope.agent) ?? [];
    list.push({ obs: o, span: step.span });
    byAgent.set(o.scope.agent, list);
  }
  const out: Array<{ finding: Finding; span: SpanRecord }> = [];
  for (const [agent, answers] of byAgent) {
    const chars = answers.every((a) => a.obs.hasContent);
    const size = (o: LlmObservation): number | undefined =>
      chars ? o.response.text.length : (o.response.usage?.outputTokens ?? o.facts?.outputChars);
    const sizes = answers.map((a) => size(a.obs));
    if (sizes.some((n) => n === undefined)) continue;
    const xs = sizes as number[];
    // The earliest point after which every answer is under RATIO of the median of the answers before it.
    const floor = chars ? MIN_BASELINE_CHARS : MIN_BASELINE_TOKENS;
    let cut = -1;
    for (let k = BASELINE_ANSWERS; k <= xs.length - TAIL && cut < 0; k++) {
      const m = median(xs.slice(0, k));
      if (m >= floor && xs.slice(k).every((n) => n < RATIO * m)) cut = k;
    }
    if (cut < 0) continue;
    const tail = xs.length - cut;
    const m = median(xs.slice(0, cut));
    const unit = chars ? 'chars' : 'output tokens';
    out.push({
      span: answers[cut]!.span,
      finding: monitorFinding(
        QUALITY_DEGRADATION,
        'quality_degradation',
        'semantic',
        'warning',
        0.65,
        `${agent}'s last ${tail} answers collapsed to ${xs.slice(cut).join(', ')} ${unit} against a median of ${Math.round(m)} over its ${cut} earlier answers, with nothing better after`,
      ),
    });
  }
  return out;
}
