/**
 * The HTTP fault step: an undici interceptor composed inside the GenAI span layer. For a call the plan selected it
 *   1. fires a transport fault before anything is sent (a synthetic error in the provider's own error shape, a reset,
 *      a hang, a delay),
 *   2. applies a communication fault to the A2A / MCP request message (drop, delay, duplicate, rewrite the params),
 *   3. applies streaming faults event by event on a streamed answer, and content faults (AgentChaos) on a JSON
 *      answer, each in the call's own wire format (response-faults.ts).
 * Calls with no selected rule — and every fault that does not fire — pass through untouched: the same bytes, the
 * stream unbuffered. Only JSON bodies a content fault may rewrite are buffered. A fault with no meaning in the
 * call's format (src/catalog/formats.ts) is reported not applicable. Internal errors fall back to the untouched call.
 */
import type { Attributes } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import { getExchange } from '../../instrumentation/exchange';
import { flushExchanges } from '../../instrumentation/interceptor';
// The one controller proxy of the steps, and the one content-length rewrite (the span layer's).
import { ForwardingController } from '../../instrumentation/forwarding-controller';
import { withContentLength } from '../../instrumentation/request-body';
import { CLIENT_REQUEST_STEP } from '../../instrumentation/node-http';
import {
  ATTR_FL_MESSAGE_BOUNDARY,
  ATTR_FL_MESSAGE_ID,
  ATTR_FL_MESSAGE_SOURCE,
  ATTR_FL_MESSAGE_TARGET,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_URL_FULL,
} from '../../instrumentation/semconv';
import type { AgentMessage, DispatchFn, Exchange, Interceptor } from '../../instrumentation/types';
import { errorShapeOf, notApplicableReason } from '../catalog/formats';
import type { MessageEffect, TransportEffect } from '../catalog/types';
import { logger, safely } from '../diag';
import { decisionFor } from '../plan/processor';
import type { CompiledRule } from '../plan/select';
import type { Decision, FaultEngine, Hit, TaskState } from './engine';
import { recordFire } from './record';
import { ResponseFaults, type FaultedResponseCall } from './response-faults';
import { after } from './delayed';

const log = logger('inject');

type Handler = Dispatcher.DispatchHandler;

export interface FaultStepOptions {
  captureContent?: () => boolean;
}

/** Create the fault step for `engine`. */
export function createFaultStep(engine: FaultEngine, options: FaultStepOptions = {}): Interceptor {
  const capture = options.captureContent ?? (() => false);
  const step = (dispatch: DispatchFn): DispatchFn =>
    function faultStep(opts: Dispatcher.DispatchOptions, handler: Handler): boolean {
      const ex = getExchange(opts);
      if (ex === undefined) return dispatch(opts, handler);
      const decision = safely(
        log,
        'fault selection',
        () => decisionFor(engine, ex.span, () => exchangeAttributes(ex), ex.context, ex, flushExchanges),
        undefined,
      );
      if (ex.message) safely(log, 'message history', () => rememberMessage(engine, ex, decision), undefined);
      if (decision === undefined) return dispatch(opts, handler);
      const call = new FaultedCall(engine, ex, decision, opts, handler, dispatch, capture());
      return safely(log, 'fault step', () => call.start(), undefined) ?? dispatch(opts, handler);
    };
  // It sends a call at most once (a duplicated A2A / MCP message aside): node:http calls get it too.
  return Object.assign(step, { [CLIENT_REQUEST_STEP]: true as const });
}

/** Start attributes of an exchange, for a span the processor did not see (not sampled). */
export function exchangeAttributes(ex: Exchange): Attributes {
  const a: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: ex.operation,
    [ATTR_GEN_AI_PROVIDER_NAME]: ex.provider,
    [ATTR_URL_FULL]: ex.url.href,
    [ATTR_SERVER_ADDRESS]: ex.url.hostname,
  };
  if (ex.llmRequest?.model) a[ATTR_GEN_AI_REQUEST_MODEL] = ex.llmRequest.model;
  const m = ex.message;
  if (m) {
    a[ATTR_FL_MESSAGE_ID] = m.id;
    a[ATTR_FL_MESSAGE_SOURCE] = m.source;
    a[ATTR_FL_MESSAGE_TARGET] = m.target;
    if (m.boundary) a[ATTR_FL_MESSAGE_BOUNDARY] = m.boundary;
    if (ex.protocol === 'a2a') a[ATTR_GEN_AI_AGENT_NAME] = m.target;
  }
  const params = (ex.request as { params?: { name?: unknown } } | undefined)?.params;
  if (ex.protocol === 'mcp' && typeof params?.name === 'string') a[ATTR_GEN_AI_TOOL_NAME] = params.name;
  return a;
}

function rememberMessage(engine: FaultEngine, ex: Exchange, decision: Decision | undefined): void {
  const taskId = decision?.task.id ?? engine.taskIdOf(ex.context);
  if (ex.message) engine.remember(engine.task(taskId), ex.message);
}

function socketError(code: 'ECONNRESET' | 'ECONNREFUSED', url: URL): Error {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const message = code === 'ECONNRESET' ? 'read ECONNRESET' : `connect ECONNREFUSED ${url.hostname}:${port}`;
  return Object.assign(new Error(message), {
    code,
    errno: code === 'ECONNRESET' ? -104 : -111,
    syscall: code === 'ECONNRESET' ? 'read' : 'connect',
    address: url.hostname,
    port,
  });
}

/** One faulted call: the hits of its decision, applied in order transport → message → response. */
class FaultedCall implements FaultedResponseCall {
  private readonly ctl = new ForwardingController();
  private started = false;
  private readonly content: Hit[] = [];
  private readonly stream: Hit[] = [];
  private readonly transport: Hit[] = [];
  private readonly message: Hit[] = [];
  private readonly task: TaskState;
  private readonly handler: Handler;

  constructor(
    private readonly engine: FaultEngine,
    private readonly ex: Exchange,
    decision: Decision,
    private readonly opts: Dispatcher.DispatchOptions,
    handler: Handler,
    private readonly dispatch: DispatchFn,
    private readonly captureContent: boolean,
  ) {
    this.task = decision.task;
    this.handler = settleOnce(handler, () => this.ctl.release());
    for (const hit of decision.hits)
      this[hit.rule.fault.mode === 'content' ? 'content' : hit.rule.fault.mode].push(hit);
  }

  private na(rule: CompiledRule): void {
    this.engine.ledger.notApplicable(this.task.id, rule);
  }

  private fire(
    hit: Hit,
    noop: boolean,
    original?: string | Buffer,
    delivered?: string | Buffer,
    detail?: string,
    delayMs?: number,
  ): void {
    this.engine.ledger.fired(this.task.id, hit.rule, noop);
    recordFire(
      this.ex.span,
      { rule: hit.rule, callIndex: hit.callIndex, noop, original, delivered, detail, delayMs, taskId: this.task.id },
      this.captureContent,
    );
  }

  /** Give the application a controller now (for a synthetic, delayed or held response). */
  private openRequest(): void {
    if (this.started) return;
    this.started = true;
    this.ctl.onAbort = (reason) => this.handler.onResponseError?.(this.ctl, reason);
    this.handler.onRequestStart?.(this.ctl, {});
  }

  start(): boolean {
    // 1. Transport: the first transport fault that fires decides what happens to the request.
    for (const hit of this.transport) {
      if (!this.engine.fire(this.task, hit.rule)) continue;
      const fault = hit.rule.fault;
      if (fault.mode !== 'transport') continue;
      const effect = fault.effect(hit.rule.params, errorShapeOf(this.ex.protocol));
      this.fire(
        hit,
        false,
        undefined,
        effect.kind === 'respond' ? effect.body : undefined,
        describe(effect),
        effect.kind === 'delay' ? effect.delayMs : undefined,
      );
      return this.transportEffect(effect);
    }
    return this.afterTransport();
  }

  private transportEffect(effect: TransportEffect): boolean {
    this.openRequest();
    switch (effect.kind) {
      case 'respond':
        after(0, this.ctl, this.handler, () => this.respond(effect.status, effect.headers, Buffer.from(effect.body)));
        return true;
      case 'error':
        after(effect.afterMs, this.ctl, this.handler, () =>
          this.handler.onResponseError?.(this.ctl, socketError(effect.code, this.ex.url)),
        );
        return true;
      case 'hang':
        // Held until the application aborts (the controller reports it), or reset after stallMs.
        if (effect.stallMs !== undefined) {
          after(effect.stallMs, this.ctl, this.handler, () =>
            this.handler.onResponseError?.(this.ctl, socketError('ECONNRESET', this.ex.url)),
          );
        } else {
          this.ctl.hold();
        }
        return true;
      case 'delay':
        after(effect.delayMs, this.ctl, this.handler, () => this.afterTransport());
        return true;
    }
  }

  private respond(status: number, headers: Record<string, string>, body: Buffer): void {
    if (this.ctl.aborted) return;
    const h = { ...headers, 'content-length': String(body.length) };
    this.handler.onResponseStart?.(this.ctl, status, h, status === 429 ? 'Too Many Requests' : 'Error');
    if (this.ctl.aborted) return;
    this.handler.onResponseData?.(this.ctl, body);
    if (this.ctl.aborted) return;
    this.handler.onResponseEnd?.(this.ctl, {});
  }

  /** 2. Message faults on A2A / MCP requests, then the response-side faults. */
  private afterTransport(): boolean {
    const m = this.ex.message;
    for (const hit of this.message) {
      const fault = hit.rule.fault;
      if (fault.mode !== 'message' || !m || (this.ex.protocol !== 'a2a' && this.ex.protocol !== 'mcp')) {
        this.na(hit.rule);
        continue;
      }
      if (!this.engine.fire(this.task, hit.rule)) continue;
      const effect = fault.apply(m, hit.rule.params, {
        previousToTarget: (this.task.history.get(m.target) ?? []).filter((x) => x.id !== m.id),
        donor: this.engine.donorFor(this.task, m),
      });
      return this.messageEffect(hit, effect);
    }
    return this.send(this.opts);
  }

  private messageEffect(hit: Hit, effect: MessageEffect): boolean {
    const original = this.sendBody();
    if (effect.kind === 'drop') {
      this.fire(
        hit,
        false,
        original,
        undefined,
        effect.waitMs ? `dropped after ${effect.waitMs} ms` : 'dropped',
        effect.waitMs,
      );
      this.openRequest();
      after(effect.waitMs ?? 0, this.ctl, this.handler, () =>
        this.handler.onResponseError?.(this.ctl, socketError('ECONNRESET', this.ex.url)),
      );
      return true;
    }
    const bodies = effect.messages.map((msg) => this.requestBodyFor(msg));
    const noop = effect.noop === true || (bodies.length === 1 && bodies[0].equals(original) && !effect.waitMs);
    this.fire(
      hit,
      noop,
      original,
      bodies.length === 1 ? bodies[0] : Buffer.concat(bodies),
      `${bodies.length} delivered`,
      effect.waitMs,
    );
    const sendAll = (): boolean => {
      // The application gets the response to the first message; the others (a duplicate, an older message) go out
      // after it, one by one, and their responses are discarded.
      const extra = (i: number): void => {
        if (i >= bodies.length) return;
        this.dispatch(
          { ...this.opts, body: bodies[i], headers: withContentLength(this.opts.headers, bodies[i].length) },
          discardHandler(() => extra(i + 1)),
        );
      };
      const sent = this.send({
        ...this.opts,
        body: bodies[0],
        headers: withContentLength(this.opts.headers, bodies[0].length),
      });
      extra(1);
      return sent;
    };
    if (effect.waitMs) {
      this.openRequest();
      after(effect.waitMs, this.ctl, this.handler, sendAll);
      return true;
    }
    return sendAll();
  }

  /** The bytes the span layer would send (it may have added trace context to the params). */
  private sendBody(): Buffer {
    const b = this.opts.body;
    return Buffer.isBuffer(b) ? b : typeof b === 'string' ? Buffer.from(b) : this.ex.requestBody;
  }

  /** The request body carrying `msg`: the JSON-RPC params replaced by the message payload (trace context kept). */
  private requestBodyFor(msg: AgentMessage): Buffer {
    const base = this.sendBody();
    if (msg === this.ex.message || JSON.stringify(msg.payload) === JSON.stringify(this.ex.message?.payload))
      return base;
    const req = JSON.parse(base.toString('utf8')) as Record<string, unknown>;
    const meta = (req.params as { _meta?: unknown } | undefined)?._meta;
    const params =
      msg.payload !== null && typeof msg.payload === 'object' && !Array.isArray(msg.payload) && meta !== undefined
        ? { ...(msg.payload as object), _meta: meta }
        : msg.payload;
    return Buffer.from(JSON.stringify({ ...req, params }));
  }

  /** 3. Send, reading the response through the stream / content faults that apply to this call's format. */
  private send(opts: Dispatcher.DispatchOptions): boolean {
    const applies = (h: Hit) => notApplicableReason(h.rule.fault, this.ex.protocol) === undefined;
    const streamHits = this.ex.stream ? this.stream.filter(applies) : [];
    for (const h of this.stream) if (!streamHits.includes(h)) this.na(h.rule);
    // AgentChaos content faults act on whole JSON answers, not on streams.
    const contentHits = this.ex.stream ? [] : this.content.filter(applies);
    for (const h of this.content) if (!contentHits.includes(h)) this.na(h.rule);
    if (streamHits.length === 0 && contentHits.length === 0 && !this.started) return this.dispatch(opts, this.handler);
    return this.dispatch(opts, new ResponseFaults(this, streamHits, contentHits));
  }

  // --- used by ResponseFaults
  get h(): Handler {
    return this.handler;
  }
  get controller(): ForwardingController {
    return this.ctl;
  }
  get wasOpened(): boolean {
    return this.started;
  }
  get exchange(): Exchange {
    return this.ex;
  }
  get taskState(): TaskState {
    return this.task;
  }
  get faultEngine(): FaultEngine {
    return this.engine;
  }
  recordFireFor(
    hit: Hit,
    noop: boolean,
    original?: string | Buffer,
    delivered?: string | Buffer,
    detail?: string,
    delayMs?: number,
  ): void {
    this.fire(hit, noop, original, delivered, detail, delayMs);
  }
  notApplicable(rule: CompiledRule): void {
    this.na(rule);
  }
}

function describe(e: TransportEffect): string {
  switch (e.kind) {
    case 'respond':
      return `HTTP ${e.status}`;
    case 'error':
      return e.code;
    case 'hang':
      return e.stallMs === undefined ? 'held until the client aborts' : `held ${e.stallMs} ms, then reset`;
    case 'delay':
      return `first byte delayed ${e.delayMs} ms`;
  }
}

/**
 * The application's handler, guarded so it hears exactly one end or error whatever races (abort vs. upstream end);
 * `onSettle` runs once it has.
 */
function settleOnce(handler: Handler, onSettle: () => void): Handler {
  let settled = false;
  return {
    onRequestStart: (c, ctx) => handler.onRequestStart?.(c, ctx),
    onRequestUpgrade: (c, s, hd, so) => handler.onRequestUpgrade?.(c, s, hd, so),
    onResponseStart: (c, s, hd, m) => {
      if (!settled) handler.onResponseStart?.(c, s, hd, m);
    },
    onResponseData: (c, d) => {
      if (!settled) handler.onResponseData?.(c, d);
    },
    onResponseEnd: (c, t) => {
      if (settled) return;
      settled = true;
      onSettle();
      handler.onResponseEnd?.(c, t);
    },
    onResponseError: (c, e) => {
      if (settled) return;
      settled = true;
      onSettle();
      handler.onResponseError?.(c, e);
    },
  };
}

function discardHandler(done: () => void): Handler {
  let finished = false;
  const end = (): void => {
    if (finished) return;
    finished = true;
    done();
  };
  return {
    onRequestStart() {},
    onResponseStart() {},
    onResponseData() {},
    onResponseEnd: end,
    onResponseError: end,
  };
}
