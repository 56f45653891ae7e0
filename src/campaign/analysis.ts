/**
 * What a campaign measured, computed from its run records (pure; no I/O).
 *
 * Definitions (docs/campaigns.md; fault-catalog §1.11, §2.8):
 *  - pass@1: share of runs whose task the independent evaluator judged successful.
 *  - Δpass@1 = pass@1(matched clean twins) − pass@1(faulted), in percentage points, over the *applied* pairs.
 *  - trigger verification: a faulted run counts only if the fault really fired (a non-no-op `faultline.fault.*`
 *    record on one of its spans); untriggered runs are excluded with their clean twin and counted.
 *  - clean-conditional loss (CCL) = P(faulted run fails | its clean twin succeeded).
 *  - silent failure: a faulted run that failed while the system reported success (the deciding agent accepted) and
 *    nothing signalled a problem: no `faultline.detection` event, no `faultline.guard` event and no span with ERROR
 *    status in its trace (the §2.8 rule — not detected, no recovery, decision accept — read off the trace).
 *    The silent-failure rate is silent / failed faulted runs. For a command campaign the system's own claim is its
 *    exit code: 0 is an accept.
 */
import type { RunRecord } from './types';

export type { RunRecord } from './types';

export interface Rate {
  n: number;
  k: number;
  /** k / n, or undefined when n = 0. */
  rate?: number;
}

export interface CellStats {
  key: string;
  /** Applied (triggered) matched pairs. */
  pairs: number;
  untriggered: number;
  cleanPass: Rate;
  faultPass: Rate;
  /** Percentage points. */
  deltaPass?: number;
  /** Clean-conditional loss. */
  ccl: Rate;
  /** Silent among failed faulted runs. */
  silent: Rate;
}

export interface CampaignSummary {
  runs: number;
  faultedRuns: number;
  cleanRuns: number;
  untriggered: number;
  clean: Rate;
  main: {
    byCondition: CellStats[];
    byTopology: CellStats[];
    byConditionTopology: CellStats[];
    byTask: CellStats[];
    byConditionTask: CellStats[];
    /** AgentChaos content faults grouped by strategy (single vs persistent). */
    byStrategy: CellStats[];
    overall: CellStats;
  };
  /** Protection study: condition × arm (and the all-conditions row per arm). */
  protection: CellStats[];
}

const rate = (k: number, n: number): Rate => ({ n, k, ...(n > 0 ? { rate: k / n } : {}) });

export function isSilent(r: RunRecord): boolean {
  return (
    r.faulted &&
    !r.success &&
    r.decision === 'accept' &&
    r.detections === 0 &&
    r.guardEvents === 0 &&
    r.errorSpans === 0
  );
}

/** Statistics over faulted runs (each with its clean twin looked up in `byTask`). */
export function cellStats(key: string, faulted: RunRecord[], byTask: Map<string, RunRecord>): CellStats {
  let pairs = 0;
  let untriggered = 0;
  let cleanOk = 0;
  let faultOk = 0;
  let cclN = 0;
  let cclK = 0;
  let failed = 0;
  let silent = 0;
  for (const f of faulted) {
    const twin = f.matchedTo ? byTask.get(f.matchedTo) : undefined;
    if (!twin) continue;
    if (!f.triggered) {
      untriggered++;
      continue;
    }
    pairs++;
    if (twin.success) cleanOk++;
    if (f.success) faultOk++;
    if (twin.success) {
      cclN++;
      if (!f.success) cclK++;
    }
    if (!f.success) {
      failed++;
      if (isSilent(f)) silent++;
    }
  }
  const cleanPass = rate(cleanOk, pairs);
  const faultPass = rate(faultOk, pairs);
  return {
    key,
    pairs,
    untriggered,
    cleanPass,
    faultPass,
    ...(pairs > 0 ? { deltaPass: 100 * ((cleanPass.rate ?? 0) - (faultPass.rate ?? 0)) } : {}),
    ccl: rate(cclK, cclN),
    silent: rate(silent, failed),
  };
}

function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const it of items) {
    const k = key(it);
    const list = m.get(k);
    if (list) list.push(it);
    else m.set(k, [it]);
  }
  return m;
}

export function analyse(records: RunRecord[]): CampaignSummary {
  const byTask = new Map(records.map((r) => [r.taskId, r]));
  const faulted = records.filter((r) => r.faulted);
  const clean = records.filter((r) => !r.faulted);
  const main = faulted.filter((r) => r.study === 'main');
  const stats = (groups: Map<string, RunRecord[]>): CellStats[] =>
    [...groups].map(([k, rs]) => cellStats(k, rs, byTask));
  const contentStrategy = (r: RunRecord): string | undefined =>
    r.strategy ?? /_(single|persistent)$/.exec(r.condition)?.[1];
  const withTopology = main.filter((r) => r.topology !== undefined);

  const protection = faulted.filter((r) => r.study === 'protection');
  const protectionRows = [
    ...stats(groupBy(protection, (r) => `${r.condition} | ${r.arm}`)),
    ...stats(groupBy(protection, (r) => `all | ${r.arm}`)),
  ];

  return {
    runs: records.length,
    faultedRuns: faulted.length,
    cleanRuns: clean.length,
    untriggered: faulted.filter((r) => !r.triggered).length,
    clean: rate(clean.filter((r) => r.success).length, clean.length),
    main: {
      byCondition: stats(groupBy(main, (r) => r.condition)),
      byTopology: stats(groupBy(withTopology, (r) => r.topology as string)),
      byConditionTopology: stats(groupBy(withTopology, (r) => `${r.condition} | ${r.topology as string}`)),
      byTask: stats(groupBy(main, (r) => r.task)),
      byConditionTask: stats(groupBy(main, (r) => `${r.condition} | ${r.task}`)),
      byStrategy: stats(
        groupBy(
          main.filter((r) => contentStrategy(r) !== undefined),
          (r) => contentStrategy(r) as string,
        ),
      ),
      overall: cellStats('all', main, byTask),
    },
    protection: protectionRows,
  };
}

/** Look up a row by key (e.g. `non_delivery@I4 | flat`). */
export function row(rows: CellStats[], key: string): CellStats | undefined {
  return rows.find((r) => r.key === key);
}
