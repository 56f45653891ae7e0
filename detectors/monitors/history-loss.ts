/**
 * Loss of conversation history and conversation reset (MAST 1.4 and 2.1; ARCF: context overflow and inter-agent
 * misalignment): within one agent turn — one conversation — each request normally carries everything the last one
 * did plus the answer. When a later request carries fewer messages than an earlier one, history was dropped: back to
 * the opening messages, the conversation was reset (2.1); part of it, history was lost (1.4), what a caller does when
 * the context overflows. Counted from the request's message count, recorded on every span without content.
 *
 * Agents that deliberately keep a sliding window will be reported: declare nothing and ignore the warning, or turn
 * the detector off on that route. A new agent turn starts a new conversation and is never compared with the last.
 *
 * Offline, any producer's spans (`historyResets`): a chat API is stateless, so a conversation's next request carries
 * the last one and its answer. A later call of the turn whose request did not grow past the last answered one — by
 * its input message count, or without messages by `gen_ai.usage.input_tokens` under the last request's plus half its
 * answer's output tokens (reasoning tokens are not resent; a call where a prompt cache took part is compared by
 * messages only) — and that asks again for a tool the turn already asked for (with the same arguments, when they
 * were recorded), lost what it had done: back to the opening request's size it was reset (2.1), else history was
 * lost (1.4). A turn whose requests never grew (a
 * stateful API sending only what is new) is not judged, and a re-read on the full history (grown) is not a loss.
 */
import type { SpanRecord } from '../../src/traces/model';
import type { Detector, Finding, LlmObservation } from '../types';
import { answered, messageCount, monitorFinding, sameTurn } from './common';
import type { WorkflowRun } from './read';

export const HISTORY_LOSS = 'history_loss';

/** Messages a conversation opens with (a user message, perhaps a developer note): at or below, it was reset. */
const OPENING = 2;

export const historyLossDetector: Detector = {
  name: HISTORY_LOSS,
  level: 'workflow',
  applies: (obs) => obs.kind === 'llm' && obs.scope?.turn !== undefined,
  detect(obs, ctx): Finding[] {
    const o = obs as LlmObservation;
    const now = messageCount(o);
    if (now === undefined) return [];
    const before = sameTurn(o, ctx.earlier);
    let peak = 0;
    for (const e of before) peak = Math.max(peak, messageCount(e) ?? 0);
    const last = before.length > 0 ? messageCount(before[before.length - 1]!) : undefined;
    if (last === undefined || now >= last || peak < OPENING + 2) return [];
    const agent = o.scope?.agent ?? 'the agent';
    if (now <= OPENING) {
      return [
        monitorFinding(
          HISTORY_LOSS,
          'context_overflow',
          'partial',
          'warning',
          0.7,
          `${agent}'s conversation was reset: ${now} message(s) after ${peak} earlier in the same turn`,
        ),
      ].map((f) => ({ ...f, mast: '2.1' as const }));
    }
    return [
      monitorFinding(
        HISTORY_LOSS,
        'context_overflow',
        'partial',
        'warning',
        0.6,
        `${agent}'s request carried ${now} messages after ${last} in the same turn: ${last - now} dropped`,
      ),
    ];
  },
};

/** Share of the last answer's output tokens a stateless next request must add, at least (tokenizers differ). */
const GROWTH = 0.5;
/** Within this share above the opening request's input tokens, the request is back at the opening. */
const AT_OPENING = 0.05;

interface TurnCall {
  obs: LlmObservation;
  span: SpanRecord;
  /** Tools the call asked for: its recorded tool calls (name and arguments), else the tools the turn ran after it
   * (name only). */
  tools: string[];
}

/** A requested tool as compared: with its arguments when they were recorded (reading another file is not redoing). */
const requestKey = (name: string, args: string | undefined): string =>
  args !== undefined ? `${name}\u0000${args.replace(/\s+/g, '')}` : name;

/** Input tokens comparable across calls: not where a prompt cache took part (some providers count cached input
 * apart from `input_tokens`, so the count can drop while the request grew). */
const inputTokens = (o: LlmObservation): number | undefined => {
  const u = o.response.usage;
  return (u?.cacheReadInputTokens ?? 0) > 0 || (u?.cacheCreationInputTokens ?? 0) > 0 ? undefined : u?.inputTokens;
};
/** Output tokens the next request carries back: reasoning tokens are not resent. */
const outputTokens = (o: LlmObservation): number =>
  Math.max(0, (o.response.usage?.outputTokens ?? 0) - (o.response.usage?.reasoningOutputTokens ?? 0));
const counted = (o: LlmObservation): number | undefined => {
  const n = messageCount(o);
  return n !== undefined && n > 0 ? n : undefined;
};

/** Resets and lost history read from any producer's request sizes, with the repeated tool request as the proof. */
export function historyResets(run: WorkflowRun): Array<{ finding: Finding; span: SpanRecord }> {
  const turns = new Map<string, TurnCall[]>();
  for (const step of run.steps) {
    const o = step.observation;
    if (o?.kind !== 'llm' || o.scope?.turn === undefined) continue;
    const named = o.response.toolCalls.filter((c) => c.name !== '').map((c) => requestKey(c.name, c.arguments));
    const calls = turns.get(o.scope.turn) ?? [];
    calls.push({ obs: o, span: step.span, tools: named.length > 0 ? named : (step.ranTools ?? []) });
    turns.set(o.scope.turn, calls);
  }
  const out: Array<{ finding: Finding; span: SpanRecord }> = [];
  for (const calls of turns.values()) {
    const first = calls[0];
    if (!first) continue;
    const asked = new Set<string>();
    let last: TurnCall | undefined;
    let grew = false;
    for (const c of calls) {
      if (last && answered(c.obs)) {
        const [nowN, lastN, firstN] = [counted(c.obs), counted(last.obs), counted(first.obs)];
        const [nowT, lastT, firstT] = [inputTokens(c.obs), inputTokens(last.obs), inputTokens(first.obs)];
        const byMessages = nowN !== undefined && lastN !== undefined;
        const shrank = byMessages
          ? nowN! <= lastN!
          : nowT !== undefined && lastT !== undefined && nowT < lastT + GROWTH * outputTokens(last.obs);
        const repeated = c.tools.filter((t) => asked.has(t));
        if (grew && shrank && repeated.length > 0) {
          const reset = byMessages
            ? firstN !== undefined && nowN! <= firstN
            : firstT !== undefined && nowT! <= firstT * (1 + AT_OPENING);
          const agent = c.obs.scope?.agent ?? 'the agent';
          const size = byMessages
            ? `${nowN} input message(s) after ${lastN}`
            : `${nowT} input tokens after ${lastT} (+${outputTokens(last.obs)} answered)`;
          const finding = reset
            ? {
                ...monitorFinding(
                  HISTORY_LOSS,
                  'context_overflow',
                  'partial',
                  'warning',
                  0.7,
                  `${agent}'s conversation was reset to its opening: ${size}, and it asked again for ${repeated[0]!.split('\u0000')[0]}, already run in this turn`,
                ),
                mast: '2.1' as const,
              }
            : monitorFinding(
                HISTORY_LOSS,
                'context_overflow',
                'partial',
                'warning',
                0.6,
                `${agent}'s request lost part of its history: ${size}, and it asked again for ${repeated[0]!.split('\u0000')[0]}, already run in this turn`,
              );
          out.push({ finding, span: c.span });
          break;
        }
      }
      if (!answered(c.obs)) continue;
      if (last) {
        const [nowN, lastN] = [counted(c.obs), counted(last.obs)];
        const [nowT, lastT] = [inputTokens(c.obs), inputTokens(last.obs)];
        if (
          (nowN !== undefined && lastN !== undefined && nowN > lastN) ||
          (nowT !== undefined && lastT !== undefined && nowT > lastT)
        )
          grew = true;
      }
      for (const t of c.tools) asked.add(t);
      last = c;
    }
  }
  return out;
}
