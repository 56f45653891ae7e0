/**
 * Timeouts and deadlocks read from what every producer records — span status, error types and times — without a
 * declared deadline (ARCF: timeout errors and workflow deadlock; MAST 1.5, nearest):
 *  - deadlock: two agents' turns each waiting at the same time (a messaging receive, a wait / handoff span, or the
 *    turn itself idle with no child activity) and both waits ending in a timeout or exceeded deadline: no one gets
 *    what it waits for. When the waits name what they wait on (the destination, the peer) the names must point at
 *    each other; waits that name a third party are not a cycle.
 *  - repeated timeouts: the same tool, or the same agent's model calls, timing out again and again with no success
 *    after the last one, and the run ending in error or ending right there (nothing read the last result). One
 *    timeout followed by a successful retry is recovery.
 * A deadline the workflow declared (workflow.ts) is extra evidence there; these need none.
 */
import type { SpanRecord } from '../../src/traces/model';
import { spanFailure } from '../../src/traces/view';
import type { Finding } from '../types';
import { monitorFinding } from './common';
import type { WorkflowRun } from './read';

export const WAITS = 'waits';

/** Timeouts of one target, with no success after them, that count as a pattern rather than a blip. */
const TIMEOUTS = 2;
/** Two waits are concurrent when they overlap for at least this share of the shorter one. */
const OVERLAP = 0.5;
/** An agent turn is idle when its children were active for less than this share of it. */
const IDLE = 0.5;

/** Attributes that name what a wait waits on. */
const PEER_KEYS = [
  'messaging.destination.name',
  'messaging.source.name',
  'messaging.destination.subscription.name',
  'peer.service',
  'server.address',
  'gen_ai.agent.name',
  'rpc.service',
  'rpc.method',
];

const isWaitSpan = (s: SpanRecord): boolean => {
  const op = s.attributes['messaging.operation.type'] ?? s.attributes['messaging.operation'];
  return (
    s.kind === 'CONSUMER' ||
    op === 'receive' ||
    op === 'process' ||
    /^(receive|wait|await|poll|handoff|recv)\b/i.test(s.name)
  );
};

interface Wait {
  agent: string;
  span: SpanRecord;
  /** What the span's own attributes and name say it waits on (lower case), to match against agent names. */
  text: string;
  /** The span records what it waits on (a destination, a peer): a wait naming no agent waits on a third party. */
  names: boolean;
}

const seconds = (ms: number): string => `${Math.round(ms / 1000)} s`;

export function waitFindings(run: WorkflowRun): Array<{ finding: Finding; span: SpanRecord }> {
  const out: Array<{ finding: Finding; span: SpanRecord }> = [];
  const children = new Map<string, SpanRecord[]>();
  for (const s of run.trace.spans) {
    if (s.parentSpanId === undefined) continue;
    const c = children.get(s.parentSpanId) ?? [];
    c.push(s);
    children.set(s.parentSpanId, c);
  }
  const timedOut = (s: SpanRecord): boolean => spanFailure(s)?.timeout === true;

  // Waits that timed out, per agent turn.
  const waits: Wait[] = [];
  for (const turn of run.turns) {
    const stack = [...(children.get(turn.span.spanId) ?? [])];
    let found = false;
    for (let s = stack.pop(); s; s = stack.pop()) {
      if (isWaitSpan(s) && timedOut(s)) {
        const peers = PEER_KEYS.map((k) => s.attributes[k]).filter((v) => v !== undefined && v !== '');
        waits.push({
          agent: turn.name,
          span: s,
          text: `${s.name} ${peers.map(String).join(' ')}`.toLowerCase(),
          names: peers.length > 0,
        });
        found = true;
      }
      stack.push(...(children.get(s.spanId) ?? []));
    }
    if (found || !timedOut(turn.span)) continue;
    const busy = (children.get(turn.span.spanId) ?? []).reduce((n, c) => n + Math.max(0, c.end - c.start), 0);
    const length = turn.span.end - turn.span.start;
    if (length > 0 && busy < IDLE * length) waits.push({ agent: turn.name, span: turn.span, text: '', names: false });
  }
  const agents = [...new Set(run.turns.map((t) => t.name))];
  const namesOther = (w: Wait, other: string): boolean | undefined => {
    const named = agents.filter((a) => a !== w.agent && a !== '' && w.text.includes(a.toLowerCase()));
    if (named.length === 0) return w.names ? false : undefined;
    return named.includes(other);
  };
  const overlap = (a: SpanRecord, b: SpanRecord): boolean => {
    const both = Math.min(a.end, b.end) - Math.max(a.start, b.start);
    return both > 0 && both >= OVERLAP * Math.min(a.end - a.start, b.end - b.start);
  };
  let deadlocked = false;
  for (let i = 0; i < waits.length && !deadlocked; i++) {
    for (let j = i + 1; j < waits.length && !deadlocked; j++) {
      const a = waits[i]!;
      const b = waits[j]!;
      if (a.agent === b.agent || !overlap(a.span, b.span)) continue;
      const ab = namesOther(a, b.agent);
      const ba = namesOther(b, a.agent);
      if (ab === false || ba === false) continue;
      const named = ab === true && ba === true;
      deadlocked = true;
      const how = named
        ? `${a.agent} waited on ${b.agent} and ${b.agent} on ${a.agent}`
        : `${a.agent} and ${b.agent} were both waiting`;
      out.push({
        span: a.span,
        finding: monitorFinding(
          WAITS,
          'workflow_deadlock',
          'timeout',
          'error',
          named ? 0.85 : 0.7,
          `deadlock: ${how} at the same time, ${seconds(a.span.end - a.span.start)} and ${seconds(b.span.end - b.span.start)}, both ending in a timeout`,
        ),
      });
    }
  }

  // Repeated timeouts of one target that the run never got past: it ended in error, or on the last timeout.
  const byTarget = new Map<string, { label: string; timeouts: SpanRecord[]; okAfter: boolean }>();
  for (const step of run.steps) {
    const obs = step.observation;
    const key = step.tool
      ? `tool ${step.tool.name}`
      : obs?.kind === 'llm'
        ? `model ${obs.scope?.agent ?? ''}`
        : undefined;
    if (key === undefined) continue;
    const label = step.tool
      ? `tool ${step.tool.name}`
      : `the model calls${obs?.scope?.agent ? ` of ${obs.scope.agent}` : ''}`;
    const t = byTarget.get(key) ?? { label, timeouts: [], okAfter: false };
    if (timedOut(step.span)) {
      t.timeouts.push(step.span);
      t.okAfter = false;
    } else if (t.timeouts.length > 0 && spanFailure(step.span) === undefined) t.okAfter = true;
    byTarget.set(key, t);
  }
  const lastStep = run.steps[run.steps.length - 1]?.span;
  for (const t of byTarget.values()) {
    const last = t.timeouts[t.timeouts.length - 1];
    if (!last || t.timeouts.length < TIMEOUTS || t.okAfter || (run.outcome !== 'error' && last !== lastStep)) continue;
    const longest = Math.max(...t.timeouts.map((s) => s.end - s.start));
    out.push({
      span: last,
      finding: monitorFinding(
        WAITS,
        'timeout',
        'timeout',
        'error',
        0.8,
        `${t.label} timed out ${t.timeouts.length} times (up to ${seconds(longest)}) with no success after, and the run ${run.outcome === 'error' ? 'ended in error' : 'ended there'}`,
      ),
    });
  }
  return out;
}
