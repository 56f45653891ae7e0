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
 * second copy of faultline, or a client that wraps `http.request` around itself, gives no second span. Faults and
 * guards (the layer's steps) are not applied to node:http calls: they rewrite an undici response, and the application
 * here reads Node's own IncomingMessage.
 */
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { syncBuiltinESMExports } from 'node:module';
import type { Dispatcher } from 'undici';
import { logger, safely } from '../src/diag';
import type { GenAiLayer } from './interceptor';
import { BodyCopy } from './request-body';

const log = logger('node-http');

export type DispatchFn = (opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => boolean;
type RequestFn = typeof http.request;

/** On a ClientRequest the layer has taken. */
export const TAKEN = Symbol.for('faultline.nodeHttp.taken');
/** The call of a dispatch, in its options (the layer copies them with their symbols). */
const CALL = Symbol('faultline.nodeHttp.call');
/** On node:http and node:https once patched: the original `request`. */
const ORIGINAL = Symbol.for('faultline.nodeHttp.original');

type Patched = RequestFn & { [ORIGINAL]?: RequestFn };

/** The layer in use; undefined once uninstalled (the wrappers then only call through). */
let current: { layer: GenAiLayer; dispatch: DispatchFn } | undefined;

/** The application's side of the layer: it reads the real IncomingMessage, so the layer's callbacks are only noted. */
const APP: Dispatcher.DispatchHandler = {
  onRequestStart() {},
  onResponseStart() {},
  onResponseData() {},
  onResponseEnd() {},
  onResponseError() {},
};

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
  new NodeHttpCall(req, request, using.dispatch, (args) => {
    const res = args[0] as IncomingMessage;
    return { status: res.statusCode ?? 0, headers: res.headers, message: res.statusMessage ?? '', body: res, trailers: () => res.trailers ?? {} };
  }).hook();
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

/** The writable side of a client request (a ClientRequest, an HTTP/2 client stream). */
type RequestStream = { destroy(err?: Error): unknown };

/**
 * One taken request: its body copied as it is written, its response's events reported to the layer. Shared by the
 * node:http and node:http2 interception points (node-http2.ts): `responseOf` reads the `response` event's arguments.
 */
export class NodeHttpCall {
  #handler: Dispatcher.DispatchHandler | undefined;
  #done = false;
  #aborted = false;
  readonly #copy: BodyCopy;
  #body: Buffer | undefined;
  readonly #controller: Dispatcher.DispatchController;

  constructor(
    private readonly req: RequestStream,
    private readonly request: TakenRequest,
    private readonly dispatch: DispatchFn,
    private readonly responseOf: (args: unknown[]) => TakenResponse,
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
        req.destroy(reason);
      },
      pause() {},
      resume() {},
    } as unknown as Dispatcher.DispatchController;
  }

  hook(): void {
    const req = this.req as unknown as Record<'write' | 'end' | 'emit', (...a: unknown[]) => unknown>;
    const { write, end, emit } = req;
    const restore = (): void => {
      // Own properties over the prototype's: deleting them puts the prototype's back.
      delete (req as Partial<typeof req>).write;
      delete (req as Partial<typeof req>).end;
    };
    req.write = (...a: unknown[]): unknown => {
      safely(log, 'request body', () => this.#keep(a[0], typeof a[1] === 'string' ? (a[1] as BufferEncoding) : undefined), undefined);
      return write.apply(req, a);
    };
    req.end = (...a: unknown[]): unknown => {
      restore();
      if (typeof a[0] !== 'function') safely(log, 'request body', () => this.#keep(a[0], typeof a[1] === 'string' ? (a[1] as BufferEncoding) : undefined), undefined);
      safely(log, 'span start', () => this.#send(), undefined);
      return end.apply(req, a);
    };
    req.emit = (event: unknown, ...rest: unknown[]): boolean => {
      if (event === 'response') safely(log, 'response start', () => this.#response(this.responseOf(rest)), undefined);
      else if (event === 'error') this.#fail(rest[0]);
      else if (event === 'close') this.#fail(undefined);
      return emit.call(req, event, ...rest) as boolean;
    };
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
    this.dispatch(opts as unknown as Dispatcher.DispatchOptions, APP);
  }

  /** The layer's bottom for this call: from now on its response is reported to `handler`. */
  attach(handler: Dispatcher.DispatchHandler): void {
    this.#handler = handler;
    handler.onRequestStart?.(this.#controller, {});
  }

  #response(response: TakenResponse): void {
    const handler = this.#handler;
    if (handler === undefined || this.#done) return;
    const controller = this.#controller;
    handler.onResponseStart?.(controller, response.status, response.headers, response.message);
    const res = response.body;
    const r = res as unknown as Record<'push' | 'emit', (...a: unknown[]) => unknown>;
    const { push, emit } = r;
    // Where Node's HTTP parser hands the body over: each chunk once, as it arrives, whatever the application reads.
    r.push = (chunk: unknown, ...rest: unknown[]): boolean => {
      const more = push.call(res, chunk, ...rest) as boolean;
      if (chunk === null) this.#complete(response);
      else if (!this.#done && Buffer.isBuffer(chunk)) safely(log, 'response data', () => handler.onResponseData?.(controller, chunk), undefined);
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
    safely(log, 'response end', () => this.#handler?.onResponseEnd?.(this.#controller, response.trailers() as never), undefined);
  }

  /** The request or its response failed (`err`), or closed before the response ended (undefined: an abort). */
  #fail(err: unknown): void {
    if (this.#done || this.#handler === undefined) return;
    this.#done = true;
    const error = err instanceof Error ? err : Object.assign(new Error('the request closed before its response ended'), { name: 'AbortError' });
    safely(log, 'response error', () => this.#handler?.onResponseError?.(this.#controller, error), undefined);
  }
}

/** The bottom of the layer for node:http calls: the call's own ClientRequest, already on its way. */
export function bottom(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
  (opts as { [CALL]?: NodeHttpCall })[CALL]?.attach(handler);
  return true;
}
