/**
 * The GenAI span layer: an undici interceptor that recognises LLM and inter-agent HTTP calls, wraps each in one span
 * (`chat gpt-4o`, `invoke_agent planner`, …), and reads what the application receives to record the outcome.
 *
 *     app fetch → genaiInterceptor → [steps: guard → fault] → previous global dispatcher → network
 *
 * The steps and the downstream dispatch run inside `context.with(spanContext)`, so instrumentation-undici's HTTP span
 * is our span's child and the steps see our span active. Our handler wraps the application's handler *outside* the
 * steps, so it sees exactly the chunks the application gets (after any fault or guard), and speaks the handler API
 * the application's handler speaks (legacy for Node 20/22's fetch) unless a step needs undici 7's. Anything not
 * recognised, and anything that goes wrong inside faultline, falls back to the untouched call.
 */
import { context, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import { logger, safely } from '../src/diag';
import { EXCHANGE } from './exchange';
import { callContext } from './frameworks/scope';
import { isLegacyHandler, toUndici7Handler, type LegacyHandler } from './handler-api';
import { parseJsonBody } from './json-body';
import type { LlmRequestHead, ProtocolModule, ProtocolStart, ResponseReader } from './internal-types';
import type { GenAiMetrics } from './metrics';
import { protocols as defaultProtocols } from './protocols';
import { serverPort } from './providers/request-attributes';
import { ATTR_ERROR_TYPE } from './semconv';
import type { AgentMessage, Exchange, ExchangeOutcome, Interceptor, LlmRequestSummary, Protocol } from './types';

const log = logger('interceptor');

type DispatchFn = (opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => boolean;
type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;

export interface GenAiInterceptorOptions {
  /** The tracer to use, resolved per call so `setTracerProvider` takes effect at once. */
  tracer: () => Tracer;
  /** Record message content (gen_ai.input/output.messages, …). */
  captureContent: () => boolean;
  /** Protocol modules, first match wins. Default: the built-in list. */
  protocols?: readonly ProtocolModule[];
  /** undici interceptors run inside the span layer, outermost first. */
  steps?: readonly Interceptor[];
  onExchangeEnd?: (exchange: Exchange, outcome: ExchangeOutcome) => void;
  /** `host` or `host:port` entries never intercepted. */
  ignoreHosts?: Iterable<string>;
  metrics?: GenAiMetrics;
  /** When it returns false every call passes through untouched (instrumentation disabled). */
  enabled?: () => boolean;
}

/** Credentials never reach a protocol module (and so never a span). */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-api-key', 'api-key', 'cookie', 'x-goog-api-key']);

/** Create the GenAI span layer. */
export function createGenAiInterceptor(options: GenAiInterceptorOptions): Interceptor {
  const modules = options.protocols ?? defaultProtocols;
  const ignore = new Set([...(options.ignoreHosts ?? [])].map((h) => h.toLowerCase()));
  const steps = options.steps ?? [];
  const routes: RouteCache = new Map();

  return (dispatch: DispatchFn): DispatchFn => {
    // Steps are composed once: steps[0] is the outermost, called first.
    const inner = steps.reduceRight<DispatchFn>((next, step) => step(next) as DispatchFn, dispatch);

    return function genaiInterceptor(opts: Dispatcher.DispatchOptions, handler: Handler): boolean {
      let match: Match | undefined;
      try {
        match = recognise(opts, modules, ignore, options.enabled, routes);
      } catch (err) {
        log.error('internal error in request matching (ignored, the application is unaffected):', err);
      }
      if (match === undefined) return dispatch(opts, handler);
      const parent = callContext(); // the active context, or the framework agent/tool span the call is made in
      const body = opts.body;
      const direct = directBody(body);
      if (direct !== undefined || body == null) {
        return run(opts, handler, match, parent, direct ?? EMPTY, false);
      }
      // A streamed request body (fetch gives an async iterable): buffer it, then re-supply it as a Buffer.
      bufferBody(body as AsyncIterable<unknown>).then(
        (buf) => {
          if (buf === undefined) return dispatch(opts, handler);
          return run(opts, handler, match, parent, buf, true);
        },
        (err: unknown) => reportError(handler, err as Error),
      );
      return true;
    };

    function run(
      opts: Dispatcher.DispatchOptions,
      handler: Handler,
      match: Match,
      parent: Context,
      buf: Buffer,
      rebody: boolean,
    ): boolean {
      let started: ReturnType<typeof startExchange>;
      try {
        started = startExchange(match, parent, buf, options);
      } catch (err) {
        log.error('internal error in span start (ignored, the application is unaffected):', err);
      }
      if (started === undefined) return dispatch(rebody ? { ...opts, body: buf } : opts, handler);
      const { exchange, start, reader } = started;
      let sendOpts: Dispatcher.DispatchOptions & { [EXCHANGE]?: Exchange };
      const rewritten = start.rewriteBody ? safely(log, 'body rewrite', () => rewrite(start, exchange), undefined) : undefined;
      if (rewritten !== undefined) {
        sendOpts = { ...opts, body: rewritten, headers: withContentLength(opts.headers, rewritten.length), [EXCHANGE]: exchange };
      } else {
        sendOpts = rebody ? { ...opts, body: buf, [EXCHANGE]: exchange } : { ...opts, [EXCHANGE]: exchange };
      }
      const tap = new ExchangeTap(exchange, reader, options);
      // Steps speak undici 7's handler API, so a legacy handler is adapted for them; with no step it is wrapped as is.
      const legacy = isLegacyHandler(handler);
      const wrapped: TappingHandler =
        legacy && steps.length === 0
          ? new LegacyExchangeHandler(handler as unknown as LegacyHandler, tap)
          : new ExchangeHandler(legacy ? toUndici7Handler(handler) : handler, tap);
      try {
        // Every undici dispatcher takes both handler APIs.
        return context.with(exchange.context, () => inner(sendOpts, wrapped as unknown as Handler));
      } catch (err) {
        // A step threw instead of reporting through the handler. Before anything reached the app, fall back to the
        // untouched call; after, report the error as the call's failure.
        log.error('a step inside the GenAI span layer threw (falling back to the untouched call):', err);
        if (!wrapped.touched) {
          tap.abandon();
          return dispatch(rebody ? { ...opts, body: buf } : opts, handler);
        }
        wrapped.fail(err as Error);
        return true;
      }
    }
  };
}

// ------------------------------------------------------------------------------------------------ recognition

interface Match {
  /** Every module whose `matches` accepted the request, in order: the first whose `start` accepts it wins. */
  modules: ProtocolModule[];
  url: URL;
  method: string;
  headers: Record<string, string>;
}

/**
 * Which modules accept a method + origin + path, and its parsed URL; null when none does (or the host is ignored).
 * Apps call the same few endpoints over and over, so this saves a URL parse and the module checks on every request,
 * ours or not. The URL is shared by the exchanges of one route: it is read, never written (Exchange.url is readonly).
 */
type RouteCache = Map<string, { url: URL; modules: ProtocolModule[] } | null>;
const MAX_ROUTES = 512;

function recognise(
  opts: Dispatcher.DispatchOptions,
  modules: readonly ProtocolModule[],
  ignore: Set<string>,
  enabled: (() => boolean) | undefined,
  routes: RouteCache,
): Match | undefined {
  if (enabled && !enabled()) return undefined;
  if (opts.upgrade) return undefined;
  const method = (opts.method ?? 'GET').toUpperCase();
  const origin = opts.origin;
  if (origin === undefined || opts.path === undefined) return undefined;
  const key = `${method} ${String(origin)} ${opts.path}`;
  let route = routes.get(key);
  if (route === undefined) {
    route = resolveRoute(method, new URL(opts.path, origin), modules, ignore);
    // A cheap bound for apps with unbounded paths (ids in the path or query): start over rather than track recency.
    if (routes.size >= MAX_ROUTES) routes.clear();
    routes.set(key, route);
  }
  return route === null ? undefined : { modules: route.modules, url: route.url, method, headers: headerRecord(opts.headers) };
}

function resolveRoute(method: string, url: URL, modules: readonly ProtocolModule[], ignore: Set<string>): { url: URL; modules: ProtocolModule[] } | null {
  if (ignore.size > 0 && (ignore.has(url.host.toLowerCase()) || ignore.has(url.hostname.toLowerCase()))) return null;
  const matching = modules.filter((module) => module.matches(method, url));
  return matching.length > 0 ? { url, modules: matching } : null;
}

function headerRecord(headers: Dispatcher.DispatchOptions['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers == null) return out;
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) for (const pair of headers as unknown as [unknown, unknown][]) putHeader(out, pair[0], pair[1]);
    else for (let i = 0; i + 1 < headers.length; i += 2) putHeader(out, headers[i], headers[i + 1]);
  } else if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const pair of headers as Iterable<[unknown, unknown]>) putHeader(out, pair[0], pair[1]);
  } else {
    for (const k of Object.keys(headers)) putHeader(out, k, (headers as Record<string, unknown>)[k]);
  }
  return out;
}

function putHeader(out: Record<string, string>, k: unknown, v: unknown): void {
  const key = String(k).toLowerCase();
  if (CREDENTIAL_HEADERS.has(key) || v == null) return;
  out[key] = Array.isArray(v) ? v.map(String).join(', ') : String(v);
}

/** content-length after a protocol module rewrote the body; other headers unchanged, in the caller's shape. */
function withContentLength(headers: Dispatcher.DispatchOptions['headers'], length: number): Dispatcher.DispatchOptions['headers'] {
  const value = String(length);
  if (headers == null) return { 'content-length': value };
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) {
      return (headers as unknown as [string, string][]).map(([k, v]) => [k, k.toLowerCase() === 'content-length' ? value : v]) as unknown as string[];
    }
    const flat = [...(headers as string[])];
    for (let i = 0; i + 1 < flat.length; i += 2) if (String(flat[i]).toLowerCase() === 'content-length') flat[i + 1] = value;
    return flat;
  }
  const entries = typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function'
    ? [...(headers as Iterable<[string, string]>)]
    : Object.entries(headers as Record<string, string>);
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of entries) if (k.toLowerCase() !== 'content-length') out[k] = v;
  out['content-length'] = value;
  return out;
}

// ------------------------------------------------------------------------------------------------ request body

const EMPTY = Buffer.alloc(0);

function directBody(body: unknown): Buffer | undefined {
  if (typeof body === 'string') return Buffer.from(body);
  if (Buffer.isBuffer(body)) return body;
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return undefined;
}

/** Collect an async-iterable body; undefined when the body is of a kind we do not read. */
async function bufferBody(body: AsyncIterable<unknown>): Promise<Buffer | undefined> {
  if (typeof (body as Partial<AsyncIterable<unknown>>)[Symbol.asyncIterator] !== 'function') return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of body) {
    if (typeof chunk === 'string') chunks.push(Buffer.from(chunk));
    else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    else throw new TypeError('request body chunk is neither a string nor bytes');
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
}

// ------------------------------------------------------------------------------------------------ span start

function startExchange(
  match: Match,
  parent: Context,
  buf: Buffer,
  options: GenAiInterceptorOptions,
): { exchange: Exchange; start: ProtocolStart; reader: ResponseReader } | undefined {
  let request: unknown;
  if (buf.length > 0) {
    try {
      request = parseJsonBody(buf);
    } catch {
      request = undefined;
    }
  }
  const capture = options.captureContent();
  let module: ProtocolModule | undefined;
  let start: ProtocolStart | undefined;
  for (const candidate of match.modules) {
    start = candidate.start(match.url, request, match.headers, capture);
    if (start !== undefined) {
      module = candidate;
      break;
    }
  }
  if (start === undefined || module === undefined) return undefined;
  const span = options.tracer().startSpan(start.name, { kind: start.kind, attributes: start.attributes }, parent);
  const exchange = new LiveExchange(module.protocol, span, trace.setSpan(parent, span), start, match, buf, request);
  let reader: ResponseReader;
  try {
    reader = module.reader(exchange, capture);
  } catch (err) {
    span.end();
    throw err;
  }
  return { exchange, start, reader };
}

/**
 * The Exchange of one call. `llmRequest` (messages in semconv shape) is built on first read, and `notes` on first
 * use: most calls with no steps and content capture off never touch either.
 */
class LiveExchange implements Exchange {
  readonly operation: string;
  readonly provider: string;
  readonly url: URL;
  readonly method: string;
  readonly stream: boolean;
  readonly message?: AgentMessage;
  attempt = 0;
  #notes: Map<string, unknown> | undefined;
  readonly #start: ProtocolStart;

  constructor(
    readonly protocol: Protocol,
    readonly span: Span,
    readonly context: Context,
    start: ProtocolStart,
    match: Match,
    readonly requestBody: Buffer,
    readonly request: unknown,
  ) {
    this.operation = start.operation;
    this.provider = start.provider;
    this.url = match.url;
    this.method = match.method;
    this.stream = start.stream;
    if (start.message) this.message = start.message;
    this.#start = start;
  }

  get llmRequest(): LlmRequestSummary | undefined {
    return this.#start.llmRequest;
  }

  /** What the metrics need, without building the whole request summary. */
  llmHead(): LlmRequestHead | undefined {
    return this.#start.llmHead ?? this.#start.llmRequest;
  }

  get notes(): Map<string, unknown> {
    return (this.#notes ??= new Map());
  }
}

function rewrite(start: ProtocolStart, exchange: Exchange): Buffer | undefined {
  const sc = exchange.span.spanContext();
  const traceparent = `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags.toString(16).padStart(2, '0')}`;
  return start.rewriteBody?.(traceparent, sc.traceState?.serialize());
}

// ------------------------------------------------------------------------------------------------ response side

function errorTypeOf(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { code?: unknown; name?: unknown; cause?: { code?: unknown } };
    if (typeof e.code === 'string' && e.code) return e.code;
    if (typeof e.cause?.code === 'string' && e.cause.code) return e.cause.code;
    if (typeof e.name === 'string' && e.name && e.name !== 'Error') return e.name;
  }
  return 'Error';
}

function isAbort(err: unknown, controller: Controller | null | undefined): boolean {
  if (controller?.aborted) return true;
  if (err && typeof err === 'object') {
    const e = err as { name?: unknown; code?: unknown };
    return e.name === 'AbortError' || e.code === 'UND_ERR_ABORTED' || e.code === 'ABORT_ERR';
  }
  return false;
}

/**
 * What the span layer does with a response, whichever handler API delivers it: feed the reader, and at the end set
 * the span's outcome, hand it to `onExchangeEnd`, end the span and record the metrics. Every step is guarded: an
 * error of ours is logged, never thrown into the application.
 */
class ExchangeTap {
  #ended = false;
  readonly #t0 = performance.now();

  constructor(
    readonly exchange: Exchange,
    private readonly reader: ResponseReader,
    private readonly options: GenAiInterceptorOptions,
  ) {}

  start(statusCode: number, headers: IncomingHttpHeaders): void {
    try {
      this.reader.onStart(statusCode, headers);
    } catch (err) {
      log.error('internal error in response start (ignored, the application is unaffected):', err);
    }
  }

  /** The hot path: no closure per chunk, just a guard. */
  data(chunk: Buffer): void {
    if (this.#ended) return;
    try {
      this.reader.onData(chunk);
    } catch (err) {
      log.error('internal error in response data (ignored, the application is unaffected):', err);
    }
  }

  complete(): void {
    try {
      this.reader.onEnd();
    } catch (err) {
      log.error('internal error in response end (ignored, the application is unaffected):', err);
    }
    this.#end(undefined);
  }

  fail(err: unknown, aborted: boolean): void {
    this.#end(aborted ? { aborted: true } : { errorType: errorTypeOf(err) }, aborted ? undefined : err);
  }

  /** End the span without an outcome (we are handing the call back untouched). */
  abandon(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.exchange.span.end();
  }

  #end(failure: { errorType?: string; aborted?: boolean } | undefined, err?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    const { exchange, reader, options } = this;
    const span = exchange.span;
    const durationMs = performance.now() - this.#t0;
    let result: ReturnType<ResponseReader['finish']> | undefined;
    try {
      result = reader.finish(exchange, failure, durationMs);
    } catch (e) {
      log.error('internal error in response finish (ignored, the application is unaffected):', e);
    }
    try {
      if (result) span.setAttributes(result.attributes);
      if (failure?.errorType !== undefined) {
        if (!result?.attributes[ATTR_ERROR_TYPE]) span.setAttribute(ATTR_ERROR_TYPE, failure.errorType);
        if (err instanceof Error) span.recordException(err);
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure.errorType });
      } else if (result?.error !== undefined) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.error });
      }
    } catch (e) {
      log.error('internal error in span status (ignored, the application is unaffected):', e);
    }
    const outcome: ExchangeOutcome = result?.outcome ?? fallbackOutcome(failure, durationMs);
    // Before span.end(): online detectors record their findings as events on this span.
    const onEnd = options.onExchangeEnd;
    if (onEnd) {
      try {
        onEnd(exchange, outcome);
      } catch (e) {
        log.error('internal error in onExchangeEnd (ignored, the application is unaffected):', e);
      }
    }
    try {
      span.end();
    } catch (e) {
      log.error('internal error in span end (ignored, the application is unaffected):', e);
    }
    if (options.metrics) {
      try {
        const head = exchange instanceof LiveExchange ? exchange.llmHead() : exchange.llmRequest;
        if (head) options.metrics.record(exchange.url, serverPort(exchange.url), head, outcome.response);
      } catch (e) {
        log.error('internal error in metrics (ignored, the application is unaffected):', e);
      }
    }
  }
}

/** The handler the layer puts in front of the application's: it forwards every callback first, then taps it. */
interface TappingHandler {
  /** A callback reached the application's handler: falling back to a fresh call is no longer possible. */
  readonly touched: boolean;
  /** Report a failure of the call (a step threw after the application was reached). */
  fail(err: Error): void;
}

/**
 * Wraps an application handler of undici 7's handler API (Node 24's fetch; Node 20/22's when steps run, adapted).
 * Callbacks are own properties so steps may spread and override it.
 */
class ExchangeHandler implements Handler, TappingHandler {
  touched = false;
  #controller: Controller | undefined;

  readonly onRequestStart: NonNullable<Handler['onRequestStart']>;
  readonly onRequestUpgrade: NonNullable<Handler['onRequestUpgrade']>;
  readonly onResponseStart: NonNullable<Handler['onResponseStart']>;
  readonly onResponseData: NonNullable<Handler['onResponseData']>;
  readonly onResponseEnd: NonNullable<Handler['onResponseEnd']>;
  readonly onResponseError: NonNullable<Handler['onResponseError']>;

  constructor(handler: Handler, tap: ExchangeTap) {
    this.onRequestStart = (controller, ctx) => {
      this.touched = true;
      this.#controller = controller;
      return handler.onRequestStart?.(controller, ctx);
    };
    this.onRequestUpgrade = (controller, statusCode, headers, socket) => {
      this.touched = true;
      return handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
    };
    this.onResponseStart = (controller, statusCode, headers, statusMessage) => {
      this.touched = true;
      tap.start(statusCode, headers as IncomingHttpHeaders);
      return handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
    };
    this.onResponseData = (controller, chunk) => {
      const r = handler.onResponseData?.(controller, chunk);
      tap.data(chunk);
      return r;
    };
    this.onResponseEnd = (controller, trailers) => {
      this.touched = true;
      try {
        return handler.onResponseEnd?.(controller, trailers);
      } finally {
        tap.complete();
      }
    };
    this.onResponseError = (controller, err) => {
      this.touched = true;
      try {
        return handler.onResponseError?.(controller, err);
      } finally {
        tap.fail(err, isAbort(err, controller ?? this.#controller));
      }
    };
  }

  fail(err: Error): void {
    this.onResponseError(null as unknown as Controller, err);
  }
}

/**
 * Wraps a legacy application handler and is itself one, for a downstream that takes legacy handlers (every undici
 * dispatcher does): with no steps, a call from Node 20/22's fetch crosses no handler adapter, and the raw response
 * headers reach the application exactly as the server sent them.
 */
class LegacyExchangeHandler implements LegacyHandler, TappingHandler {
  touched = false;

  constructor(
    private readonly handler: LegacyHandler,
    private readonly tap: ExchangeTap,
  ) {}

  onConnect(abort: (err?: Error) => void, context?: unknown): void {
    this.touched = true;
    this.handler.onConnect?.(abort, context);
  }

  onResponseStarted(): void {
    this.handler.onResponseStarted?.();
  }

  onBodySent(chunkSize: number, totalBytesSent: number): void {
    this.handler.onBodySent?.(chunkSize, totalBytesSent);
  }

  onRequestSent(): void {
    this.handler.onRequestSent?.();
  }

  onUpgrade(statusCode: number, headers: Buffer[] | string[] | null, socket: unknown): void {
    this.touched = true;
    this.handler.onUpgrade?.(statusCode, headers, socket);
  }

  onHeaders(statusCode: number, headers: Buffer[], resume: () => void, statusText: string): boolean {
    this.touched = true;
    this.tap.start(statusCode, bodyHeaders(headers));
    return this.handler.onHeaders?.(statusCode, headers, resume, statusText) ?? true;
  }

  onData(chunk: Buffer): boolean {
    const r = this.handler.onData?.(chunk) ?? true;
    this.tap.data(chunk);
    return r;
  }

  onComplete(trailers: string[] | null): void {
    this.touched = true;
    try {
      this.handler.onComplete?.(trailers);
    } finally {
      this.tap.complete();
    }
  }

  onError(err: Error): void {
    this.touched = true;
    try {
      if (!this.handler.onError) throw err;
      this.handler.onError(err);
    } finally {
      this.tap.fail(err, isAbort(err, undefined));
    }
  }

  fail(err: Error): void {
    this.onError(err);
  }
}

/** Report a failure to the application's handler, whichever API it speaks. */
function reportError(handler: Handler, err: Error): void {
  if (isLegacyHandler(handler)) (handler as unknown as LegacyHandler).onError?.(err);
  else handler.onResponseError?.(null as unknown as Controller, err);
}

/** The two headers a reader needs (content-type, content-encoding), read from undici's raw name/value list. */
function bodyHeaders(raw: readonly (Buffer | string)[] | null | undefined): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  if (!raw) return out;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as Buffer | string;
    // Cheap length check first: most headers are neither.
    if (name.length !== 12 && name.length !== 16) continue;
    const key = name.toString().toLowerCase();
    if ((key === 'content-type' || key === 'content-encoding') && out[key] === undefined) out[key] = String(raw[i + 1]);
  }
  return out;
}

function fallbackOutcome(failure: { errorType?: string } | undefined, durationMs: number): ExchangeOutcome {
  return failure?.errorType !== undefined ? { errorType: failure.errorType, durationMs } : { durationMs };
}

