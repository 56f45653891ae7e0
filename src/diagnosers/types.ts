/**
 * What a diagnoser says about one trace, and the diagnoser interface. Diagnosers read a trace with the injected
 * ground truth already removed (see strip-ground-truth.ts) and never look for it.
 */
import type { FaultType } from '../taxonomy';
import type { TraceRecord } from '../traces/model';

/** Which list `step` indexes: the trace's LLM call spans or its message spans (see src/traces/model.ts). */
export type StepKind = 'llm' | 'message';

export interface Diagnosis {
  traceId: string;
  /** The fault type of the first faulty span, or `none`. */
  faultType: FaultType;
  /** The faulty span, or null when nothing is faulty (or the fault could not be placed on a span). */
  spanId: string | null;
  /** 1-based index of the faulty span among the trace's LLM call spans (or message spans, see stepKind). */
  step: number | null;
  stepKind: StepKind | null;
  /** 0..1 */
  confidence: number;
  /** Short, content-light reasons, strongest first. */
  evidence: string[];
  /** The diagnoser that produced this diagnosis (`rule`, `llm`, `hybrid`). */
  diagnoser: string;
}

export interface Diagnoser {
  readonly name: string;
  /** Never throws for a well-formed trace: internal failures become a `none` diagnosis with confidence 0. */
  diagnose(trace: TraceRecord): Promise<Diagnosis>;
}

export type DiagnoserName = 'rule' | 'llm' | 'hybrid';
export const DIAGNOSER_NAMES: readonly DiagnoserName[] = ['rule', 'llm', 'hybrid'];

export function noFault(trace: TraceRecord, diagnoser: string, evidence: string[] = [], confidence = 0.9): Diagnosis {
  return { traceId: trace.traceId, faultType: 'none', spanId: null, step: null, stepKind: null, confidence, evidence, diagnoser };
}
