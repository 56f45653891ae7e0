/**
 * The workflow monitors over exported traces: each workflow's calls and messages in start order, judged by the same
 * detectors as online with the workflow's earlier observations as history and the scope read from the spans; tool
 * executions against their agent's declared tools (or the tools its own calls offered); the run-level monitors that
 * need the whole recorded run (RUN_MONITORS: waits, history from request sizes, output collapse, no progress, values
 * across agents); the workflow-level checks at its deadline and its end, and an early end without a declaration.
 * The findings recorded online (`faultline.detection` events that name a failure type) are merged in, so a trace
 * judged live is not judged twice. Each workflow also says which modes its spans cannot show (observability.ts).
 */
import { ATTR_FL_DETECTION_FAILURE, ATTR_FL_DETECTION_MAST_MODE } from '../../instrumentation/semconv';
import { str, type SpanRecord, type TraceRecord } from '../../src/traces/model';
import { detectionsFromSpan } from '../from-span';
import { runDetectors } from '../registry';
import type { DetectionContext, Finding, Observation } from '../types';
import { monitorDetectors } from './index';
import { isArcfFailure, isMastModeId } from './mast';
import { readWorkflows, type WorkflowRun } from './read';
import { offeredTools, toolOutsideRole } from './role';
import { valueConflicts } from './conflict';
import { historyResets } from './history-loss';
import { noProgress } from './no-progress';
import { notObservable, type NotObservable } from './observability';
import { outputCollapse } from './quality';
import { retriesFailedTool } from './repetition';
import { waitFindings } from './waits';
import { earlyEnd, PREMATURE_TERMINATION, workflowFindings, type WorkflowSnapshot } from './workflow';

/** The monitors that judge a whole recorded run at once, over any producer's spans (each module says what it reads). */
const RUN_MONITORS = [waitFindings, historyResets, outputCollapse, noProgress, valueConflicts];

export interface MonitorFinding extends Finding {
  /** The span the finding is about. */
  spanId: string;
  /** The agent whose call or message it is, when known. */
  agent?: string;
  /** 1-based position of the span among the workflow's steps (calls, messages, tools), when it is one. */
  step?: number;
  /** Recorded online (a `faultline.detection` event) rather than judged now. */
  online?: boolean;
}

export interface MonitoredWorkflow {
  run: WorkflowRun;
  findings: MonitorFinding[];
  /** Modes the run's spans cannot show (observability.ts): what its producer did not record. */
  notObservable: NotObservable[];
}

/** A finding recorded online by a monitor, read back from its event. */
function onlineMonitorFindings(span: SpanRecord): Finding[] {
  const out: Finding[] = [];
  const events = span.events.filter((e) => e.name === 'faultline.detection');
  const parsed = detectionsFromSpan(span);
  parsed.forEach((f, i) => {
    const a = events[i]?.attributes ?? {};
    const failure = str(a, ATTR_FL_DETECTION_FAILURE);
    const mast = str(a, ATTR_FL_DETECTION_MAST_MODE);
    if (!isArcfFailure(failure)) return;
    out.push({ ...f, failure, ...(isMastModeId(mast) ? { mast } : {}) });
  });
  return out;
}

function snapshotAt(run: WorkflowRun, at: number, ended: boolean): WorkflowSnapshot {
  const completed =
    run.completed.length > 0 || run.root
      ? run.completed
      : run.turns.filter((t) => t.ok).map((t) => ({ name: t.name, at: t.span.end }));
  const done = completed.filter((c) => c.at <= at);
  const s: WorkflowSnapshot = { name: run.name, startedAt: run.start, at, ended, completed: done.map((c) => c.name) };
  if (done.length > 0) s.lastProgressAt = done[done.length - 1]!.at;
  if (run.requiredSteps !== undefined) s.requiredSteps = run.requiredSteps;
  if (run.deadlineMs !== undefined) s.deadlineMs = run.deadlineMs;
  if (ended) {
    s.outcome = run.outcome;
    if (run.output !== undefined) s.output = run.output;
    if (run.errorType !== undefined) s.errorType = run.errorType;
  } else {
    s.open = run.turns
      .filter((t) => t.span.start <= at && t.span.end > at)
      .map((t) => (t.parent !== undefined ? { name: t.name, parent: t.parent } : { name: t.name }));
  }
  return s;
}

export interface MonitorOptions {
  /** Merge the findings recorded online (default true); false judges the trace afresh only. */
  includeOnline?: boolean;
}

/** Judge one workflow. */
export function monitorWorkflow(run: WorkflowRun, options: MonitorOptions = {}): MonitoredWorkflow {
  const findings: MonitorFinding[] = [];
  const seen = new Set<string>();
  const add = (f: Finding, span: SpanRecord, extra: Partial<MonitorFinding> = {}): void => {
    const key = `${span.spanId}|${f.detector}|${f.failure ?? ''}|${f.location?.field ?? ''}`;
    if (seen.has(key)) return;
    seen.add(key);
    findings.push({ ...f, spanId: span.spanId, ...extra });
  };
  // Which step each span is and whose it is (the sender, for a message), for online and judged findings alike.
  const extras = run.steps.map((step, i) => {
    const extra: Partial<MonitorFinding> = { step: i + 1 };
    const obs = step.observation;
    const agent =
      step.tool?.agent ??
      obs?.scope?.agent ??
      (obs?.kind === 'message' ? (obs.original ?? obs.delivered[0])?.source || undefined : undefined);
    if (agent !== undefined) extra.agent = agent;
    return extra;
  });
  const extraOf = new Map(run.steps.map((step, i) => [step.span.spanId, extras[i]!]));
  // Online findings first: they saw what the application saw.
  const byId = new Map(run.trace.spans.map((s) => [s.spanId, s]));
  const member = membership(run, byId);
  for (const s of options.includeOnline === false ? [] : run.trace.spans) {
    const host =
      (s.name === 'faultline.detection' && s.parentSpanId !== undefined ? byId.get(s.parentSpanId) : undefined) ?? s;
    if (!member(host)) continue;
    for (const f of onlineMonitorFindings(s)) add(f, host, { ...extraOf.get(host.spanId), online: true });
  }
  const earlier: Observation[] = [];
  const offered = offeredTools(run.steps.flatMap((st) => (st.observation ? [st.observation] : [])));
  run.steps.forEach((step, i) => {
    const extra = extras[i]!;
    if (step.observation) {
      const obs = step.observation;
      const ctx: DetectionContext = { earlier, now: step.span.end };
      for (const f of runDetectors(obs, ctx, monitorDetectors))
        if (!retriesFailedTool(run.steps, i, f)) add(f, step.span, extra);
      earlier.push(obs);
    }
    if (step.tool && !step.tool.nested) {
      const agent = step.tool.agent ?? '';
      const own = offered.get(agent);
      const f = step.tool.declaration?.tools
        ? toolOutsideRole(agent, step.tool.declaration, step.tool.name)
        : own !== undefined
          ? toolOutsideRole(agent, { tools: own }, step.tool.name, undefined, true)
          : undefined;
      if (f) add(f, step.span, extra);
    }
  });
  // Run-level monitors over the recorded spans: what only the whole run shows.
  for (const monitor of RUN_MONITORS)
    for (const { finding, span } of monitor(run)) add(finding, span, extraOf.get(span.spanId));
  const host = run.root ?? run.trace.spans[0];
  if (host) {
    if (run.deadlineMs !== undefined && run.end - run.start > run.deadlineMs) {
      for (const f of workflowFindings(snapshotAt(run, run.start + run.deadlineMs, false), earlier)) add(f, host);
    }
    for (const f of workflowFindings(snapshotAt(run, run.end, true), earlier)) add(f, host);
  }
  // A run that stopped while its last step said more was to come, when its declaration did not already say so.
  if (!findings.some((f) => f.detector === PREMATURE_TERMINATION))
    for (const { finding, span } of earlyEnd(run)) add(finding, span, extraOf.get(span.spanId));
  return { run, findings, notObservable: notObservable(run) };
}

/** Whether a span is part of the run (under its root; everything when the trace has no workflow root). */
function membership(run: WorkflowRun, byId: Map<string, SpanRecord>): (span: SpanRecord) => boolean {
  const root = run.root;
  if (!root) return () => true;
  const memo = new Map<string, boolean>([[root.spanId, true]]);
  const inside = (span: SpanRecord, depth = 0): boolean => {
    const hit = memo.get(span.spanId);
    if (hit !== undefined) return hit;
    const parent = span.parentSpanId !== undefined ? byId.get(span.parentSpanId) : undefined;
    const r = parent !== undefined && depth < 64 ? inside(parent, depth + 1) : false;
    memo.set(span.spanId, r);
    return r;
  };
  return inside;
}

/** Judge every workflow of a trace. */
export function monitorTrace(trace: TraceRecord, options: MonitorOptions = {}): MonitoredWorkflow[] {
  return readWorkflows(trace).map((run) => monitorWorkflow(run, options));
}
