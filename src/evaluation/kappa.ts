/**
 * Cohen's kappa: agreement between two raters beyond chance, κ = (p_o − p_e) / (1 − p_e). AgentChaos reports it
 * between its rule- and LLM-based diagnosers (0.567 type, 0.661 step).
 */
import type { EvalRow } from './accuracy';

export function cohenKappa(a: readonly string[], b: readonly string[]): number {
  if (a.length !== b.length) throw new RangeError('cohenKappa: the two label lists differ in length');
  const n = a.length;
  if (n === 0) return NaN;
  let agree = 0;
  const ca = new Map<string, number>();
  const cb = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    if (a[i] === b[i]) agree++;
    ca.set(a[i]!, (ca.get(a[i]!) ?? 0) + 1);
    cb.set(b[i]!, (cb.get(b[i]!) ?? 0) + 1);
  }
  const po = agree / n;
  let pe = 0;
  for (const [label, k] of ca) pe += (k / n) * ((cb.get(label) ?? 0) / n);
  // Both raters constant and identical: perfect agreement, kappa undefined by the formula; report 1.
  if (pe === 1) return po === 1 ? 1 : 0;
  return (po - pe) / (1 - pe);
}

export interface KappaPair {
  a: string;
  b: string;
  /** Over the faulty traces, on the fault type. */
  type: number;
  /** Over the faulty traces, on the step (`kind:step`, `none` when no step). */
  step: number;
  n: number;
}

export function stepLabel(d: { stepKind: string | null; step: number | null } | undefined): string {
  return d && d.step !== null ? `${d.stepKind ?? 'llm'}:${d.step}` : 'none';
}

export function kappaBetween(rows: readonly EvalRow[], a: string, b: string): KappaPair {
  const faulty = rows.filter((r) => r.truth.status === 'faulty');
  const ta = faulty.map((r) => r.predictions[a]?.faultType ?? 'none');
  const tb = faulty.map((r) => r.predictions[b]?.faultType ?? 'none');
  const sa = faulty.map((r) => stepLabel(r.predictions[a]));
  const sb = faulty.map((r) => stepLabel(r.predictions[b]));
  const round = (x: number): number => (Number.isNaN(x) ? x : Math.round(x * 1000) / 1000);
  return { a, b, type: round(cohenKappa(ta, tb)), step: round(cohenKappa(sa, sb)), n: faulty.length };
}
