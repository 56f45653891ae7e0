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
import { context, propagation, trace, type Attributes, type Context } from '@opentelemetry/api';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import { logger, safely } from '../src/diag';
import { spanTime } from '../src/clock';
import { EXCHANGE } from './exchange';
import { callContext } from './frameworks/scope';
import { isLegacyHandler, type LegacyHandler } from './handler-api';
import { FollowUps } from './follow-ups';
import { UNREAD, type ProtocolModule, type ProtocolStart } from './internal-types';
import { protocols as defaultProtocols } from './protocols';
import { recognise, routeOf, type Ignored, type Match, type RouteCache } from './recognition';
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
  ATTR_FL_REQUEST_RETRY_COUNT,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from './semconv';
import type { DispatchFn, Exchange, Interceptor } from './types';
import {
  BothApisExchangeHandler,
  ExchangeHandler,
  LegacyExchangeHandler,
  type TappingHandler,
} from './exchange-handlers';
import { LiveExchange, parsed, rewrite } from './exchange-state';
import type { GenAiInterceptorOptions } from './layer-options';
import { ExchangeTap } from './response-tap';

export type { GenAiInterceptorOptions } from './layer-options';
export { flushExchanges, heldExchangeCount, settleExchanges } from './response-tap';

const log = logger('interceptor');

type Handler = Dispatcher.DispatchHandler;

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
      .startSpan(start.name, { kind: start.kind, attributes: start.attributes, startTime: spanTime(t0) }, parent);
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
