/**
 * Infinite loops and step repetition (ARCF: verification / termination; MAST 1.3 Step repetition): the same step
 * done again and again within a task —
 *  - the same request sent again after it was answered (a retry after a failure is recovery, not repetition);
 *  - the same tool call (name and arguments) made by the same agent, with nothing else in between;
 *  - the same answer from the same agent to different requests (an agent stuck on one reply);
 *  - the same message (same payload) handed along the same edge again, or a handoff cycle A → B → A → B with the same
 *    payloads.
 * Everything is compared by fingerprint (history.ts), so content-free traces are judged as well as live calls.
 * A step done twice is common and often fine (a re-ask, a check); REPEATS in a row is what counts. Offline, a tool
 * call repeated after every earlier execution of it in the turn failed is a retry, not a loop (retriesFailedTool).
 */
import type { Detector, Finding, LlmObservation, MessageObservation, Observation } from '../types';
import { payloadPrint } from '../history';
import { callFacts, monitorFinding, sameAgent } from './common';
import type { WorkflowStep } from './read';

export const REPETITION = 'repetition';

/** Occurrences (this one included) that make a loop. */
export const REPEATS = 3;
/** Answers at least this long (or with tool calls) count for the same-answer rule. */
const SUBSTANTIAL = 40;

function llmRepetition(o: LlmObservation, earlier: readonly Observation[]): Finding[] {
  const now = callFacts(o);
  const mine =
    o.scope?.agent !== undefined ? sameAgent(o, earlier) : earlier.filter((e): e is LlmObservation => e.kind === 'llm');
  const facts = mine.map(callFacts);
  const out: Finding[] = [];

  // The same request, answered each earlier time.
  if (now.request !== undefined) {
    let answeredBefore = 0;
    for (const f of facts) if (f.request === now.request && f.ok) answeredBefore++;
    if (answeredBefore >= REPEATS - 1) {
      out.push(
        monitorFinding(
          REPETITION,
          'infinite_loop',
          'duplicate',
          answeredBefore >= 2 * REPEATS - 1 ? 'error' : 'warning',
          0.8,
          `the same request was sent ${answeredBefore + 1} times in the task, answered each time${who(o)}`,
        ),
      );
      return out;
    }
  }
  // The same tool call, consecutively.
  for (const [i, print] of now.tools.entries()) {
    let run = 1;
    for (let j = facts.length - 1; j >= 0; j--) {
      const t = facts[j]!.tools;
      if (t.length === 0) continue; // a text-only turn between tool calls does not break the run
      if (t.length === 1 && t[0] === print) run++;
      else break;
    }
    if (run >= REPEATS) {
      const name = o.response.toolCalls[i]?.name;
      out.push(
        monitorFinding(
          REPETITION,
          'infinite_loop',
          'duplicate',
          run >= 2 * REPEATS ? 'error' : 'warning',
          0.75,
          `the same tool call${name ? ` (${name})` : ''} with the same arguments ${run} times in a row${who(o)}`,
          { field: `tool_calls[${i}]` },
        ),
      );
      return out;
    }
  }
  // The same answer to different requests, consecutively (an agent stuck on one reply, in one conversation or turn
  // after turn). A short fixed answer ("accept", "TERMINATE") is often legitimate, so only substantial answers count.
  const chars = o.hasContent ? o.response.text.length : (o.facts?.outputChars ?? 0);
  const calls = o.hasContent ? o.response.toolCalls.length : (o.facts?.toolCallCount ?? 0);
  if (now.ok && now.content !== undefined && o.scope?.agent !== undefined && (chars >= SUBSTANTIAL || calls > 0)) {
    let run = 1;
    for (let j = facts.length - 1; j >= 0; j--) {
      const f = facts[j]!;
      if (f.content === now.content && f.request !== undefined && f.request !== now.request) run++;
      else break;
    }
    if (run >= REPEATS)
      out.push(
        monitorFinding(
          REPETITION,
          'infinite_loop',
          'duplicate',
          'warning',
          0.7,
          `the same answer ${run} times in a row to different requests${who(o)}`,
        ),
      );
  }
  return out;
}

const who = (o: Observation): string => (o.scope?.agent !== undefined ? ` (agent ${o.scope.agent})` : '');

interface Edge {
  source: string;
  target: string;
  print?: string;
}

function edgeOf(m: MessageObservation): Edge | undefined {
  const sent = m.original ?? m.delivered[0];
  if (!sent) return undefined;
  const print = m.facts?.payloadHash ?? (m.hasContent || m.original ? payloadPrint(sent) : undefined);
  return { source: sent.source, target: sent.target, ...(print !== undefined ? { print } : {}) };
}

function messageRepetition(m: MessageObservation, earlier: readonly Observation[]): Finding[] {
  const now = edgeOf(m);
  if (!now || now.print === undefined) return [];
  const edges = earlier
    .filter((e): e is MessageObservation => e.kind === 'message')
    .map(edgeOf)
    .filter((e): e is Edge => e !== undefined);
  const same = edges.filter((e) => e.source === now.source && e.target === now.target && e.print === now.print).length;
  if (same >= REPEATS - 1) {
    return [
      monitorFinding(
        REPETITION,
        'infinite_loop',
        'duplicate',
        'warning',
        0.75,
        `the same message sent ${same + 1} times from ${now.source} to ${now.target}`,
      ),
    ];
  }
  // A → B → A → B …: the last 2·(REPEATS−1) edges alternate between the same two messages, then this one.
  const need = 2 * (REPEATS - 1);
  if (edges.length >= need) {
    const tail = edges.slice(-need);
    const a = tail[tail.length - 2]!;
    const b = tail[tail.length - 1]!;
    const cycle =
      a.source === now.source &&
      a.target === now.target &&
      a.print === now.print &&
      b.source === now.target &&
      b.target === now.source;
    if (
      cycle &&
      tail.every((e, i) => {
        const ref = i % 2 === 0 ? tail[0]! : tail[1]!;
        return e.source === ref.source && e.target === ref.target && e.print === ref.print;
      })
    ) {
      return [
        monitorFinding(
          REPETITION,
          'infinite_loop',
          'duplicate',
          'warning',
          0.7,
          `handoff cycle ${now.source} → ${now.target} → ${now.source} repeated ${REPEATS} times with the same messages`,
        ),
      ];
    }
  }
  return [];
}

export const repetitionDetector: Detector = {
  name: REPETITION,
  level: 'workflow',
  applies: () => true,
  detect(obs, ctx): Finding[] {
    return obs.kind === 'llm' ? llmRepetition(obs, ctx.earlier) : messageRepetition(obs, ctx.earlier);
  },
};

/**
 * Offline, where the tool executions are recorded: a repeated tool call whose earlier executions in the turn all
 * failed is a retry after a failure — recovery, not a loop (the same rule as for requests). `at` is the call's step.
 */
export function retriesFailedTool(steps: readonly WorkflowStep[], at: number, finding: Finding): boolean {
  const field = /^tool_calls\[(\d+)\]$/.exec(finding.location?.field ?? '');
  const o = steps[at]?.observation;
  if (finding.detector !== REPETITION || !field || o?.kind !== 'llm') return false;
  const name = o.response.toolCalls[Number(field[1])]?.name;
  const turn = o.scope?.turn;
  if (name === undefined || turn === undefined) return false;
  const before = steps.slice(0, at).filter((s) => s.tool?.name === name && s.tool.turn === turn && !s.tool.nested);
  return before.length > 0 && before.every((s) => s.tool?.ok === false);
}
