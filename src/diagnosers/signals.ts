/**
 * What the rules collect per span: signals (a fault type, a confidence, a sentence of evidence, where it came from),
 * and the online detections they are read from when present. Shared by the LLM call rules (rules.ts) and the message
 * rules (messages.ts; guard actions on messages are read by the layer, src/traces/view/message.ts).
 */
import {
  ATTR_FL_DETECTION_CONFIDENCE,
  ATTR_FL_DETECTION_DETECTOR,
  ATTR_FL_DETECTION_EVIDENCE,
  ATTR_FL_DETECTION_FAILURE,
  ATTR_FL_DETECTION_FAULT_TYPE,
  EVENT_FL_DETECTION,
} from '../../instrumentation/semconv';
import { isFaultType, type FaultType } from '../taxonomy';
import { num, str, type SpanRecord } from '../traces/model';
import type { SpanFailure, Step, TraceView } from '../traces/view';
import type { StepKind } from './types';

export interface Signal {
  faultType: Exclude<FaultType, 'none'>;
  /** 0..1 */
  confidence: number;
  evidence: string;
  /** Where the signal came from: span metadata, an online detection event, an offline detector finding, or a
   * guard's recorded action (a fault a protection recovered from leaves only that). */
  source: 'metadata' | 'detection' | 'detector' | 'guard';
}

export interface DetectionEvent {
  detector: string;
  faultType: FaultType;
  confidence: number;
  evidence: string;
}

/** The online detectors' findings recorded on the span as `faultline.detection` events. */
export function detectionEvents(span: SpanRecord): DetectionEvent[] {
  const out: DetectionEvent[] = [];
  for (const e of span.events) {
    if (e.name !== EVENT_FL_DETECTION) continue;
    const t = e.attributes[ATTR_FL_DETECTION_FAULT_TYPE];
    if (!isFaultType(t) || t === 'none') continue;
    // A workflow monitor's finding (it names an ARCF failure type) judges the task, not this call's fault.
    if (e.attributes[ATTR_FL_DETECTION_FAILURE] !== undefined) continue;
    const c = num(e.attributes, ATTR_FL_DETECTION_CONFIDENCE);
    out.push({
      detector: str(e.attributes, ATTR_FL_DETECTION_DETECTOR) ?? 'detector',
      faultType: t,
      confidence: c === undefined ? 0.8 : Math.min(1, Math.max(0, c)),
      evidence: str(e.attributes, ATTR_FL_DETECTION_EVIDENCE) ?? '',
    });
  }
  return out;
}

export function durationMs(span: SpanRecord): number {
  return Math.max(0, span.end - span.start);
}

/** Median of `sorted` (ascending) with one occurrence of `without` left out; O(log n), so long traces stay linear. */
export function medianWithout(sorted: readonly number[], without: number): number | undefined {
  const n = sorted.length - 1;
  if (n <= 0) return undefined;
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (sorted[m]! < without) lo = m + 1;
    else hi = m;
  }
  const skip = lo;
  const at = (i: number): number => sorted[i < skip ? i : i + 1]!;
  const mid = n >> 1;
  return n % 2 === 1 ? at(mid) : (at(mid - 1) + at(mid)) / 2;
}

/** A failed span's signal: `timeout` when the failure names a timeout or deadline, else `error`. */
export function failureSignal(f: SpanFailure | undefined, span: SpanRecord): Signal | undefined {
  if (!f) return undefined;
  const parts = [
    f.httpStatus !== undefined ? `HTTP ${f.httpStatus}` : undefined,
    f.errorType !== undefined ? `error.type=${f.errorType}` : undefined,
    span.attributes['rpc.response.status_code'] !== undefined
      ? `rpc status ${String(span.attributes['rpc.response.status_code'])}`
      : undefined,
    span.status.code === 'ERROR'
      ? `status ERROR${f.message ? `: ${f.message.slice(0, 80)}` : ''}`
      : f.message
        ? f.message.slice(0, 80)
        : undefined,
  ].filter((p): p is string => p !== undefined);
  return {
    faultType: f.timeout ? 'timeout' : 'error',
    confidence: 0.95,
    evidence: parts.join(', '),
    source: 'metadata',
  };
}

/** The spans above `span`, nearest first (bounded: a malformed trace may have cycles). */
export function ancestors(view: TraceView, span: SpanRecord): SpanRecord[] {
  const out: SpanRecord[] = [];
  let p = span.parentSpanId ? view.byId.get(span.parentSpanId) : undefined;
  for (let depth = 0; p && depth < 64; depth++) {
    out.push(p);
    p = p.parentSpanId ? view.byId.get(p.parentSpanId) : undefined;
  }
  return out;
}

/** A span with its signals, as the rules collect them (src/diagnosers/rules.ts `spanVerdicts`). */
export interface SpanVerdict {
  span: SpanRecord;
  /** The step reading of the span (an LLM call or a message), or null for any other span. */
  step: Step | null;
  stepKind: StepKind | null;
  stepIndex: number | null;
  signals: Signal[];
}
