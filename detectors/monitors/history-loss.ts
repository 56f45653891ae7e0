/**
 * Loss of conversation history and conversation reset (MAST 1.4 and 2.1; ARCF: context overflow and inter-agent
 * misalignment): within one agent turn — one conversation — each request normally carries everything the last one
 * did plus the answer. When a later request carries fewer messages than an earlier one, history was dropped: back to
 * the opening messages, the conversation was reset (2.1); part of it, history was lost (1.4), what a caller does when
 * the context overflows. Counted from the request's message count, recorded on every span without content.
 *
 * Agents that deliberately keep a sliding window will be reported: declare nothing and ignore the warning, or turn
 * the detector off on that route. A new agent turn starts a new conversation and is never compared with the last.
 */
import type { Detector, Finding, LlmObservation } from '../types';
import { messageCount, monitorFinding, sameTurn } from './common';

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
      return [monitorFinding(HISTORY_LOSS, 'context_overflow', 'partial', 'warning', 0.7, `${agent}'s conversation was reset: ${now} message(s) after ${peak} earlier in the same turn`)].map((f) => ({ ...f, mast: '2.1' as const }));
    }
    return [monitorFinding(HISTORY_LOSS, 'context_overflow', 'partial', 'warning', 0.6, `${agent}'s request carried ${now} messages after ${last} in the same turn: ${last - now} dropped`)];
  },
};
