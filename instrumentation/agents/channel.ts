/**
 * The in-process message channel: handoffs between agents that never touch HTTP. The sender hands over one message;
 * the channel runs its delivery steps (guard, fault: outermost first) around the identity delivery and the receiver
 * gets what comes out — zero, one or more messages. This is the point where communication faults (non-delivery,
 * duplicates, stale replays, corrupted payloads, misrouting) are applied, so each handoff is one span that records
 * the message as sent and what was delivered — like a messaging producer/consumer pair, it observes both ends: the
 * copies' hashes always, and how a copy differs from what was sent (envelope, keys, structural changes) when it does.
 *
 * Steps signal a deliberate failure by throwing a FaultlineError (a guard's rejection): that reaches the sender.
 * Any other error from a step is a bug of ours: it is reported through diag and the original message is delivered
 * once, as if there were no steps.
 */
import { SpanKind, SpanStatusCode, context, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { logger, safely } from '../../src/diag';
import { now } from '../../src/clock';
import { FaultlineInputError, isFaultlineError } from '../../src/errors';
import {
  ATTR_ERROR_TYPE,
  ATTR_FL_MESSAGE_DELIVERED_COUNT,
  ATTR_FL_MESSAGE_TASK_ID,
  ATTR_GEN_AI_CONVERSATION_ID,
} from '../semconv';
import type { AgentMessage, DeliverStep, DeliveryContext } from '../types';
import { callContext } from '../frameworks/scope';
import { tracer } from './invoke-agent';
import { deliveredAttributes, messageAttributes, newMessageId, setString } from './message';
import { startReceiveSpan } from './receive';
import { runInSpan } from './run-in-span';
import { getTaskId } from './task';

const log = logger('channel');

/** A message as the sender hands it over: the id is generated when missing, `sentAt` set when missing. */
export type MessageInput<P = unknown> = Omit<AgentMessage<P>, 'id'> & { id?: string };

/** Receives each delivered message addressed to its target. */
export type MessageHandler = (message: AgentMessage) => unknown;

export interface ReceiverOptions {
  /**
   * The receiver's contract for what it accepts (a zod schema, any Standard Schema, or a JSON Schema object): each
   * delivered payload is checked against it and the result recorded on the receive span (`valid` / `invalid` and
   * content-free issues). The message is delivered either way: enforcing it is the receiver's (or a guard's) job.
   */
  contract?: unknown;
}

/** Called once per delivery with the message as sent and what the receiver got (online detectors run here). */
export type DeliveryListener = (ctx: DeliveryContext, original: AgentMessage, delivered: AgentMessage[]) => void;

export interface ChannelConfig {
  /** Delivery steps, outermost first (guard step, then fault step). */
  steps?: DeliverStep[];
  onDelivery?: DeliveryListener;
  /** Record the payload JSON on handoff spans (faultline.message.payload). Default off. */
  captureMessageContent?: boolean;
}

export interface MessageChannelOptions extends ChannelConfig {
  /** Channel label handed to the steps (DeliveryContext.channel). Default `default`. */
  name?: string;
}

let defaults: ChannelConfig = {};

/**
 * Set the process-wide defaults every channel uses for what its own options leave out (register wires the fault plan
 * and the guards in here). Replaces the previous defaults entirely; `configureChannels({})` resets them. Channels read
 * the defaults at each send, so channels created earlier pick them up too.
 */
export function configureChannels(config: ChannelConfig): void {
  defaults = { ...config };
}

/** Whether message content is captured process-wide (what register configured; the receive hooks of the A2A and MCP
 * servers follow it unless told otherwise). */
export function messageContentCaptured(): boolean {
  return defaults.captureMessageContent ?? false;
}

export class MessageChannel {
  readonly name: string;
  readonly #options: ChannelConfig;
  readonly #handlers = new Map<string, { handler: MessageHandler; contract?: unknown }>();

  constructor(options: MessageChannelOptions = {}) {
    const { name, ...config } = options;
    this.name = name ?? 'default';
    this.#options = config;
  }

  /**
   * Register the receiver for messages addressed to `target`: `send` then calls it once per delivered message
   * (none for a lost message, twice for a duplicate), after the handoff span ended, in the sender's context, inside
   * that delivery's receive span. One handler per target; registering again replaces it.
   */
  on(target: string, handler: MessageHandler, options: ReceiverOptions = {}): this {
    if (typeof target !== 'string' || typeof handler !== 'function') {
      throw new FaultlineInputError(
        'FAULTLINE_USAGE',
        'MessageChannel.on(target, handler): expected a string and a function',
      );
    }
    this.#handlers.set(target, { handler, ...(options.contract !== undefined ? { contract: options.contract } : {}) });
    return this;
  }

  /**
   * Hand a message over. Resolves to what the receiver got (0..n messages), after the registered receiver (if any)
   * handled each of them; a receiver's own error is passed to the sender unchanged. Each delivered copy gets a
   * `receive {target}` span (what the receiver got, linked to the handoff span), covering its handler when there is one.
   */
  async send<P>(input: MessageInput<P>): Promise<AgentMessage[]> {
    const original = checkMessage(input);
    const { delivered, span } = await this.#deliver(original);
    const capture = this.#options.captureMessageContent ?? defaults.captureMessageContent ?? false;
    for (let copy = 0; copy < delivered.length; copy++) {
      const message = delivered[copy]!;
      const entry = this.#handlers.get(message.target);
      const parent = context.active();
      const received = safely(
        log,
        'receive span',
        () => receiveSpan(message, copy, span, parent, capture, entry?.contract),
        undefined,
      );
      if (entry === undefined) {
        received?.end(now());
      } else if (received === undefined) {
        await entry.handler(message);
      } else {
        await runInSpan(received, trace.setSpan(parent, received), () => entry.handler(message));
      }
    }
    return delivered;
  }

  async #deliver(message: AgentMessage): Promise<{ delivered: AgentMessage[]; span: Span }> {
    const steps = this.#options.steps ?? defaults.steps ?? [];
    const onDelivery = this.#options.onDelivery ?? defaults.onDelivery;
    const capture = this.#options.captureMessageContent ?? defaults.captureMessageContent ?? false;

    const parent = callContext(); // the active context, or the framework agent/tool span the message is sent from
    const attributes = safely(log, 'handoff attributes', () => handoffAttributes(message, capture, parent), {});
    const span = tracer().startSpan(
      `handoff ${message.target}`,
      { kind: SpanKind.INTERNAL, attributes, startTime: now() },
      parent,
    );
    const ctx: DeliveryContext = {
      span,
      context: trace.setSpan(parent, span),
      channel: this.name,
      notes: new Map(),
    };

    let delivered: AgentMessage[];
    // What crossed the channel (each message that reached the identity delivery, i.e. passed every step on its way
    // in): the fault's effect, even when a receiver-side guard then replaced or withheld it.
    const wire: AgentMessage[] = [];
    try {
      delivered = await context.with(ctx.context, () => runSteps(steps, message, ctx, wire));
    } catch (err) {
      if (isFaultlineError(err)) {
        // Deliberate (a guard rejected the message): the sender sees it.
        span.setAttribute(ATTR_ERROR_TYPE, err.code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
        span.end(now());
        throw err;
      }
      log.error(`internal error in a delivery step of channel "${this.name}" (the message is delivered as sent):`, err);
      delivered = [message];
      wire.splice(0, wire.length, message);
    }

    span.setAttribute(ATTR_FL_MESSAGE_DELIVERED_COUNT, delivered.length);
    span.setAttributes(
      safely(log, 'delivered attributes', () => deliveredAttributes(message, delivered, capture, wire), {}),
    );
    if (onDelivery !== undefined) {
      safely(log, 'onDelivery', () => onDelivery(ctx, message, delivered), undefined);
    }
    span.end(now());
    return { delivered, span };
  }
}

function receiveSpan(
  message: AgentMessage,
  copy: number,
  handoff: Span,
  parent: Context,
  capture: boolean,
  contract: unknown,
): Span {
  return startReceiveSpan({
    name: `receive ${message.target}`,
    kind: SpanKind.CONSUMER,
    message,
    parent,
    sender: handoff.spanContext(),
    captureContent: capture,
    copy,
    ...(contract !== undefined ? { contract } : {}),
    system: 'faultline',
  });
}

function handoffAttributes(message: AgentMessage, capture: boolean, parent: Context): Attributes {
  const attributes = messageAttributes(message, capture);
  // The message's own task id, else the task scope it was sent in.
  if (message.taskId === undefined) setString(attributes, ATTR_FL_MESSAGE_TASK_ID, getTaskId(parent));
  setString(attributes, ATTR_GEN_AI_CONVERSATION_ID, message.sessionId);
  return attributes;
}

/** Compose the steps around the identity delivery, outermost first, and check what comes back. Every message that
 * reaches the identity delivery is appended to `wire`. */
async function runSteps(
  steps: DeliverStep[],
  message: AgentMessage,
  ctx: DeliveryContext,
  wire: AgentMessage[],
): Promise<AgentMessage[]> {
  const dispatch = async (i: number, m: AgentMessage): Promise<AgentMessage[]> => {
    if (i >= steps.length) {
      wire.push(m);
      return [m];
    }
    const out: unknown = await steps[i](m, ctx, (next) => dispatch(i + 1, next));
    if (!Array.isArray(out) || !out.every((x) => x !== null && typeof x === 'object')) {
      throw new TypeError(
        `delivery step ${i} returned ${Array.isArray(out) ? 'an array with a non-message' : typeof out}, not AgentMessage[]`,
      );
    }
    return out as AgentMessage[];
  };
  return dispatch(0, message);
}

function checkMessage<P>(input: MessageInput<P>): AgentMessage {
  if (input === null || typeof input !== 'object') {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `MessageChannel.send(message): message must be an object, got ${input === null ? 'null' : typeof input}`,
    );
  }
  for (const field of ['source', 'target'] as const) {
    if (typeof input[field] !== 'string' || input[field] === '') {
      throw new FaultlineInputError(
        'FAULTLINE_USAGE',
        `MessageChannel.send(message): message.${field} must be a non-empty string`,
      );
    }
  }
  if (input.id !== undefined && (typeof input.id !== 'string' || input.id === '')) {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      'MessageChannel.send(message): message.id must be a non-empty string when given',
    );
  }
  return { ...input, id: input.id ?? newMessageId(), sentAt: input.sentAt ?? Date.now() };
}
