/**
 * The injected fault of a trace, read from the `faultline.fault.*` ground truth. Used ONLY by evaluation: no
 * diagnoser imports this module.
 *
 * The truth is the earliest span (by start) carrying a `faultline.fault.injected` event whose `faultline.fault.noop`
 * is not true. A trace whose plan armed a fault (a span with `faultline.fault.condition`) that never fired is
 * `untriggered`: AgentChaos filters those from accuracy, and so do we.
 */
import {
  ATTR_FL_FAULT_CONDITION,
  ATTR_FL_FAULT_NAME,
  ATTR_FL_FAULT_NOOP,
  ATTR_FL_FAULT_TYPE,
  EVENT_FL_FAULT_INJECTED,
} from '../../instrumentation/semconv';
import { isFaultType, type FaultType } from '../taxonomy';
import { str, type Attributes, type SpanRecord, type TraceRecord } from '../traces/model';
import { isLlmSpan, stepOf } from '../traces/steps';
import type { StepKind } from './types';

export interface GroundTruth {
  traceId: string;
  /** `faulty`: a fault fired; `clean`: no fault planned; `untriggered`: planned but never fired (excluded). */
  status: 'faulty' | 'clean' | 'untriggered';
  faultType: FaultType;
  spanId: string | null;
  step: number | null;
  stepKind: StepKind | null;
  /** Catalog name of the fault (e.g. llm_truncate_single), when recorded. */
  name?: string;
  /** Campaign condition label, when recorded. */
  condition?: string;
}

function isTrue(v: unknown): boolean {
  return v === true || v === 'true';
}

function pick(key: string, ...sources: Attributes[]): string | undefined {
  for (const s of sources) {
    const v = str(s, key);
    if (v !== undefined) return v;
  }
  return undefined;
}

export function groundTruth(trace: TraceRecord): GroundTruth {
  let condition: string | undefined;
  for (const span of trace.spans) {
    const c = str(span.attributes, ATTR_FL_FAULT_CONDITION);
    if (c !== undefined) {
      condition = c;
      break;
    }
  }
  let fired: { span: SpanRecord; attrs: Attributes } | undefined;
  for (const span of trace.spans) {
    // Spans are sorted by start, so the first hit is the earliest span.
    const ev = span.events.find(
      // The event says whether this fire changed anything; the span attribute only when the event is silent.
      (e) =>
        e.name === EVENT_FL_FAULT_INJECTED &&
        !isTrue(e.attributes[ATTR_FL_FAULT_NOOP] ?? span.attributes[ATTR_FL_FAULT_NOOP]),
    );
    if (ev) {
      fired = { span, attrs: ev.attributes };
      break;
    }
  }
  const base = { traceId: trace.traceId, ...(condition !== undefined ? { condition } : {}) };
  if (!fired) {
    const planned = condition !== undefined && condition !== 'clean' && condition !== 'none';
    return {
      ...base,
      status: planned ? 'untriggered' : 'clean',
      faultType: 'none',
      spanId: null,
      step: null,
      stepKind: null,
    };
  }
  const { span, attrs } = fired;
  const rawType = pick(ATTR_FL_FAULT_TYPE, attrs, span.attributes);
  const name = pick(ATTR_FL_FAULT_NAME, attrs, span.attributes);
  const faultType: FaultType = isFaultType(rawType) ? rawType : 'error';
  const step = stepOf(trace, span.spanId) ?? null;
  return {
    ...base,
    status: 'faulty',
    faultType,
    spanId: span.spanId,
    step,
    stepKind: step === null ? null : isLlmSpan(span) ? 'llm' : 'message',
    ...(name !== undefined ? { name } : {}),
  };
}
