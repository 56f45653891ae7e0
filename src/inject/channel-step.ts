/**
 * The channel fault step: a DeliverStep for in-process handoffs (MessageChannel). A selected communication fault
 * transforms the message the receiver gets: nothing, a late message, two messages, or a changed one. Messages that
 * pass are remembered per task and target (stale replay, reordering) and per boundary (donors for other tasks).
 */
import type { Attributes } from '@opentelemetry/api';
import {
  ATTR_FL_MESSAGE_BOUNDARY,
  ATTR_FL_MESSAGE_ID,
  ATTR_FL_MESSAGE_SOURCE,
  ATTR_FL_MESSAGE_TARGET,
} from '../../instrumentation/semconv';
import { payloadHash } from '../../instrumentation/agents/message';
import type { AgentMessage, DeliverStep } from '../../instrumentation/types';
import { logger, safely } from '../diag';
import { decisionFor } from '../plan/processor';
import { FaultEngine, type Decision } from './engine';
import { recordFire } from './record';

const log = logger('inject');

function messageAttributes(m: AgentMessage): Attributes {
  const a: Attributes = {
    [ATTR_FL_MESSAGE_ID]: m.id,
    [ATTR_FL_MESSAGE_SOURCE]: m.source,
    [ATTR_FL_MESSAGE_TARGET]: m.target,
  };
  if (m.boundary) a[ATTR_FL_MESSAGE_BOUNDARY] = m.boundary;
  return a;
}

const canonical = (m: AgentMessage): string => JSON.stringify(m.payload) ?? '';

export interface ChannelStepOptions {
  captureContent?: () => boolean;
}

export function createChannelStep(engine: FaultEngine, options: ChannelStepOptions = {}): DeliverStep {
  const capture = options.captureContent ?? (() => false);
  return async function channelFaultStep(message, ctx, next) {
    const decision: Decision | undefined = safely(
      log,
      'fault selection',
      () => decisionFor(engine, ctx.span, () => messageAttributes(message), ctx.context),
      undefined,
    );
    const taskId = decision?.task.id ?? engine.taskIdOf(ctx.context);
    const task = taskId === undefined ? undefined : engine.task(taskId);
    let effect: ReturnType<typeof apply> | undefined;
    if (decision && task) effect = safely(log, 'channel fault', () => apply(), undefined);
    if (task) safely(log, 'message history', () => engine.remember(task, message), undefined);
    if (!effect) return next(message);
    const { hit, result } = effect;
    if (result.waitMs) await new Promise((r) => setTimeout(r, result.waitMs));
    const delivered = result.kind === 'drop' ? [] : result.messages;
    const noop =
      result.kind === 'deliver' &&
      (result.noop === true ||
        (delivered.length === 1 && canonical(delivered[0]) === canonical(message) && !result.waitMs));
    engine.ledger.fired(decision!.task.id, hit.rule, noop);
    recordFire(
      ctx.span,
      {
        rule: hit.rule,
        callIndex: hit.callIndex,
        noop,
        taskId: decision!.task.id,
        original: canonical(message),
        delivered: delivered.map(canonical).join('\n'),
        delayMs: result.waitMs,
        detail: `${delivered.length} delivered; payload hashes ${delivered.map((m) => payloadHash(m.payload) ?? '').join(',') || '-'}`,
      },
      capture(),
    );
    const out: AgentMessage[] = [];
    for (const m of delivered) out.push(...(await next(m)));
    return out;

    function apply() {
      for (const hit of decision!.hits) {
        const fault = hit.rule.fault;
        if (fault.mode !== 'message') {
          engine.ledger.notApplicable(decision!.task.id, hit.rule);
          continue;
        }
        if (!engine.fire(decision!.task, hit.rule)) continue;
        const result = fault.apply(message, hit.rule.params, {
          previousToTarget: (task!.history.get(message.target) ?? []).filter((x) => x.id !== message.id),
          donor: engine.donorFor(task!, message),
        });
        return { hit, result };
      }
      return undefined;
    }
  };
}
