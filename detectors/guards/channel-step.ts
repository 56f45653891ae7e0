/**
 * The channel guard step: a DeliverStep for the in-process message channel, modelled on the two protections of
 * "When Messages Go Wrong" §2.10.
 *  - Execution (action path): an action request that was not delivered is resubmitted (≤ 2, with back-off); copies of
 *    an action the ledger already delivered are suppressed, so the receiver executes it once.
 *  - Evidence (receiver contract): each delivered message is checked as the receiver sees it — contracts, binding
 *    to the task and session, version not behind the last accepted one, identity pin — and a failing one triggers at
 *    most one guarded readback through the user's `reacquire` function; the fresh message crosses the same boundary
 *    and is accepted only if clean, else dropped, rejected or delivered per `onUnrecovered`.
 * Every action is a `faultline.guard` event on the handoff span.
 */
import { getTaskId } from '../../instrumentation/agents/task';
import type { AgentMessage, DeliverStep, DeliveryContext } from '../../instrumentation/types';
import type { Finding, MessageObservation } from '../types';
import type { GuardConfig, GuardRoute } from './config';
import { actionKey } from './ledger';
import { guardedReadback } from './reacquire';
import { recordGuard } from './record';
import { CircuitOpenError, GuardRejectedError } from './reject';
import { backoffDelay } from './retry';
import { describe, type GuardRuntime } from './runtime';
import { findRoute, routeLabel } from './routes';

/** Routes that judge messages (those with contract / evidence duties, or explicit detectors). */
function judges(route: GuardRoute): boolean {
  return route.reacquire === true || route.detectors !== undefined || route.onUnrecovered !== undefined;
}

function binding(m: AgentMessage): string {
  return `${m.taskId ?? ''}|${m.sessionId ?? ''}`;
}

export function createChannelGuardStep(rt: GuardRuntime): DeliverStep {
  return async function guardChannelStep(
    message: AgentMessage,
    ctx: DeliveryContext,
    next: (m: AgentMessage) => Promise<AgentMessage[]>,
  ): Promise<AgentMessage[]> {
    const taskId = message.taskId ?? getTaskId(ctx.context) ?? ctx.span.spanContext().traceId;
    const config = rt.config(taskId);
    const route = config
      ? findRoute(config.routes, { boundary: message.boundary, agent: message.target, source: message.source })
      : undefined;
    if (!config || !route) {
      const delivered = await next(message);
      if (config) rt.remember(taskId, { kind: 'message', delivered, hasContent: true });
      return delivered;
    }
    return guardDelivery(rt, config, route, taskId, message, ctx, next);
  };
}

async function guardDelivery(
  rt: GuardRuntime,
  config: GuardConfig,
  route: GuardRoute,
  taskId: string,
  message: AgentMessage,
  ctx: DeliveryContext,
  next: (m: AgentMessage) => Promise<AgentMessage[]>,
): Promise<AgentMessage[]> {
  const label = routeLabel(route);
  const span = ctx.span;
  if (route.circuit !== undefined && route.circuit !== false) {
    const c = rt.circuits.get(label, route.circuit);
    const { allowed, transition } = c.admit();
    if (transition) recordGuard(span, 'circuit_half_open', label, `${transition.from} → ${transition.to}: probing`);
    if (!allowed) {
      recordGuard(span, 'fail_fast', label, 'circuit open');
      throw new CircuitOpenError(label, c.retryInMs());
    }
  }

  // Execution: a resend of an action the ledger already delivered is not delivered again.
  const key = actionKey(message);
  if (route.ledger && rt.ledger.delivered(key)) {
    recordGuard(span, 'duplicate_suppressed', label, `action ${key} was already delivered`);
    return [];
  }

  let delivered = await next(message);
  for (let n = 0; delivered.length === 0 && n < (route.resubmit ?? 0); n++) {
    const wait = backoffDelay(
      n,
      route.retry === false ? { baseDelayMs: 0 } : (route.retry ?? { baseDelayMs: 20, maxDelayMs: 200 }),
      rt.health.score(label),
      rt.random,
    );
    recordGuard(
      span,
      'resubmit',
      label,
      `action request ${key} was not delivered; resubmitting after ${Math.round(wait)} ms`,
      n + 1,
    );
    await rt.sleep(wait);
    delivered = await next(message);
  }

  if (route.ledger) {
    const once: AgentMessage[] = [];
    for (const d of delivered) {
      const k = actionKey(d);
      if (rt.ledger.delivered(k)) {
        recordGuard(span, 'duplicate_suppressed', label, `a second copy of action ${k}`);
        continue;
      }
      rt.ledger.markDelivered(k, binding(d));
      once.push(d);
    }
    delivered = once;
  }

  if (!judges(route)) {
    rt.outcome(label, delivered.length > 0, span, route.circuit ?? false);
    rt.remember(taskId, { kind: 'message', delivered, hasContent: true });
    return delivered;
  }

  // Evidence: the receiver contract, with at most one guarded readback per delivery.
  const versionKey = `${taskId}|${message.target}`;
  const check = (m: AgentMessage): Finding[] => {
    const obs: MessageObservation = {
      kind: 'message',
      delivered: [m],
      hasContent: true,
      spanId: span.spanContext().spanId,
    };
    const minVersion = rt.acceptedVersion.get(versionKey);
    const b: { taskId?: string; sessionId?: string; minVersion?: number } = {};
    if (message.taskId !== undefined) b.taskId = message.taskId;
    if (message.sessionId !== undefined) b.sessionId = message.sessionId;
    if (minVersion !== undefined) b.minVersion = minVersion;
    return rt.judge(route, config, obs, taskId, { binding: b }).failing;
  };
  const accepted: AgentMessage[] = [];
  let failed = delivered.length === 0;
  let readbacks = 0;
  for (const d of delivered) {
    const result = await guardedReadback(
      d,
      check,
      route.reacquire && readbacks === 0 ? rt.options.reacquire : undefined,
      async (fresh) => {
        readbacks++;
        recordGuard(span, 'reacquire', label, `message ${d.id} failed its contract: guarded readback`, readbacks);
        return next(fresh);
      },
    );
    if (result.outcome === 'clean' || result.outcome === 'recovered') {
      if (result.outcome === 'recovered') recordGuard(span, 'accept', label, 'the readback passed the contract');
      for (const m of result.messages) {
        if (m.version !== undefined)
          rt.acceptedVersion.set(versionKey, Math.max(rt.acceptedVersion.get(versionKey) ?? -Infinity, m.version));
        accepted.push(m);
      }
      continue;
    }
    failed = true;
    const why = describe(result.findings);
    const policy = route.onUnrecovered ?? 'drop';
    if (policy === 'reject') {
      recordGuard(span, 'reject', label, why);
      rt.outcome(label, false, span, route.circuit ?? false);
      throw new GuardRejectedError(label, result.findings);
    }
    if (policy === 'drop') recordGuard(span, 'drop', label, why);
    else {
      recordGuard(span, 'record', label, why);
      accepted.push(...result.messages);
    }
  }
  rt.outcome(label, !failed, span, route.circuit ?? false);
  return accepted;
}
