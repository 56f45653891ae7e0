/**
 * The GenAI span layer: an undici interceptor that recognises LLM and inter-agent HTTP calls, wraps each in one span
 * (`chat gpt-4o`, `invoke_agent planner`, …), and reads what the application receives to record the outcome.
 *
 *     app fetch → genaiInterceptor → [steps: guard → fault] → previous global dispatcher → network
 *
 * A call is ours only on evidence: its method and URL (a module's `matches`), its headers (a JSON body, a module's
 * header checks) and, for modules that need it, a cheap look at its bytes (`sniff`) before they are parsed. Anything
 * else goes straight to the dispatcher, untouched and unbuffered. A request body is never held: one at hand is read in
 * place, a streamed one is pulled once (fetch hands over a string or buffer body as one chunk) and, when that is not
 * the whole of it, the rest flows to the server as the application produces it while a bounded copy is kept
 * (request-body.ts); the span then starts from what the URL says and is completed when the copy is.
 *
 * The steps and the downstream dispatch run inside `context.with(spanContext)`, so instrumentation-undici's HTTP span
 * is our span's child and the steps see our span active. Our handler wraps the application's handler *outside* the
 * steps, so it sees exactly the chunks the application gets (after any fault or guard), and speaks the handler API
 * the application's handler speaks (legacy for Node 20/22's fetch) unless a step needs undici 7's. An encoded response
 * is decoded for the reader by the one bounded, streaming decoder (src/wire/decompress.ts): the span ends when it has drained,
 * the application never waits for it. A redirect is a hop of the call, not a call: the span waits for the follow-up
 * request and reads its answer. Anything not recognised, and anything that goes wrong inside faultline, falls back
 * to the untouched call.
 */
import {
  context,
  propagation,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import { logger, safely } from '../src/diag';
import { BodyDecoder, isIdentity } from '../src/wire/decompress';
import { EXCHANGE } from './exchange';
import { callContext } from './frameworks/scope';
import { isLegacyHandler, SPEAKS_LEGACY, toUndici7Handler, type LegacyHandler } from './handler-api';
import { FollowUps, followUpKey } from './follow-ups';
import { parseJsonBody } from './json-body';
import {
  UNREAD,
  type LlmRequestHead,
  type ProtocolModule,
  type ProtocolStart,
  type ResponseReader,
} from './internal-types';
import type { GenAiMetrics } from './metrics';
import { protocols as defaultProtocols } from './protocols';
import { recognise, routeOf, type Ignored, type Match, type RouteCache } from './recognition';
import { headerValue, MAX_PARSE_BYTES } from './providers/response-body';
import {
  BodyCopy,
  completeAfterFirst,
  drain,
  pullFirst,
  requestBody,
  resumeStream,
  withContentLength,
  withHeaders,
  type FirstPull,
  type RequestBody,
} from './request-body';
import {
  ATTR_ERROR_TYPE,
  ATTR_FL_REQUEST_RETRY_COUNT,
  ATTR_FL_RESPONSE_BODY_BYTES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from './semconv';
import type {
  AgentMessage,
  DispatchFn,
  Exchange,
  ExchangeOutcome,
  Interceptor,
  LlmRequestSummary,
  Protocol,
} from './types';

const log = logger('interceptor');

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
  /**
   * OTLP export requests, as `host:port/path` (see install.ts `otlpExports`): never intercepted. Only these paths on
   * those hosts: an LLM gateway on the OTLP endpoint's host:port is instrumented like any other.
   */
  otlpExports?: Iterable<string>;
  metrics?: GenAiMetrics;
  /** When it returns false every call passes through untouched (instrumentation disabled). */
  enabled?: () => boolean;
  /**
   * Put the call's trace context (the propagators of OTEL_PROPAGATORS: `traceparent`, …) on the requests the layer
   * recognises, unless the application put its own there: so that an agent in another process continues the trace.
   * Off when an HTTP instrumentation below the layer propagates already (instrumentation-undici does).
   */
  propagate?: () => boolean;
}

/** Create the GenAI span layer. */
export function createGenAiInterceptor(options: GenAiInterceptorOptions): Interceptor {
  return createGenAiLayer(options).interceptor;
}

/**
 * The GenAI span layer, and a cheap check of whether a method + origin + path may be one of its calls (the route cache
 * the layer itself consults): for a client layer that would otherwise have to follow every request (node-http.ts).
 */
export interface GenAiLayer {
  readonly interceptor: Interceptor;
  mayTake(method: string, origin: string, path: string): boolean;
}

export function createGenAiLayer(options: GenAiInterceptorOptions): GenAiLayer {
  const modules = options.protocols ?? defaultProtocols;
  const ignore = new Set([...(options.ignoreHosts ?? [])].map((h) => h.toLowerCase()));
  const otlp = new Set(options.otlpExports ?? []);
  const steps = options.steps ?? [];
  const routes: RouteCache = new Map();
  const followUps = new FollowUps<ExchangeTap>();

  const ignored: Ignored = { hosts: ignore, otlp };
  const mayTake = (method: string, origin: string, path: string): boolean =>
    (!options.enabled || options.enabled()) && routeOf(method, origin, path, modules, ignored, routes) !== null;
  const interceptor = (dispatch: DispatchFn): DispatchFn => {
    // Steps are composed once: steps[0] is the outermost, called first.
    const inner = steps.reduceRight<DispatchFn>((next, step) => step(next) as DispatchFn, dispatch);

    return function genaiInterceptor(opts: Dispatcher.DispatchOptions, handler: Handler): boolean {
      if (followUps.size > 0) {
        const parked = safely(log, 'redirect follow-up', () => followUps.take(opts), undefined);
        if (parked !== undefined) return follow(parked, opts, handler);
      }
      let match: Match | undefined;
      try {
        match = recognise(opts, modules, ignored, options.enabled, routes);
      } catch (err) {
        log.error('internal error in request matching (ignored, the application is unaffected):', err);
      }
      if (match === undefined) return dispatch(opts, handler);
      const t0 = performance.now();
      const parent = callContext(); // the active context, or the framework agent/tool span the call is made in
      const body = requestBody(opts.body);
      if (body.kind === 'opaque') return dispatch(opts, handler);
      // No step decides on the request before it leaves: send it first and read it after. The span starts from what
      // the URL says (a module that needs the body to tell, JSON-RPC, is read first instead).
      if (steps.length === 0) {
        const early = safely(log, 'span start', () => openExchange(match, parent, t0, undefined, options), undefined);
        if (early !== undefined) return sendFirst(opts, handler, early, body);
      }
      if (body.kind === 'bytes') return begin(opts, handler, match, parent, t0, body.bytes, undefined);
      const m = match;
      const iterator = body.iterator;
      // A streamed body of unknown length is never waited for: it flows, and only what the URL says starts the span.
      if (m.headers['content-length'] === undefined)
        return begin(opts, handler, m, parent, t0, undefined, { first: undefined, iterator });
      // Of known length (fetch's string and buffer bodies): its first pull tells whether it is at hand whole.
      void pullFirst(iterator).then((first) => {
        let whole: Buffer | undefined;
        try {
          whole = completeAfterFirst(first, m.headers['content-length']);
        } catch (err) {
          log.error('internal error in request body reading (ignored, the application is unaffected):', err);
          return dispatch({ ...opts, body: resumeStream(first, iterator) }, handler);
        }
        if (whole === undefined) return begin(opts, handler, m, parent, t0, undefined, { first, iterator });
        if (!('error' in first) && !first.done) drain(iterator);
        return begin({ ...opts, body: whole }, handler, m, parent, t0, whole, undefined);
      });
      return true;
    };

    /**
     * Open the exchange and send the call. `whole` is the request body when it is at hand (`opts.body` then carries
     * it); `flowing` is a streamed body still arriving, whose first pull was taken.
     */
    function begin(
      opts: Dispatcher.DispatchOptions,
      handler: Handler,
      match: Match,
      parent: Context,
      t0: number,
      whole: Buffer | undefined,
      flowing: { first: FirstPull | undefined; iterator: AsyncIterator<unknown> } | undefined,
    ): boolean {
      // The untouched call, should we hand it back: a flowing body resumes where its first pull (if any) left it.
      const untouched = (): Dispatcher.DispatchOptions =>
        flowing?.first !== undefined ? { ...opts, body: resumeStream(flowing.first, flowing.iterator) } : opts;
      let opened: LiveExchange | undefined;
      try {
        opened = openExchange(match, parent, t0, whole, options);
      } catch (err) {
        log.error('internal error in span start (ignored, the application is unaffected):', err);
      }
      if (opened === undefined) return dispatch(untouched(), handler);
      const exchange = opened;
      let sendOpts: Dispatcher.DispatchOptions & { [EXCHANGE]?: Exchange };
      if (flowing !== undefined) {
        const copy = new BodyCopy((buf) => safely(log, 'request body', () => exchange.bodyRead(buf), undefined));
        sendOpts = { ...opts, body: resumeStream(flowing.first, flowing.iterator, copy), [EXCHANGE]: exchange };
      } else {
        const rewritten = exchange.rewriteBody
          ? safely(log, 'body rewrite', () => rewrite(exchange), undefined)
          : undefined;
        sendOpts =
          rewritten !== undefined
            ? {
                ...opts,
                body: rewritten,
                headers: withContentLength(opts.headers, rewritten.length),
                [EXCHANGE]: exchange,
              }
            : { ...opts, [EXCHANGE]: exchange };
      }
      const tap = new ExchangeTap(exchange, options, followUps);
      // The body generator is not started until the dispatcher pulls it, so the fallback may still send it.
      return send(sendOpts, handler, tap, () => (flowing ? { ...opts, body: sendOpts.body } : opts));
    }

    /**
     * Send a call whose span has started from its URL, then read its body: one at hand (or a streamed one of known
     * length, taken from its first pull and sent as those bytes when they are all of it) at the span's end, when the
     * application has had its answer (a call that fails before its body is sent still gets its model); any other as
     * it flows past.
     */
    function sendFirst(
      opts: Dispatcher.DispatchOptions,
      handler: Handler,
      exchange: LiveExchange,
      body: RequestBody,
    ): boolean {
      const tap = new ExchangeTap(exchange, options, followUps);
      const read = (buf: Buffer): void => safely(log, 'request body', () => exchange.bodyRead(buf), undefined);
      if (body.kind !== 'stream') {
        const sent = send(opts, handler, tap, () => opts);
        if (body.kind === 'bytes') exchange.readLater(() => read(body.bytes));
        return sent;
      }
      const length = exchange.contentLength;
      if (length === undefined) {
        const sendOpts = { ...opts, body: resumeStream(undefined, body.iterator, new BodyCopy(read)) };
        return send(sendOpts, handler, tap, () => sendOpts);
      }
      // Its first chunk is at hand a microtask later: when that is all of it (fetch's string and buffer bodies), the
      // dispatcher gets those bytes, as it would a body at hand, instead of a stream it would pull through one more
      // async generator; the stream is run to its end alongside. Otherwise the stream resumes where the pull left it.
      void pullFirst(body.iterator).then((f) => {
        const whole = safely(log, 'request body', () => completeAfterFirst(f, length), undefined);
        if (whole === undefined) {
          const resumed = { ...opts, body: resumeStream(f, body.iterator) };
          send(resumed, handler, tap, () => resumed);
          return;
        }
        if (!('error' in f) && !f.done) drain(body.iterator);
        const sendOpts = { ...opts, body: whole };
        send(sendOpts, handler, tap, () => sendOpts);
        exchange.readLater(() => read(whole));
      });
      return true;
    }

    /** The request that follows a redirect hop of `tap`'s call: same span, the next hop's answer is read. */
    function follow(tap: ExchangeTap, opts: Dispatcher.DispatchOptions, handler: Handler): boolean {
      tap.follow();
      const sendOpts: Dispatcher.DispatchOptions & { [EXCHANGE]?: Exchange } = { ...opts, [EXCHANGE]: tap.exchange };
      return send(sendOpts, handler, tap, () => opts);
    }

    function send(
      sendOpts: Dispatcher.DispatchOptions,
      handler: Handler,
      tap: ExchangeTap,
      untouched: () => Dispatcher.DispatchOptions,
    ): boolean {
      // Steps speak undici 7's handler API, so a legacy handler gets it too, adapted only if a step uses it (one that
      // leaves the call alone hands ours on to a legacy dispatcher as it is); with no step it is wrapped as is.
      const legacy = isLegacyHandler(handler);
      const wrapped: TappingHandler = legacy
        ? steps.length === 0
          ? new LegacyExchangeHandler(handler as unknown as LegacyHandler, tap)
          : new BothApisExchangeHandler(handler as unknown as LegacyHandler, tap)
        : new ExchangeHandler(handler, tap);
      if (options.propagate?.())
        sendOpts = safely(log, 'trace context', () => withTraceContext(sendOpts, tap.exchange.context), sendOpts);
      try {
        // Every undici dispatcher takes both handler APIs.
        return context.with(tap.exchange.context, () => inner(sendOpts, wrapped as unknown as Handler));
      } catch (err) {
        // A step threw instead of reporting through the handler. Before anything reached the app, fall back to the
        // untouched call; after, report the error as the call's failure.
        log.error('a step inside the GenAI span layer threw (falling back to the untouched call):', err);
        if (!wrapped.touched) {
          tap.abandon();
          return dispatch(untouched(), handler);
        }
        wrapped.fail(err as Error);
        return true;
      }
    }
  };
  return { interceptor: interceptor as Interceptor, mayTake };
}

/** `opts` with the trace context of `ctx` in its headers, unless the application propagates its own. */
function withTraceContext(opts: Dispatcher.DispatchOptions, ctx: Context): Dispatcher.DispatchOptions {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  if (Object.keys(carrier).length === 0) return opts;
  const headers = withHeaders(opts.headers, carrier, 'absent');
  return headers === opts.headers ? opts : { ...opts, headers };
}

// ------------------------------------------------------------------------------------------------ span start

/** Attributes of a span started before its body was read: only what the URL and headers can have told. */
const URL_ATTRIBUTES = [
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  ATTR_FL_REQUEST_RETRY_COUNT,
];

function parsed(buf: Buffer): unknown {
  if (buf.length === 0) return undefined;
  try {
    return parseJsonBody(buf);
  } catch {
    return undefined;
  }
}

/**
 * The exchange of a recognised call, its span started; undefined when no module's `start` takes it. With the body at
 * hand (`whole`) the modules decide from it (a module's `sniff` first, so a body none can take is never parsed);
 * without it, from the URL and headers alone.
 */
function openExchange(
  match: Match,
  parent: Context,
  t0: number,
  whole: Buffer | undefined,
  options: GenAiInterceptorOptions,
): LiveExchange | undefined {
  const capture = options.captureContent();
  let request: unknown;
  let read = false;
  const { modules, first } = match;
  for (let k = first; k < modules.length; k++) {
    const module = modules[k] as ProtocolModule;
    if (k > first && !module.matches(match.method, match.url, match.headers)) continue;
    let start: ProtocolStart | undefined;
    if (whole === undefined) {
      start = module.start(match.url, UNREAD, match.headers, capture);
      // In place (each start is a fresh object): a copy would also run a lazy `llmRequest` getter.
      if (start !== undefined) start.attributes = pick(start.attributes, URL_ATTRIBUTES);
    } else {
      if (module.sniff !== undefined && !module.sniff(whole, match.url)) continue;
      if (!read) {
        request = parsed(whole);
        read = true;
      }
      start = module.start(match.url, request, match.headers, capture);
    }
    if (start === undefined) continue;
    const span = options
      .tracer()
      .startSpan(start.name, { kind: start.kind, attributes: start.attributes, startTime: t0 }, parent);
    return new LiveExchange(
      module,
      span,
      trace.setSpan(parent, span),
      parent,
      start,
      match,
      whole,
      request,
      t0,
      capture,
    );
  }
  return undefined;
}

function pick(attributes: Attributes, keys: readonly string[]): Attributes {
  const out: Attributes = {};
  for (const k of keys) if (attributes[k] !== undefined) out[k] = attributes[k];
  return out;
}

/**
 * The Exchange of one call. `llmRequest` (messages in semconv shape) is built on first read, and `notes` on first
 * use: most calls with no steps and content capture off never touch either. For a streamed request body the request
 * fields fill in once the body has flowed past (`bodyRead`).
 */
class LiveExchange implements Exchange {
  readonly protocol: Protocol;
  readonly url: URL;
  readonly method: string;
  attempt = 0;
  /** Redirect hops followed within this call. */
  redirects = 0;
  /** The span has ended (or is about to): nothing more is set on it. */
  closed = false;
  #notes: Map<string, unknown> | undefined;
  #start: ProtocolStart;
  #body: Buffer;
  #request: unknown;
  #complete: boolean;

  constructor(
    readonly module: ProtocolModule,
    readonly span: Span,
    readonly context: Context,
    /** The context the call was made in. */
    readonly parent: Context,
    start: ProtocolStart,
    private readonly match: Match,
    body: Buffer | undefined,
    request: unknown,
    readonly t0: number,
    readonly capture: boolean,
  ) {
    this.protocol = module.protocol;
    this.url = match.url;
    this.method = match.method;
    this.#start = start;
    this.#body = body ?? EMPTY;
    this.#request = request;
    this.#complete = body !== undefined;
  }

  get operation(): string {
    return this.#start.operation;
  }

  get provider(): string {
    return this.#start.provider;
  }

  get stream(): boolean {
    return this.#start.stream;
  }

  get message(): AgentMessage | undefined {
    return this.#start.message;
  }

  get requestBody(): Buffer {
    return this.#body;
  }

  get request(): unknown {
    return this.#request;
  }

  get llmRequest(): LlmRequestSummary | undefined {
    return this.#start.llmRequest;
  }

  /** The whole request body is known (at hand from the start, or copied as it flowed). */
  get requestBodyComplete(): boolean {
    return this.#complete;
  }

  get rewriteBody(): ProtocolStart['rewriteBody'] {
    return this.#start.rewriteBody;
  }

  /** What the metrics need, without building the whole request summary. */
  llmHead(): LlmRequestHead | undefined {
    return this.#start.llmHead ?? this.#start.llmRequest;
  }

  get notes(): Map<string, unknown> {
    return (this.#notes ??= new Map());
  }

  /** The request's declared length, when it has one. */
  get contentLength(): string | undefined {
    return this.match.headers['content-length'];
  }

  get port(): number {
    return this.match.port;
  }

  #laterRead: (() => void) | undefined;

  /**
   * Read the request body at the span's end, or when flushExchanges asks (a process about to exit ends the spans
   * still open as they are): nothing else reads what the body says before (no step runs on a call whose body is read
   * late), so a turn of the event loop of its own per call bought nothing.
   */
  readLater(read: () => void): void {
    this.#laterRead = read;
    unreadRequests.add(this);
  }

  /** The read `readLater` put off, now (the span is ending). */
  readNow(): void {
    const read = this.#laterRead;
    if (read === undefined) return;
    this.dropRead();
    read();
  }

  /** The span ends without its request read (the call is handed back untouched). */
  dropRead(): void {
    this.#laterRead = undefined;
    unreadRequests.delete(this);
  }

  /** A streamed request body has flowed past in full: complete the span's start from it. */
  bodyRead(body: Buffer): void {
    if (this.closed) return;
    this.#body = body;
    this.#complete = true;
    this.#request = parsed(body);
    const start = this.module.start(this.url, this.#request, this.match.headers, this.capture);
    if (start === undefined) return;
    this.#start = start;
    this.span.updateName(start.name);
    this.span.setAttributes(start.attributes);
  }
}

const EMPTY = Buffer.alloc(0);

function rewrite(exchange: LiveExchange): Buffer | undefined {
  const sc = exchange.span.spanContext();
  const traceparent = `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags.toString(16).padStart(2, '0')}`;
  return exchange.rewriteBody?.(traceparent, sc.traceState?.serialize());
}

/** The most of a response's chunks held unread before they are read (the rest of the time they wait for its end). */
const READ_BATCH_BYTES = 64 * 1024;

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

/**
 * Whether a call's error is a cancel (recorded as `faultline.response.aborted`, not an error of the call) or a failure
 * (ERROR with its `error.type`), judged by the error alone: when the application aborts, undici reports the abort's
 * reason as the call's error, so a plain `abort()` is an AbortError (a cancel) and `AbortSignal.timeout` a
 * TimeoutError (the client's timeout), an `abort(err)` that error. A step that holds the call (an injected hang, a
 * stall, a back-off) reports the same reason through its proxy controller, which is aborted by then whatever the
 * reason: so the controller's state is not asked, and a call the application gave up on is recorded the same way
 * whether a real server or a fault held it.
 */
function isAbort(err: unknown): boolean {
  if (err && typeof err === 'object') {
    const e = err as { name?: unknown; code?: unknown };
    return e.name === 'AbortError' || e.code === 'UND_ERR_ABORTED' || e.code === 'ABORT_ERR';
  }
  return false;
}

type Failure = { errorType?: string; aborted?: boolean } | undefined;

/** Taps with response work still to do: drained at once by `flushExchanges`. */
const pendingTaps = new Set<ExchangeTap>();
/** Calls whose request body is read at their span's end (`readLater`): read at once by `flushExchanges`. */
const unreadRequests = new Set<LiveExchange>();
/** Taps whose call has ended (or waits for a redirect's follow-up) and whose span has not ended yet. */
const endingTaps = new Set<ExchangeTap>();

/** For tests: how many calls the layer still holds (pending reads, ending spans), to show nothing of a call leaks. */
export function heldExchangeCount(): number {
  return pendingTaps.size + endingTaps.size + unreadRequests.size;
}

/**
 * Do now the reading deferred to after the application had its callbacks, for every call (the request bodies read at
 * their span's end, the responses), so the spans of calls that have ended do end now, and those still open have what
 * their request says: for a process about to exit (`process.exit()` runs no more timers) and before a flush. An
 * encoded body's decoder cannot be drained synchronously: see `settleExchanges`.
 */
export function flushExchanges(): void {
  for (const exchange of [...unreadRequests]) exchange.readNow();
  for (const tap of [...pendingTaps]) tap.drain();
}

/**
 * Resolves once every call that has ended has its span ended too (the reading a span waits for, after the application
 * had its answer, is done; a decoder drained; a redirect hop's wait for its follow-up over), or after `timeoutMs`.
 * Call it before flushing the SDK: a span ends a moment after the application got its answer.
 */
export async function settleExchanges(timeoutMs = 1000): Promise<void> {
  flushExchanges();
  const deadline = performance.now() + timeoutMs;
  while (endingTaps.size > 0 && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1));
    flushExchanges();
  }
}

/**
 * What the span layer does with a response, whichever handler API delivers it: feed the reader (through the decoder
 * when the body is encoded), and at the end set the span's outcome, hand it to `onExchangeEnd`, end the span at the
 * time the application had its last callback, and record the metrics. None of that runs between the network and the
 * application: a callback only notes what arrived and when, and the reading runs after the application has had it
 * (setImmediate: after the microtasks and ticks in which the application takes the chunk). Every step is guarded: an
 * error of ours is logged, never thrown into the application.
 */
class ExchangeTap {
  /** This hop had its last callback (or was abandoned): later ones are ignored. */
  #closed = false;
  #reader: ResponseReader;
  #decoder: BodyDecoder | undefined;
  /**
   * Bytes of an encoded body as they came off the wire (what faultline.response.body_bytes counts). Set iff the body
   * is encoded: it then reaches the reader only through the decoder (none of it, for a coding we cannot decode).
   */
  #wireBytes: number | undefined;
  /** When this hop answered with a redirect: the follow-up request it expects. */
  #followUp: string | undefined;
  /** When the first body byte reached the application (the time to first chunk is the app's, not the reader's). */
  #firstChunkAt: number | undefined;
  // What arrived and is not read yet.
  #start: [number, IncomingHttpHeaders] | undefined;
  #chunks: Buffer[] = [];
  /** Bytes in `#chunks`. */
  #heldBytes = 0;
  #end: { failure: Failure; err: unknown; endTime: number } | undefined;
  #scheduled = false;
  readonly #drain = (): void => this.drain();

  constructor(
    readonly exchange: LiveExchange,
    private readonly options: GenAiInterceptorOptions,
    private readonly followUps: FollowUps<ExchangeTap>,
  ) {
    this.#reader = this.#newReader();
  }

  #newReader(): ResponseReader {
    const exchange = this.exchange;
    try {
      return exchange.module.reader(exchange, exchange.capture);
    } catch (err) {
      log.error('internal error in response reader (ignored, the application is unaffected):', err);
      return NO_READER;
    }
  }

  start(statusCode: number, headers: IncomingHttpHeaders): void {
    // Known now (not at the drain): the follow-up request may be sent before the drain runs.
    if (statusCode >= 300 && statusCode < 400) {
      const { exchange } = this;
      this.#followUp = safely(
        log,
        'redirect',
        () => followUpKey(exchange.method, exchange.url, statusCode, headerValue(headers, 'location')),
        undefined,
      );
    }
    // Read with the first batch of chunks or at the end, in the same turn of the event loop (flushExchanges reads it
    // at once): nothing needs it sooner.
    this.#start = [statusCode, headers];
    pendingTaps.add(this);
  }

  /**
   * The hot path: note the chunk, read it later. A stream's chunks are read in batches (at its end, or once
   * READ_BATCH_BYTES are held): one turn of the event loop per chunk cost more than the reading it deferred, and
   * nothing before the span's end needs them read. They stay pending, so `flushExchanges` reads them at once.
   */
  data(chunk: Buffer): void {
    if (this.#closed) return;
    this.#firstChunkAt ??= performance.now();
    this.#chunks.push(chunk);
    this.#heldBytes += chunk.length;
    if (this.#heldBytes >= READ_BATCH_BYTES) this.#schedule();
    else pendingTaps.add(this);
  }

  complete(): void {
    this.#close(undefined);
  }

  fail(err: unknown, aborted: boolean): void {
    this.#close(aborted ? { aborted: true } : { errorType: errorTypeOf(err) }, aborted ? undefined : err);
  }

  /** End the span without an outcome (we are handing the call back untouched). */
  abandon(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#start = undefined;
    this.#chunks = [];
    pendingTaps.delete(this);
    endingTaps.delete(this);
    this.exchange.closed = true;
    this.exchange.dropRead();
    this.#decoder?.destroy();
    this.exchange.span.end();
  }

  /** The follow-up request of this call's redirect is being sent: its response is the call's answer. */
  follow(): void {
    this.drain();
    endingTaps.delete(this);
    this.#decoder?.destroy();
    this.exchange.redirects++;
    this.#closed = false;
    this.#followUp = undefined;
    this.#wireBytes = undefined;
    this.#decoder = undefined;
    this.#firstChunkAt = undefined;
    this.#reader = this.#newReader();
  }

  #close(failure: Failure, err?: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    // The application has had its last callback: that is when the call ended, whatever we still do.
    const endTime = performance.now();
    endingTaps.add(this);
    const followUp = this.#followUp;
    if (failure === undefined && followUp !== undefined) {
      // Parked now, not at the drain: the client sends the follow-up request within a few ticks.
      this.followUps.park(followUp, this, () => {
        this.drain();
        this.#settle(undefined, undefined, endTime);
      });
      return;
    }
    this.#end = { failure, err, endTime };
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    pendingTaps.add(this);
    setImmediate(this.#drain);
  }

  /** Read what arrived: the response start, the chunks, and at the end the outcome. */
  drain(): void {
    this.#scheduled = false;
    pendingTaps.delete(this);
    const start = this.#start;
    if (start !== undefined) {
      this.#start = undefined;
      this.#readStart(start[0], start[1]);
    }
    if (this.#chunks.length > 0) {
      const chunks = this.#chunks;
      this.#chunks = [];
      this.#heldBytes = 0;
      for (const chunk of chunks) this.#readChunk(chunk);
    }
    const end = this.#end;
    if (end !== undefined) {
      this.#end = undefined;
      this.#settle(end.failure, end.err, end.endTime);
    }
  }

  #readStart(statusCode: number, headers: IncomingHttpHeaders): void {
    try {
      let seen = headers;
      const encoding = headerValue(headers, 'content-encoding');
      if (encoding !== undefined && !isIdentity(encoding)) {
        seen = { ...headers };
        delete seen['content-encoding'];
        // One byte past what a reader parses, so it can tell the body was too big.
        this.#decoder = BodyDecoder.create(encoding, (b) => this.#read(b), { maxOutputBytes: MAX_PARSE_BYTES + 1 });
        this.#wireBytes = 0;
      }
      this.#reader.onStart(statusCode, seen);
    } catch (err) {
      log.error('internal error in response start (ignored, the application is unaffected):', err);
    }
  }

  #readChunk(chunk: Buffer): void {
    if (this.#wireBytes === undefined) return this.#read(chunk);
    this.#wireBytes += chunk.length;
    this.#decoder?.write(chunk);
  }

  #read(chunk: Buffer): void {
    try {
      this.#reader.onData(chunk);
    } catch (err) {
      log.error('internal error in response data (ignored, the application is unaffected):', err);
    }
  }

  #settle(failure: Failure, err: unknown, endTime: number): void {
    const decoder = this.#decoder;
    this.#decoder = undefined;
    if (decoder === undefined) return this.#finish(failure, err, endTime);
    // The decoder drains on zlib's thread pool; the span ends after it (the application is not waiting).
    void decoder.end().then(() => this.#finish(failure, err, endTime));
  }

  #finish(failure: Failure, err: unknown, endTime: number): void {
    const { exchange, options } = this;
    const reader = this.#reader;
    exchange.readNow();
    exchange.closed = true;
    const span = exchange.span;
    const durationMs = endTime - exchange.t0;
    if (failure === undefined) {
      try {
        reader.onEnd();
      } catch (e) {
        log.error('internal error in response end (ignored, the application is unaffected):', e);
      }
    }
    let result: ReturnType<ResponseReader['finish']> | undefined;
    try {
      result = reader.finish(exchange, failure, durationMs);
    } catch (e) {
      log.error('internal error in response finish (ignored, the application is unaffected):', e);
    }
    if (result) this.#realTimes(result);
    try {
      if (result) span.setAttributes(result.attributes);
      const resends = exchange.redirects + exchange.attempt;
      if (resends > 0) span.setAttribute(ATTR_HTTP_REQUEST_RESEND_COUNT, resends);
      if (failure?.errorType !== undefined) {
        if (!result?.attributes[ATTR_ERROR_TYPE]) span.setAttribute(ATTR_ERROR_TYPE, failure.errorType);
        if (err instanceof Error) span.recordException(err, endTime);
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure.errorType });
      } else if (result?.error !== undefined) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.error });
      }
    } catch (e) {
      log.error('internal error in span status (ignored, the application is unaffected):', e);
    }
    const outcome: ExchangeOutcome = result?.outcome ?? fallbackOutcome(failure, durationMs);
    // Before span.end(): online detectors record their findings as events on this span. A redirect the client did
    // not follow is no answer of a model: there is nothing to detect in it.
    const onEnd = options.onExchangeEnd;
    if (onEnd && this.#followUp === undefined) {
      try {
        onEnd(exchange, outcome);
      } catch (e) {
        log.error('internal error in onExchangeEnd (ignored, the application is unaffected):', e);
      }
    }
    try {
      span.end(endTime);
    } catch (e) {
      log.error('internal error in span end (ignored, the application is unaffected):', e);
    }
    endingTaps.delete(this);
    if (options.metrics) {
      try {
        const head = exchange.llmHead();
        if (head) options.metrics.record(exchange.url, exchange.port, head, outcome.response);
      } catch (e) {
        log.error('internal error in metrics (ignored, the application is unaffected):', e);
      }
    }
  }

  /**
   * What the reader measured when it read, replaced by what the application saw: the wire size of an encoded body,
   * and the time its first chunk reached the application (the reader reads later).
   */
  #realTimes(result: ReturnType<ResponseReader['finish']>): void {
    const { attributes } = result;
    const response = result.outcome.response;
    if (this.#wireBytes !== undefined) {
      attributes[ATTR_FL_RESPONSE_BODY_BYTES] = this.#wireBytes;
      if (response) response.bodyBytes = this.#wireBytes;
    }
    if (this.#firstChunkAt !== undefined) {
      const ms = this.#firstChunkAt - this.exchange.t0;
      if (attributes[ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] !== undefined)
        attributes[ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = ms / 1000;
      if (response?.stream?.timeToFirstChunkMs !== undefined) response.stream.timeToFirstChunkMs = ms;
    }
  }
}

/** Stands in for a reader that failed to build: the span still ends, with what the request said. */
const NO_READER: ResponseReader = {
  onStart() {},
  onData() {},
  onEnd() {},
  finish: (_exchange, failure, durationMs) => ({ attributes: {}, outcome: fallbackOutcome(failure, durationMs) }),
};

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

  readonly onRequestStart: NonNullable<Handler['onRequestStart']>;
  readonly onRequestUpgrade: NonNullable<Handler['onRequestUpgrade']>;
  readonly onResponseStart: NonNullable<Handler['onResponseStart']>;
  readonly onResponseData: NonNullable<Handler['onResponseData']>;
  readonly onResponseEnd: NonNullable<Handler['onResponseEnd']>;
  readonly onResponseError: NonNullable<Handler['onResponseError']>;

  constructor(handler: Handler, tap: ExchangeTap) {
    this.onRequestStart = (controller, ctx) => {
      this.touched = true;
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
        tap.fail(err, isAbort(err));
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
    protected readonly handler: LegacyHandler,
    protected readonly tap: ExchangeTap,
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
    this.tap.start(statusCode, bodyHeaders(headers, statusCode));
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
      this.tap.fail(err, isAbort(err));
    }
  }

  fail(err: Error): void {
    this.onError(err);
  }
}

/**
 * A legacy application handler behind steps: it speaks both handler APIs. The steps see undici 7's (adapted on first
 * use, as ExchangeHandler over `toUndici7Handler`); a step that does not act on the call hands it on, and a legacy
 * dispatcher below (Node 20/22's) then calls its legacy methods directly, so the call crosses no adapter in either
 * direction (`toLegacyHandler` passes it as it is). The tap hears whichever API delivers the response.
 */
class BothApisExchangeHandler extends LegacyExchangeHandler implements Handler {
  // On the prototype, not the instance: a step's copy of the handler (`{ ...handler, onResponseData }`) has only the
  // undici 7 callbacks, and must be adapted.
  get [SPEAKS_LEGACY](): boolean {
    return true;
  }

  #adapted: ExchangeHandler | undefined;

  #modern(): ExchangeHandler {
    return (this.#adapted ??= new ExchangeHandler(toUndici7Handler(this.handler as unknown as Handler), this.tap));
  }

  // As ExchangeHandler's: every callback but the data one marks the call touched.
  readonly onRequestStart: NonNullable<Handler['onRequestStart']> = (controller, ctx) => {
    this.touched = true;
    return this.#modern().onRequestStart(controller, ctx);
  };
  readonly onRequestUpgrade: NonNullable<Handler['onRequestUpgrade']> = (controller, statusCode, headers, socket) => {
    this.touched = true;
    return this.#modern().onRequestUpgrade(controller, statusCode, headers, socket);
  };
  readonly onResponseStart: NonNullable<Handler['onResponseStart']> = (
    controller,
    statusCode,
    headers,
    statusMessage,
  ) => {
    this.touched = true;
    return this.#modern().onResponseStart(controller, statusCode, headers, statusMessage);
  };
  readonly onResponseData: NonNullable<Handler['onResponseData']> = (controller, chunk) =>
    this.#modern().onResponseData(controller, chunk);
  readonly onResponseEnd: NonNullable<Handler['onResponseEnd']> = (controller, trailers) => {
    this.touched = true;
    return this.#modern().onResponseEnd(controller, trailers);
  };
  readonly onResponseError: NonNullable<Handler['onResponseError']> = (controller, err) => {
    this.touched = true;
    return this.#modern().onResponseError(controller, err);
  };

  override fail(err: Error): void {
    if (this.#adapted !== undefined) this.#adapted.fail(err);
    else super.fail(err);
  }
}

/**
 * The headers the tap needs (content-type, content-encoding, and a redirect's location), read from undici's raw
 * name/value list.
 */
function bodyHeaders(raw: readonly (Buffer | string)[] | null | undefined, statusCode: number): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  if (!raw) return out;
  const redirect = statusCode >= 300 && statusCode < 400;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as Buffer | string;
    // Cheap length check first: most headers are none of them.
    if (name.length !== 12 && name.length !== 16 && !(redirect && name.length === 8)) continue;
    const key = name.toString().toLowerCase();
    if ((key === 'content-type' || key === 'content-encoding' || key === 'location') && out[key] === undefined)
      out[key] = String(raw[i + 1]);
  }
  return out;
}

function fallbackOutcome(failure: Failure, durationMs: number): ExchangeOutcome {
  return failure?.errorType !== undefined ? { errorType: failure.errorType, durationMs } : { durationMs };
}
