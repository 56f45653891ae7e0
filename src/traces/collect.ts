/**
 * An embedded OTLP trace receiver for users without Jaeger or Tempo: OTLP/HTTP (`POST /v1/traces`, JSON or
 * protobuf) and, when asked, OTLP/gRPC (collect-grpc.ts; what the OTel Collector's `loadbalancing` exporter speaks),
 * each request appended to a file as one canonical OTLP/JSON line (hex ids, integer enums, int64 as strings) — the
 * JSON-lines format `readTraces` reads, and the OTel Collector file exporter's too. Answers follow the OTLP spec:
 * 200 with an empty ExportTraceServiceResponse in the request's encoding, 400 with a google.rpc.Status for bad data
 * (not retried by exporters), 413 above the body limit, 415 for other content types or encodings, 503 with
 * Retry-After while the memory for request bodies is taken or the online path is behind (retried), 404 for other
 * paths, 405 for other methods.
 *
 * Bounded: a body is decoded as it arrives by the one decompressor (src/wire/decompress.ts) with an output
 * limit, and every byte held for requests in flight — as received and as decoded — counts against one budget shared
 * by all requests, so concurrent gzip bombs cost at most the budget. A connection idle for the read timeout is
 * closed, a request slower than the request timeout is cut. `close()` stops accepting, lets the requests in flight
 * finish until the drain deadline, then cuts the rest (not answered, so their exporters retry them elsewhere): every
 * span answered 200 is on disk when it resolves.
 */
import http from 'node:http';
import { createWriteStream } from 'node:fs';
import type { Socket } from 'node:net';
import { FaultlineInputError } from '../errors';
import { logger } from '../diag';
import type { SpanRecord } from './model';
import { startGrpcReceiver } from './collect-grpc';
import { BodyReader, Intake, IntakeProblem, grpcCodeOf, type CollectorStats, type Encoding } from './intake';

export type { CollectorStats } from './intake';

const log = logger('collect');

export interface CollectorOptions {
  /** OTLP/HTTP port. Default 4318; 0 picks a free one. */
  port?: number;
  /** Default 127.0.0.1: loopback only unless asked. */
  host?: string;
  /** OTLP/gRPC port (unset: no gRPC listener; 0 picks a free one). */
  grpcPort?: number;
  /** JSON-lines file the requests are appended to. */
  out: string;
  /** Largest accepted body, compressed or decoded (default 64 MiB, the spec's recommendation). */
  maxBodyBytes?: number;
  /** Bytes held for all requests in flight together, received and decoded (default 2 × maxBodyBytes). */
  maxBufferedBytes?: number;
  /** A connection that sends nothing for this long is closed (default 10 s). */
  readTimeoutMs?: number;
  /** A request must arrive whole within this (default 60 s). */
  requestTimeoutMs?: number;
  /** On close(), requests in flight get this long to finish before their connections are cut (default 10 s). */
  drainTimeoutMs?: number;
  /** The spans of each accepted request, after they are on disk (for online assembly). */
  onSpans?: (spans: SpanRecord[]) => void;
  /**
   * Why new requests are refused for now, if they are: the online path is behind. Each is answered 503 with
   * Retry-After (gRPC UNAVAILABLE) before its body is read, and its exporter sends it again later.
   */
  backpressure?: () => string | undefined;
}

export interface Collector {
  /** Base URL, e.g. `http://127.0.0.1:4318` (what OTEL_EXPORTER_OTLP_ENDPOINT takes). */
  url: string;
  /** The traces endpoint, `${url}/v1/traces`. */
  tracesUrl: string;
  /** `http://host:port` of the OTLP/gRPC listener, when there is one. */
  grpcUrl?: string;
  out: string;
  stats: CollectorStats;
  /** Stop accepting, drain (see the module comment), finish writing, close the file. */
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY = 64 * 1024 * 1024;

function mediaType(req: http.IncomingMessage): Encoding | undefined {
  const ct = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (ct === 'application/json') return 'json';
  if (ct === 'application/x-protobuf' || ct === 'application/protobuf') return 'proto';
  return undefined;
}

/** google.rpc.Status { code = 1, message = 2 } in protobuf. */
function encodeStatus(code: number, message: string): Buffer {
  const msg = Buffer.from(message, 'utf8');
  const varint = (n: number): number[] => {
    const out: number[] = [];
    while (n > 0x7f) {
      out.push((n & 0x7f) | 0x80);
      n = Math.floor(n / 128);
    }
    out.push(n);
    return out;
  };
  return Buffer.concat([Buffer.from([0x08, ...varint(code), 0x12, ...varint(msg.length)]), msg]);
}

function respond(res: http.ServerResponse, status: number, encoding: Encoding, message?: string): void {
  if (res.headersSent || res.destroyed) return;
  let body: Buffer;
  if (message === undefined) body = encoding === 'json' ? Buffer.from('{}') : Buffer.alloc(0);
  else {
    const code = grpcCodeOf(status);
    body = encoding === 'json' ? Buffer.from(JSON.stringify({ code, message })) : encodeStatus(code, message);
  }
  res.writeHead(status, {
    'content-type': encoding === 'json' ? 'application/json' : 'application/x-protobuf',
    'content-length': body.length,
    ...(status === 503 ? { 'retry-after': '1' } : {}),
  });
  res.end(body);
}

async function listen(
  server: http.Server | import('node:http2').Http2Server,
  port: number,
  host: string,
  flag: string,
): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err: NodeJS.ErrnoException) => {
    const why =
      err.code === 'EADDRINUSE'
        ? `is already in use (pass another ${flag})`
        : `cannot be opened (${err.code ?? err.message})`;
    throw new FaultlineInputError('FAULTLINE_USAGE', `port ${port} on ${host} ${why}`, { cause: err });
  });
  const addr = server.address();
  return typeof addr === 'object' && addr !== null ? addr.port : port;
}

const urlOf = (host: string, port: number): string => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** Start the receiver. Resolves once it listens; rejects with a FaultlineInputError if a port is taken. */
export async function startCollector(options: CollectorOptions): Promise<Collector> {
  const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const host = options.host ?? '127.0.0.1';
  const readTimeout = options.readTimeoutMs ?? 10_000;
  const drainTimeout = options.drainTimeoutMs ?? 10_000;
  const stats: CollectorStats = { requests: 0, spans: 0, rejected: 0, busy: 0, cut: 0 };
  const stream = createWriteStream(options.out, { flags: 'a' });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  });
  const intake = new Intake(
    max,
    options.maxBufferedBytes ?? 2 * max,
    stream,
    stats,
    options.onSpans,
    options.backpressure,
  );
  /** Requests being handled; close() waits for them until the drain deadline. */
  const inFlight = new Set<Promise<void>>();
  let closing = false;

  const server = http.createServer(
    { requestTimeout: options.requestTimeoutMs ?? 60_000, headersTimeout: Math.min(readTimeout, 60_000) },
    (req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      const encoding = mediaType(req);
      if (closing) res.setHeader('connection', 'close');
      if (path !== '/v1/traces') {
        req.resume();
        respond(res, 404, encoding ?? 'json', `no such endpoint ${path}: traces go to POST /v1/traces`);
        return;
      }
      if (req.method !== 'POST') {
        req.resume();
        res.setHeader('allow', 'POST');
        respond(res, 405, encoding ?? 'json', `method ${req.method ?? ''} not allowed: use POST`);
        return;
      }
      if (encoding === undefined) {
        req.resume();
        respond(
          res,
          415,
          'json',
          `unsupported content-type ${JSON.stringify(req.headers['content-type'] ?? '')}: use application/json or application/x-protobuf`,
        );
        return;
      }
      stats.requests++;
      const handled = (async () => {
        let body: BodyReader | undefined;
        try {
          body = intake.body(req.headers['content-encoding']);
          for await (const chunk of req) body.write(chunk as Buffer);
          await intake.accept(encoding, await body.end());
          respond(res, 200, encoding);
        } catch (err) {
          if (err instanceof IntakeProblem) {
            if (err.status === 503) stats.busy++;
            else stats.rejected++;
            if (err.status === 413 || err.status === 503) res.setHeader('connection', 'close');
            respond(res, err.status, encoding, err.message);
            // The rest of a refused body is not read: the connection goes.
            if (err.status === 413 || err.status === 503) req.destroy();
          } else if (
            req.destroyed ||
            (err as NodeJS.ErrnoException).code === 'ECONNRESET' ||
            (err as Error).message === 'aborted'
          ) {
            stats.cut++; // the client went, or a timeout or the drain deadline cut it: nothing was accepted
          } else {
            stats.rejected++;
            log.error('collector failed to store a request:', err);
            respond(res, 503, encoding, `could not store the request: ${(err as Error).message}`);
          }
        } finally {
          body?.release();
        }
      })();
      inFlight.add(handled);
      void handled.finally(() => inFlight.delete(handled));
    },
  );
  // An idle connection (between requests or in the middle of one) is closed after the read timeout.
  server.setTimeout(readTimeout, (socket: Socket) => socket.destroy());
  server.keepAliveTimeout = Math.min(5_000, readTimeout);

  await opened.catch((err: NodeJS.ErrnoException) => {
    throw new FaultlineInputError('FAULTLINE_USAGE', `cannot write ${options.out}: ${err.code ?? err.message}`, {
      cause: err,
    });
  });
  let port: number;
  try {
    port = await listen(server, options.port ?? 4318, host, '--port');
  } catch (err) {
    stream.end();
    throw err;
  }
  let grpc: { url: string; close(deadline: number): Promise<void> } | undefined;
  if (options.grpcPort !== undefined) {
    try {
      grpc = await startGrpcReceiver({
        intake,
        host,
        port: options.grpcPort,
        readTimeoutMs: readTimeout,
        listen: (s, p) => listen(s, p, host, '--grpc-port'),
      });
    } catch (err) {
      server.close();
      stream.end();
      throw err;
    }
  }
  const url = urlOf(host, port);

  let closed: Promise<void> | undefined;
  const collector: Collector = {
    url,
    tracesUrl: `${url}/v1/traces`,
    out: options.out,
    stats,
    close() {
      closed ??= (async () => {
        closing = true;
        const deadline = Date.now() + drainTimeout;
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const grpcClosed = grpc?.close(deadline);
        // Requests in flight finish (they are bounded by the read and request timeouts) until the deadline...
        const timer = new Promise<'deadline'>((resolve) =>
          setTimeout(() => resolve('deadline'), Math.max(0, deadline - Date.now())).unref(),
        );
        const drained = async (): Promise<void> => {
          while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        };
        if ((await Promise.race([drained().then(() => 'drained' as const), timer])) === 'deadline') {
          // ...then the rest is cut: not answered, so the exporters send it again (after a restart, or elsewhere).
          server.closeAllConnections();
          await drained();
        }
        await stopped;
        await grpcClosed;
        await new Promise<void>((resolve, reject) =>
          stream.end((err?: Error | null) => (err ? reject(err) : resolve())),
        );
      })();
      return closed;
    },
  };
  if (grpc !== undefined) collector.grpcUrl = grpc.url;
  return collector;
}
