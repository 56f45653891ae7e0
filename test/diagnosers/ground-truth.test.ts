import { describe, expect, it } from 'vitest';
import { groundTruth } from '../../src/diagnosers/ground-truth';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import { hasGroundTruth, stripGroundTruth, stripOwnGroundTruth } from '../../src/diagnosers/strip-ground-truth';
import { diagnoseByRules } from '../../src/diagnosers/rules';
import { createHybridDiagnoser } from '../../src/diagnosers/hybrid';
import type { Diagnoser } from '../../src/diagnosers/types';
import type { TraceRecord } from '../../src/traces/model';
import { labelledSet } from './support/labelled';
import { TraceBuilder } from './support/builder';

const b = new TraceBuilder();

describe('ground truth', () => {
  it('is the earliest span with a faultline.fault.injected event that changed something', () => {
    let first = '';
    const t = b.trace(
      (w) =>
        w.agent('a', (a) => {
          a.chat({ truth: { type: 'corrupt', name: 'llm_corrupt_single', noop: true } }); // mojibake on ASCII: a no-op fire
          first = a.chat({ finishReasons: ['length'], truth: { type: 'truncate', name: 'llm_truncate_burst' } });
          a.chat({ finishReasons: ['length'], truth: { type: 'truncate', name: 'llm_truncate_burst' } });
        }),
      { condition: 'llm_truncate_burst' },
    );
    expect(groundTruth(t)).toMatchObject({
      status: 'faulty',
      faultType: 'truncate',
      spanId: first,
      step: 2,
      stepKind: 'llm',
      name: 'llm_truncate_burst',
    });
  });

  it('planned but never fired → untriggered; nothing planned → clean', () => {
    const un = b.trace((w) => w.agent('a', (a) => a.chat()), { condition: 'tool_schema_single' });
    expect(groundTruth(un)).toMatchObject({ status: 'untriggered', faultType: 'none', spanId: null });
    const clean = b.trace((w) => w.agent('a', (a) => a.chat()));
    expect(groundTruth(clean)).toMatchObject({ status: 'clean', faultType: 'none' });
  });

  it('message faults are stepped among the message spans', () => {
    let id = '';
    const t = b.trace((w) => {
      w.message({ source: 'p', target: 'w' });
      id = w.message({ source: 'w', target: 'v', delivered: 0, truth: { type: 'non_delivery', name: 'non_delivery' } });
    });
    expect(groundTruth(t)).toMatchObject({ spanId: id, step: 2, stepKind: 'message', faultType: 'non_delivery' });
  });
});

describe('ground truth stays out of diagnosis', () => {
  it('strip removes every faultline.fault.* attribute and event, deep-copies, and leaves the input intact', () => {
    const t = b.trace(
      (w) =>
        w.agent('a', (a) =>
          a.chat({ finishReasons: ['length'], truth: { type: 'truncate', name: 'llm_truncate_single' } }),
        ),
      { condition: 'llm_truncate_single' },
    );
    const before = JSON.stringify(t);
    expect(hasGroundTruth(t)).toBe(true);
    const s = stripGroundTruth(t);
    expect(hasGroundTruth(s)).toBe(false);
    expect(JSON.stringify(s)).not.toContain('faultline.fault.');
    expect(JSON.stringify(t)).toBe(before);
    s.spans[0]!.attributes.x = 1;
    expect(t.spans[0]!.attributes.x).toBeUndefined();
    // Everything else survives.
    expect(s.spans.map((x) => x.spanId)).toEqual(t.spans.map((x) => x.spanId));
    expect(s.spans.find((x) => x.name.startsWith('chat'))!.attributes['gen_ai.response.finish_reasons']).toEqual([
      'length',
    ]);
  });

  it('stripping a trace in place (the diagnose path over files) leaves exactly what the copy holds', () => {
    const set: TraceRecord[] = labelledSet(b, { seed: 11, perFault: 1 });
    expect(set.filter(hasGroundTruth).length).toBeGreaterThan(10);
    for (const t of set) {
      const copy = JSON.stringify(stripGroundTruth(t));
      const own = stripOwnGroundTruth(t);
      expect(hasGroundTruth(own)).toBe(false);
      // Same keys in the same order, same values: what a diagnoser reads cannot differ.
      expect(JSON.stringify(own)).toBe(copy);
    }
  });

  it('every diagnosis is identical with and without the ground truth, over a realistic labelled set', async () => {
    const set: TraceRecord[] = labelledSet(b, { seed: 7, perFault: 2 });
    expect(set.filter(hasGroundTruth).length).toBeGreaterThan(20);
    // A scripted "LLM" standing in for the endpoint (the real one is tested against a loopback server).
    const scripted: Diagnoser = {
      name: 'llm',
      diagnose: async (t) => ({ ...diagnoseByRules(t), diagnoser: 'llm', confidence: 0.5 }),
    };
    const diagnosers = [createDiagnoser('rule'), createHybridDiagnoser({ llmDiagnoser: scripted })];
    let differs = 0;
    for (const t of set) {
      for (const d of diagnosers) {
        const withTruth = await d.diagnose(t);
        const without = await d.diagnose(stripGroundTruth(t));
        expect(withTruth).toEqual(without);
        expect(await diagnoseTrace(d, t)).toEqual(without);
        if (without.faultType !== 'none') differs++;
      }
    }
    expect(differs).toBeGreaterThan(20); // the set is not trivially all-none
  });

  it('the diagnose path strips before the diagnoser runs', async () => {
    const seen: boolean[] = [];
    const spy: Diagnoser = { name: 'spy', diagnose: async (t) => (seen.push(hasGroundTruth(t)), diagnoseByRules(t)) };
    for (const t of labelledSet(b, { seed: 3, perFault: 1 })) await diagnoseTrace(spy, t);
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.every((x) => x === false)).toBe(true);
  });
});
