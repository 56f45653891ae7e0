/**
 * The GenAI span layer's second interception point: client requests made with `node:http` / `node:https`
 * (`http.request`, `https.request`), which never reach the undici dispatcher. The AWS SDK's NodeHttpHandler (Bedrock
 * runtime) and node-fetch based clients send their LLM calls this way.
 *
 * Nothing is re-implemented here: each recognised request is handed to the same layer (interceptor.ts: recognition,
 * protocol modules, span, response tap, onExchangeEnd) as an undici dispatch whose bottom is the real ClientRequest.
 *
 *     app → http.request → ClientRequest ──(its body, its response)──► network
 *                               └─ a copy of what it writes ─► GenAI layer → bottom: the ClientRequest's events
 *
 * The application keeps its own ClientRequest and IncomingMessage: the request goes out as the application writes it
 * (a bounded copy of the body is kept, request-body.ts's BodyCopy), and the response is tapped where Node's HTTP
 * parser hands it over (`push`), which neither changes its flow mode nor holds a chunk. With no plan the bytes, the
 * objects and their timing are the application's own. A request is ours only on the layer's evidence: its method and
 * path may be a module's (the layer's route cache, asked before anything is wrapped, so other traffic, the OTLP
 * exports included, is left alone), then its headers and body, when it ends. A request is taken once (TAKEN), so a
 * second copy of faultline, or a client that wraps `http.request` around itself, gives no second span.
 *
 * The fault step (CLIENT_REQUEST_STEP) runs here as in the dispatcher layer, the same step and decisions: when it
 * acts on a call, the application is handed the response it delivers (a synthetic error in the provider's shape, a
 * rewritten answer, a cut stream) as the transport's own objects (`Presenter`: an IncomingMessage, or the HTTP/2
 * stream's head and body), and the real request is withheld (answered before it is sent) or read by the layer only.
 * Guards are not composed here: a retry would send a request that is already on its way.
 */
import http, { IncomingMessage, type ClientRequest } from 'node:http';
import https from 'node:https';
import { syncBuiltinESMExports } from 'node:module';
import { Socket } from 'node:net';
import type { Dispatcher } from 'undici';
import { logger, safely } from '../src/diag';
import type { GenAiLayer } from './interceptor';
import type { DispatchFn, Interceptor } from './types';
import { BodyCopy } from './request-body';

const log = logger('node-http');

export type { DispatchFn } from './types';
type RequestFn = typeof http.request;

/**
 * On a step that may act on node:http / node:http2 calls (the fault step): it sends a call at most once, and hands
 * the application either the real response or one of its own making. A step that sends a call again (a guard's
 * retry) cannot act on a request that already is on its way, and is not composed there.
 */
export const CLIENT_REQUEST_STEP = Symbol.for('faultline.step.clientRequests');

/** The steps of `steps` that may act on node:http calls (marked CLIENT_REQUEST_STEP). */
export function clientRequestSteps(steps: readonly Interceptor[] | undefined): Interceptor[] {
  return (steps ?? []).filter(
    (s) => (s as Interceptor & { [CLIENT_REQUEST_STEP]?: true })[CLIENT_REQUEST_STEP] === true,
  );
}

/** On a ClientRequest the layer has taken. */
export const TAKEN = Symbol.for('faultline.nodeHttp.taken');
/** The call of a dispatch, in its options (the layer copies them with their symbols). */
const CALL = Symbol('faultline.nodeHttp.call');
/** On node:http and node:https once patched: the original `request`. */
const ORIGINAL = Symbol.for('faultline.nodeHttp.original');

type Patched = RequestFn & { [ORIGINAL]?: RequestFn };

/** The layer in use; undefined once uninstalled (the wrappers then only call through). */
let current: { layer: GenAiLayer; dispatch: DispatchFn } | undefined;

/** Put `layer` in front of node:http / node:https client requests (again: replace it). Returns the uninstall. */
export function installNodeHttp(layer: GenAiLayer): () => void {
  const mine = { layer, dispatch: layer.interceptor(bottom) as DispatchFn };
  current = mine;
  for (const module of [http, https]) {
    const request = module.request as Patched;
    if (request[ORIGINAL] !== undefined) continue;
    module.request = Object.assign(wrap(request), { [ORIGINAL]: request });
  }
  // An ES module that imports `request` from node:http reads the builtin's export, not the property.
  syncBuiltinESMExports();
  return () => {
    if (current !== mine) return;
    current = undefined;
    for (const module of [http, https]) {
      const original = (module.request as Patched)[ORIGINAL];
      if (original !== undefined) module.request = original;
    }
    syncBuiltinESMExports();
  };
}

function wrap(original: RequestFn): RequestFn {
  return function request(this: unknown, ...args: unknown[]): ClientRequest {
    const req = (original as (...a: unknown[]) => ClientRequest).apply(this, args);
    const using = current;
    if (using !== undefined) safely(log, 'node:http request', () => take(req, args, using), undefined);
    return req;
  } as RequestFn;
}

function take(req: ClientRequest, args: readonly unknown[], using: { layer: GenAiLayer; dispatch: DispatchFn }): void {
  const marked = req as ClientRequest & { [TAKEN]?: true };
  if (marked[TAKEN]) return;
  const host = req.host.includes(':') && !req.host.startsWith('[') ? `[${req.host}]` : req.host;
  const origin = `${req.protocol}//${host}:${portOf(args, req.protocol)}`;
  if (!using.layer.mayTake(req.method, origin, req.path)) return;
  marked[TAKEN] = true;
  const request = { origin, path: req.path, method: req.method, headers: () => req.getHeaders() };
  const presenter = clientRequestPresenter(req);
  new NodeHttpCall(
    req,
    request,
    using.dispatch,
    (args) => {
      const res = args[0] as IncomingMessage;
      return {
        status: res.statusCode ?? 0,
        headers: res.headers,
        message: res.statusMessage ?? '',
        body: res,
        trailers: () => res.trailers ?? {},
      };
    },
    presenter,
  ).hook();
}

/** The port a request goes to, as Node resolves it: the URL's, then the options' (`port`, `defaultPort`, the agent's). */
function portOf(args: readonly unknown[], protocol: string): number {
  let port: unknown;
  for (const a of args) {
    if (typeof a === 'string' || a instanceof URL) {
      try {
        const p = (typeof a === 'string' ? new URL(a) : a).port;
        if (p) port = p;
      } catch {
        // Node has thrown for it already
      }
    } else if (a !== null && typeof a === 'object') {
      const o = a as { port?: unknown; defaultPort?: unknown; agent?: { defaultPort?: unknown } };
      port = o.port ?? o.defaultPort ?? port ?? o.agent?.defaultPort;
    }
  }
  const n = Number(port);
  return Number.isInteger(n) && n > 0 ? n : protocol === 'https:' ? 443 : 80;
}

type Encoding = BufferEncoding | undefined;

/** What the layer is told of a taken request: where it goes, and its headers once it is complete. */
export interface TakenRequest {
  origin: string;
  path: string;
  method: string;
  headers: () => Record<string, unknown>;
}

/** A response as the client's `response` event gives it: its head, and the readable its body is pushed into. */
export interface TakenResponse {
  status: number;
  headers: IncomingMessage['headers'];
  message: string;
  body: object;
  trailers: () => Record<string, unknown>;
}

type Headers = Record<string, string | string[] | number | undefined>;

/** The readable an application reads a response the layer's steps made from, and how it gets there. */
export interface PresentedBody {
  push(chunk: Buffer | null): boolean;
  destroy(err: Error): void;
  /** Called by the readable when the application wants more (after a push returned false). */
  onRead(fn: () => void): void;
  /** Called once the application has read all of it (its `end`), or it closed before. */
  onDone(fn: (ended: boolean) => void): void;
}

/**
 * How a transport shows the application a response of the layer's making (a fault's): node:http emits a fresh
 * IncomingMessage on the ClientRequest, node:http2 emits the head on the stream and pushes the body into it.
 */
export interface Presenter {
  /** Emit the response head on the application's object; returns where its body goes. */
  start(emit: Emit, status: number, headers: Headers, message: string): PresentedBody;
  /** The call failed before a response head: the error the application's object reports. */
  fail(emit: Emit, err: Error): void;
  /** Stop the real request without the application hearing of it (its events are the layer's from then on). */
  silence(): void;
  /** The application's object emits `close` for the response of the layer's making (node:http), not the real one. */
  readonly ownsClose: boolean;
}

type Emit = (event: string, ...args: unknown[]) => boolean;

/** The writable side of a client request (a ClientRequest, an HTTP/2 client stream). */
type RequestStream = { destroy(err?: Error): unknown };

/**
 * One taken request: its body copied as it is written, its response's events reported to the layer. Shared by the
 * node:http and node:http2 interception points (node-http2.ts): `responseOf` reads the `response` event's arguments.
 *
 * With no fault the application reads its own response (`pass`). When a step of the layer takes the call over (the
 * application's side of the layer then hears of it through another controller than this call's: a fault step's),
 * the call is `mediated`: the real response, if any, is read by the layer only, and the application gets what the
 * steps deliver, through the transport's Presenter. A request a step answers before it is sent (a transport fault)
 * is not sent: its end is withheld, and it is stopped silently once the application has its answer; one a step
 * delays is sent when the step sends it. What the application signed is sent as it signed it.
 */
export class NodeHttpCall {
  #handler: Dispatcher.DispatchHandler | undefined;
  #done = false;
  #aborted = false;
  readonly #copy: BodyCopy;
  #body: Buffer | undefined;
  readonly #controller: Dispatcher.DispatchController;
  #mode: 'pass' | 'mediated' | undefined;
  /** The application's end of the request, while a step holds it back. */
  #withheld: (() => unknown) | undefined;
  /** The real response's readable, in mediated mode (paused and resumed by the steps). */
  #realBody: { pause(): unknown; resume(): unknown } | undefined;
  #emit: Emit | undefined;
  /** The application aborted (destroyed its object): from then on its object's own events reach it. */
  #appGone = false;
  /** The controller the application's side was given (a step's), to abort when the application gives up. */
  #appController: Dispatcher.DispatchController | undefined;
  #presented: PresentedBody | undefined;
  /** The steps delivered the application's end or error. */
  #settled = false;
  #silenced = false;

  constructor(
    private readonly req: RequestStream,
    private readonly request: TakenRequest,
    private readonly dispatch: DispatchFn,
    private readonly responseOf: (args: unknown[]) => TakenResponse,
    private readonly presenter: Presenter,
  ) {
    this.#copy = new BodyCopy((body) => (this.#body = body));
    const isAborted = (): boolean => this.#aborted;
    this.#controller = {
      get aborted() {
        return isAborted();
      },
      paused: false,
      reason: null,
      abort: (reason: Error) => {
        this.#aborted = true;
        if (this.#mode === 'mediated') this.#silence();
        else req.destroy(reason);
      },
      pause: () => {
        if (this.#mode === 'mediated') this.#realBody?.pause();
      },
      resume: () => {
        if (this.#mode === 'mediated') this.#realBody?.resume();
      },
    } as unknown as Dispatcher.DispatchController;
  }

  hook(): void {
    const req = this.req as unknown as Record<
      'write' | 'end' | 'emit' | 'destroy' | 'close',
      (...a: unknown[]) => unknown
    >;
    const { write, end, emit, destroy, close } = req;
    this.#emit = (event, ...rest) => emit.call(req, event, ...rest) as boolean;
    const restore = (): void => {
      // Own properties over the prototype's: deleting them puts the prototype's back.
      delete (req as Partial<typeof req>).write;
      delete (req as Partial<typeof req>).end;
    };
    req.write = (...a: unknown[]): unknown => {
      safely(
        log,
        'request body',
        () => this.#keep(a[0], typeof a[1] === 'string' ? (a[1] as BufferEncoding) : undefined),
        undefined,
      );
      return write.apply(req, a);
    };
    req.end = (...a: unknown[]): unknown => {
      restore();
      if (typeof a[0] !== 'function')
        safely(
          log,
          'request body',
          () => this.#keep(a[0], typeof a[1] === 'string' ? (a[1] as BufferEncoding) : undefined),
          undefined,
        );
      safely(log, 'span start', () => this.#send(), undefined);
      // A step answers (or delays) the call before it is sent: the request waits for the step, if it ever sends it.
      if (this.#mode === 'mediated' && this.#handler === undefined) {
        this.#withheld = () => end.apply(req, a);
        return req;
      }
      return end.apply(req, a);
    };
    req.emit = (event: unknown, ...rest: unknown[]): boolean => {
      const mediated = this.#mode === 'mediated' && !this.#appGone;
      if (event === 'response') {
        safely(log, 'response start', () => this.#response(this.responseOf(rest)), undefined);
        // The application hears of the response the steps deliver, not of this one (read by the layer only).
        if (mediated) return true;
      } else if (event === 'error') {
        this.#fail(rest[0]);
        // The real request's errors are the layer's; the one the steps deliver (after they settled) is the application's.
        if (mediated && (!this.#settled || this.#silenced)) return true;
      } else if (event === 'close') {
        this.#fail(undefined);
        if (mediated && this.presenter.ownsClose) return true;
      }
      return emit.call(req, event, ...rest) as boolean;
    };
    // The application gives up (an abort, its timeout): a step holding the call must hear of it.
    const gone = (reason: unknown): void => {
      if (this.#mode !== 'mediated' || this.#settled || this.#appGone) return;
      this.#appGone = true;
      const err =
        reason instanceof Error ? reason : Object.assign(new Error('the request was aborted'), { name: 'AbortError' });
      safely(log, 'application abort', () => this.#appController?.abort(err), undefined);
      this.#presented?.destroy(err);
    };
    req.destroy = (...a: unknown[]): unknown => {
      gone(a[0]);
      return destroy.apply(req, a);
    };
    if (typeof close === 'function') {
      req.close = (...a: unknown[]): unknown => {
        gone(undefined);
        return close.apply(req, a);
      };
    }
  }

  #keep(chunk: unknown, encoding: Encoding): void {
    if (chunk == null) return;
    this.#copy.push(typeof chunk === 'string' && encoding !== undefined ? Buffer.from(chunk, encoding) : chunk);
  }

  /** The request is complete on the application's side: hand it to the layer (which calls `bottom`). */
  #send(): void {
    this.#copy.end();
    const body = this.#body;
    // Over the copy's bound (or not bytes): not read, so not ours.
    if (body === undefined) return;
    const r = this.request;
    const opts = { origin: r.origin, path: r.path, method: r.method, headers: r.headers(), body, [CALL]: this };
    this.dispatch(opts as unknown as Dispatcher.DispatchOptions, new AppSide(this));
  }

  /** The layer's bottom for this call: from now on its response is reported to `handler`. */
  attach(handler: Dispatcher.DispatchHandler): void {
    if (this.#handler !== undefined) {
      // One ClientRequest is one request: a step's second send of it (a duplicated message) cannot go out.
      handler.onResponseError?.(this.#controller, new Error('a node:http request is sent once'));
      return;
    }
    this.#handler = handler;
    handler.onRequestStart?.(this.#controller, {});
    const withheld = this.#withheld;
    this.#withheld = undefined;
    withheld?.();
  }

  // --- the application's side of the layer (AppSide)

  /** The application's side was reached through `controller`: this call's own (pass), or a step's (mediated). */
  reached(controller: Dispatcher.DispatchController): void {
    this.#mode ??= controller === this.#controller ? 'pass' : 'mediated';
    if (this.#mode === 'mediated') this.#appController = controller;
  }

  get mediated(): boolean {
    return this.#mode === 'mediated' && !this.#appGone;
  }

  present(status: number, headers: Headers, message: string): void {
    if (this.#presented !== undefined || this.#settled) return;
    const body = this.presenter.start(
      this.#emit as Emit,
      status,
      headers,
      message || (http.STATUS_CODES[status] ?? ''),
    );
    this.#presented = body;
    body.onRead(() => this.#appController?.resume());
    body.onDone((ended) => {
      if (!ended && !this.#settled) {
        // The application stopped reading before the end (it destroyed the body).
        this.#appGone = true;
        safely(
          log,
          'application abort',
          () =>
            this.#appController?.abort(Object.assign(new Error('the response was destroyed'), { name: 'AbortError' })),
          undefined,
        );
      }
      this.#stopReal();
    });
  }

  presentData(chunk: Buffer): void {
    const body = this.#presented;
    if (body === undefined || this.#settled) return;
    if (!body.push(Buffer.from(chunk))) this.#appController?.pause();
  }

  presentEnd(): void {
    if (this.#settled) return;
    if (this.#presented === undefined) this.present(200, {}, '');
    this.#settled = true;
    this.#presented?.push(null);
  }

  presentError(err: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    if (this.#presented !== undefined) this.#presented.destroy(err);
    else this.presenter.fail(this.#emit as Emit, err);
    this.#stopReal();
  }

  /** A real request the steps never sent, or whose answer they no longer read: stopped, unheard by the application. */
  #stopReal(): void {
    if (this.#handler === undefined || !this.#done) this.#silence();
  }

  #silence(): void {
    if (this.#silenced) return;
    this.#silenced = true;
    safely(log, 'request stop', () => this.presenter.silence(), undefined);
  }

  #response(response: TakenResponse): void {
    const handler = this.#handler;
    if (handler === undefined || this.#done) return;
    const controller = this.#controller;
    const res = response.body;
    if (this.#mode === 'mediated' && res instanceof IncomingMessage) {
      // Read by the layer only: it flows (the steps pause it), and its socket goes back to its pool at its end.
      this.#realBody = res;
      res.resume();
    }
    handler.onResponseStart?.(controller, response.status, response.headers, response.message);
    const r = res as unknown as Record<'push' | 'emit', (...a: unknown[]) => unknown>;
    const { push, emit } = r;
    // Where Node's HTTP parser hands the body over: each chunk once, as it arrives, whatever the application reads.
    // An HTTP/2 stream is also the application's readable: in mediated mode its real chunks go to the layer only.
    const divert = this.#mode === 'mediated' && !(res instanceof IncomingMessage);
    r.push = (chunk: unknown, ...rest: unknown[]): boolean => {
      const more = divert && !this.#appGone ? true : (push.call(res, chunk, ...rest) as boolean);
      if (chunk === null) this.#complete(response);
      else if (!this.#done && Buffer.isBuffer(chunk))
        safely(log, 'response data', () => handler.onResponseData?.(controller, chunk), undefined);
      return more;
    };
    r.emit = (event: unknown, ...rest: unknown[]): boolean => {
      if (event === 'error') this.#fail(rest[0]);
      else if (event === 'close') this.#fail(undefined);
      return emit.call(res, event, ...rest) as boolean;
    };
  }

  #complete(response: TakenResponse): void {
    if (this.#done) return;
    this.#done = true;
    safely(
      log,
      'response end',
      () => this.#handler?.onResponseEnd?.(this.#controller, response.trailers() as never),
      undefined,
    );
  }

  /** The request or its response failed (`err`), or closed before the response ended (undefined: an abort). */
  #fail(err: unknown): void {
    if (this.#done || this.#handler === undefined) return;
    this.#done = true;
    const error =
      err instanceof Error
        ? err
        : Object.assign(new Error('the request closed before its response ended'), { name: 'AbortError' });
    safely(log, 'response error', () => this.#handler?.onResponseError?.(this.#controller, error), undefined);
  }
}

/**
 * The application's side of the layer for one call. With no step acting on the call it only notes the callbacks (the
 * application reads its own response); when a step delivers the response, it hands it to the application.
 */
class AppSide implements Dispatcher.DispatchHandler {
  constructor(private readonly call: NodeHttpCall) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.call.reached(controller);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, status: number, headers: Headers, message: string): void {
    if (this.call.mediated) safely(log, 'fault response', () => this.call.present(status, headers, message), undefined);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.call.mediated) safely(log, 'fault response', () => this.call.presentData(chunk), undefined);
  }

  onResponseEnd(): void {
    if (this.call.mediated) safely(log, 'fault response', () => this.call.presentEnd(), undefined);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.call.mediated) safely(log, 'fault response', () => this.call.presentError(err), undefined);
  }
}

/** Node's name/value list of a response head the layer made. */
function rawHeadersOf(headers: Headers): string[] {
  const raw: string[] = [];
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) raw.push(k, String(one));
  }
  return raw;
}

const HOP_BY_HOP = new Set(['transfer-encoding', 'connection', 'keep-alive']);

/** The `headers` of an IncomingMessage: lower-case names, repeated values joined (set-cookie kept a list). */
function headerRecord(headers: Headers): IncomingMessage['headers'] {
  const out: IncomingMessage['headers'] = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    const key = k.toLowerCase();
    if (key === 'set-cookie') out[key] = (Array.isArray(v) ? v : [v]).map(String);
    else out[key] = Array.isArray(v) ? v.map(String).join(', ') : String(v);
  }
  return out;
}

/** node:http's Presenter: a fresh IncomingMessage on the ClientRequest, as Node's parser would emit it. */
export function clientRequestPresenter(req: ClientRequest): Presenter {
  const destroy = http.ClientRequest.prototype.destroy;
  let silenced = false;
  return {
    ownsClose: true,
    start(emit, status, headers, message) {
      const res = new IncomingMessage(new Socket());
      res.statusCode = status;
      res.statusMessage = message;
      res.httpVersionMajor = 1;
      res.httpVersionMinor = 1;
      res.httpVersion = '1.1';
      // Not the real message's framing: its hop-by-hop headers (a chunked transfer coding, the connection's) belong to
      // the socket, which a client may inspect when they are there (node-fetch 2 checks it still reads a chunked body).
      const head = Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP_BY_HOP.has(k.toLowerCase())));
      res.rawHeaders = rawHeadersOf(head);
      res.headers = headerRecord(head);
      let onRead: (() => void) | undefined;
      res._read = () => onRead?.();
      // Not `req.res`: that stays the real response, which destroying the real request dumps.
      (res as { req?: ClientRequest }).req = req;
      emit('response', res);
      let ended = false;
      res.once('end', () => {
        ended = true;
        res.complete = true;
      });
      return {
        push: (chunk) => res.push(chunk),
        destroy: (err) => res.destroy(err),
        onRead: (fn) => (onRead = fn),
        onDone: (fn) => {
          res.once('end', () => {
            fn(true);
            // Node closes the request once its response is read.
            setImmediate(() => emit('close'));
          });
          res.once('close', () => {
            if (!ended) {
              fn(false);
              emit('close');
            }
          });
        },
      };
    },
    fail(emit, err) {
      emit('error', err);
      emit('close');
    },
    silence() {
      if (silenced) return;
      silenced = true;
      destroy.call(req);
    },
  };
}

/** The bottom of the layer for node:http calls: the call's own ClientRequest, already on its way. */
export function bottom(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
  (opts as { [CALL]?: NodeHttpCall })[CALL]?.attach(handler);
  return true;
}
