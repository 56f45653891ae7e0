/**
 * Rule-based diagnoser. Reads span metadata (status, error type, HTTP status, finish reasons, output facts, usage,
 * timings, message delivery facts), the online detectors' `faultline.detection` events and the offline detectors'
 * findings, then walks the trace in causal (start) order and names the FIRST faulty span: a fault upstream explains
 * the symptoms downstream, and a retried or recovered fault is still the first fault.
 *
 * Only LLM call spans and message spans can be "the faulty step". Other spans (invoke_agent, execute_tool, HTTP)
 * are considered only when none of those is faulty, and then a parent that failed because a child failed is never
 * chosen over that child.
 */
import type { Finding } from '../../detectors/types';
import type { FaultType } from '../taxonomy';
import { isLlmSpan, isMessageSpan, type SpanRecord, type TraceRecord } from '../traces/model';
import { messageAnalysis } from './messages';
import {
  detectionEvents,
  durationMs,
  errorType,
  finishReasons,
  guardEvents,
  httpStatus,
  looksLikeTimeout,
  outputFacts,
  outputTokens,
  rpcStatus,
  streamFacts,
} from './span-facts';
import { noFault, type Diagnoser, type Diagnosis, type StepKind } from './types';

export interface Signal {
  faultType: Exclude<FaultType, 'none'>;
  /** 0..1 */
  confidence: number;
  evidence: string;
  /** Where the signal came from: span metadata, an online detection event, an offline detector finding, or a
   * guard's recorded action (a fault a protection recovered from leaves only that). */
  source: 'metadata' | 'detection' | 'detector' | 'guard';
}

/** Offline detector findings per span id (detectors/from-span.ts `detectSpans`). */
export type SpanFindings = (trace: TraceRecord) => Map<string, Finding[]>;

export interface RuleDiagnoserOptions {
  /** Offline detectors run over the trace's spans. Default: none besides the recorded detection events. */
  findings?: SpanFindings;
  /** A span counts as faulty when its strongest signal reaches this confidence. Default 0.55 (a detector's 0.5
   * "maybe" is a hint, not a fault). */
  minConfidence?: number;
  /** Latency outlier: at least this many ms above the median of the trace's other calls... Default 1500. */
  delayExtraMs?: number;
  /** ...and at least this many times that median. Default 3. */
  delayRatio?: number;
}

/** Name of the zero-length child span online detection uses when the exchange span had already ended. */
const DETECTION_CHILD = 'faultline.detection';

const TRUNCATE_REASONS = new Set(['length', 'max_tokens', 'max_output_tokens', 'model_context_window_exceeded', 'incomplete']);
const FILTER_REASONS = new Set(['content_filter', 'refusal', 'safety', 'blocklist', 'prohibited_content', 'spii', 'recitation']);
const TOOL_REASONS = new Set(['tool_calls', 'tool_use', 'function_call']);

/**
 * Precedence between signals of equal confidence on one span: the most specific structural reading first
 * (a timeout is also an error; a filtered answer is also empty; a delayed answer may also be anything).
 */
const PRECEDENCE: readonly FaultType[] = [
  'timeout',
  'error',
  'non_delivery',
  'duplicate',
  'truncate',
  'empty',
  'schema',
  'corrupt',
  'stale',
  'partial',
  'semantic',
  'delay',
];

/** Median of `sorted` (ascending) with one occurrence of `without` left out; O(1), so long traces stay linear. */
function medianWithout(sorted: readonly number[], without: number): number | undefined {
  const n = sorted.length - 1;
  if (n <= 0) return undefined;
  const skip = lowerBound(sorted, without);
  const at = (i: number): number => sorted[i < skip ? i : i + 1]!;
  const mid = n >> 1;
  return n % 2 === 1 ? at(mid) : (at(mid - 1) + at(mid)) / 2;
}

function lowerBound(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (sorted[m]! < x) lo = m + 1;
    else hi = m;
  }
  return lo;
}

function failureSignal(span: SpanRecord): Signal | undefined {
  const et = errorType(span);
  const http = httpStatus(span);
  const rpc = rpcStatus(span);
  const failed = span.status.code === 'ERROR' || et !== undefined || (http !== undefined && http >= 400);
  if (!failed) return undefined;
  const parts = [
    http !== undefined && http >= 400 ? `HTTP ${http}` : undefined,
    et !== undefined ? `error.type=${et}` : undefined,
    rpc !== undefined ? `rpc status ${rpc}` : undefined,
    span.status.code === 'ERROR' ? `status ERROR${span.status.message ? `: ${span.status.message.slice(0, 80)}` : ''}` : undefined,
  ].filter((p): p is string => p !== undefined);
  const timeout = looksLikeTimeout(et, span.status.message, http !== undefined ? String(http) : undefined);
  return { faultType: timeout ? 'timeout' : 'error', confidence: 0.95, evidence: parts.join(', '), source: 'metadata' };
}

function llmSignals(span: SpanRecord, medianOthers: number | undefined, opts: Required<Omit<RuleDiagnoserOptions, 'findings'>>): Signal[] {
  const out: Signal[] = [];
  const failure = failureSignal(span);
  if (failure) out.push(failure);
  const reasons = finishReasons(span);
  const facts = outputFacts(span);
  const stream = streamFacts(span);
  const truncReason = reasons.find((r) => TRUNCATE_REASONS.has(r));
  if (truncReason) out.push({ faultType: 'truncate', confidence: 0.95, evidence: `finish_reason=${truncReason}`, source: 'metadata' });
  const filterReason = reasons.find((r) => FILTER_REASONS.has(r));
  if (filterReason) out.push({ faultType: 'empty', confidence: 0.92, evidence: `finish_reason=${filterReason}`, source: 'metadata' });
  if (!failure) {
    if (stream.stream && stream.done === false && !stream.aborted) {
      out.push({ faultType: 'truncate', confidence: 0.85, evidence: `stream ended after ${stream.chunks ?? '?'} chunks without its terminal event`, source: 'metadata' });
    }
    const toolReason = reasons.find((r) => TOOL_REASONS.has(r));
    if (stream.aborted) {
      // The application cancelled the call: an abort is not a fault of the call (and its empty body says nothing).
    } else if (facts.chars === 0 && (facts.toolCalls ?? 0) === 0) {
      const tokens = outputTokens(span);
      out.push({
        faultType: 'empty',
        confidence: 0.9,
        evidence: `no text and no tool calls in the response${tokens ? ` (usage reports ${tokens} output tokens)` : ''}`,
        source: 'metadata',
      });
    } else if (toolReason && facts.toolCalls === 0) {
      // Weaker: the text that replaced the tool calls may say more (a detector names it).
      out.push({ faultType: 'empty', confidence: 0.6, evidence: `finish_reason=${toolReason} but no tool calls`, source: 'metadata' });
    }
  }
  const slow = slowness(span, medianOthers, opts);
  if (slow !== undefined) out.push({ faultType: 'delay', confidence: slow.extreme ? 0.75 : 0.45, evidence: slow.evidence, source: 'metadata' });
  return out;
}

/**
 * Latency outliers. LLM latency varies several-fold naturally (load, output length), so only an extreme outlier —
 * seconds beyond the trace's median and a multiple of it — counts as a fault; a milder one stays a weak hint.
 */
function slowness(span: SpanRecord, medianOthers: number | undefined, opts: { delayExtraMs: number; delayRatio: number }): { extreme: boolean; evidence: string } | undefined {
  if (medianOthers === undefined) return undefined;
  const d = durationMs(span);
  if (d < medianOthers + opts.delayExtraMs || d < opts.delayRatio * Math.max(medianOthers, 1)) return undefined;
  return { extreme: d >= medianOthers + EXTREME_DELAY_MS && d >= 4 * Math.max(medianOthers, 1), evidence: `took ${Math.round(d)} ms, median of the other calls ${Math.round(medianOthers)} ms` };
}

/** Extra latency that is a fault rather than variance (AgentChaos's slow response adds 5 s). */
const EXTREME_DELAY_MS = 4000;

/** What a guard's action says happened. Only actions with one meaning; the others accompany detection events. */
function guardSignals(span: SpanRecord): Signal[] {
  const out: Signal[] = [];
  for (const g of guardEvents(span)) {
    const why = g.reason.slice(0, 120);
    if (g.action === 'resubmit') {
      const timeout = looksLikeTimeout(g.reason);
      out.push({ faultType: timeout ? 'timeout' : 'non_delivery', confidence: 0.9, evidence: `guard resubmitted: ${why}`, source: 'guard' });
    } else if (g.action === 'duplicate_suppressed' || g.action === 'receipt_replayed') {
      out.push({ faultType: 'duplicate', confidence: 0.9, evidence: `guard suppressed a duplicate: ${why}`, source: 'guard' });
    }
  }
  return out;
}

function findingSignals(findings: readonly Finding[] | undefined): Signal[] {
  if (!findings) return [];
  return findings
    .filter((f): f is Finding & { faultType: Exclude<FaultType, 'none'> } => f.faultType !== 'none')
    .map((f) => ({ faultType: f.faultType, confidence: f.confidence, evidence: `${f.detector}: ${f.evidence}`.slice(0, 200), source: 'detector' as const }));
}

function strongest(signals: Signal[]): Signal | undefined {
  let best: Signal | undefined;
  for (const s of signals) {
    if (
      !best ||
      s.confidence > best.confidence + 1e-9 ||
      (Math.abs(s.confidence - best.confidence) <= 1e-9 && PRECEDENCE.indexOf(s.faultType) < PRECEDENCE.indexOf(best.faultType))
    ) {
      best = s;
    }
  }
  return best;
}

export interface SpanVerdict {
  span: SpanRecord;
  stepKind: StepKind | null;
  step: number | null;
  signals: Signal[];
}

/** Every signal of every span, in start order (what the rules and the LLM rendering both read). */
export function spanVerdicts(trace: TraceRecord, options: RuleDiagnoserOptions = {}): SpanVerdict[] {
  const opts = {
    minConfidence: options.minConfidence ?? 0.55,
    delayExtraMs: options.delayExtraMs ?? 1500,
    delayRatio: options.delayRatio ?? 3,
  };
  const byId = new Map(trace.spans.map((s) => [s.spanId, s]));
  let offline: Map<string, Finding[]> | undefined;
  try {
    offline = options.findings?.(trace);
  } catch {
    offline = undefined; // a detector bug must not lose the metadata diagnosis
  }
  // Online detection recorded after the exchange span ended rides on a zero-length `faultline.detection` child:
  // credit its events to the parent, and never treat the child as a span of its own.
  const carried = new Map<string, SpanRecord[]>();
  for (const s of trace.spans) {
    if (s.name !== DETECTION_CHILD || s.parentSpanId === undefined) continue;
    carried.set(s.parentSpanId, [...(carried.get(s.parentSpanId) ?? []), s]);
  }
  const llm = trace.spans.filter(isLlmSpan);
  const llmDurations = llm.map(durationMs).sort((a, b) => a - b);
  // Message faults are judged per message (both ends, the trace's baselines): src/diagnosers/messages.ts.
  const messages = messageAnalysis(trace);
  let llmIndex = 0;
  let msgIndex = 0;
  const out: SpanVerdict[] = [];
  for (const span of trace.spans) {
    if (span.name === DETECTION_CHILD && span.parentSpanId !== undefined && byId.has(span.parentSpanId)) continue;
    const signals: Signal[] = [];
    let stepKind: StepKind | null = null;
    let step: number | null = null;
    if (isLlmSpan(span)) {
      stepKind = 'llm';
      step = ++llmIndex;
      signals.push(...llmSignals(span, medianWithout(llmDurations, durationMs(span)), opts));
    } else if (isMessageSpan(span)) {
      stepKind = 'message';
      step = ++msgIndex;
      signals.push(...messages.signalsFor(span));
    } else {
      const failure = failureSignal(span);
      if (failure) signals.push(failure);
    }
    for (const d of [span, ...(carried.get(span.spanId) ?? [])].flatMap(detectionEvents)) {
      signals.push({ faultType: d.faultType as Exclude<FaultType, 'none'>, confidence: d.confidence, evidence: `${d.detector}: ${d.evidence}`.slice(0, 200), source: 'detection' });
    }
    signals.push(...guardSignals(span));
    let findings = findingSignals(offline?.get(span.spanId));
    if (stepKind === 'llm' && (outputFacts(span).toolCalls ?? 0) > 0) {
      // A response that carried tool calls is not empty by definition, whatever a text-length heuristic says.
      findings = findings.filter((f) => f.faultType !== 'empty');
    }
    signals.push(...findings);
    if (stepKind === 'llm') {
      // Detectors' latency findings against a baseline: the same variance caveat as our own outlier check.
      const extreme = slowness(span, medianWithout(llmDurations, durationMs(span)), opts)?.extreme === true;
      for (const sg of signals) if (sg.faultType === 'delay' && !extreme) sg.confidence = Math.min(sg.confidence, 0.45);
    }
    out.push({ span, stepKind, step, signals });
  }
  messages.review(out);
  return out;
}

function toDiagnosis(trace: TraceRecord, v: SpanVerdict, best: Signal, name: string): Diagnosis {
  const evidence = [best.evidence, ...v.signals.filter((s) => s !== best).sort((a, b) => b.confidence - a.confidence).map((s) => `${s.faultType}: ${s.evidence}`)]
    .filter((e) => e !== '')
    .slice(0, 4);
  return {
    traceId: trace.traceId,
    faultType: best.faultType,
    spanId: v.span.spanId,
    step: v.step,
    stepKind: v.stepKind,
    confidence: Math.round(best.confidence * 1000) / 1000,
    evidence,
    diagnoser: name,
  };
}

/** The rule-based diagnosis of one trace (synchronous; pure). */
export function diagnoseByRules(trace: TraceRecord, options: RuleDiagnoserOptions = {}, name = 'rule'): Diagnosis {
  const min = options.minConfidence ?? 0.55;
  const verdicts = spanVerdicts(trace, options);
  // 1. The first faulty LLM call or message, in start order.
  for (const v of verdicts) {
    if (v.stepKind === null) continue;
    const best = strongest(v.signals);
    if (best && best.confidence >= min) return toDiagnosis(trace, v, best, name);
  }
  // 2. Otherwise the earliest failed span that has no failed descendant (the child that made its parents fail).
  const failed = verdicts.filter((v) => v.stepKind === null && (strongest(v.signals)?.confidence ?? 0) >= min);
  if (failed.length > 0) {
    const failedIds = new Set(failed.map((v) => v.span.spanId));
    const byId = new Map(trace.spans.map((s) => [s.spanId, s]));
    const hasFailedAncestorOf = new Set<string>();
    for (const v of failed) {
      let p = v.span.parentSpanId ? byId.get(v.span.parentSpanId) : undefined;
      for (let depth = 0; p && depth < 64; depth++) {
        if (failedIds.has(p.spanId)) hasFailedAncestorOf.add(p.spanId);
        p = p.parentSpanId ? byId.get(p.parentSpanId) : undefined;
      }
    }
    const leaf = failed.find((v) => !hasFailedAncestorOf.has(v.span.spanId)) ?? failed[0]!;
    return toDiagnosis(trace, leaf, strongest(leaf.signals)!, name);
  }
  const weak = verdicts.flatMap((v) => v.signals.map((s) => `weak ${s.faultType} (${s.confidence}) at ${v.span.name}: ${s.evidence}`)).slice(0, 3);
  return noFault(trace, name, weak.length > 0 ? weak : ['no span shows a fault signal'], weak.length > 0 ? 0.7 : 0.9);
}

export function createRuleDiagnoser(options: RuleDiagnoserOptions = {}): Diagnoser {
  return {
    name: 'rule',
    diagnose: (trace) => Promise.resolve(diagnoseByRules(trace, options)),
  };
}
