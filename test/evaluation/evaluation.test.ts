import { describe, expect, it } from 'vitest';
import { accuracy, falsePositives, stepCorrect, type EvalRow } from '../../src/evaluation/accuracy';
import { confusion } from '../../src/evaluation/confusion';
import { cohenKappa, kappaBetween } from '../../src/evaluation/kappa';
import { evaluate } from '../../src/evaluation/evaluate';
import { createDiagnoser, mapOrdered } from '../../src/diagnosers/index';
import { evalHtml } from '../../src/report/html';
import { evalText } from '../../src/report/eval-text';
import type { Diagnoser, Diagnosis } from '../../src/diagnosers/types';
import type { GroundTruth } from '../../src/diagnosers/ground-truth';
import type { FaultType } from '../../src/taxonomy';
import { TraceBuilder } from '../diagnosers/support/builder';
import { labelledSet } from '../diagnosers/support/labelled';

const truth = (
  faultType: FaultType,
  spanId: string | null,
  step: number | null,
  status: GroundTruth['status'] = 'faulty',
): GroundTruth => ({
  traceId: 't',
  status,
  faultType,
  spanId,
  step,
  stepKind: step === null ? null : 'llm',
});
const diag = (faultType: FaultType, spanId: string | null, step: number | null, name = 'rule'): Diagnosis => ({
  traceId: 't',
  faultType,
  spanId,
  step,
  stepKind: step === null ? null : 'llm',
  confidence: 1,
  evidence: [],
  diagnoser: name,
});

describe("Cohen's kappa", () => {
  it('matches textbook values', () => {
    // 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 → κ = 0.4
    const a = [...Array(25).fill('y'), ...Array(25).fill('n')];
    const b = [...Array(20).fill('y'), ...Array(5).fill('n'), ...Array(10).fill('y'), ...Array(15).fill('n')];
    expect(cohenKappa(a, b)).toBeCloseTo(0.4, 10);
    expect(cohenKappa(['1', '1', '0', '0'], ['1', '0', '0', '0'])).toBeCloseTo(0.5, 10);
    expect(cohenKappa(['a', 'b', 'c'], ['a', 'b', 'c'])).toBe(1);
    expect(cohenKappa(['a', 'a'], ['a', 'a'])).toBe(1);
    expect(cohenKappa(['a', 'b'], ['b', 'a'])).toBeCloseTo(-1, 10);
    expect(() => cohenKappa(['a'], [])).toThrow(RangeError);
  });
});

describe('accuracy, step, confusion, false positives', () => {
  const rows: EvalRow[] = [
    {
      truth: truth('truncate', 's1', 2),
      predictions: { rule: diag('truncate', 's1', 2), llm: diag('truncate', 's9', 3, 'llm') },
    },
    {
      truth: truth('truncate', 's2', 1),
      predictions: { rule: diag('error', 's2', 1), llm: diag('truncate', 's2', 1, 'llm') },
    },
    {
      truth: truth('error', 's3', 1),
      predictions: { rule: diag('error', 's3', 1), llm: diag('none', null, null, 'llm') },
    },
    {
      truth: truth('none', null, null, 'clean'),
      predictions: { rule: diag('none', null, null), llm: diag('delay', 's4', 1, 'llm') },
    },
    {
      truth: truth('none', null, null, 'clean'),
      predictions: { rule: diag('none', null, null), llm: diag('none', null, null, 'llm') },
    },
    { truth: truth('none', null, null, 'untriggered'), predictions: {} },
  ];

  it('scores type and step over faulty traces only; a step needs the same span', () => {
    const r = accuracy(rows, 'rule');
    expect(r).toMatchObject({ n: 3, typeCorrect: 2, stepCorrect: 3, typeAccuracy: 66.67, stepAccuracy: 100 });
    expect(r.perType.find((x) => x.faultType === 'truncate')).toMatchObject({
      n: 2,
      typeAccuracy: 50,
      stepAccuracy: 100,
    });
    const l = accuracy(rows, 'llm');
    expect(l).toMatchObject({ typeCorrect: 2, stepCorrect: 1 });
    expect(stepCorrect(truth('error', 'a', 1), { ...diag('error', null, 1) })).toBe(true); // step-only diagnoser
  });

  it('false positives: any fault named on a clean trace', () => {
    expect(falsePositives(rows, 'rule')).toEqual({ clean: 2, falsePositives: 0, rate: 0 });
    expect(falsePositives(rows, 'llm')).toEqual({ clean: 2, falsePositives: 1, rate: 50 });
  });

  it('confusion rows are truth, columns diagnosis; untriggered left out', () => {
    const m = confusion(rows, 'rule');
    expect(m.labels).toEqual(['error', 'truncate', 'none']);
    expect(m.counts).toEqual([
      [1, 0, 0],
      [1, 1, 0],
      [0, 0, 2],
    ]);
  });

  it('kappa between two diagnosers over the faulty traces', () => {
    const k = kappaBetween(rows, 'rule', 'llm');
    expect(k.n).toBe(3);
    expect(k.type).toBeCloseTo(cohenKappa(['truncate', 'error', 'error'], ['truncate', 'truncate', 'none']), 3);
  });
});

describe('evaluate over a labelled set, and the reports', () => {
  it('runs diagnosers on stripped traces, excludes untriggered, and renders text and self-contained HTML', async () => {
    const b = new TraceBuilder();
    const set = labelledSet(b, { seed: 11, perFault: 3, clean: 20, untriggered: 2 });
    const coin: Diagnoser = {
      name: 'always-truncate',
      diagnose: async (t) => ({ ...diag('truncate', null, 1, 'always-truncate'), traceId: t.traceId }),
    };
    const progress: number[] = [];
    const report = await evaluate(set, [createDiagnoser('rule'), coin], { onTrace: (n) => progress.push(n) });
    expect(report.traces).toBe(set.length);
    expect(report.untriggered).toBe(2);
    expect(report.clean).toBe(20);
    expect(report.faulty).toBe(set.length - 22);
    expect(progress.at(-1)).toBe(set.length);
    const rule = report.diagnosers[0]!;
    expect(rule.accuracy.typeAccuracy).toBeGreaterThanOrEqual(90);
    expect(rule.accuracy.stepAccuracy).toBeGreaterThanOrEqual(90);
    expect(rule.falsePositives.rate).toBeLessThanOrEqual(5);
    expect(report.diagnosers[1]!.falsePositives.rate).toBe(100);
    expect(report.kappa).toHaveLength(1);

    const text = evalText(report);
    // AgentChaos's figures are in their own section, labelled as another dataset and input, not a row of ours.
    const published = text.indexOf('Published elsewhere, not comparable row for row');
    expect(published).toBeGreaterThan(text.indexOf("Cohen's kappa"));
    expect(text.slice(published)).toContain('another dataset');
    expect(text.slice(published)).toMatch(/AgentChaos rule\s+52\.45\s+55\.50/);
    expect(text.slice(0, published)).not.toContain('AgentChaos rule');
    expect(text.slice(0, published)).not.toContain('4.30 / 31.18');
    expect(text).toContain("Cohen's kappa");

    const html = evalHtml(report, { generatedAt: new Date(0) });
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect((html.match(/<svg /g) ?? []).length).toBe(2 + report.diagnosers.length);
    expect(html).not.toMatch(/<script|<link|src=|href=/i);
    expect(html).toContain('another dataset');
    expect(html.indexOf('52.45')).toBeGreaterThan(html.indexOf('Published elsewhere'));
    expect(html.slice(0, html.indexOf('Published elsewhere'))).not.toContain('AgentChaos rule');
    // Diagnoser names and labels are escaped.
    const evil = { ...report, diagnosers: [{ ...rule, diagnoser: '<img onerror=x>' }] };
    expect(evalHtml(evil)).not.toContain('<img onerror');
  });
});

describe('bounded concurrency', () => {
  it('mapOrdered keeps input order with up to N calls in flight', async () => {
    let inFlight = 0;
    let peak = 0;
    const delays = [30, 5, 20, 1, 15, 2, 25];
    async function* source() {
      for (const d of delays) yield d;
    }
    const out: number[] = [];
    for await (const { item, result } of mapOrdered(source(), 3, async (d) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, d));
      inFlight--;
      return d * 2;
    })) {
      expect(result).toBe(item * 2);
      out.push(item);
    }
    expect(out).toEqual(delays);
    expect(peak).toBe(3);
  });

  it('evaluate gives the same report sequentially and concurrently', async () => {
    const set = labelledSet(new TraceBuilder(), { seed: 21, perFault: 1, clean: 5 });
    const a = await evaluate(set, [createDiagnoser('rule')]);
    const b = await evaluate(set, [createDiagnoser('rule')], { concurrency: 8 });
    expect(b.rows.map((r) => r.predictions.rule)).toEqual(a.rows.map((r) => r.predictions.rule));
    expect(b.diagnosers[0]!.accuracy).toEqual(a.diagnosers[0]!.accuracy);
  });
});
