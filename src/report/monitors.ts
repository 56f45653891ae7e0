/**
 * Workflow-monitor output (`faultline monitor`): per trace, the findings of the workflow monitors — MAST mode, ARCF
 * type, the span, agent and step they name, confidence and the finding's own evidence (content-free by design, see
 * detectors/types.ts) — as a terminal table, one JSON document, or JSON lines (one object per trace).
 */
import { mastMode, type MastModeId } from '../../detectors/monitors/mast';
import type { MonitoredWorkflow } from '../../detectors/monitors/offline';
import { colors as makeColors, table } from './colors';

export type MonitorFormat = 'table' | 'json' | 'jsonl';
export const MONITOR_FORMATS: readonly MonitorFormat[] = ['table', 'json', 'jsonl'];

/** One finding, in the stable JSON shape (field order fixed for diffs). */
export interface MonitorFindingJson {
  workflow: string;
  mast: MastModeId | null;
  mastName: string | null;
  failure: string | null;
  /** The finding's fault type (src/taxonomy.ts): what kind of fault the mode shows as (a `timeout` deadlock, a `stale` no-progress). */
  faultType: string;
  detector: string;
  severity: string;
  spanId: string;
  spanName: string | null;
  agent: string | null;
  step: number | null;
  confidence: number;
  evidence: string;
  /** Recorded online (a `faultline.detection` event on the span) rather than judged now from the spans. */
  online: boolean;
}

/** A mode the trace's spans cannot show (detectors/monitors/observability.ts), once per trace. */
export interface NotObservableJson {
  mast: MastModeId;
  mastName: string;
  failure: string;
  faultType: string | null;
  detector: string;
  /** What the spans lack. */
  reason: string;
}

export interface MonitoredTraceJson {
  traceId: string;
  workflows: string[];
  findings: MonitorFindingJson[];
  /** Modes not observable in this trace: no finding of these means nothing could be seen, not nothing went wrong. */
  notObservable: NotObservableJson[];
}

function notObservableOf(workflows: readonly MonitoredWorkflow[]): NotObservableJson[] {
  const out = new Map<string, NotObservableJson>();
  for (const w of workflows) {
    for (const n of w.notObservable) {
      const key = `${n.detector}|${n.mast}`;
      if (!out.has(key))
        out.set(key, {
          mast: n.mast,
          mastName: mastMode(n.mast).name,
          failure: n.failure,
          faultType: n.faultType ?? null,
          detector: n.detector,
          reason: n.reason,
        });
    }
  }
  return [...out.values()];
}

export function monitoredTraceJson(traceId: string, workflows: readonly MonitoredWorkflow[]): MonitoredTraceJson {
  return {
    traceId,
    workflows: workflows.map((w) => w.run.name),
    findings: workflows.flatMap((w) => {
      const names = new Map(w.run.trace.spans.map((s) => [s.spanId, s.name]));
      return w.findings.map((f) => ({
        workflow: w.run.name,
        mast: f.mast ?? null,
        mastName: f.mast !== undefined ? mastMode(f.mast).name : null,
        failure: f.failure ?? null,
        faultType: f.faultType,
        detector: f.detector,
        severity: f.severity,
        spanId: f.spanId,
        spanName: names.get(f.spanId) ?? null,
        agent: f.agent ?? null,
        step: f.step ?? null,
        confidence: f.confidence,
        evidence: f.evidence,
        online: f.online === true,
      }));
    }),
    notObservable: notObservableOf(workflows),
  };
}

export interface MonitorSummary {
  traces: number;
  tracesWithFindings: number;
  findings: number;
  /** Findings per MAST mode id (`none` for a finding that names no mode), in MAST's order. */
  byMast: Record<string, number>;
  /** Traces in which each mode (monitor and MAST id, `no_progress 1.5`) was not observable. */
  notObservable: Record<string, number>;
}

export function monitorSummary(traces: readonly MonitoredTraceJson[]): MonitorSummary {
  const counts = new Map<string, number>();
  for (const t of traces)
    for (const f of t.findings) counts.set(f.mast ?? 'none', (counts.get(f.mast ?? 'none') ?? 0) + 1);
  const order = (k: string): number[] => (k === 'none' ? [99] : k.split('.').map(Number));
  const keys = [...counts.keys()].sort(
    (a, b) => order(a)[0]! - order(b)[0]! || (order(a)[1] ?? 0) - (order(b)[1] ?? 0),
  );
  return {
    traces: traces.length,
    tracesWithFindings: traces.filter((t) => t.findings.length > 0).length,
    findings: traces.reduce((n, t) => n + t.findings.length, 0),
    byMast: Object.fromEntries(keys.map((k) => [k, counts.get(k)!])),
    notObservable: notObservableCounts(traces),
  };
}

function notObservableCounts(traces: readonly MonitoredTraceJson[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const t of traces)
    for (const n of t.notObservable)
      counts.set(`${n.detector} ${n.mast}`, (counts.get(`${n.detector} ${n.mast}`) ?? 0) + 1);
  return Object.fromEntries(counts);
}

/** `not observable: role_violation 1.2 Disobey role specification in 3 of 4 traces (no tool definitions …); …` */
export function notObservableLines(traces: readonly MonitoredTraceJson[]): string[] {
  const byKey = new Map<string, { n: NotObservableJson; traces: number }>();
  for (const t of traces) {
    for (const n of t.notObservable) {
      const key = `${n.detector} ${n.mast}`;
      const e = byKey.get(key) ?? { n, traces: 0 };
      e.traces++;
      byKey.set(key, e);
    }
  }
  return [...byKey.values()].map(
    ({ n, traces: k }) =>
      `not observable: ${n.detector} (${n.mast} ${n.mastName}) in ${k} of ${traces.length} trace${traces.length === 1 ? '' : 's'}: ${n.reason}`,
  );
}

/** `3 traces: 2 with findings, 1 clean; 2 findings: 1.2 Disobey role specification 1, 3.1 Premature termination 1` */
export function monitorSummaryLine(s: MonitorSummary, color = false): string {
  const c = makeColors(color);
  const modes = Object.entries(s.byMast).map(
    ([k, n]) => `${k === 'none' ? 'no MAST mode' : `${k} ${mastMode(k as MastModeId).name}`} ${n}`,
  );
  const clean = s.traces - s.tracesWithFindings;
  return (
    `${c.bold(`${s.traces} trace${s.traces === 1 ? '' : 's'}`)}: ${s.tracesWithFindings > 0 ? c.red(`${s.tracesWithFindings} with findings`) : '0 with findings'}, ${c.green(`${clean} clean`)}` +
    `; ${s.findings} finding${s.findings === 1 ? '' : 's'}${modes.length > 0 ? `: ${modes.join(', ')}` : ''}`
  );
}

/** One row per finding; a trace without findings is one `none` row, so every trace read is shown. */
export function monitorsTable(traces: readonly MonitoredTraceJson[], color = false): string {
  const c = makeColors(color);
  const rows: string[][] = [];
  for (const t of traces) {
    if (t.findings.length === 0) {
      rows.push([t.traceId, t.workflows.join(', ') || '-', c.green('none'), '-', '-', '-', '-', '-', '-']);
      continue;
    }
    for (const f of t.findings)
      rows.push([
        t.traceId,
        f.workflow,
        c.red(f.mast !== null ? `${f.mast} ${f.mastName}` : '-'),
        f.failure ?? '-',
        f.step === null ? '-' : String(f.step),
        f.agent ?? '-',
        f.spanId,
        f.confidence.toFixed(2),
        `${f.online ? '(online) ' : ''}${f.evidence}`.slice(0, 110),
      ]);
  }
  const blind = notObservableLines(traces);
  return (
    table(
      ['trace', 'workflow', 'MAST mode', 'ARCF type', 'step', 'agent', 'span', 'conf', 'evidence'],
      rows,
      new Set([4, 7]),
    ) +
    '\n\n' +
    monitorSummaryLine(monitorSummary(traces), color) +
    '\n' +
    (blind.length > 0 ? `${c.dim(blind.join('\n'))}\n` : '')
  );
}
