/**
 * The labelled trace file a campaign writes is what `faultline eval` consumes: TRACES's reader reads it, the
 * evaluation's ground truth sees each run's condition and the fault that fired, and a diagnoser can be scored on it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ATTR_FL_FAULT_CONDITION } from '../../instrumentation/semconv';
import { groundTruth } from '../../src/diagnosers/ground-truth';
import { createDiagnoser } from '../../src/diagnosers/index';
import { evaluate } from '../../src/evaluation/evaluate';
import { ATTR_CAMPAIGN_PAIR, ATTR_TASK_SUCCESS } from '../../src/campaign/labels';
import { stripGroundTruth } from '../../src/diagnosers/strip-ground-truth';
import { resolveSpec } from '../../src/campaign/matrix';
import * as examples from '../../examples/index';
import { runCampaign, type CampaignResult } from '../../src/campaign/runner';
import { readTraces } from '../../src/traces/read';
import type { TraceRecord } from '../../src/traces/model';

let result: CampaignResult;
const traces: TraceRecord[] = [];

beforeAll(async () => {
  const out = mkdtempSync(join(tmpdir(), 'faultline-labelled-'));
  const spec = resolveSpec('smoke', {
    conditions: ['non_delivery@I4', 'llm_truncate_single', 'llm_corrupt_single'],
    families: ['shopping'],
  });
  result = await runCampaign({ workloads: examples, spec, out, concurrency: 3 });
  for await (const t of readTraces([result.files.traces])) traces.push(t);
}, 90_000);

describe('labelled trace file', () => {
  it('holds one trace per run, each rooted in its workflow span with the condition label and outcome', () => {
    expect(traces.length).toBe(result.records.length);
    for (const rec of result.records) {
      const t = traces.find((x) => x.traceId === rec.traceId);
      expect(t, rec.taskId).toBeDefined();
      const root = t!.spans.find((s) => s.parentSpanId === undefined);
      expect(root?.attributes[ATTR_FL_FAULT_CONDITION]).toBe(rec.condition);
      expect(root?.attributes[ATTR_TASK_SUCCESS]).toBe(rec.success);
    }
  });

  it('labels twins alike: once ground truth is stripped, no campaign label tells the faulted run from its clean twin', () => {
    const rootOf = (taskId: string | undefined) => {
      const rec = result.records.find((r) => r.taskId === taskId)!;
      const t = stripGroundTruth(traces.find((x) => x.traceId === rec.traceId)!);
      return t.spans.find((s) => s.parentSpanId === undefined)!;
    };
    const labels = (a: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(a).filter(([k]) => k.startsWith('faultline.campaign.')));
    for (const f of result.records.filter((r) => r.faulted)) {
      const fr = rootOf(f.taskId);
      const cr = rootOf(f.matchedTo);
      expect(labels(fr.attributes)).toEqual(labels(cr.attributes));
      expect(fr.attributes[ATTR_CAMPAIGN_PAIR]).toBeDefined();
      expect(Object.keys(fr.attributes).sort()).toEqual(Object.keys(cr.attributes).sort());
      // Task ids are opaque: same shape, nothing role-specific at the end.
      expect(f.taskId.replace(/[0-9a-f]{8}$/, '')).toBe(f.matchedTo!.replace(/[0-9a-f]{8}$/, ''));
      expect(f.taskId).not.toMatch(/-[fc]$/);
    }
  });

  it('gives the evaluation the ground truth: clean, faulty with the injected type and step, or untriggered', () => {
    for (const rec of result.records) {
      const truth = groundTruth(traces.find((x) => x.traceId === rec.traceId)!);
      if (!rec.faulted) expect(truth.status).toBe('clean');
      else if (rec.condition === 'llm_corrupt_single')
        expect(truth.status).toBe('untriggered'); // mojibake of ASCII is a no-op
      else {
        expect(truth.status, rec.condition).toBe('faulty');
        expect(truth.faultType).toBe(rec.condition === 'non_delivery@I4' ? 'non_delivery' : 'truncate');
        expect(truth.step).toBeGreaterThan(0);
      }
    }
    expect(result.summary.untriggered).toBe(result.records.filter((r) => r.condition === 'llm_corrupt_single').length);
  });

  it('can be scored by faultline eval (rule diagnoser on ground-truth-stripped traces)', async () => {
    const report = await evaluate(traces, [createDiagnoser('rule')]);
    expect(report.traces).toBe(traces.length);
    expect(report.faulty).toBe(result.records.filter((r) => r.faulted && r.triggered).length);
    expect(report.clean).toBe(result.records.filter((r) => !r.faulted).length);
    expect(report.diagnosers[0].accuracy.typeAccuracy).toBeGreaterThan(0);
  });
});
