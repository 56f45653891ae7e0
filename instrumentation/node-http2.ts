/**
 * The GenAI span layer's third interception point: requests on `node:http2` client sessions (`http2.connect(…)
 * .request(headers)`), which neither fetch nor `http.request` sees. The AWS SDK's NodeHttp2Handler sends Bedrock's
 * calls this way (its default for the bidirectional streaming commands, and what an application picks for HTTP/2).
 *
 * It is node-http.ts over another transport: each session `connect` returns gets its `request` wrapped; a request the
 * layer may take (its `:method` and `:path` on the session's origin, the same route cache, so gRPC exports and other
 * traffic are left alone) is followed by the same NodeHttpCall, which copies its body as it is written and taps its
 * response where the session pushes it into the stream. The stream, its bytes and their timing stay the
 * application's unless the fault step acts on the call: then the stream's head and body are the step's
 * (`streamPresenter`), its real chunks go to the layer only, and a request answered before its body is sent is
 * cancelled once the application has read that answer. A stream is taken once (node-http.ts's TAKEN), and undici's own HTTP/2 sessions (fetch to an h2
 * origin) are left to the dispatcher layer: no call gets two spans.
 */
import http2, {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import { syncBuiltinESMExports } from 'node:module';
import { logger, safely } from '../src/diag';
import type { GenAiLayer } from './interceptor';
import { Readable } from 'node:stream';
import { bottom, NodeHttpCall, TAKEN, type DispatchFn, type Presenter } from './node-http';

const log = logger('node-http2');

/** On node:http2 once patched: the original `connect`. */
const ORIGINAL = Symbol.for('faultline.nodeHttp2.original');

type Connect = typeof http2.connect;
type Patched = Connect & { [ORIGINAL]?: Connect };

let current: { layer: GenAiLayer; dispatch: DispatchFn } | undefined;

/** Put `layer` in front of node:http2 client sessions opened from now on. Returns the uninstall. */
export function installNodeHttp2(layer: GenAiLayer): () => void {
  const mine = { layer, dispatch: layer.interceptor(bottom) as DispatchFn };
  current = mine;
  const connect = http2.connect as Patched;
  if (connect[ORIGINAL] === undefined) {
    http2.connect = Object.assign(wrapConnect(connect), { [ORIGINAL]: connect });
    syncBuiltinESMExports();
  }
  return () => {
    if (current !== mine) return;
    current = undefined;
    const original = (http2.connect as Patched)[ORIGINAL];
    if (original !== undefined) http2.connect = original;
    syncBuiltinESMExports();
  };
}

function wrapConnect(original: Connect): Connect {
  return function connect(this: unknown, ...args: unknown[]): ClientHttp2Session {
    const session = (original as (...a: unknown[]) => ClientHttp2Session).apply(this, args);
    if (current !== undefined && !ownSocket(args[1]))
      safely(log, 'http2 session', () => wrapSession(session, args[0]), undefined);
    return session;
  } as Connect;
}

/**
 * A session over a socket its caller connected itself (`createConnection`) is undici's: an h2 origin of fetch or of an
 * undici Agent with allowH2, whose calls the dispatcher layer sees already. Left alone, so no call gets two spans.
 */
function ownSocket(options: unknown): boolean {
  return (
    typeof options === 'object' &&
    options !== null &&
    typeof (options as { createConnection?: unknown }).createConnection === 'function'
  );
}

function wrapSession(session: ClientHttp2Session, authority: unknown): void {
  let origin: string;
  try {
    origin = new URL(authority instanceof URL ? authority.href : String(authority)).origin;
  } catch {
    return; // not a URL: Node throws for it itself, or it is nothing the layer could recognise
  }
  const request = session.request;
  session.request = function (this: unknown, ...args: unknown[]): ClientHttp2Stream {
    const stream = (request as (...a: unknown[]) => ClientHttp2Stream).apply(this, args);
    const using = current;
    if (using !== undefined)
      safely(
        log,
        'http2 request',
        () => take(stream, origin, (args[0] ?? {}) as OutgoingHttpHeaders, using),
        undefined,
      );
    return stream;
  } as typeof session.request;
}

function take(
  stream: ClientHttp2Stream,
  origin: string,
  headers: OutgoingHttpHeaders,
  using: { layer: GenAiLayer; dispatch: DispatchFn },
): void {
  const marked = stream as ClientHttp2Stream & { [TAKEN]?: true };
  if (marked[TAKEN]) return;
  const method = String(headers[':method'] ?? 'GET').toUpperCase();
  const path = String(headers[':path'] ?? '/');
  if (!using.layer.mayTake(method, origin, path)) return;
  marked[TAKEN] = true;
  const plain = (): Record<string, unknown> =>
    Object.fromEntries(Object.entries(headers).filter(([k]) => !k.startsWith(':')));
  new NodeHttpCall(
    stream,
    { origin, path, method, headers: plain },
    using.dispatch,
    (args) => {
      const h = (args[0] ?? {}) as IncomingHttpHeaders & { ':status'?: number };
      const head = Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith(':'))) as IncomingHttpHeaders;
      return { status: Number(h[':status'] ?? 0), headers: head, message: '', body: stream, trailers: () => ({}) };
    },
    streamPresenter(stream),
  ).hook();
}

/**
 * node:http2's Presenter: the stream is the application's request and response at once, so a response of the layer's
 * making is emitted on it (`response` with its head) and pushed into it, the real chunks going to the layer only.
 * Stopping the real request cancels the stream (RST_STREAM CANCEL) once the application has read its answer.
 */
function streamPresenter(stream: ClientHttp2Stream): Presenter {
  const push = Readable.prototype.push;
  const { close } = stream;
  let silenced = false;
  const cancel = (): void => {
    if (!stream.closed && !stream.destroyed) close.call(stream, http2.constants.NGHTTP2_CANCEL);
  };
  return {
    ownsClose: false,
    start(emit, status, headers) {
      const head: Record<string, unknown> = { ':status': status };
      for (const [k, v] of Object.entries(headers)) if (v !== undefined) head[k.toLowerCase()] = v;
      emit('response', head, http2.constants.NGHTTP2_FLAG_END_HEADERS);
      let ended = false;
      stream.once('end', () => (ended = true));
      return {
        push: (chunk) => {
          push.call(stream, chunk);
          // The session's flow control is the real stream's: no pause of ours to undo.
          return true;
        },
        destroy: (err) => stream.destroy(err),
        onRead() {},
        onDone(fn) {
          stream.once('end', () => fn(true));
          stream.once('close', () => {
            if (!ended) fn(false);
          });
        },
      };
    },
    fail(emit, err) {
      emit('error', err);
      silenced = true;
      cancel();
    },
    silence() {
      if (silenced) return;
      silenced = true;
      if (stream.readableEnded) cancel();
      else stream.once('end', cancel);
    },
  };
}
