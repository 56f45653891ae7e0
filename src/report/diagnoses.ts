/**
 * Diagnosis output: a terminal table, a JSON array, or JSON lines (one object per trace). A trace the diagnoser could
 * not diagnose is a row of its own (`{traceId, diagnoser, error}`), never a `none`.
 */
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

/** A trace the diagnoser failed on (an LLM endpoint down, a wrong key, an answer that never validated). */
export interface DiagnosisFailure {
  traceId: string;
  diagnoser: string;
  error: string;
}

export function failureJson(f: DiagnosisFailure): Record<string, unknown> {
  return { traceId: f.traceId, diagnoser: f.diagnoser, error: f.error };
}

/** One line per distinct error, with how many traces it cost (a dead endpoint fails every trace the same way). */
export function failureSummary(failures: readonly DiagnosisFailure[]): string[] {
  const by = new Map<string, DiagnosisFailure[]>();
  for (const f of failures) {
    const list = by.get(f.error);
    if (list) list.push(f);
    else by.set(f.error, [f]);
  }
  return [...by].map(([error, fs]) =>
    fs.length === 1
      ? `trace ${fs[0]!.traceId} not diagnosed (${fs[0]!.diagnoser}): ${error}`
      : `${fs.length} traces not diagnosed (${fs[0]!.diagnoser}): ${error}`,
  );
}

export function diagnosisLine(d: Diagnosis): string {
  return JSON.stringify(diagnosisJson(d));
}

export function diagnosesTable(all: ReadonlyArray<Diagnosis | DiagnosisFailure>, color = false): string {
  const c = makeColors(color);
  const ds = all.filter((d): d is Diagnosis => !('error' in d));
  const failed = all.length - ds.length;
  const rows = all.map((d) =>
    'error' in d
      ? [d.traceId, c.yellow('not diagnosed'), '-', '-', '-', d.error.slice(0, 90)]
      : [
          d.traceId,
          d.faultType === 'none'
            ? c.green('none')
            : d.faultType === 'not_observable'
              ? c.yellow('not observable')
              : c.red(d.faultType),
          d.step === null ? '-' : `${d.stepKind === 'message' ? 'msg ' : ''}${d.step}`,
          d.spanId ?? '-',
          d.confidence.toFixed(2),
          (d.evidence[0] ?? '').slice(0, 90),
        ],
  );
  const hidden = ds.filter((d) => d.faultType === 'not_observable').length;
  const faulty = ds.filter((d) => d.faultType !== 'none').length - hidden;
  const summary = `\n${c.bold(`${all.length} trace${all.length === 1 ? '' : 's'}`)}: ${faulty > 0 ? c.red(`${faulty} faulty`) : '0 faulty'}, ${c.green(`${ds.length - faulty - hidden} clean`)}${hidden > 0 ? `, ${c.yellow(`${hidden} not observable without content`)}` : ''}${failed > 0 ? `, ${c.yellow(`${failed} not diagnosed`)}` : ''}`;
  return table(['trace', 'fault', 'step', 'span', 'conf', 'evidence'], rows, new Set([2, 4])) + '\n' + summary + '\n';
}
