/**
 * What a diagnoser says about one trace, and the diagnoser interface. Diagnosers read a trace with the injected
 * ground truth already removed (see strip-ground-truth.ts) and never look for it.
 *
 * A diagnoser that cannot diagnose a trace (the LLM diagnoser's endpoint unreachable or answering with an error, an
 * answer that stays invalid after the retries) REJECTS with `DiagnoserError` for that trace. It never returns `none`
 * for a trace it could not read: `none` means "looked, found nothing". `diagnoseEach` (index.ts) turns those
 * rejections into per-trace `DiagnosisFailure`s for the CLI.
 */
import type { FaultType } from '../taxonomy';
import type { TraceRecord } from '../traces/model';

/**
 * What a diagnosis names: a fault type of the taxonomy, `none`, or `not_observable` — the trace shows that something
 * went wrong but not what: the evidence lies in message content the producer did not record (capture off). Counted
 * apart from the fault types: neither a wrong type nor a false positive.
 */
export type DiagnosedType = FaultType | 'not_observable';
export const NOT_OBSERVABLE = 'not_observable' as const;

/** Which list `step` indexes: the trace's LLM call spans or its message spans (see src/traces/model.ts). */
export type StepKind = 'llm' | 'message';

/** A failure the run recovered from on its own (a tool error retried or handled): reported, not the run's fault. */
export interface RecoveredFault {
  spanId: string;
  spanName: string;
  agent?: string;
  faultType: Exclude<FaultType, 'none'>;
  evidence: string;
  /** How the run recovered, in a few words. */
  how: string;
}

export interface Diagnosis {
  traceId: string;
  /** The fault type of the first faulty span, `none`, or `not_observable` (see DiagnosedType). */
  faultType: DiagnosedType;
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
  /** The agent (or workflow / task) the faulty step ran under, when the trace names one. */
  agent?: string | null;
  /** The faulty span's name and its operation (chat, message, execute_tool, …). */
  spanName?: string | null;
  operation?: string | null;
  /** The diagnosis in one sentence: what failed, where, and the evidence. */
  summary?: string;
  /** Failures the run recovered from on its own (not the run's fault). */
  recovered?: RecoveredFault[];
}

/** A diagnosis as the JSON line `diagnose --format jsonl` prints (report/diagnoses.ts diagnosisLine), made where the
 * trace was diagnosed (a worker thread). */
export interface DiagnosisText {
  traceId: string;
  line: string;
  faulty: boolean;
  /** The faulty span (null when none). */
  spanId: string | null;
}

export interface Diagnoser {
  readonly name: string;
  /** Resolves with the diagnosis of a well-formed trace; rejects with `DiagnoserError` when it could not diagnose it. */
  diagnose(trace: TraceRecord): Promise<Diagnosis>;
}

/** A diagnoser could not diagnose one trace (not a usage error: the other traces may still be diagnosed). */
export class DiagnoserError extends Error {
  constructor(
    readonly traceId: string,
    readonly diagnoser: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DiagnoserError';
  }
}

/** The per-trace form of a `DiagnoserError`. */
export interface DiagnosisFailure {
  traceId: string;
  diagnoser: string;
  error: string;
}

export type DiagnosisOutcome = { ok: true; diagnosis: Diagnosis } | { ok: false; failure: DiagnosisFailure };

export type DiagnoserName = 'rule' | 'llm' | 'hybrid';
export const DIAGNOSER_NAMES: readonly DiagnoserName[] = ['rule', 'llm', 'hybrid'];

export function noFault(trace: TraceRecord, diagnoser: string, evidence: string[] = [], confidence = 0.9): Diagnosis {
  return {
    traceId: trace.traceId,
    faultType: 'none',
    spanId: null,
    step: null,
    stepKind: null,
    confidence,
    evidence,
    diagnoser,
  };
}
