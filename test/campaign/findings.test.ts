/**
 * The papers' qualitative findings, reproduced on the example workflows by a real campaign (embedded mock model via
 * the openai SDK, real OTel SDK, faultline's channel and fault injector, online detectors and guards).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { isSilent, row, type CampaignSummary, type RunRecord } from '../../src/campaign/analysis';
import { resolveSpec } from '../../src/campaign/matrix';
import * as examples from '../../examples/index';
import { runCampaign, type CampaignResult } from '../../src/campaign/runner';

let result: CampaignResult;
let s: CampaignSummary;
const faulted = (pred: (r: RunRecord) => boolean): RunRecord[] => result.records.filter((r) => r.faulted && pred(r));

beforeAll(async () => {
  const out = mkdtempSync(join(tmpdir(), 'faultline-findings-'));
  result = await runCampaign({ workloads: examples, spec: resolveSpec('smoke'), out, concurrency: 4 });
  s = result.summary;
}, 120_000);

describe('campaign on the examples reproduces the papers’ findings', () => {
  it('matches every faulted run to a clean twin that succeeds, and every fault fired', () => {
    expect(s.cleanRuns).toBe(s.faultedRuns);
    expect(s.clean.rate).toBe(1);
    expect(s.untriggered).toBe(0);
    for (const r of faulted(() => true)) {
      const twin = result.records.find((c) => c.taskId === r.matchedTo);
      expect(twin, r.taskId).toMatchObject({
        faulted: false,
        family: r.family,
        task: r.task,
        topology: r.topology,
        arm: r.arm,
      });
    }
  });

  it('I4 non-delivery: Flat keeps succeeding while Sequential and Hierarchical fail', () => {
    expect(row(s.main.byConditionTopology, 'non_delivery@I4 | flat')?.faultPass.rate).toBe(1);
    expect(row(s.main.byConditionTopology, 'non_delivery@I4 | sequential')?.faultPass.rate).toBe(0);
    expect(row(s.main.byConditionTopology, 'non_delivery@I4 | hierarchical')?.faultPass.rate).toBe(0);
  });

  it('I2 non-delivery: all three topologies fail', () => {
    for (const t of ['sequential', 'flat', 'hierarchical']) {
      const st = row(s.main.byConditionTopology, `non_delivery@I2 | ${t}`);
      expect(st?.pairs, t).toBeGreaterThan(0);
      expect(st?.faultPass.rate, t).toBe(0);
      expect(st?.ccl.rate, t).toBe(1);
    }
  });

  it('valid-partial evidence fails silently without evidence guards', () => {
    const unguarded = faulted(
      (r) =>
        r.condition === 'valid_partial@I4' &&
        r.arm === 'none' &&
        r.family === 'shopping' &&
        r.topology === 'sequential',
    );
    expect(unguarded.length).toBeGreaterThan(0);
    for (const r of unguarded) {
      expect(r.success).toBe(false);
      // The system believed it succeeded: the Decision accepted, nothing was detected or guarded, no span errored.
      expect(isSilent(r), JSON.stringify(r)).toBe(true);
    }
    expect(row(s.main.byCondition, 'valid_partial@I4')?.silent.rate).toBe(1);
    // Non-delivery, by contrast, is never silent: the receiver knows nothing arrived and rejects.
    expect(row(s.main.byCondition, 'non_delivery@I4')?.silent.k).toBe(0);
  });

  it('evidence guards recover valid-partial evidence; execution guards recover I2 non-delivery and duplicate delivery', () => {
    const pass = (key: string) => row(s.protection, key)?.faultPass.rate;
    // Without protection all three faults make the task fail.
    expect(pass('valid_partial@I4 | none')).toBe(0);
    expect(pass('non_delivery@I2 | none')).toBe(0);
    expect(pass('duplicate@I2 | none')).toBe(0);
    // Each protection recovers the faults of its own path, and only those.
    expect(pass('valid_partial@I4 | evidence')).toBe(1);
    expect(pass('valid_partial@I4 | execution')).toBe(0);
    expect(pass('non_delivery@I2 | execution')).toBe(1);
    expect(pass('duplicate@I2 | execution')).toBe(1);
    expect(pass('non_delivery@I2 | evidence')).toBe(0);
    // Both together recover all of them.
    expect(row(s.protection, 'all | both')?.faultPass.rate).toBe(1);
    // The recoveries are visible in the trace as guard actions.
    for (const r of faulted((x) => x.study === 'protection' && x.arm === 'both'))
      expect(r.guardEvents, r.condition).toBeGreaterThan(0);
  });

  it('persistent injection hurts more than a single one (AgentChaos)', () => {
    const single = row(s.main.byStrategy, 'single');
    const persistent = row(s.main.byStrategy, 'persistent');
    expect(single?.pairs).toBeGreaterThan(0);
    expect(persistent?.deltaPass).toBeGreaterThan((single?.deltaPass ?? 0) + 50);
  });

  it('writes the labelled trace file, the summary and the HTML report', () => {
    const lines = readFileSync(result.files.traces, 'utf8').trim().split('\n');
    expect(lines.length).toBe(result.records.length);
    const first = JSON.parse(lines[0]) as { resourceSpans: unknown[] };
    expect(Array.isArray(first.resourceSpans)).toBe(true);
    const summary = JSON.parse(readFileSync(result.files.summary, 'utf8')) as { runs: RunRecord[] };
    expect(summary.runs.length).toBe(result.records.length);
    const html = readFileSync(result.files.report, 'utf8');
    expect(html).toContain('<svg');
    expect(html).toContain('non_delivery@I4');
    // The silent valid-partial runs are listed with their trace ids.
    expect(html).toContain('Silent failures');
    for (const r of result.records.filter(isSilent)) expect(html).toContain(r.traceId);
  });
});
