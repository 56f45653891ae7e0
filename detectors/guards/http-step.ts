/**
 * The HTTP guard step: an undici interceptor composed inside the GenAI span layer (app → span layer → guard → fault →
 * network). For a call on a guarded route it
 *  - fails fast while the route's circuit is open (a typed CircuitOpenError);
 *  - retries retryable statuses and connection errors with ARCF back-off, honouring Retry-After — for streams too,
 *    since that is decided before the first byte reaches the application; a stream is never buffered;
 *  - buffers a JSON response, runs the route's detectors on it and, when the findings count, retries, then falls back
 *    to another model / endpoint, then records (delivers as is) or rejects with a typed GuardRejectedError;
 *  - records every action as a `faultline.guard` event on the exchange span and feeds route health and the circuit.
 * Requests that are not ours, or not on a guarded route, pass through untouched.
 */
import { context as otelContext } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import { getTaskId } from '../../instrumentation/agents/task';
import { canDecode, decodeAll, isIdentity } from '../../src/wire/decompress';
import { getExchange } from '../../instrumentation/exchange';
import { headerValue, MAX_PARSE_BYTES } from '../../instrumentation/providers/response-body';
import { deliverResponse } from '../../instrumentation/deliver';
import { ForwardingController } from '../../instrumentation/forwarding-controller';
import type { DispatchFn, Exchange, Interceptor } from '../../instrumentation/types';
import { safely } from '../../src/diag';
import type { LlmObservation } from '../types';
import { isLlmProtocol, summarizeLlmResponse, type LlmProtocol } from '../wire';
import type { GuardConfig, GuardRoute } from './config';
import { chooseFallback, fallbackLabel, fallbackOptions } from './fallback';
import { recordGuard } from './record';
import { CircuitOpenError, GuardRejectedError } from './reject';
import { nextDelay, retryableStatus, retryAfterMs } from './retry';
import { describe, log, type GuardRuntime } from './runtime';
import { findRoute, routeLabel, type RouteFacts } from './routes';
import type { Finding } from '../types';

type Handler = Dispatcher.DispatchHandler;

function factsOf(exchange: Exchange): RouteFacts {
  const facts: RouteFacts = { provider: exchange.provider, host: exchange.url.host };
  if (exchange.llmRequest?.model !== undefined) facts.model = exchange.llmRequest.model;
  const m = exchange.message;
  if (m) {
    if (exchange.protocol === 'mcp') facts.tool = m.target;
    else facts.agent = m.target;
    if (m.boundary !== undefined) facts.boundary = m.boundary;
    facts.source = m.source;
  }
  return facts;
}

/** `createGuardStep(runtime)` → an undici interceptor (`dispatch => guardStep(opts, handler)`). */
export function createGuardStep(runtime: GuardRuntime): Interceptor {
  return (dispatch: DispatchFn): DispatchFn =>
    function guardStep(opts: Dispatcher.DispatchOptions, handler: Handler): boolean {
      const exchange = getExchange(opts);
      if (!exchange) return dispatch(opts, handler);
      const plan = safely(
        log,
        'guard route',
        () => {
          const taskId = getTaskId(exchange.context) ?? getTaskId(otelContext.active());
          const config = runtime.config(taskId);
          const route = config ? findRoute(config.routes, factsOf(exchange)) : undefined;
          return config && route ? { config, route, taskId: taskId ?? exchange.span.spanContext().traceId } : undefined;
        },
        undefined,
      );
      if (!plan) return dispatch(opts, handler);
      return new GuardedCall(dispatch, opts, handler, exchange, plan.config, plan.route, plan.taskId, runtime).start();
    };
}

type Mode = 'pass' | 'buffer' | 'discard';

/**
 * One guarded call. The application keeps one controller across attempts (a ForwardingController); it sees one
 * response, the last attempt's or the one delivered after the guard gave up. Recovery (retry, fallback) is possible
 * only before the application has seen a response start (undici's RetryHandler rule): after that an error is the
 * application's, as it would be without faultline. A request body that cannot be sent again (a stream whose copy
 * is not complete) is not retried either.
 */
class GuardedCall {
  readonly #proxy = new ForwardingController();
  readonly #label: string;
  #appStarted = false;
  /** The application's handler had onResponseStart: nothing can be taken back now. */
  #appResponded = false;
  #retries = 0;
  readonly #triedFallbacks = new Set<number>();
  #currentLabel: string;
  #currentOpts: Dispatcher.DispatchOptions;
  #finished = false;
  /** Ends a back-off wait when the call settles (the application aborted): no timer of ours outlives the call. */
  readonly #settled = new AbortController();

  constructor(
    private readonly dispatch: DispatchFn,
    private readonly opts: Dispatcher.DispatchOptions,
    private readonly handler: Handler,
    private readonly exchange: Exchange,
    private readonly config: GuardConfig,
    private readonly route: GuardRoute,
    private readonly taskId: string,
    private readonly rt: GuardRuntime,
  ) {
    this.#label = routeLabel(route);
    this.#currentLabel = this.#label;
    this.#currentOpts = opts;
    // An abort settles the call at once, also while waiting to retry (no attempt in flight to report it).
    this.#proxy.onAbort = (reason) => this.#fail(reason);
  }

  start(): boolean {
    if (this.route.circuit !== false) {
      const c = this.rt.circuits.get(this.#label, this.route.circuit);
      const { allowed, transition } = c.admit();
      if (transition)
        recordGuard(
          this.exchange.span,
          'circuit_half_open',
          this.#label,
          `${transition.from} → ${transition.to}: probing`,
        );
      if (!allowed) {
        recordGuard(this.exchange.span, 'fail_fast', this.#label, 'circuit open');
        if (this.#tryFallback('circuit open')) return true;
        this.#fail(new CircuitOpenError(this.#label, c.retryInMs()));
        return true;
      }
    }
    return this.#attempt(this.opts);
  }

  #attempt(opts: Dispatcher.DispatchOptions): boolean {
    this.#currentOpts = opts;
    try {
      return this.dispatch(opts, this.#attemptHandler());
    } catch (err) {
      this.#fail(err as Error);
      return true;
    }
  }

  #startApp(): void {
    if (this.#appStarted) return;
    this.#appStarted = true;
    this.handler.onRequestStart?.(this.#proxy, {});
  }

  #fail(err: Error): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#settled.abort();
    this.#startApp();
    this.handler.onResponseError?.(this.#proxy, err);
  }

  #attemptHandler(): Handler {
    let mode: Mode = 'pass';
    let status = 0;
    let headers: Record<string, string | string[] | undefined> = {};
    let statusMessage = '';
    const chunks: Buffer[] = [];
    const label = this.#currentLabel;
    return {
      onRequestStart: (controller) => {
        this.#proxy.attach(controller);
        this.#startApp();
      },
      onResponseStart: (_controller, statusCode, hdrs, msg) => {
        status = statusCode;
        headers = hdrs as Record<string, string | string[] | undefined>;
        statusMessage = msg ?? '';
        const ct = String(
          (Array.isArray(headers['content-type']) ? headers['content-type'][0] : headers['content-type']) ?? '',
        );
        if (retryableStatus(statusCode) && this.#canRecover()) mode = 'discard';
        else if (
          statusCode < 300 &&
          !this.exchange.stream &&
          /json/i.test(ct) &&
          this.#llm() &&
          canDecode(headerValue(headers, 'content-encoding'))
        )
          mode = 'buffer';
        else mode = 'pass';
        if (mode === 'pass') {
          this.rt.outcome(label, statusCode < 400, this.exchange.span, this.route.circuit);
          this.#appResponded = true;
          return this.handler.onResponseStart?.(this.#proxy, statusCode, hdrs, msg);
        }
        return true;
      },
      onResponseData: (_controller, chunk) => {
        if (mode === 'pass') return this.handler.onResponseData?.(this.#proxy, chunk);
        chunks.push(chunk); // buffered, or kept so a discarded error response can still be delivered
        return true;
      },
      onResponseEnd: (_controller, trailers) => {
        if (mode === 'pass') {
          this.#finished = true;
          return this.handler.onResponseEnd?.(this.#proxy, trailers);
        }
        if (mode === 'discard') {
          this.rt.outcome(label, false, this.exchange.span, this.route.circuit);
          const body = Buffer.concat(chunks);
          this.#recover(`HTTP ${status}`, retryAfterMs(headers, this.rt.now()), [], () =>
            this.#deliver(status, headers, statusMessage, body, trailers),
          );
          return;
        }
        const body = Buffer.concat(chunks);
        const settle = (plain: Buffer | undefined): void => {
          const findings =
            plain === undefined ? [] : safely(log, 'guard judgement', () => this.#judge(status, headers, plain), []);
          if (findings.length === 0) {
            this.rt.outcome(label, true, this.exchange.span, this.route.circuit);
            this.#deliver(status, headers, statusMessage, body, trailers);
            return;
          }
          this.rt.outcome(label, false, this.exchange.span, this.route.circuit);
          if (this.#canRecover()) {
            this.#recover(describe(findings), undefined, findings, () =>
              this.#deliver(status, headers, statusMessage, body, trailers),
            );
            return;
          }
          this.#giveUp(findings, () => this.#deliver(status, headers, statusMessage, body, trailers));
        };
        const encoding = headerValue(headers, 'content-encoding');
        if (isIdentity(encoding)) return settle(body);
        // A compressed answer is judged on its decoded body (the one bounded decoder); the application still gets the
        // bytes as they came. One that does not decode is not judged: the application meets its own decoding error.
        decodeAll(body, encoding, { maxOutputBytes: MAX_PARSE_BYTES }).then(
          (d) => settle(d.error || d.overflow ? undefined : d.body),
          () => settle(undefined),
        );
      },
      onResponseError: (_controller, err) => {
        // The application cancelled, or already has this response: the error is the call's, as without faultline.
        if (this.#proxy.aborted || this.#appResponded) return this.#fail(err);
        this.rt.outcome(label, false, this.exchange.span, this.route.circuit);
        if (this.#canRecover()) {
          this.#recover(`connection error ${(err as { code?: string }).code ?? err.name}`, undefined, [], () =>
            this.#fail(err),
          );
          return;
        }
        this.#fail(err);
      },
    };
  }

  /** An LLM answer guards can judge: any LLM protocol the span layer reads (not embeddings, not agent calls). */
  #llm(): boolean {
    return isLlmProtocol(this.exchange.protocol) && this.exchange.llmRequest !== undefined;
  }

  /** Judge a decoded answer (read, as the span layer's readers are, without its Content-Encoding). */
  #judge(status: number, headers: Record<string, string | string[] | undefined>, body: Buffer): Finding[] {
    const { 'content-encoding': _encoding, ...plain } = headers;
    const response = summarizeLlmResponse(
      this.exchange.protocol as LlmProtocol,
      { status, headers: plain, chunks: [body] },
      this.exchange,
    );
    const obs: LlmObservation = {
      kind: 'llm',
      spanId: this.exchange.span.spanContext().spanId,
      request: this.exchange.llmRequest!,
      response,
      hasContent: true,
    };
    return this.rt.judge(this.route, this.config, obs, this.taskId).failing;
  }

  /** The options to send again: the request body must be at hand (a streamed one once its copy is complete). */
  #replayable(opts: Dispatcher.DispatchOptions): Dispatcher.DispatchOptions | undefined {
    const body = opts.body;
    if (body == null || typeof body === 'string' || body instanceof Uint8Array) return opts;
    return this.exchange.requestBodyComplete ? { ...opts, body: this.exchange.requestBody } : undefined;
  }

  #canRecover(): boolean {
    if (this.#appResponded || this.#replayable(this.opts) === undefined) return false;
    const retry = this.route.retry;
    const canRetry = retry !== false && this.#retries < (retry?.maxRetries ?? 2);
    return canRetry || this.#hasFallback();
  }

  #hasFallback(): boolean {
    return (this.route.fallback ?? []).some((_, i) => !this.#triedFallbacks.has(i));
  }

  /** Retry (with back-off) while the policy allows, then fall back, then give up. */
  #recover(reason: string, retryAfter: number | undefined, findings: Finding[], deliverLast?: () => void): void {
    const retry = this.route.retry;
    const delay =
      retry === false
        ? undefined
        : nextDelay(this.#retries, retry ?? {}, this.rt.health.score(this.#currentLabel), retryAfter, this.rt.random);
    if (delay !== undefined) {
      this.#retries++;
      this.exchange.attempt++;
      recordGuard(
        this.exchange.span,
        'retry',
        this.#currentLabel,
        `${reason}; waiting ${Math.round(delay)} ms`,
        this.exchange.attempt,
      );
      this.rt.sleep(delay, this.#settled.signal).then(
        () => {
          if (this.#finished) return;
          if (this.#proxy.aborted) return this.#fail(this.#proxy.reason ?? new Error('aborted'));
          const again = this.#replayable(this.#currentOpts);
          if (again === undefined)
            return this.#fail(
              new GuardRejectedError(
                this.#label,
                [],
                `faultline guard could not resend the request on route ${this.#label}: its body is gone`,
              ),
            );
          this.#attempt(again);
        },
        (err: unknown) => this.#fail(err as Error),
      );
      return;
    }
    if (this.#tryFallback(reason)) return;
    this.#giveUp(findings, deliverLast, reason);
  }

  #tryFallback(reason: string): boolean {
    const choice = chooseFallback(
      this.#label,
      this.route.fallback,
      this.#triedFallbacks,
      this.rt.health,
      this.rt.circuits,
    );
    if (!choice) return false;
    this.#triedFallbacks.add(choice.index);
    this.#currentLabel = fallbackLabel(this.#label, choice.fallback);
    this.#retries = this.route.retry === false ? 0 : (this.route.retry?.maxRetries ?? 2); // a fallback gets one attempt
    this.exchange.attempt++;
    recordGuard(this.exchange.span, 'fallback', this.#currentLabel, reason, this.exchange.attempt);
    this.#attempt(fallbackOptions(this.#replayable(this.opts) ?? this.opts, this.exchange, choice.fallback));
    return true;
  }

  /** Recovery failed: reject with a typed error, or record and deliver what we have. */
  #giveUp(findings: Finding[], deliver: (() => void) | undefined, reason?: string): void {
    const why = reason ?? describe(findings);
    if (this.route.onFailure === 'reject' || !deliver) {
      // Without a response to hand over (a connection error), the call fails with our typed error.
      recordGuard(this.exchange.span, 'reject', this.#currentLabel, why, this.exchange.attempt);
      this.#fail(
        new GuardRejectedError(
          this.#label,
          findings,
          findings.length === 0 ? `faultline guard gave up on route ${this.#label}: ${why}` : undefined,
        ),
      );
      return;
    }
    recordGuard(this.exchange.span, 'record', this.#currentLabel, why, this.exchange.attempt);
    deliver();
  }

  #deliver(
    status: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage: string,
    body: Buffer,
    trailers: Record<string, string | string[] | undefined> | null,
  ): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#startApp();
    deliverResponse(this.handler, this.#proxy, { status, headers, statusMessage, body, trailers });
  }
}
