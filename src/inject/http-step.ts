/**
 * The HTTP fault step: an undici interceptor composed inside the GenAI span layer. For a call the plan selected it
 *   1. fires a transport fault before anything is sent (a synthetic provider error, a reset, a hang, a delay),
 *   2. applies a communication fault to the A2A / MCP request message (drop, delay, duplicate, rewrite the params),
 *   3. applies streaming faults event by event on an SSE response, and content faults (AgentChaos) on a JSON body.
 * Calls with no selected rule — and every fault that does not fire — pass through untouched: the same bytes, the
 * stream unbuffered. Only JSON bodies a content fault may rewrite are buffered. Internal errors fall back to the
 * untouched call.
 */
import type { Attributes } from '@opentelemetry/api';
import { StringDecoder } from 'node:string_decoder';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { getExchange } from '../../instrumentation/exchange';
// The one controller proxy of the steps, and the one content-length rewrite (the span layer's).
import { ForwardingController as StepController } from '../../instrumentation/forwarding-controller';
import { withContentLength } from '../../instrumentation/request-body';
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
import type { AgentMessage, Exchange, Interceptor } from '../../instrumentation/types';
import { applySpecs } from '../catalog/agentchaos/spec';
import type { MessageEffect, SseTransform, TransportEffect } from '../catalog/types';
import { logger, safely } from '../diag';
import { decisionFor } from '../plan/processor';
import type { CompiledRule } from '../plan/select';
import { fromChatView, toChatView } from './bodies';
import type { Decision, FaultEngine, Hit, TaskState } from './engine';
import { recordFire } from './record';

const log = logger('inject');

type DispatchFn = (opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => boolean;
type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;

export interface FaultStepOptions {
  captureContent?: () => boolean;
}

/** Create the fault step for `engine`. */
export function createFaultStep(engine: FaultEngine, options: FaultStepOptions = {}): Interceptor {
  const capture = options.captureContent ?? (() => false);
  return (dispatch: DispatchFn): DispatchFn =>
    function faultStep(opts: Dispatcher.DispatchOptions, handler: Handler): boolean {
      const ex = getExchange(opts);
      if (ex === undefined) return dispatch(opts, handler);
      const decision = safely(log, 'fault selection', () => decisionFor(engine, ex.span, () => exchangeAttributes(ex), ex.context, ex), undefined);
      if (ex.message) safely(log, 'message history', () => rememberMessage(engine, ex, decision), undefined);
      if (decision === undefined) return dispatch(opts, handler);
      const call = new FaultedCall(engine, ex, decision, opts, handler, dispatch, capture());
      return safely(log, 'fault step', () => call.start(), undefined) ?? dispatch(opts, handler);
    };
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

function abortError(): Error {
  return Object.assign(new Error('This operation was aborted'), { name: 'AbortError', code: 'UND_ERR_ABORTED' });
}

/**
 * Run `fn` after `ms` unless the application aborted meanwhile. Whatever it throws is reported to the application's
 * handler as the call's error (never an uncaught exception or unhandled rejection).
 */
function after(ms: number, ctl: StepController, handler: Handler, fn: () => unknown): void {
  void sleep(ms, ctl).then((ok) => {
    if (!ok) return;
    try {
      fn();
    } catch (err) {
      log.error('internal error in a delayed fault action (reported to the application as the call error):', err);
      handler.onResponseError?.(ctl, err as Error);
    }
  });
}

const sleep = (ms: number, ctl: StepController): Promise<boolean> =>
  new Promise((resolve) => {
    if (ms <= 0) return resolve(!ctl.aborted);
    const t = setTimeout(() => resolve(!ctl.aborted), ms);
    const prev = ctl.onAbort;
    ctl.onAbort = (r) => {
      clearTimeout(t);
      prev?.(r);
      resolve(false);
    };
  });

function headerValue(headers: Record<string, unknown>, name: string): string | undefined {
  const v = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(v) ? String(v[0]) : v === undefined ? undefined : String(v);
}

/** One faulted call: the hits of its decision, applied in order transport → message → response. */
class FaultedCall {
  private readonly ctl = new StepController();
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
    for (const hit of decision.hits) this[hit.rule.fault.mode === 'content' ? 'content' : hit.rule.fault.mode].push(hit);
  }

  private na(rule: CompiledRule): void {
    this.engine.ledger.notApplicable(this.task.id, rule);
  }

  private fire(hit: Hit, noop: boolean, original?: string | Buffer, delivered?: string | Buffer, detail?: string, delayMs?: number): void {
    this.engine.ledger.fired(this.task.id, hit.rule, noop);
    recordFire(this.ex.span, { rule: hit.rule, callIndex: hit.callIndex, noop, original, delivered, detail, delayMs, taskId: this.task.id }, this.captureContent);
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
      const effect = fault.effect(hit.rule.params, this.ex.protocol === 'anthropic.messages' ? 'anthropic' : this.ex.provider);
      this.fire(hit, false, undefined, effect.kind === 'respond' ? effect.body : undefined, describe(effect), effect.kind === 'delay' ? effect.delayMs : undefined);
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
        after(effect.afterMs, this.ctl, this.handler, () => this.handler.onResponseError?.(this.ctl, socketError(effect.code, this.ex.url)));
        return true;
      case 'hang':
        // Held until the application aborts (the controller reports it), or reset after stallMs.
        if (effect.stallMs !== undefined) {
          after(effect.stallMs, this.ctl, this.handler, () => this.handler.onResponseError?.(this.ctl, socketError('ECONNRESET', this.ex.url)));
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
      this.fire(hit, false, original, undefined, effect.waitMs ? `dropped after ${effect.waitMs} ms` : 'dropped', effect.waitMs);
      this.openRequest();
      after(effect.waitMs ?? 0, this.ctl, this.handler, () => this.handler.onResponseError?.(this.ctl, socketError('ECONNRESET', this.ex.url)));
      return true;
    }
    const bodies = effect.messages.map((msg) => this.requestBodyFor(msg));
    const noop = effect.noop === true || (bodies.length === 1 && bodies[0].equals(original) && !effect.waitMs);
    this.fire(hit, noop, original, bodies.length === 1 ? bodies[0] : Buffer.concat(bodies), `${bodies.length} delivered`, effect.waitMs);
    const sendAll = (): boolean => {
      // The application gets the response to the first message; the others (a duplicate, an older message) go out
      // after it, one by one, and their responses are discarded.
      const extra = (i: number): void => {
        if (i >= bodies.length) return;
        this.dispatch({ ...this.opts, body: bodies[i], headers: withContentLength(this.opts.headers, bodies[i].length) }, discardHandler(() => extra(i + 1)));
      };
      const sent = this.send({ ...this.opts, body: bodies[0], headers: withContentLength(this.opts.headers, bodies[0].length) });
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
    if (msg === this.ex.message || JSON.stringify(msg.payload) === JSON.stringify(this.ex.message?.payload)) return base;
    const req = JSON.parse(base.toString('utf8')) as Record<string, unknown>;
    const meta = (req.params as { _meta?: unknown } | undefined)?._meta;
    const params = msg.payload !== null && typeof msg.payload === 'object' && !Array.isArray(msg.payload) && meta !== undefined ? { ...(msg.payload as object), _meta: meta } : msg.payload;
    return Buffer.from(JSON.stringify({ ...req, params }));
  }

  /** 3. Send, reading the response through the stream / content faults that apply. */
  private send(opts: Dispatcher.DispatchOptions): boolean {
    const streamHits = this.ex.stream ? this.stream : [];
    for (const h of this.ex.stream ? [] : this.stream) this.na(h.rule);
    const contentHits = !this.ex.stream && (this.ex.protocol === 'openai.chat' || this.ex.protocol === 'anthropic.messages') ? this.content : [];
    for (const h of this.content) if (!contentHits.includes(h)) this.na(h.rule);
    if (streamHits.length === 0 && contentHits.length === 0 && !this.started) return this.dispatch(opts, this.handler);
    return this.dispatch(opts, new ResponseFaults(this, streamHits, contentHits));
  }

  // --- used by ResponseFaults
  get h(): Handler {
    return this.handler;
  }
  get controller(): StepController {
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
  recordFireFor(hit: Hit, noop: boolean, original?: string | Buffer, delivered?: string | Buffer, detail?: string, delayMs?: number): void {
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

/** The response side: SSE events through stream faults; JSON bodies through content faults. */
class ResponseFaults implements Handler {
  private mode: 'pass' | 'buffer' | 'sse' = 'pass';
  private status = 0;
  private headers: Record<string, string | string[] | undefined> = {};
  private statusMessage?: string;
  private chunks: Buffer[] = [];
  private sse?: SseState;
  private finished = false;

  constructor(
    private readonly call: FaultedCall,
    private readonly streamHits: Hit[],
    private readonly contentHits: Hit[],
  ) {}

  private get ctl(): StepController {
    return this.call.controller;
  }

  onRequestStart(controller: Controller, context: unknown): void {
    this.ctl.attach(controller);
    if (!this.call.wasOpened) this.call.h.onRequestStart?.(this.ctl, context);
  }

  onRequestUpgrade(_controller: Controller, statusCode: number, headers: Record<string, string | string[] | undefined>, socket: unknown): void {
    (this.call.h.onRequestUpgrade as ((...a: unknown[]) => void) | undefined)?.(this.ctl, statusCode, headers, socket);
  }

  onResponseStart(_controller: Controller, status: number, headers: Record<string, string | string[] | undefined>, statusMessage?: string): void {
    const type = (headerValue(headers, 'content-type') ?? '').toLowerCase();
    const ok = status >= 200 && status < 300;
    if (ok && this.streamHits.length > 0 && type.includes('text/event-stream')) {
      const transforms: Array<{ hit: Hit; t: SseTransform }> = [];
      for (const hit of this.streamHits) {
        const fault = hit.rule.fault;
        if (fault.mode === 'stream' && this.call.faultEngine.fire(this.call.taskState, hit.rule)) transforms.push({ hit, t: fault.transform(hit.rule.params) });
      }
      if (transforms.length > 0) {
        this.mode = 'sse';
        this.sse = new SseState(transforms);
      }
    } else {
      for (const hit of this.streamHits) this.call.notApplicable(hit.rule);
    }
    if (ok && this.contentHits.length > 0 && type.includes('json') && this.mode === 'pass') {
      this.mode = 'buffer';
      this.status = status;
      this.headers = headers;
      this.statusMessage = statusMessage;
      return;
    }
    if (!ok) for (const hit of this.contentHits) this.call.notApplicable(hit.rule);
    this.call.h.onResponseStart?.(this.ctl, status, headers as never, statusMessage);
  }

  onResponseData(_controller: Controller, chunk: Buffer): void {
    if (this.finished) return;
    if (this.mode === 'buffer') this.chunks.push(chunk);
    else if (this.mode === 'sse') {
      try {
        this.feed(chunk);
      } catch (err) {
        // Our bug, not the app's: stop faulting this stream and pass the rest through.
        log.error('internal error in a stream fault (the rest of the stream passes through):', err);
        this.mode = 'pass';
        const rest = this.sse!.text;
        this.sse!.text = '';
        // `feed` appended the chunk's text before the failure: the unsent remainder includes it.
        if (rest) this.call.h.onResponseData?.(this.ctl, Buffer.from(rest, 'utf8'));
      }
    }
    else this.call.h.onResponseData?.(this.ctl, chunk);
  }

  onResponseEnd(_controller: Controller, trailers: Record<string, string | string[] | undefined>): void {
    if (this.finished) return;
    if (this.mode === 'buffer') return this.deliverBuffered(trailers);
    if (this.mode === 'sse' && this.sse) {
      if (this.sse.stalled) {
        this.sse.pendingEnd = trailers;
        return;
      }
      this.flushRemainder();
      this.recordStream();
    }
    this.finished = true;
    this.call.h.onResponseEnd?.(this.ctl, trailers as never);
  }

  onResponseError(_controller: Controller, err: Error): void {
    if (this.finished) return;
    this.finished = true;
    if (this.mode === 'sse') this.recordStream();
    this.sse?.clearTimer();
    this.call.h.onResponseError?.(this.ctl, err);
  }

  // ------------------------------------------------------------------ content (AgentChaos)

  private deliverBuffered(trailers: Record<string, string | string[] | undefined>): void {
    const raw = Buffer.concat(this.chunks);
    const result = safely(log, 'content fault', () => this.applyContent(raw), undefined);
    const body = result?.body ?? raw;
    const headers = result?.body ? this.rewrittenHeaders(body.length) : this.headers;
    const deliver = (): void => {
      if (this.ctl.aborted) return;
      this.finished = true;
      this.call.h.onResponseStart?.(this.ctl, this.status, headers as never, this.statusMessage);
      if (body.length > 0) this.call.h.onResponseData?.(this.ctl, body);
      this.call.h.onResponseEnd?.(this.ctl, trailers as never);
    };
    if (result?.delayMs) after(result.delayMs, this.ctl, this.call.h, deliver);
    else deliver();
  }

  private rewrittenHeaders(length: number): Record<string, string | string[] | undefined> {
    const out: Record<string, string | string[] | undefined> = {};
    for (const [k, v] of Object.entries(this.headers)) {
      const key = k.toLowerCase();
      if (key === 'content-length' || key === 'content-encoding' || key === 'transfer-encoding') continue;
      out[k] = v;
    }
    out['content-length'] = String(length);
    return out;
  }

  private applyContent(raw: Buffer): { body?: Buffer; delayMs: number } | undefined {
    const ex = this.call.exchange;
    const task = this.call.taskState;
    const encoding = (headerValue(this.headers, 'content-encoding') ?? 'identity').toLowerCase();
    const plain = encoding === 'gzip' || encoding === 'x-gzip' ? gunzipSync(raw) : encoding === 'br' ? brotliDecompressSync(raw) : encoding === 'deflate' ? inflateSync(raw) : encoding === 'identity' ? raw : undefined;
    if (plain === undefined) {
      for (const hit of this.contentHits) this.call.notApplicable(hit.rule);
      return undefined;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(plain.toString('utf8'));
    } catch {
      for (const hit of this.contentHits) this.call.notApplicable(hit.rule);
      return undefined;
    }
    const view = toChatView(ex.protocol, parsed);
    if (view === undefined) {
      for (const hit of this.contentHits) this.call.notApplicable(hit.rule);
      return undefined;
    }
    let current: unknown = view;
    let delayMs = 0;
    for (const hit of this.contentHits) {
      if (hit.rule.fault.mode !== 'content') continue;
      const before = JSON.stringify(current);
      const r = applySpecs(hit.rule.specs, current, task.rules[hit.rule.index].specs, { rng: task.rng, lastResponse: task.lastResponse });
      if (r.fired.length === 0) continue;
      current = r.body as object;
      delayMs += r.delayMs;
      const after = JSON.stringify(current);
      const noop = after === before && r.delayMs === 0;
      this.call.recordFireFor(hit, noop, before, after, r.fired.map((i) => hit.rule.specs[i].action).join('+'), r.delayMs || undefined);
    }
    const changed = JSON.stringify(current) !== JSON.stringify(view);
    task.lastResponse = current;
    if (!changed) return { delayMs };
    return { body: Buffer.from(JSON.stringify(fromChatView(ex.protocol, parsed, current))), delayMs };
  }

  // ------------------------------------------------------------------ streams

  private feed(chunk: Buffer): void {
    const sse = this.sse!;
    if (sse.stalled) {
      sse.held.push(chunk);
      return;
    }
    sse.text += sse.decoder.write(chunk);
    this.drainEvents();
  }

  private drainEvents(): void {
    const sse = this.sse!;
    const boundary = /\r\n\r\n|\n\n|\r\r/;
    for (;;) {
      if (this.finished || sse.stalled) return;
      const m = boundary.exec(sse.text);
      if (!m) return;
      const raw = sse.text.slice(0, m.index + m[0].length);
      sse.text = sse.text.slice(m.index + m[0].length);
      this.handleEvent(raw);
    }
  }

  private handleEvent(raw: string): void {
    const sse = this.sse!;
    const isData = /^data:/m.test(raw);
    let events = [raw];
    let action: { then: 'end' | 'reset' | 'stall'; stallMs?: number } | undefined;
    for (const { t } of sse.transforms) {
      const next: string[] = [];
      for (const e of events) {
        const r = t.onEvent(e, sse.dataIndex, isData);
        next.push(...r.emit);
        if ('then' in r && !action) action = { then: r.then, stallMs: r.stallMs };
      }
      events = next;
    }
    if (isData) sse.dataIndex++;
    if (action?.then === 'stall') {
      // The stalled event and everything after it wait for the resume (or the application's abort).
      sse.heldEvents = events;
      return this.stall(action.stallMs);
    }
    for (const e of events) this.call.h.onResponseData?.(this.ctl, Buffer.from(e, 'utf8'));
    if (!action) return;
    this.finished = true;
    this.recordStream();
    const real = this.ctl.real;
    if (action.then === 'end') this.call.h.onResponseEnd?.(this.ctl, {});
    else this.call.h.onResponseError?.(this.ctl, Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
    // Stop reading the rest of the real response.
    safely(log, 'abort after cut', () => real?.abort(abortError()), undefined);
  }

  private stall(stallMs: number | undefined): void {
    const sse = this.sse!;
    sse.stalled = true;
    this.ctl.real?.pause();
    const prev = this.ctl.onAbort;
    this.ctl.onAbort = (reason) => {
      prev?.(reason);
      if (this.finished) return;
      this.finished = true;
      sse.clearTimer();
      this.recordStream();
      this.call.h.onResponseError?.(this.ctl, reason);
    };
    if (stallMs === undefined) {
      // Held until the application gives up; the real response may be over already, so nothing else keeps it alive.
      this.ctl.hold();
      return;
    }
    sse.timer = setTimeout(() => {
      sse.stalled = false;
      sse.resumed = true;
      for (const e of sse.heldEvents.splice(0)) this.call.h.onResponseData?.(this.ctl, Buffer.from(e, 'utf8'));
      for (const c of sse.held.splice(0)) sse.text += sse.decoder.write(c);
      this.drainEvents();
      if (sse.pendingEnd && !this.finished) {
        this.flushRemainder();
        this.recordStream();
        this.finished = true;
        this.call.h.onResponseEnd?.(this.ctl, sse.pendingEnd as never);
      } else this.ctl.real?.resume();
    }, stallMs);
  }

  private flushRemainder(): void {
    const sse = this.sse!;
    const rest = sse.text + sse.decoder.end();
    sse.text = '';
    if (rest.length > 0) this.call.h.onResponseData?.(this.ctl, Buffer.from(rest, 'utf8'));
  }

  private recordStream(): void {
    const sse = this.sse;
    if (!sse || sse.recorded) return;
    sse.recorded = true;
    for (const { hit, t } of sse.transforms) this.call.recordFireFor(hit, !t.changed(), undefined, undefined, `after ${sse.dataIndex} data events`);
  }
}

class SseState {
  text = '';
  readonly decoder = new StringDecoder('utf8');
  dataIndex = 0;
  stalled = false;
  resumed = false;
  recorded = false;
  held: Buffer[] = [];
  heldEvents: string[] = [];
  pendingEnd?: Record<string, string | string[] | undefined>;
  timer?: NodeJS.Timeout;
  constructor(readonly transforms: Array<{ hit: Hit; t: SseTransform }>) {}
  clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
  }
}
