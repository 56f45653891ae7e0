/**
 * The diagnose path as a per-trace function that trace workers load by name (src/traces/parallel.ts): each
 * worker builds its own diagnoser once and diagnoses the traces it holds, ground truth stripped first.
 */
import type { TraceRecord } from '../traces/model';
import { createDiagnoser, diagnoseTrace } from './index';
import type { Diagnosis } from './types';

export function diagnosisTask(options: { diagnoser?: string } = {}): (trace: TraceRecord) => Promise<Diagnosis> {
  const diagnoser = createDiagnoser(options.diagnoser ?? 'rule');
  return (trace) => diagnoseTrace(diagnoser, trace);
}
