/**
 * For A2A agents served with @a2a-js/sdk: wrap the server's request handler (the SDK's `A2ARequestHandler`, e.g. a
 * `DefaultRequestHandler`) so every SendMessage / SendStreamingMessage the agent receives gets a SERVER span
 * (`SendMessage`, the A2A semconv name) recording what arrived — the message id, context and task, and the
 * content-free facts of the request as the sender's span records them (the JSON the wire carried: keys, size, hash,
 * shape; the JSON itself only with content capture) — under the sender's trace context when the request carried one
 * (`traceparent`, read from the request headers the SDK's default ServerCallContext keeps). The executor runs inside
 * the span, so its own LLM calls nest under it.
 *
 *   const handler = instrumentA2aRequestHandler(new DefaultRequestHandler(card, store, executor), { contract });
 *   app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
 *
 * Typed structurally: faultline does not depend on @a2a-js/sdk (it is loaded, when present, only to write the request
 * as its wire JSON). The handler's results and errors pass through unchanged; an error of ours is reported through
 * diag and never reaches the agent.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
} from '@opentelemetry/api';
import { logger, safely } from '../../src/diag';
import { now } from '../../src/clock';
import {
  ATTR_A2A_MESSAGE_ID,
  ATTR_A2A_METHOD_NAME,
  ATTR_A2A_PROTOCOL_VERSION,
  ATTR_A2A_TASK_ID,
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  GEN_AI_OPERATION_INVOKE_AGENT,
} from '../semconv';
import type { AgentMessage } from '../types';
import { startReceiveSpan } from './receive';
import { errorTypeOf } from './run-in-span';
import { setString } from './message';
import { messageContentCaptured } from './channel';

const log = logger('a2a-server');

/** The part of the SDK's request handler this module wraps; every other method passes through. */
export interface A2aRequestHandlerLike {
  getAgentCard(): Promise<{ name?: string }>;
  sendMessage(params: unknown, context: unknown): Promise<unknown>;
  sendMessageStream(params: unknown, context: unknown): AsyncGenerator<unknown, void, undefined>;
}

export interface A2aServerOptions {
  /** The agent's name (gen_ai.agent.name, the message target). Default: the agent card's name. */
  agentName?: string;
  /** The agent's contract for the data it accepts (zod, Standard Schema or JSON Schema), checked against the first
   * data part of each message; the result is recorded on the span. */
  contract?: unknown;
  /** Record the request JSON on the span. Default: what faultline was registered with (content capture). */
  captureMessageContent?: boolean;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

interface WireJson {
  toJSON(message: unknown): unknown;
}

let wire: WireJson | null | undefined;

/** The SDK's own JSON writer for SendMessageRequest, so this end hashes what the sender's span hashed. */
function wireJson(): WireJson | null {
  if (wire !== undefined) return wire;
  try {
    const sdk = require('@a2a-js/sdk') as { SendMessageRequest?: WireJson };
    wire = typeof sdk.SendMessageRequest?.toJSON === 'function' ? sdk.SendMessageRequest : null;
  } catch {
    wire = null;
  }
  return wire;
}

const headerGetter: TextMapGetter<Record<string, unknown>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const v = carrier[key] ?? carrier[Object.keys(carrier).find((k) => k.toLowerCase() === key) ?? ''];
    return typeof v === 'string'
      ? v
      : Array.isArray(v)
        ? (v.filter((x) => typeof x === 'string') as string[])
        : undefined;
  },
};

/** The request headers the SDK's default ServerCallContext keeps in its state bag. */
function headersOf(callContext: unknown): Record<string, unknown> | undefined {
  const state =
    isObj(callContext) || typeof callContext === 'object' ? (callContext as { state?: unknown }).state : undefined;
  const headers = state instanceof Map ? state.get('headers') : undefined;
  return isObj(headers) ? headers : undefined;
}

/** The sender's context when the request carried one; else the active context. */
function parentOf(callContext: unknown): Context {
  const headers = headersOf(callContext);
  if (!headers) return context.active();
  const extracted = propagation.extract(ROOT_CONTEXT, headers, headerGetter);
  return trace.getSpanContext(extracted) ? extracted : context.active();
}

/** The first data part's value (v1.0 SDK objects, or v1.0 / v0.3 wire JSON). */
function dataOf(message: Json | undefined): unknown {
  const parts = Array.isArray(message?.parts) ? message.parts : [];
  for (const p of parts) {
    if (!isObj(p)) continue;
    if (isObj(p.content) && p.content.$case === 'data') return p.content.value;
    if ('data' in p && (p.kind === undefined || p.kind === 'data')) return p.data;
  }
  return undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

class ServerCall {
  readonly span: Span;
  readonly context: Context;
  #ended = false;

  constructor(
    method: string,
    params: unknown,
    callContext: unknown,
    agent: string | undefined,
    options: A2aServerOptions,
  ) {
    const json = safely(log, 'request JSON', () => wireJson()?.toJSON(params), undefined) ?? params;
    const message = isObj(json) && isObj(json.message) ? json.message : undefined;
    const sdkMessage = isObj(params) && isObj(params.message) ? params.message : message;
    const messageId = str(message?.messageId);
    const received: AgentMessage = {
      id: messageId ?? '',
      source: '',
      target: agent ?? '',
      ...(str(message?.contextId) !== undefined ? { sessionId: str(message?.contextId)! } : {}),
      payload: json,
    };
    const attributes: Attributes = {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_INVOKE_AGENT,
      [ATTR_A2A_METHOD_NAME]: method,
    };
    setString(attributes, ATTR_GEN_AI_AGENT_NAME, agent);
    setString(attributes, ATTR_A2A_MESSAGE_ID, messageId);
    setString(attributes, ATTR_A2A_TASK_ID, str(message?.taskId));
    setString(attributes, ATTR_GEN_AI_CONVERSATION_ID, str(message?.contextId));
    const version = (callContext as { requestedVersion?: unknown } | undefined)?.requestedVersion;
    setString(attributes, ATTR_A2A_PROTOCOL_VERSION, typeof version === 'string' ? version : undefined);
    const parent = parentOf(callContext);
    const contract = options.contract === undefined ? undefined : dataOf(sdkMessage);
    this.span = startReceiveSpan({
      name: method,
      kind: SpanKind.SERVER,
      message: received,
      parent,
      captureContent: options.captureMessageContent ?? messageContentCaptured(),
      ...(options.contract !== undefined ? { contract: options.contract, contractValue: contract } : {}),
      system: 'a2a',
      attributes,
    });
    this.context = trace.setSpan(parent, this.span);
  }

  end(err?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    if (err !== undefined) {
      this.span.setAttribute(ATTR_ERROR_TYPE, errorTypeOf(err));
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    }
    this.span.end(now());
  }
}

/**
 * Wrap an @a2a-js/sdk request handler: SendMessage and SendStreamingMessage get receive spans, everything else passes
 * through. Returns a new handler object; the original is not modified.
 */
export function instrumentA2aRequestHandler<H extends A2aRequestHandlerLike>(
  handler: H,
  options: A2aServerOptions = {},
): H {
  let agent = options.agentName;
  const named =
    agent !== undefined
      ? Promise.resolve()
      : handler.getAgentCard().then(
          (c) => {
            agent ??= str(c?.name);
          },
          () => undefined,
        );
  const start = (method: string, params: unknown, callContext: unknown): ServerCall | undefined =>
    safely(log, `${method} span`, () => new ServerCall(method, params, callContext, agent, options), undefined);

  const wrapped = Object.create(handler) as H;
  wrapped.sendMessage = async function sendMessage(params: unknown, callContext: unknown): Promise<unknown> {
    await named;
    const call = start('SendMessage', params, callContext);
    if (!call) return handler.sendMessage(params, callContext);
    try {
      const result = await context.with(call.context, () => handler.sendMessage(params, callContext));
      call.end();
      return result;
    } catch (err) {
      call.end(err);
      throw err;
    }
  };
  wrapped.sendMessageStream = async function* sendMessageStream(
    params: unknown,
    callContext: unknown,
  ): AsyncGenerator<unknown, void, undefined> {
    await named;
    const call = start('SendStreamingMessage', params, callContext);
    if (!call) {
      yield* handler.sendMessageStream(params, callContext);
      return;
    }
    const inner = context.with(call.context, () => handler.sendMessageStream(params, callContext));
    let completed = false;
    try {
      for (;;) {
        const next = await context.with(call.context, () => inner.next());
        if (next.done) break;
        yield next.value;
      }
      completed = true;
      call.end();
    } catch (err) {
      completed = true;
      call.end(err);
      throw err;
    } finally {
      // The client went away mid-stream (return() was called): end the span and let the handler clean up.
      if (!completed) {
        call.end();
        await inner.return?.(undefined);
      }
    }
  };
  return wrapped;
}
