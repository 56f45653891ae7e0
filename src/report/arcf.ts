/** ARCF's Table 1 as text: both arms side by side, with the paper's figures as another dataset beside them. */
import { type Interval, type Proportion } from '../stats';
import { table } from '../report/colors';
import type { ArcfTally } from '../campaign/types';
import type { ArcfArmStats, ArcfSummary } from '../campaign/arcf-summary';

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
