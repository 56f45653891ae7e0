/**
 * Recording a fire on its span: the faultline.fault.* ground-truth attributes and one faultline.fault.injected event
 * per fire with the sizes and hashes of the original and delivered bodies (the bodies themselves only when content
 * capture is on). Everything stays under the faultline.fault. prefix, which diagnosers never see.
 */
import { sha256Hex16 } from '../hash';
import { now } from '../clock';
import type { Attributes, Span } from '@opentelemetry/api';
import {
  ATTR_FL_FAULT_BASE,
  ATTR_FL_FAULT_CALL_INDEX,
  ATTR_FL_FAULT_CATEGORY,
  ATTR_FL_FAULT_MODE,
  ATTR_FL_FAULT_NAME,
  ATTR_FL_FAULT_NOOP,
  ATTR_FL_FAULT_RULE,
  ATTR_FL_FAULT_STRATEGY,
  ATTR_FL_FAULT_TARGET,
  ATTR_FL_FAULT_TYPE,
  EVENT_FL_FAULT_INJECTED,
} from '../../instrumentation/semconv';
import type { CompiledRule } from '../plan/select';

// Event attributes (ground truth too, hence the faultline.fault. prefix).
export const ATTR_FL_FAULT_ORIGINAL_BYTES = 'faultline.fault.original.bytes' as const;
export const ATTR_FL_FAULT_ORIGINAL_HASH = 'faultline.fault.original.hash' as const;
export const ATTR_FL_FAULT_DELIVERED_BYTES = 'faultline.fault.delivered.bytes' as const;
export const ATTR_FL_FAULT_DELIVERED_HASH = 'faultline.fault.delivered.hash' as const;
export const ATTR_FL_FAULT_ORIGINAL_BODY = 'faultline.fault.original.body' as const;
export const ATTR_FL_FAULT_DELIVERED_BODY = 'faultline.fault.delivered.body' as const;
export const ATTR_FL_FAULT_DELAY_MS = 'faultline.fault.delay_ms' as const;
export const ATTR_FL_FAULT_DETAIL = 'faultline.fault.detail' as const;
/** The task the fire belongs to (trigger verification groups fires by it offline). */
export const ATTR_FL_FAULT_TASK_ID = 'faultline.fault.task_id' as const;

const realFire = new WeakSet<Span>();

export interface FireRecord {
  rule: CompiledRule;
  callIndex: number;
  noop: boolean;
  original?: string | Buffer;
  delivered?: string | Buffer;
  delayMs?: number;
  /** Short free text: what was done (e.g. "cut after 2 events"). */
  detail?: string;
  taskId?: string;
}

export function faultAttributes(rule: CompiledRule, callIndex: number, noop: boolean): Attributes {
  const f = rule.fault;
  return {
    [ATTR_FL_FAULT_NAME]: f.name,
    [ATTR_FL_FAULT_TYPE]: f.type,
    [ATTR_FL_FAULT_BASE]: f.base,
    [ATTR_FL_FAULT_CATEGORY]: f.category,
    [ATTR_FL_FAULT_TARGET]: f.target,
    [ATTR_FL_FAULT_STRATEGY]: rule.strategy.kind,
    [ATTR_FL_FAULT_MODE]: f.mode,
    [ATTR_FL_FAULT_CALL_INDEX]: callIndex,
    [ATTR_FL_FAULT_RULE]: rule.name,
    [ATTR_FL_FAULT_NOOP]: noop,
  };
}

/** Mark the span. The span attributes describe the first effective fire (a no-op never hides a real one). */
export function recordFire(span: Span, fire: FireRecord, captureContent: boolean): void {
  const attrs = faultAttributes(fire.rule, fire.callIndex, fire.noop);
  if (!realFire.has(span)) {
    span.setAttributes(attrs);
    if (!fire.noop) realFire.add(span);
  }
  const ev: Attributes = { ...attrs };
  if (fire.original !== undefined) {
    ev[ATTR_FL_FAULT_ORIGINAL_BYTES] = Buffer.byteLength(fire.original);
    ev[ATTR_FL_FAULT_ORIGINAL_HASH] = sha256Hex16(fire.original);
    if (captureContent) ev[ATTR_FL_FAULT_ORIGINAL_BODY] = fire.original.toString();
  }
  if (fire.delivered !== undefined) {
    ev[ATTR_FL_FAULT_DELIVERED_BYTES] = Buffer.byteLength(fire.delivered);
    ev[ATTR_FL_FAULT_DELIVERED_HASH] = sha256Hex16(fire.delivered);
    if (captureContent) ev[ATTR_FL_FAULT_DELIVERED_BODY] = fire.delivered.toString();
  }
  if (fire.delayMs) ev[ATTR_FL_FAULT_DELAY_MS] = fire.delayMs;
  if (fire.detail) ev[ATTR_FL_FAULT_DETAIL] = fire.detail;
  if (fire.taskId) ev[ATTR_FL_FAULT_TASK_ID] = fire.taskId;
  span.addEvent(EVENT_FL_FAULT_INJECTED, ev, now());
}
