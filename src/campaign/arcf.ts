/**
 * The ARCF experiment for real (../shared/papers/arcf-reliability-control.txt §5–6): the `arcf` protection arm —
 * workflow monitors, retry, fallback, checkpoints, verification — against the unprotected baseline at a 10 % fault
 * rate, on the example workflows, reporting ARCF's Table 1.
 *
 *  - Faults: each condition fires with probability 0.1 on every call (or message) it applies to, with a seed per
 *    cell shared by both arms (so the baseline and the protected run meet the same fault sequence as long as their
 *    calls line up): transient HTTP errors, stalled connections, slow first bytes, cut streams, lost messages,
 *    incomplete evidence — ARCF's latencies and timeouts, tool and agent failures, output generation faults.
 *    Context-window overflow has no fault in the catalog and is left out.
 *  - The arm: the LLM route retried (ARCF back-off), then sent to a fallback model chosen by ARCF's score, behind a
 *    circuit breaker; undelivered action requests resubmitted and incomplete evidence read back (the message-level
 *    retry and the schema tier); every stage of the workflow a verified checkpoint (schema, safety rules, consistency
 *    with the plan), re-run once and then rolled back and resumed; the online monitors in both arms.
 *
 * Every faulted run has its clean twin (same arm), and untriggered runs are excluded with their twin, as in the other
 * studies. The table's definitions are in docs/campaigns.md.
 */
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SpanStatusCode } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  type ReadableSpan,
  type SpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { context, trace } from '@opentelemetry/api';
import { checkpoints } from '../../detectors/guards/checkpoint';
import type { GuardConfigInput } from '../../detectors/guards/config';
import { guardPreset } from '../../detectors/guards/config';
import {
  classifyFinding,
  isArcfFailure,
  isMastModeId,
  type ArcfFailure,
  type MastModeId,
} from '../../detectors/monitors/mast';
import { createOnlineDetection } from '../../detectors/online';
import { FaultlineInstrumentation } from '../../instrumentation/instrumentation';
import { isFaultType, type FaultType } from '../taxonomy';
import { bootstrap, quantile, wilson, type Interval, type Proportion } from '../stats';
import { table } from '../report/colors';
import type { SpanRecord, TraceRecord } from '../traces/model';
import type { ArcfRunFacts, ArcfTally, CampaignSpec, Cell, Condition, PlannedRun, RunRecord, Topology } from './types';

export type { ArcfRunFacts, ArcfTally } from './types';

export const ARCF_RATE = 0.1;

const cond = (id: string, fault: string, kind: Condition['kind'], params?: Record<string, unknown>): Condition => ({
  id,
  fault,
  kind,
  ...(params ? { params } : {}),
});

/** The fault conditions of the study, each at a 10 % rate per eligible call or message. */
export const ARCF_CONDITIONS: readonly Condition[] = [
  cond('http_503@10%', 'http_503', 'content', { retryAfterS: 0 }),
  cond('timeout@10%', 'timeout_hang', 'content', { stallMs: 400 }),
  cond('slow@10%', 'slow_first_byte', 'content', { delayMs: 1500 }),
  cond('stream_cut@10%', 'stream_cut', 'content', { afterEvents: 1 }),
  cond('non_delivery@10%', 'non_delivery', 'communication'),
  cond('valid_partial@10%', 'valid_partial', 'communication'),
];

/** The `arcf` preset: both families, all topologies, every task, two repetitions, baseline and arcf arms. */
export const ARCF_SPEC: CampaignSpec = {
  name: 'arcf',
  families: ['shopping', 'coding'],
  tasksPerFamily: 4,
  topologies: ['sequential', 'flat', 'hierarchical'],
  conditions: [],
  reps: 2,
  arcf: { conditions: [...ARCF_CONDITIONS] },
};

/** The study's cells: every condition × family × topology × task × repetition, in the baseline and the arcf arm. */
export function arcfCells(spec: CampaignSpec, tasksOf: (family: string) => readonly string[]): Cell[] {
  const study = spec.arcf;
  if (!study || study.conditions.length === 0) return [];
  const cells: Cell[] = [];
  const topologies: Topology[] = spec.topologies;
  for (let rep = 1; rep <= spec.reps; rep++) {
    for (const condition of study.conditions) {
      for (const family of spec.families) {
        for (const topology of topologies) {
          for (const arm of ['none', 'arcf'] as const) {
            for (const task of tasksOf(family).slice(0, spec.tasksPerFamily))
              cells.push({ study: 'arcf', family, task, topology, condition, arm, rep });
          }
        }
      }
    }
  }
  return cells;
}

/** The plan of a cell: its condition at 10 % on every eligible call, seeded per cell (the same seed in both arms). */
export function arcfPlan(cell: Cell): { seed: number; rules: Record<string, unknown>[] } {
  const c = cell.condition;
  const key = `${c.id}|${cell.family}|${cell.task}|${cell.topology}|${cell.rep}`;
  const seed = parseInt(createHash('sha256').update(key).digest('hex').slice(0, 8), 16);
  const rule: Record<string, unknown> = {
    name: c.id,
    fault: c.fault,
    strategy: 'intermittent',
    probability: ARCF_RATE,
    match: c.kind === 'communication' ? {} : { operation: 'chat' },
  };
  if (c.params) rule.params = c.params;
  return { seed, rules: [rule] };
}

/** The arm's guard routes: ARCF's retry, fallback and circuit on the LLM route, message-level recovery on the rest. */
export function arcfGuardConfig(
  family: { name?: string; evidenceFields?: Record<string, string> } | undefined,
  model: string,
): GuardConfigInput {
  const messages = guardPreset('both').routes;
  return {
    routes: [
      ...messages,
      {
        name: 'llm',
        // Every HTTP exchange of the example workflows is an LLM call.
        retry: { maxRetries: 2, baseDelayMs: 20, maxDelayMs: 200, jitter: 'equal' },
        fallback: [{ name: 'backup', model: model === 'faultline-mock-1' ? 'faultline-mock-2' : model, tier: 0 }],
        circuit: { failureThreshold: 5, coolDownMs: 1000 },
        onFailure: 'record',
      },
    ],
    contracts: [
      {
        name: `${String(family?.name)} evidence`,
        match: { boundary: 'I4' },
        requiredEvidence: (family?.evidenceFields ?? {}) as Record<string, 'string'>,
        evidenceMirror: 'evidence',
        ...(family?.name === 'shopping' ? { identity: ['product_id', 'sku'] } : {}),
      },
    ],
  };
}

/**
 * The arm for a command campaign (`--arms none,arcf`): the same LLM route recovery through FAULTLINE_GUARDS (retry,
 * circuit; a fallback model when one is given). Checkpoints need the program's own runWorkflow / checkpoint() calls.
 */
export function arcfCommandGuards(fallbackModel?: string): GuardConfigInput {
  return {
    routes: [
      ...guardPreset('execution').routes,
      {
        name: 'llm',
        retry: { maxRetries: 2, baseDelayMs: 200, maxDelayMs: 5000, jitter: 'equal' },
        ...(fallbackModel ? { fallback: [{ name: 'backup', model: fallbackModel }] } : {}),
        circuit: { failureThreshold: 5, coolDownMs: 10_000 },
        onFailure: 'record',
      },
    ],
  };
}

/** A command campaign's `arcf` arm for one (task, condition, repetition): the faulted run and its clean twin. */
export function arcfRuns(base: Omit<PlannedRun, 'key' | 'faulted'>, key: string): PlannedRun[] {
  return [
    { ...base, key: `${key}|arcf|faulted`, faulted: true, arm: 'arcf' },
    { ...base, key: `${key}|arcf|clean`, faulted: false, arm: 'arcf' },
  ];
}

/** The program run without faultline (no register, no plan): what the observability overhead is measured against. */
export function bareRun(base: Omit<PlannedRun, 'key' | 'faulted'>, key: string): PlannedRun {
  return { ...base, key: `${key}|bare`, faulted: false, bare: true };
}

/** The environment a command run gets for its arm: the `arcf` guards file, or no faultline at all for a bare run. */
export function arcfEnv(r: PlannedRun, env: NodeJS.ProcessEnv, out: string, fallbackModel?: string): NodeJS.ProcessEnv {
  if (r.bare) return { NODE_OPTIONS: env.NODE_OPTIONS ?? '' };
  if (r.arm !== 'arcf') return {};
  const file = join(out, 'arcf-guards.json');
  if (!existsSync(file)) writeFileSync(file, `${JSON.stringify(arcfCommandGuards(fallbackModel), null, 2)}\n`);
  // The monitors are online detectors: on explicitly, whatever register's default for detection is.
  return { FAULTLINE_GUARDS: file, FAULTLINE_DETECT: 'true' };
}

/** What the arm's workflow gets: a checkpoint guard of its own (memory store) and a deadline the monitors judge. */
export function arcfReliability(): { checkpoints: ReturnType<typeof checkpoints>; deadlineMs: number } {
  return { checkpoints: checkpoints({ maxRollbacks: 2 }), deadlineMs: 30_000 };
}

// ------------------------------------------------------------------------------------------------ per run

const RECOVERY = new Set(['retry', 'fallback', 'resubmit', 'reacquire', 'reject', 'record', 'drop', 'fail_fast']);

/**
 * The failure a guard acted on, from its event (the monitoring that triggered the recovery): the findings it names
 * (`truncate (finish_reason: …)`, as guards describe them), an HTTP status or connection error, a lost or duplicated
 * message, a message that failed its contract.
 */
function guardFailure(action: string, reason: string): FaultType | undefined {
  if (action === 'resubmit') return 'non_delivery';
  if (action === 'duplicate_suppressed') return 'duplicate';
  if (action === 'reacquire') return 'partial';
  if (action === 'fail_fast') return 'error';
  if (!RECOVERY.has(action)) return undefined;
  const http = /^HTTP (\d{3})/.exec(reason);
  if (http) return http[1] === '408' || http[1] === '504' ? 'timeout' : 'error';
  if (/^connection error/.test(reason)) return /TIMEDOUT|timeout/i.test(reason) ? 'timeout' : 'error';
  const named = /^(\w+) \(/.exec(reason)?.[1];
  return isFaultType(named) ? named : undefined;
}

/** What the facts read of a span: the SDK's ReadableSpan (the example campaigns) or a SpanRecord (command runs). */
interface SpanView {
  error: boolean;
  attributes: Record<string, unknown>;
  events: ReadonlyArray<{ name: string; attributes?: Record<string, unknown> }>;
}

const fromSdk = (s: ReadableSpan): SpanView => ({
  error: s.status.code === SpanStatusCode.ERROR,
  attributes: s.attributes,
  events: s.events,
});
const fromRecord = (s: SpanRecord): SpanView => ({
  error: s.status.code === 'ERROR',
  attributes: s.attributes,
  events: s.events,
});

export function arcfRunFacts(spans: readonly ReadableSpan[]): ArcfRunFacts {
  return runFactsOf(spans.map(fromSdk));
}

/** The same facts from a labelled trace (a command campaign's run). */
export function arcfTraceFacts(trace: TraceRecord): ArcfRunFacts {
  return runFactsOf(trace.spans.map(fromRecord));
}

function runFactsOf(spans: readonly SpanView[]): ArcfRunFacts {
  const f: ArcfRunFacts = {
    retried: 0,
    retryOk: 0,
    fellBack: 0,
    fallbackOk: 0,
    rollbacks: 0,
    detections: { failures: {}, modes: {} },
    repairs: { failures: {}, modes: {} },
    failed: false,
    repaired: false,
    verified: 0,
    safetyBlocked: 0,
  };
  const count = (t: ArcfTally, c: { failure: ArcfFailure; mast: MastModeId }): void => {
    t.failures[c.failure] = (t.failures[c.failure] ?? 0) + 1;
    t.modes[c.mast] = (t.modes[c.mast] ?? 0) + 1;
  };
  for (const s of spans) {
    if (s.error) f.failed = true;
    const guard = s.events
      .filter((e) => e.name === 'faultline.guard')
      .map((e) => ({
        action: String(e.attributes?.['faultline.guard.action']),
        reason: String(e.attributes?.['faultline.guard.reason'] ?? ''),
        route: String(e.attributes?.['faultline.guard.route'] ?? ''),
      }));
    const gaveUp = (after: number) =>
      guard.slice(after).some((g) => g.action === 'reject' || g.action === 'record' || g.action === 'drop') || s.error;
    const firstRetry = guard.findIndex(
      (g) => g.action === 'retry' || g.action === 'resubmit' || g.action === 'reacquire',
    );
    if (firstRetry >= 0) {
      f.retried++;
      const fallbackAfter = guard.slice(firstRetry).some((g) => g.action === 'fallback');
      const delivered = s.attributes['faultline.message.delivered_count'];
      if (!fallbackAfter && !gaveUp(firstRetry) && (delivered === undefined || Number(delivered) > 0)) f.retryOk++;
    }
    const lastFallback = guard.map((g) => g.action).lastIndexOf('fallback');
    if (lastFallback >= 0) {
      f.fellBack++;
      if (!gaveUp(lastFallback)) f.fallbackOk++;
    }
    if (guard.some((g) => RECOVERY.has(g.action))) f.repaired = true;
    for (const g of guard) {
      const type = guardFailure(g.action, g.reason);
      const c =
        type !== undefined ? classifyFinding({ faultType: type, detector: 'guard', evidence: g.reason }) : undefined;
      if (c) count(f.repairs, c);
    }
    for (const g of guard) {
      if (g.action !== 'verify_pass' && g.action !== 'verify_fail') continue;
      f.verified++;
      if (g.action === 'verify_fail' && g.reason.startsWith('safety tier')) f.safetyBlocked++;
    }
    // Steps that failed verification and were saved after their re-run: a retry that worked.
    const ckpt = s.events
      .filter((e) => e.name === 'faultline.checkpoint')
      .map((e) => ({
        action: String(e.attributes?.['faultline.checkpoint.action']),
        name: String(e.attributes?.['faultline.checkpoint.name']),
      }));
    for (let i = 0; i < ckpt.length; i++) {
      const c = ckpt[i]!;
      if (c.action === 'rollback') {
        f.rollbacks++;
        f.repaired = true;
      }
      if (c.action !== 'verify_failed') continue;
      f.repaired = true;
      if (ckpt[i - 1]?.action === 'verify_failed' && ckpt[i - 1]?.name === c.name) continue; // one retried step, counted once
      f.retried++;
      const next = ckpt.slice(i + 1).find((x) => x.name === c.name && x.action !== 'verify_failed');
      if (next?.action === 'saved' && !ckpt.slice(i + 1, ckpt.indexOf(next)).some((x) => x.action === 'rollback'))
        f.retryOk++;
    }
    for (const e of s.events) {
      if (e.name !== 'faultline.detection') continue;
      const a = e.attributes ?? {};
      const faultType = a['faultline.detection.fault_type'];
      if (!isFaultType(faultType)) continue;
      const failure = a['faultline.detection.failure'];
      const mast = a['faultline.detection.mast_mode'];
      const c = classifyFinding({
        faultType,
        detector: String(a['faultline.detection.detector'] ?? ''),
        evidence: String(a['faultline.detection.evidence'] ?? ''),
        ...(isArcfFailure(failure) ? { failure } : {}),
        ...(isMastModeId(mast) ? { mast } : {}),
      });
      if (a['faultline.detection.severity'] === 'error' || a['faultline.detection.severity'] === 'critical')
        f.failed = true;
      if (c) count(f.detections, c);
    }
  }
  return f;
}

// ------------------------------------------------------------------------------------------------ the table

export interface ArcfArmStats {
  arm: 'none' | 'arcf';
  /** Triggered faulted runs (with their clean twins). */
  pairs: number;
  /** The runs' traces were read for findings and recovery (a command campaign's baseline is not: it runs as the
   * user's program runs by default, and its coverage and repair columns are left empty). */
  measured: boolean;
  completion: Proportion;
  cleanCompletion: Proportion;
  /**
   * Of the cells where the fault harmed the unprotected run (the baseline run did not complete, had an ERROR span or
   * a finding of error severity) and fired in both arms, those this arm's run completed: one denominator for both
   * arms, so the arm's own repairs cannot enlarge it.
   */
  recovery: Proportion;
  /** Triggered faulted runs with at least one online finding (a detection, not a repair) named by ARCF type and MAST mode. */
  mastCoverage: Proportion;
  /** Clean twins with such a finding: false alarms. */
  cleanFlagged: Proportion;
  /** Triggered faulted runs in which a guard or checkpoint repaired something. */
  repairedRuns: Proportion;
  retry: Proportion;
  fallback: Proportion;
  checkpoint: Proportion;
  safetyBlock: Proportion;
  /** 95th percentile of the faulted runs' workflow time, ms. */
  p95Ms: number;
  p95CleanMs: number;
  /** Over the triggered faulted runs: the findings, and apart from them the failures the guards acted on. */
  detections: ArcfTally;
  repairs: ArcfTally;
}

export interface ArcfSummary {
  rate: number;
  conditions: string[];
  arms: ArcfArmStats[];
  byCondition: Array<{ condition: string; arm: 'none' | 'arcf'; pairs: number; completion: Proportion }>;
  overhead?: OverheadResult;
}

/** The cell a run belongs to, whatever its arm: condition, family, task, topology, repetition. */
const cellKey = (r: RunRecord): string => [r.cell, r.family ?? '', r.task, r.topology ?? '', r.rep].join('|');

/** The fault harmed a run: it did not complete, or a span ended in ERROR, or a finding of error severity was made. */
const harmed = (r: RunRecord): boolean => !r.success || r.errorSpans > 0 || r.arcf?.failed === true;

function addTally(into: ArcfTally, t: ArcfTally | undefined): void {
  for (const [k, v] of Object.entries(t?.modes ?? {}))
    into.modes[k as MastModeId] = (into.modes[k as MastModeId] ?? 0) + (v ?? 0);
  for (const [k, v] of Object.entries(t?.failures ?? {}))
    into.failures[k as ArcfFailure] = (into.failures[k as ArcfFailure] ?? 0) + (v ?? 0);
}

const named = (t: ArcfTally | undefined): boolean => Object.keys(t?.modes ?? {}).length > 0;

/**
 * The table from the run records. The example study marks both arms `arcf`; a command campaign's baseline is its
 * main matrix (`baseline: 'main'`), and its bare runs (the program without faultline) give the overhead.
 */
export function arcfSummary(
  records: readonly RunRecord[],
  options: { baseline?: 'arcf' | 'main' } = {},
): ArcfSummary | undefined {
  const study = records.filter(
    (r) => !r.bare && (r.study === 'arcf' || (options.baseline === 'main' && r.study === 'main')),
  );
  if (!study.some((r) => r.arm === 'arcf')) return undefined;
  const byTask = new Map(study.map((r) => [r.taskId, r]));
  const faultedOf = (arm: 'none' | 'arcf') =>
    study.filter(
      (r) => r.arm === arm && r.faulted && r.triggered && r.matchedTo !== undefined && byTask.has(r.matchedTo),
    );
  const cells = {
    none: new Map(faultedOf('none').map((r) => [cellKey(r), r])),
    arcf: new Map(faultedOf('arcf').map((r) => [cellKey(r), r])),
  };
  const harmedCells = [...cells.none].filter(([k, r]) => cells.arcf.has(k) && harmed(r)).map(([k]) => k);
  const arms: ArcfArmStats[] = [];
  const byCondition: ArcfSummary['byCondition'] = [];
  for (const arm of ['none', 'arcf'] as const) {
    const faulted = faultedOf(arm);
    const twins = faulted.map((r) => byTask.get(r.matchedTo!)!);
    const facts = (r: RunRecord): ArcfRunFacts | undefined => r.arcf;
    const sum = (pick: (f: ArcfRunFacts) => number) =>
      faulted.reduce((n, r) => n + (facts(r) ? pick(facts(r)!) : 0), 0);
    const rollbackRuns = faulted.filter((r) => (facts(r)?.rollbacks ?? 0) > 0);
    const detections: ArcfTally = { failures: {}, modes: {} };
    const repairs: ArcfTally = { failures: {}, modes: {} };
    for (const r of faulted) {
      addTally(detections, facts(r)?.detections);
      addTally(repairs, facts(r)?.repairs);
    }
    arms.push({
      arm,
      pairs: faulted.length,
      measured: faulted.some((r) => r.arcf !== undefined),
      completion: wilson(faulted.filter((r) => r.success).length, faulted.length),
      cleanCompletion: wilson(twins.filter((r) => r.success).length, twins.length),
      recovery: wilson(harmedCells.filter((k) => cells[arm].get(k)!.success).length, harmedCells.length),
      mastCoverage: wilson(faulted.filter((r) => named(facts(r)?.detections)).length, faulted.length),
      cleanFlagged: wilson(twins.filter((r) => named(facts(r)?.detections)).length, twins.length),
      repairedRuns: wilson(faulted.filter((r) => facts(r)?.repaired === true).length, faulted.length),
      retry: wilson(
        sum((f) => f.retryOk),
        sum((f) => f.retried),
      ),
      fallback: wilson(
        sum((f) => f.fallbackOk),
        sum((f) => f.fellBack),
      ),
      checkpoint: wilson(rollbackRuns.filter((r) => r.success).length, rollbackRuns.length),
      safetyBlock: wilson(
        sum((f) => f.safetyBlocked),
        sum((f) => f.verified),
      ),
      p95Ms: quantile(
        study.filter((r) => r.arm === arm && r.faulted).map((r) => r.durationMs),
        0.95,
      ),
      p95CleanMs: quantile(
        study.filter((r) => r.arm === arm && !r.faulted).map((r) => r.durationMs),
        0.95,
      ),
      detections,
      repairs,
    });
    for (const c of [...new Set(study.map((r) => r.cell))]) {
      const rs = faulted.filter((r) => r.cell === c);
      byCondition.push({
        condition: c,
        arm,
        pairs: rs.length,
        completion: wilson(rs.filter((r) => r.success).length, rs.length),
      });
    }
  }
  const summary: ArcfSummary = {
    rate: ARCF_RATE,
    conditions: [...new Set(study.map((r) => r.cell))],
    arms,
    byCondition,
  };
  const overhead = bareOverhead(records);
  if (overhead) summary.overhead = overhead;
  return summary;
}

/** A command campaign's overhead: each bare run against the baseline clean run of the same task and repetition. */
function bareOverhead(records: readonly RunRecord[]): OverheadResult | undefined {
  const bare = records.filter((r) => r.bare);
  if (bare.length === 0) return undefined;
  const diffs: number[] = [];
  const off: number[] = [];
  const on: number[] = [];
  for (const b of bare) {
    const twin = records.find(
      (r) => !r.bare && !r.faulted && r.arm === 'none' && r.task === b.task && r.rep === b.rep && r.cell === b.cell,
    );
    if (!twin || b.durationMs <= 0) continue;
    off.push(b.durationMs);
    on.push(twin.durationMs);
    diffs.push((twin.durationMs - b.durationMs) / b.durationMs);
  }
  if (diffs.length === 0) return undefined;
  const med = (xs: readonly number[]) => quantile(xs, 0.5);
  return {
    pairs: diffs.length,
    bareMs: med(off),
    instrumentedMs: med(on),
    relative: bootstrap(diffs, med, { seed: 7 }),
  };
}

/** ARCF's simulated Table 1 (10 % fault rate), for comparison. */
export const ARCF_PAPER = {
  completion: { none: 0.78, arcf: 0.96 },
  recovery: 0.89,
  mastCoverage: 0.93,
  retry: 0.84,
  fallback: 0.79,
  checkpoint: 0.91,
  p95: { none: 1800, arcf: 2100 },
  overhead: 0.34,
};

const pct = (p: Proportion | undefined): string =>
  p === undefined || !Number.isFinite(p.p) ? '–' : `${(100 * p.p).toFixed(1)}% (${p.k}/${p.n})`;
const ci = (p: Interval): string =>
  Number.isFinite(p.lo) ? `[${(100 * p.lo).toFixed(1)}, ${(100 * p.hi).toFixed(1)}]` : '';

const measured = (a: ArcfArmStats, p: Proportion): string => (a.measured || a.pairs === 0 ? pct(p) : '–');

export function renderArcf(s: ArcfSummary): string {
  const none = s.arms.find((a) => a.arm === 'none')!;
  const arcf = s.arms.find((a) => a.arm === 'arcf')!;
  const paper = ARCF_PAPER;
  const rows: string[][] = [
    [
      'Workflow completion rate',
      pct(none.completion),
      pct(arcf.completion),
      `${100 * paper.completion.none}% → ${100 * paper.completion.arcf}%`,
    ],
    ['  (clean twins)', pct(none.cleanCompletion), pct(arcf.cleanCompletion), ''],
    [
      'Failure recovery rate (cells the fault harmed unprotected)',
      pct(none.recovery),
      pct(arcf.recovery),
      `${100 * paper.recovery}%`,
    ],
    [
      'MAST coverage rate (detections only)',
      measured(none, none.mastCoverage),
      pct(arcf.mastCoverage),
      `${100 * paper.mastCoverage}%`,
    ],
    ['  (clean twins flagged)', measured(none, none.cleanFlagged), pct(arcf.cleanFlagged), ''],
    ['Runs repaired (guard / checkpoint actions)', measured(none, none.repairedRuns), pct(arcf.repairedRuns), ''],
    ['Retry success rate', '–', pct(arcf.retry), `${100 * paper.retry}%`],
    ['Fallback success rate', '–', pct(arcf.fallback), `${100 * paper.fallback}%`],
    ['Checkpoint recovery rate', '–', pct(arcf.checkpoint), `${100 * paper.checkpoint}%`],
    ['Safety block rate', '–', pct(arcf.safetyBlock), '1.2%'],
    [
      'Response latency P95 (faulted runs)',
      `${(none.p95Ms / 1000).toFixed(2)} s`,
      `${(arcf.p95Ms / 1000).toFixed(2)} s`,
      '1.8 s → 2.1 s',
    ],
    ['  (clean twins)', `${(none.p95CleanMs / 1000).toFixed(2)} s`, `${(arcf.p95CleanMs / 1000).toFixed(2)} s`, ''],
    [
      'Observability overhead',
      '',
      s.overhead ? `${(100 * s.overhead.relative.p).toFixed(1)}% ${ci(s.overhead.relative)}` : '–',
      `${100 * paper.overhead}%`,
    ],
  ];
  const out = [
    `ARCF at a ${100 * s.rate}% fault rate: baseline vs arcf (triggered faulted runs; conditions ${s.conditions.join(', ')})`,
    table(['metric', 'baseline', 'arcf', 'ARCF (simulated)'], rows, new Set([1, 2])),
  ];
  const conds = s.conditions.map((c) => [
    c,
    pct(s.byCondition.find((b) => b.condition === c && b.arm === 'none')?.completion),
    pct(s.byCondition.find((b) => b.condition === c && b.arm === 'arcf')?.completion),
  ]);
  out.push('', 'Completion by condition', table(['condition', 'baseline', 'arcf'], conds, new Set([1, 2])));
  const modes = (t: ArcfTally): string =>
    Object.entries(t.modes)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([m, n]) => `${m}: ${n}`)
      .join(', ') || 'none';
  out.push(
    '',
    `MAST modes detected by the online findings: baseline ${none.measured ? modes(none.detections) : '–'}; arcf ${modes(arcf.detections)}`,
  );
  out.push(`Failures repaired by the arcf arm's guards (not counted as detections): ${modes(arcf.repairs)}`);
  if (s.overhead)
    out.push(
      `Observability overhead: ${s.overhead.pairs} pairs of a clean run without and with faultline (spans, detectors, monitors); median ${s.overhead.bareMs.toFixed(1)} ms → ${s.overhead.instrumentedMs.toFixed(1)} ms`,
    );
  return out.join('\n');
}

// ------------------------------------------------------------------------------------------------ overhead

export interface OverheadResult {
  pairs: number;
  bareMs: number;
  instrumentedMs: number;
  /** Median of the paired relative differences, with a bootstrap 95 % interval. */
  relative: Interval;
}

/** A span exporter that keeps nothing: the cost measured is recording and judging, not writing. */
const discard: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };

/**
 * ARCF's observability overhead: the delay telemetry adds. Clean runs of the example tasks, in interleaved pairs
 * (order alternating), once bare and once with faultline's span layer, channel spans, online detectors and workflow
 * monitors on; the relative paired difference of their wall times. Runs after the campaign's harness is shut down.
 */
export async function measureOverhead(run: () => Promise<unknown>, pairs = 24): Promise<OverheadResult> {
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(discard)] });
  const cm = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(cm);
  trace.setGlobalTracerProvider(provider);
  const online = createOnlineDetection();
  // Constructed disabled (it enables itself otherwise): on only for the instrumented half of each pair.
  const inst = new FaultlineInstrumentation({
    enabled: false,
    onExchangeEnd: online.onExchangeEnd,
    onDelivery: online.onDelivery,
    onWorkflowEvent: online.onWorkflowEvent,
    captureMessageContent: false,
  });
  inst.setTracerProvider(provider);
  const timed = async (on: boolean): Promise<number> => {
    if (on) inst.enable();
    const t0 = performance.now();
    try {
      await run();
    } finally {
      if (on) inst.disable();
    }
    return performance.now() - t0;
  };
  const diffs: number[] = [];
  const bare: number[] = [];
  const instrumented: number[] = [];
  try {
    await timed(false); // warm-up
    await timed(true);
    for (let i = 0; i < pairs; i++) {
      const first = i % 2 === 0;
      const a = await timed(first);
      const b = await timed(!first);
      const [on, off] = first ? [a, b] : [b, a];
      bare.push(off);
      instrumented.push(on);
      diffs.push((on - off) / off);
    }
  } finally {
    await provider.shutdown();
    trace.disable();
    context.disable();
  }
  const med = (xs: readonly number[]) => quantile(xs, 0.5);
  return { pairs, bareMs: med(bare), instrumentedMs: med(instrumented), relative: bootstrap(diffs, med, { seed: 7 }) };
}
