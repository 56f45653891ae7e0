/**
 * An embedded OTLP/HTTP trace receiver for users without Jaeger or Tempo: `POST /v1/traces` with OTLP/JSON or
 * protobuf, optionally gzip-compressed, each request appended to a file as one canonical OTLP/JSON line (hex ids,
 * integer enums, int64 as strings) — the JSON-lines format `readTraces` reads, and the OTel Collector file
 * exporter's too. Answers follow the OTLP/HTTP spec: 200 with an empty ExportTraceServiceResponse in the request's
 * encoding, 400 with a google.rpc.Status for bad data (not retried by exporters), 413 above the body limit, 415 for
 * other content types or encodings, 404 for other paths, 405 for other methods.
 */
import http from 'node:http';
import { createWriteStream, type WriteStream } from 'node:fs';
import { gunzip, inflate } from 'node:zlib';
import { promisify } from 'node:util';
import { FaultlineInputError } from '../errors';
import { logger } from '../diag';
import { TraceDataError, isRecord } from './normalize';
import { canonicalOtlp, spansOfOtlpDocument } from './readers/otlp-json';
import { decodeExportTraceRequest } from './readers/otlp-proto';

const log = logger('collect');
const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);

export interface CollectorOptions {
  /** Default 4318 (the OTLP/HTTP port); 0 picks a free one. */
  port?: number;
  /** Default 127.0.0.1: loopback only unless asked. */
  host?: string;
  /** JSON-lines file the requests are appended to. */
  out: string;
  /** Largest accepted body, compressed or not (default 64 MiB, the spec's recommendation). */
  maxBodyBytes?: number;
}

export interface CollectorStats {
  requests: number;
  spans: number;
  rejected: number;
}

export interface Collector {
  /** Base URL, e.g. `http://127.0.0.1:4318` (what OTEL_EXPORTER_OTLP_ENDPOINT takes). */
  url: string;
  /** The traces endpoint, `${url}/v1/traces`. */
  tracesUrl: string;
  out: string;
  stats: CollectorStats;
  /** Stop accepting, finish writing, close the file. */
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY = 64 * 1024 * 1024;

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Encoding = 'json' | 'proto';

function mediaType(req: http.IncomingMessage): Encoding | undefined {
  const ct = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (ct === 'application/json') return 'json';
  if (ct === 'application/x-protobuf' || ct === 'application/protobuf') return 'proto';
  return undefined;
}

async function readBody(req: http.IncomingMessage, max: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    total += (chunk as Buffer).length;
    if (total > max) throw new HttpProblem(413, `request body larger than ${max} bytes`);
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts);
}

async function decompress(req: http.IncomingMessage, body: Buffer, max: number): Promise<Buffer> {
  const enc = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (enc === 'identity' || enc === '') return body;
  const fn = enc === 'gzip' || enc === 'x-gzip' ? gunzipAsync : enc === 'deflate' ? inflateAsync : undefined;
  if (fn === undefined) throw new HttpProblem(415, `unsupported content-encoding ${JSON.stringify(enc)}: use gzip or none`);
  try {
    return await fn(body, { maxOutputLength: max });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new HttpProblem(413, `decompressed body larger than ${max} bytes`);
    throw new HttpProblem(400, `bad ${enc} data: ${(err as Error).message}`);
  }
}

/** Decode, validate (every span must normalise) and canonicalise one request. Returns the line and span count. */
function toLine(encoding: Encoding, body: Buffer): { line: string | undefined; spans: number } {
  let doc: Record<string, unknown>;
  try {
    if (encoding === 'proto') doc = decodeExportTraceRequest(body);
    else {
      const parsed: unknown = JSON.parse(body.toString('utf8'));
      if (!isRecord(parsed)) throw new HttpProblem(400, 'expected a JSON object (ExportTraceServiceRequest)');
      doc = parsed;
    }
    let spans = 0;
    for (const _ of spansOfOtlpDocument(doc)) spans++;
    if (spans === 0) return { line: undefined, spans }; // nothing worth a line
    return { line: JSON.stringify(encoding === 'proto' ? doc : canonicalOtlp(doc)), spans };
  } catch (err) {
    if (err instanceof HttpProblem) throw err;
    if (err instanceof TraceDataError) throw new HttpProblem(400, `invalid ExportTraceServiceRequest: ${err.message}`);
    throw new HttpProblem(400, `invalid ${encoding === 'proto' ? 'protobuf' : 'JSON'} body: ${(err as Error).message}`);
  }
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
  if (res.headersSent) return;
  let body: Buffer;
  if (message === undefined) body = encoding === 'json' ? Buffer.from('{}') : Buffer.alloc(0);
  else {
    // gRPC code 3 INVALID_ARGUMENT for bad data, 8 RESOURCE_EXHAUSTED for size, 12 UNIMPLEMENTED otherwise.
    const code = status === 400 ? 3 : status === 413 ? 8 : 12;
    body = encoding === 'json' ? Buffer.from(JSON.stringify({ code, message })) : encodeStatus(code, message);
  }
  res.writeHead(status, {
    'content-type': encoding === 'json' ? 'application/json' : 'application/x-protobuf',
    'content-length': body.length,
  });
  res.end(body);
}

function writeLine(stream: WriteStream, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(`${line}\n`, (err) => (err ? reject(err) : resolve()));
  });
}

/** Start the receiver. Resolves once it listens; rejects with a FaultlineInputError if the port is taken. */
export async function startCollector(options: CollectorOptions): Promise<Collector> {
  const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const host = options.host ?? '127.0.0.1';
  const stats: CollectorStats = { requests: 0, spans: 0, rejected: 0 };
  const stream = createWriteStream(options.out, { flags: 'a' });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  });

  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const encoding = mediaType(req);
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
      respond(res, 415, 'json', `unsupported content-type ${JSON.stringify(req.headers['content-type'] ?? '')}: use application/json or application/x-protobuf`);
      return;
    }
    stats.requests++;
    void (async () => {
      try {
        const raw = await readBody(req, max);
        const body = await decompress(req, raw, max);
        const { line, spans } = toLine(encoding, body);
        if (line !== undefined) await writeLine(stream, line);
        stats.spans += spans;
        respond(res, 200, encoding);
      } catch (err) {
        stats.rejected++;
        if (err instanceof HttpProblem) {
          if (err.status === 413) res.setHeader('connection', 'close');
          respond(res, err.status, encoding, err.message);
          if (err.status === 413) req.destroy();
        } else {
          log.error('collector failed to store a request:', err);
          respond(res, 503, encoding, `could not store the request: ${(err as Error).message}`);
        }
      }
    })();
  });

  await opened.catch((err: NodeJS.ErrnoException) => {
    throw new FaultlineInputError('FAULTLINE_USAGE', `cannot write ${options.out}: ${err.code ?? err.message}`, { cause: err });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4318, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err: NodeJS.ErrnoException) => {
    stream.end();
    const why = err.code === 'EADDRINUSE' ? 'is already in use (pass another --port)' : `cannot be opened (${err.code ?? err.message})`;
    throw new FaultlineInputError('FAULTLINE_USAGE', `port ${options.port ?? 4318} on ${host} ${why}`, { cause: err });
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : (options.port ?? 4318);
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    url,
    tracesUrl: `${url}/v1/traces`,
    out: options.out,
    stats,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())));
      })();
      return closing;
    },
  };
}
