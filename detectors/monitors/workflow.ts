/**
 * The workflow-level monitors: what can only be judged of a whole task, against what it declared
 * (`runWorkflow(name, fn, { requiredSteps, deadlineMs })`).
 *  - premature termination (MAST 3.1): the workflow ended without completing a required step, or ended on an
 *    incomplete final answer — its last LLM call cut by a token limit, or empty — with nothing after it;
 *  - timeouts (ARCF; MAST 1.5, nearest): it ended after its deadline;
 *  - deadlock and no progress (ARCF; MAST 1.5, nearest): at its deadline it is still running, and its open agent
 *    turns wait on each other (a cycle), or no step has completed since it started; otherwise it is late.
 *
 * One pure function over a snapshot, fed online from the live workflow state (online.ts, at the deadline and at the
 * end) and offline from the spans (offline.ts).
 *
 * Offline, without a declaration (`earlyEnd`, any producer's spans): the run stopped while its last step said more
 * was to come — its last LLM call asked for a tool (finish reason, recorded tool calls) and nothing ran it, nothing
 * came after, in a run that records its tool executions (a producer that records none says nothing by their absence); or its last answer (content captured) ends by announcing what the agent will do next (first person,
 * future or hand-off: "I'll now …", "Next I will …", "handing over to …") and nothing did it. A run that ends on an
 * answer that says the work is done, or that ends in an error (a crash, judged by its own finding), is not early.
 */
import type { SpanRecord } from '../../src/traces/model';
import type { Finding, LlmObservation, Observation } from '../types';
import { answered, monitorFinding } from './common';
import type { WorkflowRun } from './read';

export const PREMATURE_TERMINATION = 'premature_termination';
export const WORKFLOW_PROGRESS = 'workflow_progress';

export interface WorkflowSnapshot {
  name: string;
  startedAt: number;
  /** When the snapshot was taken (the deadline, or the end). */
  at: number;
  /** The workflow has ended (else: it is still running at `at`). */
  ended: boolean;
  requiredSteps?: readonly string[];
  deadlineMs?: number;
  /** Steps completed, in order. */
  completed: readonly string[];
  outcome?: 'ok' | 'error';
  output?: 'present' | 'empty' | 'error';
  errorType?: string;
  lastProgressAt?: number;
  /** Agent turns still open at `at`, each with the turn it runs inside (who waits on it). */
  open?: ReadonlyArray<{ name: string; parent?: string }>;
}

const LIMITS = /^(length|max_tokens|max_output_tokens|MAX_TOKENS|model_context_window_exceeded)$/;

/** The task's last LLM call, if its answer was incomplete: cut by a limit, or answered with nothing. */
function incompleteLast(earlier: readonly Observation[]): string | undefined {
  let last: LlmObservation | undefined;
  for (let i = earlier.length - 1; i >= 0 && !last; i--) {
    const e = earlier[i]!;
    if (e.kind === 'llm') last = e;
  }
  if (!last || !answered(last)) return undefined;
  const r = last.response;
  const cut = r.finishReasons.find((f) => LIMITS.test(f));
  if (cut !== undefined)
    return `its last answer${last.scope?.agent ? ` (${last.scope.agent})` : ''} was cut by the token limit (finish reason ${cut})`;
  const chars = last.hasContent ? r.text.length : last.facts?.outputChars;
  const calls = last.hasContent ? r.toolCalls.length : last.facts?.toolCallCount;
  if (chars === 0 && calls === 0 && !r.finishReasons.some((f) => /tool/i.test(f)))
    return `its last answer${last.scope?.agent ? ` (${last.scope.agent})` : ''} was empty`;
  return undefined;
}

/** A cycle among open turns (agents waiting on each other), as `A → B → A`. */
function waitCycle(open: ReadonlyArray<{ name: string; parent?: string }>): string | undefined {
  const edges = new Map<string, Set<string>>();
  for (const t of open) {
    if (t.parent === undefined || t.parent === '' || t.name === '') continue;
    const s = edges.get(t.parent) ?? new Set<string>();
    s.add(t.name);
    edges.set(t.parent, s);
  }
  for (const start of edges.keys()) {
    const path: string[] = [start];
    const seen = new Set<string>([start]);
    const walk = (node: string): string | undefined => {
      for (const next of edges.get(node) ?? []) {
        if (next === start) return [...path, start].join(' → ');
        if (seen.has(next)) continue;
        seen.add(next);
        path.push(next);
        const found = walk(next);
        if (found) return found;
        path.pop();
      }
      return undefined;
    };
    const found = walk(start);
    if (found) return found;
  }
  return undefined;
}

export function workflowFindings(w: WorkflowSnapshot, earlier: readonly Observation[] = []): Finding[] {
  const out: Finding[] = [];
  const required = w.requiredSteps ?? [];
  const missing = required.filter((s) => !w.completed.includes(s));
  const done = required.length - missing.length;
  // At the deadline itself the task is late (timers fire at, not after, the deadline).
  const late =
    w.deadlineMs !== undefined && (w.ended ? w.at - w.startedAt > w.deadlineMs : w.at - w.startedAt >= w.deadlineMs);

  if (!w.ended) {
    if (!late || w.deadlineMs === undefined) return out;
    const cycle = waitCycle(w.open ?? []);
    if (cycle !== undefined) {
      out.push(
        monitorFinding(
          WORKFLOW_PROGRESS,
          'workflow_deadlock',
          'timeout',
          'error',
          0.9,
          `past its deadline of ${w.deadlineMs} ms with agents waiting on each other: ${cycle}`,
        ),
      );
    } else if (w.completed.length === 0) {
      out.push(
        monitorFinding(
          WORKFLOW_PROGRESS,
          'workflow_deadlock',
          'timeout',
          'error',
          0.85,
          `past its deadline of ${w.deadlineMs} ms with no step completed${openText(w)}`,
        ),
      );
    } else {
      const since = w.lastProgressAt !== undefined ? `; last step ${Math.round(w.at - w.lastProgressAt)} ms ago` : '';
      out.push(
        monitorFinding(
          WORKFLOW_PROGRESS,
          'timeout',
          'timeout',
          'error',
          0.85,
          `past its deadline of ${w.deadlineMs} ms${required.length ? ` with ${done} of ${required.length} required steps` : ` after ${w.completed.length} steps`}${since}${openText(w)}`,
        ),
      );
    }
    return out;
  }

  if (missing.length > 0) {
    const how = w.outcome === 'error' ? `failed${w.errorType ? ` (${w.errorType})` : ''}` : 'ended';
    out.push(
      monitorFinding(
        PREMATURE_TERMINATION,
        'premature_termination',
        'partial',
        'error',
        0.9,
        `the workflow ${how} after ${done} of ${required.length} required steps; missing: ${missing.join(', ')}`,
      ),
    );
  } else if (w.outcome === 'ok') {
    const incomplete = incompleteLast(earlier);
    if (incomplete !== undefined)
      out.push(
        monitorFinding(
          PREMATURE_TERMINATION,
          'premature_termination',
          'partial',
          'error',
          0.75,
          `the workflow ended on an incomplete final output: ${incomplete}`,
        ),
      );
    else if (w.output === 'empty' && required.length > 0)
      out.push(
        monitorFinding(
          PREMATURE_TERMINATION,
          'premature_termination',
          'partial',
          'warning',
          0.6,
          'the workflow ended with an empty result',
        ),
      );
  }
  if (late)
    out.push(
      monitorFinding(
        WORKFLOW_PROGRESS,
        'timeout',
        'timeout',
        'warning',
        0.8,
        `took ${Math.round(w.at - w.startedAt)} ms, past its deadline of ${w.deadlineMs} ms`,
      ),
    );
  return out;
}

function openText(w: WorkflowSnapshot): string {
  const open = (w.open ?? []).map((t) => t.name).filter((n) => n !== '');
  return open.length > 0 ? `; open agent turns: ${[...new Set(open)].join(', ')}` : '';
}

const TOOL_FINISH = /tool|function/i;
/** First person about to act: a future, or "let me". */
const WILL =
  /\b(?:(?:I|we)(?:'ll| will| shall| am going to|'m going to| are going to)|let me|let's)\b(?![^.!?]*\b(?:not|never)\b)/i;
/** What says the task goes on (a next step, the rest of it, a hand-off) rather than something for after it. */
const GOES_ON = /\b(?:now|next|continue|continuing|proceed|remaining|the rest|then|moving on)\b/i;
const HANDOFF =
  /\b(?:hand(?:ing)?|pass(?:ing)?|send(?:ing)?|forward(?:ing)?) (?:it |this |that )?(?:off|over|on) to\b|\bhanding (?:it |this )?(?:off|over)\b/i;
/** Said to the user about after the run ("I'll email you", "let me know if …"): a closing, not a next step. */
const TO_USER = /\byou(?:r)?\b|\blet (?:me|us) know\b|\bfeel free\b|\bhappy to\b|\bglad to\b/i;
/** Whether a sentence announces the speaker's own next step in the task. */
const announcesNext = (sentence: string, others: readonly string[] = []): boolean =>
  !TO_USER.test(sentence) &&
  (HANDOFF.test(sentence) ||
    (WILL.test(sentence) && (GOES_ON.test(sentence) || others.some((a) => sentence.toLowerCase().includes(a)))));
/** The last sentences of a text (where an announcement of what comes next sits). */
const lastSentences = (t: string, n = 2): string[] => (t.trim().match(/[^.!?]+[.!?]*/g) ?? []).slice(-n);

/** A run that ended while its last step said more was to come (no declaration needed). */
export function earlyEnd(run: WorkflowRun): Array<{ finding: Finding; span: SpanRecord }> {
  if (run.outcome === 'error') return [];
  let at = -1;
  for (let i = run.steps.length - 1; i >= 0 && at < 0; i--) if (run.steps[i]!.observation?.kind === 'llm') at = i;
  if (at < 0) return [];
  const step = run.steps[at]!;
  const o = step.observation as LlmObservation;
  if (!answered(o) || run.steps.slice(at + 1).some((s) => s.tool || s.observation)) return [];
  const who = o.scope?.agent !== undefined ? ` (${o.scope.agent})` : '';
  const asked = o.response.toolCalls.map((c) => c.name).filter((n) => n !== '');
  // "Nothing ran it" is evidence only where the run records its tool executions at all.
  const recordsTools = run.steps.some((s) => s.tool !== undefined);
  if (
    recordsTools &&
    (asked.length > 0 || (o.facts?.toolCallCount ?? 0) > 0 || o.response.finishReasons.some((f) => TOOL_FINISH.test(f)))
  ) {
    const what = asked.length > 0 ? `tool ${asked.join(', ')}` : 'a tool';
    return [
      {
        span: step.span,
        finding: monitorFinding(
          PREMATURE_TERMINATION,
          'premature_termination',
          'partial',
          'error',
          0.75,
          `the run ended on its last call${who} asking for ${what}, which nothing ran`,
        ),
      },
    ];
  }
  // Another agent of the run named in the announcement ("I'll ask the reviewer agent …") is a next step too.
  const others = [...new Set(run.turns.map((t) => t.name))]
    .filter((a) => a !== o.scope?.agent && a.length >= 3)
    .map((a) => a.toLowerCase().replace(/[_-]+/g, ' '));
  if (o.hasContent && lastSentences(o.response.text).some((x) => announcesNext(x.replace(/[_-]+/g, ' '), others))) {
    return [
      {
        span: step.span,
        finding: monitorFinding(
          PREMATURE_TERMINATION,
          'premature_termination',
          'partial',
          'warning',
          0.6,
          `the run ended on an answer${who} announcing a next step (${o.response.text.length} chars), and nothing came after`,
        ),
      },
    ];
  }
  return [];
}
