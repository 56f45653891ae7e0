/**
 * The collector's OTLP/gRPC transport: `opentelemetry.proto.collector.trace.v1.TraceService/Export` over HTTP/2
 * without TLS (h2c, as gRPC clients with insecure credentials speak it), which is what the OTel Collector's
 * `loadbalancing` exporter sends (it builds on the gRPC OTLP exporter only). One unary call per request: a
 * length-prefixed message, compressed per `grpc-encoding` (gzip by default in the collector's exporter), decoded by
 * the one decompressor and stored by the same intake as OTLP/HTTP (collect.ts), under the same memory budget.
 * Errors are gRPC statuses in trailers: INVALID_ARGUMENT for bad data (not retried), RESOURCE_EXHAUSTED above the
 * size limit, UNAVAILABLE while busy or shutting down (retried), UNIMPLEMENTED for other methods.
 */
import http2 from 'node:http2';
import { canDecode, declaredGzipSize, decodeAll } from '../wire/decompress';
import { logger } from '../diag';
import { IntakeProblem, grpcCodeOf, type Intake } from './intake';

const log = logger('collect');

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
/** An empty ExportTraceServiceResponse: an uncompressed gRPC message of length 0. */
const EMPTY_RESPONSE = Buffer.from([0, 0, 0, 0, 0]);

export interface GrpcReceiverOptions {
  intake: Intake;
  host: string;
  port: number;
  readTimeoutMs: number;
  listen(server: http2.Http2Server, port: number): Promise<number>;
}

function fail(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  if (stream.destroyed || stream.closed) return;
  if (stream.headersSent) {
    stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  // A "trailers-only" response: the status goes in the only HEADERS frame.
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(code),
      'grpc-message': encodeURIComponent(message),
    },
    { endStream: true },
  );
}

/** The one message of a unary call: 1 byte compressed flag, 4 bytes big-endian length, the message. */
function message(frames: Buffer): { compressed: boolean; body: Buffer } {
  if (frames.length < 5) throw new IntakeProblem(400, `truncated gRPC message (${frames.length} bytes)`);
  const flag = frames[0] as number;
  const len = frames.readUInt32BE(1);
  if (flag > 1) throw new IntakeProblem(400, `bad gRPC message flag ${flag}`);
  if (frames.length !== 5 + len)
    throw new IntakeProblem(
      400,
      `gRPC message of ${len} bytes in a body of ${frames.length - 5}: one message per Export call`,
    );
  return { compressed: flag === 1, body: frames.subarray(5) };
}

export async function startGrpcReceiver(
  options: GrpcReceiverOptions,
): Promise<{ url: string; close(deadline: number): Promise<void> }> {
  const { intake } = options;
  const sessions = new Set<http2.ServerHttp2Session>();
  const inFlight = new Set<Promise<void>>();
  let closing = false;
  const server = http2.createServer();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    // An idle session (no frames) is closed after the read timeout.
    session.setTimeout(options.readTimeoutMs, () => session.destroy());
    if (closing) session.goaway();
  });
  server.on('stream', (stream, headers) => {
    if (closing) {
      fail(stream, 14, 'the collector is shutting down; retry');
      return;
    }
    if (headers[':path'] !== EXPORT_PATH || headers[':method'] !== 'POST') {
      fail(stream, 12, `no such method ${String(headers[':path'])}: traces go to ${EXPORT_PATH}`);
      return;
    }
    const contentType = String(headers['content-type'] ?? '');
    if (!contentType.startsWith('application/grpc')) {
      fail(stream, 3, `unsupported content-type ${JSON.stringify(contentType)}: use application/grpc`);
      return;
    }
    intake.stats.requests++;
    const grpcEncoding = headers['grpc-encoding'] === undefined ? undefined : String(headers['grpc-encoding']);
    stream.setTimeout(options.readTimeoutMs, () => stream.close(http2.constants.NGHTTP2_CANCEL));
    const handled = (async () => {
      // The framed body is read as is (identity) and the message decoded after: compression is per message.
      const body = intake.body(undefined);
      try {
        for await (const chunk of stream) body.write(chunk as Buffer);
        const msg = message(await body.end());
        let decoded = msg.body;
        if (msg.compressed) {
          if (grpcEncoding === undefined || grpcEncoding === 'identity')
            throw new IntakeProblem(400, 'compressed message without a grpc-encoding');
          if (!canDecode(grpcEncoding))
            throw new IntakeProblem(
              415,
              `unsupported grpc-encoding ${JSON.stringify(grpcEncoding)}: use gzip or identity`,
            );
          const declared = declaredGzipSize(grpcEncoding, msg.body, msg.body);
          if (declared !== undefined && declared > intake.maxBody) {
            throw new IntakeProblem(
              413,
              `decompressed message larger than ${intake.maxBody} bytes (its gzip trailer declares ${declared})`,
            );
          }
          const d = await decodeAll(msg.body, grpcEncoding, { maxOutputBytes: intake.maxBody });
          if (d.overflow) throw new IntakeProblem(413, `decompressed message larger than ${intake.maxBody} bytes`);
          if (d.error) throw new IntakeProblem(400, `bad ${grpcEncoding} data: ${d.error.message}`);
          intake.reserve(d.body.length);
          decoded = d.body;
          try {
            await intake.accept('proto', decoded);
          } finally {
            intake.release(d.body.length);
          }
        } else {
          await intake.accept('proto', decoded);
        }
        if (stream.destroyed || stream.closed) return;
        stream.respond(
          { ':status': 200, 'content-type': 'application/grpc', 'grpc-accept-encoding': 'gzip,identity' },
          { waitForTrailers: true },
        );
        stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(EMPTY_RESPONSE);
      } catch (err) {
        if (err instanceof IntakeProblem) {
          if (err.status === 503) intake.stats.busy++;
          else intake.stats.rejected++;
          fail(stream, grpcCodeOf(err.status), err.message);
        } else if (stream.destroyed || stream.aborted) {
          intake.stats.cut++;
        } else {
          intake.stats.rejected++;
          log.error('collector failed to store a gRPC request:', err);
          fail(stream, 14, `could not store the request: ${(err as Error).message}`);
        }
      } finally {
        body.release();
      }
    })();
    inFlight.add(handled);
    void handled.finally(() => inFlight.delete(handled));
  });
  const port = await options.listen(server, options.port);
  return {
    url: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`,
    async close(deadline: number) {
      closing = true;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      // No new calls on open sessions; the calls in flight finish until the deadline, then the sessions are cut.
      for (const s of sessions) s.goaway();
      const drained = async (): Promise<void> => {
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        for (const s of sessions) s.close();
      };
      const timer = new Promise<'deadline'>((resolve) =>
        setTimeout(() => resolve('deadline'), Math.max(0, deadline - Date.now())).unref(),
      );
      if ((await Promise.race([drained().then(() => 'drained' as const), timer])) === 'deadline') {
        for (const s of sessions) s.destroy();
        await drained();
      }
      await stopped;
    },
  };
}
