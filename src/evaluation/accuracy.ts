/**
 * AgentChaos RQ3 accuracy: how often a diagnoser names the injected fault type, and the faulty step. A step counts
 * only when the diagnosed span is the truth's span (or, for diagnosers that name only a step, the same step of the
 * same kind).
 */
import type { GroundTruth } from '../diagnosers/ground-truth';
import { NOT_OBSERVABLE, type Diagnosis } from '../diagnosers/types';
import type { FaultType } from '../taxonomy';

/** One evaluated trace: its truth and each diagnoser's diagnosis (by diagnoser name). */
export interface EvalRow {
  truth: GroundTruth;
  predictions: Record<string, Diagnosis>;
}

export interface TypeRow {
  faultType: FaultType;
  n: number;
  typeCorrect: number;
  stepCorrect: number;
  /** Percentages 0..100. */
  typeAccuracy: number;
  stepAccuracy: number;
}

export interface Accuracy {
  /** Faulty (triggered) traces scored. */
  n: number;
  /** Of those, the ones the diagnoser answered `not_observable` (counted apart: not a right type, not a wrong one). */
  notObservable: number;
  typeCorrect: number;
  stepCorrect: number;
  typeAccuracy: number;
  stepAccuracy: number;
  perType: TypeRow[];
}

export function typeCorrect(truth: GroundTruth, d: Diagnosis | undefined): boolean {
  return d !== undefined && d.faultType === truth.faultType;
}

export function stepCorrect(truth: GroundTruth, d: Diagnosis | undefined): boolean {
  if (d === undefined || truth.spanId === null) return false;
  if (d.spanId !== null) return d.spanId === truth.spanId;
  return d.step !== null && d.step === truth.step && d.stepKind === truth.stepKind;
}

export const pct = (k: number, n: number): number => (n === 0 ? 0 : Math.round((10000 * k) / n) / 100);

export function accuracy(rows: readonly EvalRow[], diagnoser: string): Accuracy {
  const faulty = rows.filter((r) => r.truth.status === 'faulty');
  const byType = new Map<FaultType, { n: number; t: number; s: number }>();
  let t = 0;
  let s = 0;
  let hidden = 0;
  for (const r of faulty) {
    const d = r.predictions[diagnoser];
    if (d?.faultType === NOT_OBSERVABLE) hidden++;
    const tc = typeCorrect(r.truth, d);
    const sc = stepCorrect(r.truth, d);
    if (tc) t++;
    if (sc) s++;
    const e = byType.get(r.truth.faultType) ?? { n: 0, t: 0, s: 0 };
    e.n++;
    if (tc) e.t++;
    if (sc) e.s++;
    byType.set(r.truth.faultType, e);
  }
  const perType = [...byType.entries()]
    .map(([faultType, e]) => ({
      faultType,
      n: e.n,
      typeCorrect: e.t,
      stepCorrect: e.s,
      typeAccuracy: pct(e.t, e.n),
      stepAccuracy: pct(e.s, e.n),
    }))
    .sort((a, b) => b.n - a.n || a.faultType.localeCompare(b.faultType));
  return {
    n: faulty.length,
    notObservable: hidden,
    typeCorrect: t,
    stepCorrect: s,
    typeAccuracy: pct(t, faulty.length),
    stepAccuracy: pct(s, faulty.length),
    perType,
  };
}

export interface FalsePositives {
  clean: number;
  falsePositives: number;
  /** Percentage 0..100 of clean traces diagnosed with a fault. */
  rate: number;
}

/** A diagnosis other than `none` on a clean trace is a false positive (`not_observable` too: it says something broke). */
export function falsePositives(rows: readonly EvalRow[], diagnoser: string): FalsePositives {
  const clean = rows.filter((r) => r.truth.status === 'clean');
  const fp = clean.filter((r) => (r.predictions[diagnoser]?.faultType ?? 'none') !== 'none').length;
  return { clean: clean.length, falsePositives: fp, rate: pct(fp, clean.length) };
}
