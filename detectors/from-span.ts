/**
 * Offline detection: observations built from the one reading of a trace (src/traces/view — every producer's
 * conventions, content from attributes, events or joined log records, faultline's facts when present), the online
 * findings recorded as `faultline.detection` events parsed back, and a walk over a trace that runs the detectors
 * span by span with the task's earlier observations as context. Ground truth (`faultline.fault.*`) is never read.
 */
import {
  ATTR_FL_DETECTION_CONFIDENCE,
  ATTR_FL_DETECTION_DETECTOR,
  ATTR_FL_DETECTION_EVIDENCE,
  ATTR_FL_DETECTION_FAULT_TYPE,
  ATTR_FL_DETECTION_LOCATION,
  ATTR_FL_DETECTION_SEVERITY,
  ATTR_FL_TASK_ID,
  EVENT_FL_DETECTION,
} from '../instrumentation/semconv';
import { isFaultType } from '../src/taxonomy';
import { num, str, type SpanRecord, type TraceRecord } from '../src/traces/model';
import { DETECTION_CHILD, messageObservation, viewTrace, type Step } from '../src/traces/view';
import { HISTORY_WINDOW } from './history';
import { resolveDetectors, runResolved } from './registry';
import { llmObservation } from './observations';
import type {
  DetectionContext,
  Detector,
  Finding,
  FindingLocation,
  MessageContract,
  Observation,
  Severity,
} from './types';

export {
  llmObservation,
  llmObservationFromSpan,
  messageObservationFromSpan,
  observationFromSpan,
} from './observations';

// ------------------------------------------------------------------------------------------------ online findings

const SEVERITIES: readonly Severity[] = ['info', 'warning', 'error', 'critical'];

/** The findings recorded online as `faultline.detection` events on this span. */
export function detectionsFromSpan(span: SpanRecord): Finding[] {
  const out: Finding[] = [];
  for (const e of span.events) {
    if (e.name !== EVENT_FL_DETECTION) continue;
    const a = e.attributes;
    const faultType = str(a, ATTR_FL_DETECTION_FAULT_TYPE);
    const detector = str(a, ATTR_FL_DETECTION_DETECTOR);
    if (detector === undefined || !isFaultType(faultType)) continue;
    const sev = str(a, ATTR_FL_DETECTION_SEVERITY) as Severity | undefined;
    const f: Finding = {
      detector,
      faultType,
      severity: sev && SEVERITIES.includes(sev) ? sev : 'warning',
      confidence: num(a, ATTR_FL_DETECTION_CONFIDENCE) ?? 0.5,
      evidence: str(a, ATTR_FL_DETECTION_EVIDENCE) ?? '',
    };
    const location: FindingLocation = { spanId: span.spanId };
    const field = str(a, ATTR_FL_DETECTION_LOCATION);
    if (field !== undefined) location.field = field;
    f.location = location;
    out.push(f);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ trace walk

export interface DetectSpansOptions {
  /** Detector names or instances; default: every registered call-level detector (the workflow monitors judge a
   * whole workflow with its scope: `monitorTrace`). */
  detectors?: readonly (string | Detector)[];
  contracts?: readonly MessageContract[];
  ttlMs?: number;
  /** Also return the online findings recorded on the spans (default true). */
  includeOnline?: boolean;
}

/** The task a span belongs to: its own / an ancestor's `faultline.task.id`, else the trace. */
function taskOf(span: SpanRecord, byId: Map<string, SpanRecord>, scoped: boolean): string {
  if (!scoped) return span.traceId;
  for (
    let s: SpanRecord | undefined = span, i = 0;
    s && i < 64;
    s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined, i++
  ) {
    const t = str(s.attributes, ATTR_FL_TASK_ID);
    if (t !== undefined) return t;
  }
  return span.traceId;
}

/**
 * Run the detectors over every LLM call and message of a trace, in start order, each with the earlier observations of
 * its task as context; merge the online findings recorded on the spans (deduplicated by detector, type and field).
 * A message is observed once, on the span that stands for it (its sender's, else its first receive span), with
 * whatever of its ends the trace holds; its other ends carry only their online findings.
 */
export function detectSpans(trace: TraceRecord, options: DetectSpansOptions = {}): Map<string, Finding[]> {
  const out = new Map<string, Finding[]>();
  // Resolved once per trace, at its first observation (an unknown name is reported then, once).
  let detectors: Detector[] | undefined;
  const resolved = (): Detector[] =>
    (detectors ??= options.detectors
      ? resolveDetectors(options.detectors)
      : resolveDetectors().filter((d) => d.level !== 'workflow'));
  const view = viewTrace(trace);
  const byId = view.byId as Map<string, SpanRecord>;
  // Most traces have no task scopes: then every span's task is its trace, without a walk up from each step.
  const scoped = trace.spans.some((s) => str(s.attributes, ATTR_FL_TASK_ID) !== undefined);
  const earlier = new Map<string, Observation[]>();
  const observe = (step: Step): Observation | undefined => {
    if (step.kind === 'llm') return llmObservation(step);
    const x = view.exchangeOf(step.span.spanId);
    return x && x.step === step.span ? messageObservation(x) : undefined;
  };
  for (const step of view.steps) {
    const span = step.span;
    const obs = observe(step);
    const online: Finding[] = [];
    if (options.includeOnline !== false) {
      online.push(...detectionsFromSpan(span));
      for (const c of view.detectionChildren.get(span.spanId) ?? [])
        for (const f of detectionsFromSpan(c)) online.push({ ...f, location: { ...f.location, spanId: span.spanId } });
    }
    let findings: Finding[] = [];
    if (obs) {
      const task = taskOf(span, byId, scoped);
      const prior = earlier.get(task) ?? [];
      const ctx: DetectionContext = { earlier: prior, now: span.end };
      if (options.contracts) ctx.contracts = options.contracts;
      if (options.ttlMs !== undefined) ctx.ttlMs = options.ttlMs;
      findings = runResolved(obs, ctx, resolved());
      prior.push(obs);
      if (prior.length > HISTORY_WINDOW) prior.shift();
      earlier.set(task, prior);
    }
    if (online.length > 0) {
      const seen = new Set(findings.map((f) => `${f.detector}|${f.faultType}|${f.location?.field ?? ''}`));
      for (const f of online)
        if (!seen.has(`${f.detector}|${f.faultType}|${f.location?.field ?? ''}`)) findings.push(f);
    }
    if (findings.length > 0) out.set(span.spanId, findings);
  }
  // Online findings on spans that are neither calls nor messages (a guard on another span) are kept too.
  if (options.includeOnline !== false) {
    const messageSpans = new Set(view.messages.map((m) => m.span));
    for (const span of trace.spans) {
      if (span.name === DETECTION_CHILD || out.has(span.spanId) || view.llmOf(span.spanId) || messageSpans.has(span))
        continue;
      const online = detectionsFromSpan(span);
      if (online.length > 0) out.set(span.spanId, online);
    }
  }
  return out;
}
