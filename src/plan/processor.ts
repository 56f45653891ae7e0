/**
 * FaultInjectionSpanProcessor: at span start, finds the task of each faultline call span (from the parent context,
 * where the call's task scope, framework run and parent span are) and keeps its start attributes; the fault step then
 * selects the plan rules for the call (`decisionFor`), with the request in hand so that a retry of a failed call is
 * recognised; at span end the processor tells the engine how the call ended. Nothing visible is set on the span until
 * a fault fires.
 *
 * Sampling: span processors never see non-recording spans, so the fault step selects by itself for any span this
 * processor did not see — selection does not depend on sampling (only retry recognition does: an unsampled call's
 * outcome is not known). Only faultline's own call spans (tracer scope `faultline`: LLM, A2A, MCP calls and channel
 * handoffs) are considered, so spans of other instrumentations of the same call do not shift positions.
 */
import { SpanStatusCode, type Attributes, type Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { getAgentName } from '../../instrumentation/agents/invoke-agent';
import {
  ATTR_FL_MESSAGE_ID,
  ATTR_FL_MESSAGE_SIDE,
  ATTR_FL_RESPONSE_ABORTED,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_URL_FULL,
} from '../../instrumentation/semconv';
import type { Exchange } from '../../instrumentation/types';
import { PACKAGE_NAME } from '../version';
import { logger, safely } from '../diag';
import type { CallRequest, Decision, FaultEngine } from '../inject/engine';

const log = logger('plan');

interface Seen {
  engine: FaultEngine;
  taskId: string;
  /** The call's start attributes (with the agent making it, for the `agent` selector). */
  attributes: Attributes;
  /** Set once the rules were selected. */
  selected?: { decision: Decision | undefined };
}

const seen = new WeakMap<object, Seen>();

/** Whether a span is one faultline call span a fault can be applied to. */
export function isFaultableSpan(scopeName: string | undefined, attrs: Attributes): boolean {
  if (scopeName !== undefined && scopeName !== PACKAGE_NAME) return false;
  // A receive span records what arrived; faults apply between sender and receiver, on the sender's span.
  if (attrs[ATTR_FL_MESSAGE_SIDE] === 'receive') return false;
  const op = attrs[ATTR_GEN_AI_OPERATION_NAME];
  if (typeof op === 'string')
    return typeof attrs[ATTR_URL_FULL] === 'string' || typeof attrs[ATTR_SERVER_ADDRESS] === 'string';
  return typeof attrs[ATTR_FL_MESSAGE_ID] === 'string';
}

/**
 * The attributes rules are matched against: the call's, plus the agent making it when the call names none (an A2A
 * call names the agent it invokes), so `agent: planner` selects the planner's own LLM calls.
 */
function selectionAttributes(attrs: Attributes, ctx: Context): Attributes {
  if (attrs[ATTR_GEN_AI_AGENT_NAME] !== undefined) return attrs;
  const agent = getAgentName(ctx);
  return agent === undefined ? attrs : { ...attrs, [ATTR_GEN_AI_AGENT_NAME]: agent };
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
        const taskId = this.engine.taskIdOf(parentContext, span.spanContext().traceId);
        // A copy: the span's own attributes grow until it ends, selection reads the start ones.
        seen.set(span, {
          engine: this.engine,
          taskId,
          attributes: selectionAttributes({ ...span.attributes }, parentContext),
        });
      },
      undefined,
    );
  }

  /** Fires when a span ends: a call that failed (an error, or no response) may be retried. */
  onEnd(span: ReadableSpan): void {
    safely(
      log,
      'FaultInjectionSpanProcessor.onEnd',
      () => {
        if (!seen.has(span)) return;
        const failed = span.status.code === SpanStatusCode.ERROR || span.attributes[ATTR_FL_RESPONSE_ABORTED] === true;
        this.engine.settle(span, !failed);
      },
      undefined,
    );
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * The decision for `span` if its rules were selected: `undefined` when they were not (yet), `{ decision: undefined }`
 * when no rule matched.
 */
export function faultDecisionFor(span: object, engine?: FaultEngine): { decision: Decision | undefined } | undefined {
  const s = seen.get(span);
  if (!s || (engine && s.engine !== engine)) return undefined;
  return s.selected;
}

/**
 * Select for a call the processor did not see (a non-recording span): same rules, same per-task state.
 * `attributes` are the call's start attributes; `context` has the call's span active.
 */
export function decideFor(engine: FaultEngine, attributes: Attributes, context: Context): Decision | undefined {
  return engine.select(selectionAttributes(attributes, context), engine.taskIdOf(context));
}

/**
 * The decision for a call, selected once (cached per span): from what the processor kept at span start if it saw the
 * span, else from `attributes()` and `context` (the call's own). With the call's `exchange`, a retry of a failed call
 * (the same request sent again) keeps that call's positions; `endSpans` ends the spans of calls that have ended but
 * whose span has not (the span layer reads an answer after the application had it), and is called only when this
 * request is the same as one that has not settled.
 */
export function decisionFor(
  engine: FaultEngine,
  span: object,
  attributes: () => Attributes,
  context: Context,
  exchange?: Exchange,
  endSpans?: () => void,
): Decision | undefined {
  let s = seen.get(span);
  // Only a call the processor saw start will be seen to end: only its request is remembered for retries.
  const settles = s !== undefined && s.engine === engine;
  if (s === undefined || s.engine !== engine) {
    s = { engine, taskId: engine.taskIdOf(context), attributes: selectionAttributes(attributes(), context) };
    seen.set(span, s);
  }
  if (s.selected) return s.selected.decision;
  let attrs = s.attributes;
  // A URL selector needs url.full, which the span may not carry at start: the call's own attributes have it.
  if (typeof attrs[ATTR_URL_FULL] !== 'string' && engine.task(s.taskId).compiled?.usesUrl)
    attrs = { ...attributes(), ...attrs };
  const request: CallRequest | undefined =
    exchange && settles ? { method: exchange.method, url: exchange.url.href, body: exchange.requestBody } : undefined;
  if (request !== undefined && endSpans !== undefined && engine.unsettled(s.taskId, request)) endSpans();
  const decision = engine.select(attrs, s.taskId, request ? { key: span, request } : undefined);
  s.selected = { decision };
  return decision;
}
