/**
 * No progress (ARCF: workflow deadlock / no progress; MAST 1.5 Unaware of termination conditions, nearest): an agent
 * trying the same tool again and again with different arguments and getting the same answer every time — it is not
 * repeating a step (that is 1.3, repetition.ts: same call, same arguments), it is varying its attempt and learning
 * nothing, and carries on instead of stopping or changing course.
 *
 * Read from tool executions of any producer (`gen_ai.tool.call.arguments` / `.result`, OpenLLMetry's
 * `traceloop.entity.input` / `.output`): ATTEMPTS or more executions of one tool by one agent, each with arguments
 * unlike the others, all returning one result (compared whitespace-insensitively) that yields nothing — empty, an
 * empty collection, a negative answer or an error. Pages of a listing, a re-read after a change and a retry that then
 * succeeds return something new, and the same acknowledgement of actions on different targets is work done: not
 * judged. Without captured arguments and
 * results (content capture off) the mode is not observable, and observability.ts says so.
 */
import type { SpanRecord } from '../../src/traces/model';
import type { Finding } from '../types';
import { monitorFinding } from './common';
import type { WorkflowRun } from './read';

export const NO_PROGRESS = 'no_progress';

/** Attempts with different arguments and one result that make no progress (two is a check, three a pattern). */
const ATTEMPTS = 3;

const print = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** A result that yields nothing: empty, an empty collection or null, or a negative answer (not found, none, an error).
 * The same acknowledgement of actions on different targets ("sent", "ok") is work done, not an attempt that failed. */
const NEGATIVE = /\b(?:not found|no (?:results?|matches?)|nothing found|none found|unavailable|error|failed|404)\b/i;
function yieldsNothing(result: string): boolean {
  const t = result.trim();
  if (t === '' || t === 'null' || t === '[]' || t === '{}') return true;
  if (NEGATIVE.test(t)) return true;
  try {
    const v: unknown = JSON.parse(t);
    if (Array.isArray(v)) return v.length === 0;
    if (v && typeof v === 'object') {
      const vals = Object.values(v as Record<string, unknown>);
      return (
        vals.some((x) => Array.isArray(x) && x.length === 0) && !vals.some((x) => Array.isArray(x) && x.length > 0)
      );
    }
  } catch {
    // not JSON: judged by its words
  }
  return false;
}

export function noProgress(run: WorkflowRun): Array<{ finding: Finding; span: SpanRecord }> {
  const groups = new Map<string, Array<{ span: SpanRecord; args: string; result: string }>>();
  for (const step of run.steps) {
    const t = step.tool;
    if (!t || t.nested || !t.ok || t.arguments === undefined || t.result === undefined) continue;
    const key = `${t.agent ?? ''}\u0000${t.name}`;
    const g = groups.get(key) ?? [];
    g.push({ span: step.span, args: print(t.arguments), result: print(t.result) });
    groups.set(key, g);
  }
  const out: Array<{ finding: Finding; span: SpanRecord }> = [];
  for (const [key, g] of groups) {
    const [agent, tool] = key.split('\u0000') as [string, string];
    const byResult = new Map<string, typeof g>();
    for (const x of g) byResult.set(x.result, [...(byResult.get(x.result) ?? []), x]);
    for (const same of byResult.values()) {
      const distinct = new Set(same.map((x) => x.args)).size;
      if (same.length < ATTEMPTS || distinct < ATTEMPTS || !yieldsNothing(same[0]!.result)) continue;
      out.push({
        span: same[same.length - 1]!.span,
        finding: monitorFinding(
          NO_PROGRESS,
          'workflow_deadlock',
          'stale',
          'warning',
          0.7,
          `${agent !== '' ? `${agent} ran ` : ''}${tool} ${same.length} times with ${distinct} different arguments and got the same ${same[0]!.result.length}-char result every time`,
        ),
      });
      break;
    }
  }
  return out;
}
