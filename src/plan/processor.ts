/**
 * FaultInjectionSpanProcessor: selects, at span start, the plan rules that match a call, and keeps the decision for
 * the fault step (`faultDecisionFor(span)`). Nothing visible is set on the span until a fault fires.
 *
 * Sampling: span processors never see non-recording spans, so the fault step selects by itself (`decideFor`) for any
 * span this processor did not see — selection does not depend on sampling. Only faultline's own call spans (tracer
 * scope `faultline`: LLM, A2A, MCP calls and channel handoffs) are considered, so spans of other instrumentations of
 * the same call do not shift positions.
 */
import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_FL_MESSAGE_ID, ATTR_FL_MESSAGE_SIDE, ATTR_GEN_AI_OPERATION_NAME, ATTR_SERVER_ADDRESS, ATTR_URL_FULL } from '../../instrumentation/semconv';
import { PACKAGE_NAME } from '../version';
import { logger, safely } from '../diag';
import { FaultEngine, type Decision } from '../inject/engine';
import type { Attributes } from '@opentelemetry/api';

const log = logger('plan');

interface Seen {
  engine: FaultEngine;
  decision: Decision | undefined;
}

const seen = new WeakMap<object, Seen>();

/** Whether a span is one faultline call span a fault can be applied to. */
export function isFaultableSpan(scopeName: string | undefined, attrs: Attributes): boolean {
  if (scopeName !== undefined && scopeName !== PACKAGE_NAME) return false;
  // A receive span records what arrived; faults apply between sender and receiver, on the sender's span.
  if (attrs[ATTR_FL_MESSAGE_SIDE] === 'receive') return false;
  const op = attrs[ATTR_GEN_AI_OPERATION_NAME];
  if (typeof op === 'string') return typeof attrs[ATTR_URL_FULL] === 'string' || typeof attrs[ATTR_SERVER_ADDRESS] === 'string';
  return typeof attrs[ATTR_FL_MESSAGE_ID] === 'string';
}

export class FaultInjectionSpanProcessor implements SpanProcessor {
  constructor(readonly engine: FaultEngine) {}

  /** Fires when a span starts, with its start attributes. */
  onStart(span: Span, parentContext: Context): void {
    safely(
      log,
      'FaultInjectionSpanProcessor.onStart',
      () => {
        if (!isFaultableSpan(span.instrumentationScope?.name, span.attributes)) return;
        const taskId = FaultEngine.taskIdOf(parentContext, span.spanContext().traceId);
        if (taskId === undefined) return;
        // A URL selector needs url.full; when the call span does not carry it at start, the fault step (which has
        // the request URL) selects instead. Same rules, same per-task state.
        if (this.engine.task(taskId).compiled?.usesUrl && typeof span.attributes[ATTR_URL_FULL] !== 'string' && typeof span.attributes[ATTR_SERVER_ADDRESS] === 'string') return;
        seen.set(span, { engine: this.engine, decision: this.engine.select(span.attributes, taskId) });
      },
      undefined,
    );
  }

  onEnd(_span: ReadableSpan): void {}

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * The decision the processor took for `span`: `undefined` when the processor never saw it (not recording, or the
 * processor is not registered), `{ decision: undefined }` when it saw it and no rule matched.
 */
export function faultDecisionFor(span: object, engine?: FaultEngine): { decision: Decision | undefined } | undefined {
  const s = seen.get(span);
  if (!s || (engine && s.engine !== engine)) return undefined;
  return { decision: s.decision };
}

/**
 * Select for a call the processor did not see (a non-recording span): same rules, same per-task state.
 * `attributes` are the call's start attributes; `context` has the call's span active.
 */
export function decideFor(engine: FaultEngine, attributes: Attributes, context: Context): Decision | undefined {
  const taskId = FaultEngine.taskIdOf(context);
  return taskId === undefined ? undefined : engine.select(attributes, taskId);
}

/** The decision for a call: the processor's if it saw the span, else a fresh selection. Cached per span. */
export function decisionFor(engine: FaultEngine, span: object, attributes: () => Attributes, context: Context): Decision | undefined {
  const known = faultDecisionFor(span, engine);
  if (known) return known.decision;
  const decision = decideFor(engine, attributes(), context);
  seen.set(span, { engine, decision });
  return decision;
}
