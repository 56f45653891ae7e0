/** Diagnosis output: a terminal table, a JSON array, or JSON lines (one object per trace). */
import type { Diagnosis } from '../diagnosers/types';
import { colors as makeColors, table } from './colors';

export type DiagnosisFormat = 'table' | 'json' | 'jsonl';
export const DIAGNOSIS_FORMATS: readonly DiagnosisFormat[] = ['table', 'json', 'jsonl'];

/** The stable JSON shape of a diagnosis (field order fixed for diffs). */
export function diagnosisJson(d: Diagnosis): Record<string, unknown> {
  return {
    traceId: d.traceId,
    faultType: d.faultType,
    spanId: d.spanId,
    step: d.step,
    stepKind: d.stepKind,
    confidence: d.confidence,
    evidence: d.evidence,
    diagnoser: d.diagnoser,
    agent: d.agent ?? null,
    spanName: d.spanName ?? null,
    operation: d.operation ?? null,
    summary: d.summary ?? null,
    recovered: d.recovered ?? [],
  };
}

export function diagnosisLine(d: Diagnosis): string {
  return JSON.stringify(diagnosisJson(d));
}

export function diagnosesTable(ds: readonly Diagnosis[], color = false): string {
  const c = makeColors(color);
  const rows = ds.map((d) => [
    d.traceId,
    d.faultType === 'none' ? c.green('none') : c.red(d.faultType),
    d.step === null ? '-' : `${d.stepKind === 'message' ? 'msg ' : ''}${d.step}`,
    d.spanId ?? '-',
    d.confidence.toFixed(2),
    (d.evidence[0] ?? '').slice(0, 90),
  ]);
  const faulty = ds.filter((d) => d.faultType !== 'none').length;
  const summary = `\n${c.bold(`${ds.length} trace${ds.length === 1 ? '' : 's'}`)}: ${faulty > 0 ? c.red(`${faulty} faulty`) : '0 faulty'}, ${c.green(`${ds.length - faulty} clean`)}`;
  return table(['trace', 'fault', 'step', 'span', 'conf', 'evidence'], rows, new Set([2, 4])) + '\n' + summary + '\n';
}
