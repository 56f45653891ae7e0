/**
 * ARCF's Table 1 from the runs of both arms: per arm the triggered faulted runs and their clean twins, detection
 * coverage (detections only), recovery over one denominator, success rates with Wilson intervals, and the
 * instrumentation overhead of the bare runs.
 */
import { type ArcfFailure, type MastModeId } from '../../detectors/monitors/mast';
import { bootstrap, quantile, wilson, type Proportion } from '../stats';
import type { ArcfRunFacts, ArcfTally, RunRecord } from './types';
import { ARCF_RATE } from './arcf';
import type { OverheadResult } from './arcf-overhead';

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
