/**
 * The assertions on traces made by the real fault-injection stack (support/injected-run.ts), shared by the two
 * modes, each in its own test file so they run in parallel. The thresholds are the must-show numbers.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { EvalReport } from '../../../src/evaluation/evaluate';
import { CLEAN, FAULTS, REPS, runInjected } from './injected-run';

export function describeInjected(mode: 'online' | 'content'): void {
  let report: EvalReport;
  beforeAll(async () => {
    report = await runInjected(mode);
  }, 180_000);

  describe(`rule diagnoser on injected traces (${mode})`, () => {
    it('labels come from the injector; every planned task is accounted for', () => {
      expect(report.traces).toBe(FAULTS.length * REPS + CLEAN);
      expect(report.clean).toBe(CLEAN);
      expect(report.faulty + report.untriggered).toBe(FAULTS.length * REPS);
      expect(report.faulty).toBeGreaterThan(FAULTS.length * REPS * 0.6);
    });

    it('type and step accuracy ≥ 90 %, corruption ≥ 95 %, false positives on clean traces ≤ 5 %', () => {
      const rule = report.diagnosers[0]!;
      const per = (t: string) => rule.accuracy.perType.find((x) => x.faultType === t);
      expect(rule.accuracy.typeAccuracy).toBeGreaterThanOrEqual(90);
      expect(rule.accuracy.stepAccuracy).toBeGreaterThanOrEqual(90);
      expect(per('corrupt')!.typeAccuracy).toBeGreaterThanOrEqual(95);
      expect(rule.falsePositives.rate).toBeLessThanOrEqual(5);
    });

    // Includes tool_truncate: argument strings cut to 30 % stay valid JSON and keep their finish reason, e.g.
    // {"context": "…potential impact, e", "coworker": "S"} (a one-letter fragment after a space / a one-letter name).
    it('truncation ≥ 90 % (incl. tool-argument truncation)', () => {
      const per = report.diagnosers[0]!.accuracy.perType.find((x) => x.faultType === 'truncate')!;
      expect(per.typeAccuracy).toBeGreaterThanOrEqual(90);
    });
  });
}
