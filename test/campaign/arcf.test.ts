/**
 * The ARCF experiment on the example workflows (a small slice of `--preset arcf`: one family, one topology, one task,
 * every condition, both arms), and the reliability model on its traces: the model's predicted completion against the
 * observed one, per workflow and arm.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARCF_CONDITIONS, arcfPlan } from '../../src/campaign/arcf';
import { renderArcf } from '../../src/report/arcf';
import { resolveSpec, type Cell } from '../../src/campaign/matrix';
import * as examples from '../../examples/index';
import { runCampaign, type CampaignResult } from '../../src/campaign/runner';
import { reliabilityReport } from '../../src/reliability/model';
import { readTraces } from '../../src/traces/read';

let result: CampaignResult;
let out: string;

beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), 'faultline-arcf-'));
  const spec = resolveSpec('arcf', { families: ['shopping'], topologies: ['sequential'], reps: 1, tasksPerFamily: 1 });
  result = await runCampaign({ workloads: examples, spec, out, concurrency: 4, model: { embedded: true } });
}, 120_000);
afterAll(() => undefined);

describe('the arcf arm against the baseline at a 10 % fault rate', () => {
  it('runs every condition in both arms, each faulted run with its clean twin', () => {
    const study = result.records.filter((r) => r.study === 'arcf');
    expect(study).toHaveLength(ARCF_CONDITIONS.length * 2 * 2);
    for (const arm of ['none', 'arcf'] as const) {
      for (const c of ARCF_CONDITIONS) {
        const runs = study.filter((r) => r.arm === arm && r.cell === c.id);
        expect(runs.map((r) => r.faulted).sort()).toEqual([false, true]);
      }
    }
  });

  it('both arms meet the same seeded faults: the plan depends on the cell, not on the arm', () => {
    const cell = (arm: 'none' | 'arcf'): Cell => ({
      study: 'arcf',
      family: 'shopping',
      task: 'shop-mug',
      topology: 'sequential',
      condition: ARCF_CONDITIONS[0]!,
      arm,
      rep: 1,
    });
    expect(arcfPlan(cell('none'))).toEqual(arcfPlan(cell('arcf')));
    expect(arcfPlan(cell('none')).rules[0]).toMatchObject({ strategy: 'intermittent', probability: 0.1 });
  });

  it("reports ARCF's table; clean twins all complete and none is flagged", () => {
    const s = result.arcf!;
    expect(s.arms.map((a) => a.arm)).toEqual(['none', 'arcf']);
    for (const a of s.arms) {
      expect(a.cleanCompletion.p).toBe(1);
      expect(a.cleanFlagged.k).toBe(0);
      expect(a.completion.n).toBe(a.pairs);
    }
    const text = renderArcf(s);
    for (const row of [
      'Workflow completion rate',
      'Failure recovery rate',
      'MAST coverage rate',
      'Retry success rate',
      'Fallback success rate',
      'Checkpoint recovery rate',
      'Response latency P95',
      'Observability overhead',
    ])
      expect(text).toContain(row);
    expect(s.overhead?.pairs).toBe(24);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { arcf?: unknown };
    expect(summary.arcf).toBeDefined();
    expect(result.text).toContain('ARCF at a 10% fault rate');
  });
});

describe('the reliability model on the campaign traces', () => {
  it('predicts completion per workflow and arm from its components, beside the observed completion', async () => {
    const report = await reliabilityReport(readTraces([join(out, 'traces.jsonl')]), {
      groupBy: 'faultline.campaign.arm',
    });
    expect(report.traces).toBe(result.records.length);
    const groups = report.workflows.map((w) => `${w.workflow}|${w.group}`).sort();
    expect(groups).toEqual(['shopping-sequential|arcf', 'shopping-sequential|none']);
    for (const w of report.workflows) {
      const runs = result.records.filter((r) => r.arm === w.group);
      expect(w.runs).toBe(runs.length);
      // Observed: the evaluator's verdict on each run.
      expect(w.observed.k).toBe(runs.filter((r) => r.success).length);
      // Equations 1–3: retries and fallbacks can only help.
      expect(w.base.p).toBeLessThanOrEqual(w.retry.p + 1e-12);
      expect(w.retry.p).toBeLessThanOrEqual(w.fallback.p + 1e-12);
      expect(w.base.lo).toBeLessThanOrEqual(w.base.p);
      expect(w.base.hi).toBeGreaterThanOrEqual(w.base.p);
      const names = w.components.map((c) => `${c.kind} ${c.name}`);
      expect(names).toEqual(
        expect.arrayContaining([
          'agent Planner',
          'agent Worker',
          'agent Verifier',
          'agent Decision',
          'edge Worker → Executor',
          'edge Worker → Verifier',
        ]),
      );
    }
  });
});
