/** Confusion matrix of fault types: rows are the truth, columns the diagnosis. */
import { NOT_OBSERVABLE, type DiagnosedType } from '../diagnosers/types';
import { FAULT_TYPES } from '../taxonomy';
import type { EvalRow } from './accuracy';

export interface ConfusionMatrix {
  /** Labels in taxonomy order (then `not_observable`, a diagnosis only), only those that occur as truth or diagnosis. */
  labels: DiagnosedType[];
  /** counts[i][j]: traces of true type labels[i] diagnosed as labels[j]. */
  counts: number[][];
}

/** Over faulty and clean traces (clean rows show the false positives); untriggered traces are left out. */
export function confusion(rows: readonly EvalRow[], diagnoser: string): ConfusionMatrix {
  const scored = rows.filter((r) => r.truth.status !== 'untriggered');
  const used = new Set<DiagnosedType>();
  for (const r of scored) {
    used.add(r.truth.faultType);
    used.add(r.predictions[diagnoser]?.faultType ?? 'none');
  }
  const labels: DiagnosedType[] = [...FAULT_TYPES, NOT_OBSERVABLE].filter((t) => used.has(t));
  const index = new Map(labels.map((l, i) => [l, i]));
  const counts = labels.map(() => labels.map(() => 0));
  for (const r of scored) {
    const i = index.get(r.truth.faultType)!;
    const j = index.get(r.predictions[diagnoser]?.faultType ?? 'none')!;
    counts[i]![j]!++;
  }
  return { labels, counts };
}
