/**
 * A loopback HTTP/1.1 server (127.0.0.1, port 0) that watches request bodies arrive: each request's chunks are kept
 * as they come, with promises for its first chunk and its end, so a test can tell a body that flows from one that was
 * held back. What it answers is up to the test (`respond`), and it may answer before the request body has ended.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Upload {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  chunks: Buffer[];
  /** Resolves when the first body byte arrived (or the body ended empty). */
  first: Promise<void>;
  /** Resolves with the whole body once it ended. */
  done: Promise<Buffer>;
}

export type UploadResponder = (upload: Upload, res: ServerResponse) => void | Promise<void>;

export interface UploadServer {
  url: string;
  uploads: Upload[];
  /** Resolves with the next upload to arrive. */
  next(): Promise<Upload>;
  respond(fn: UploadResponder): void;
  close(): Promise<void>;
}

/** The default answer: 200 with the body's size, once the body ended. */
export const echoSize: UploadResponder = async (upload, res) => {
  const body = await upload.done;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ bytes: body.length }));
};

export async function startUploadServer(initial: UploadResponder = echoSize): Promise<UploadServer> {
  let responder = initial;
  const uploads: Upload[] = [];
  const waiting: ((u: Upload) => void)[] = [];
  const server: Server = createServer((req, res) => {
    let first!: () => void;
    let done!: (b: Buffer) => void;
    const upload: Upload = {
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: req.headers,
      chunks: [],
      first: new Promise<void>((r) => (first = r)),
      done: new Promise<Buffer>((r) => (done = r)),
    };
    req.on('data', (c: Buffer) => {
      upload.chunks.push(c);
      first();
    });
    req.on('end', () => {
      first();
      done(Buffer.concat(upload.chunks));
    });
    uploads.push(upload);
    waiting.shift()?.(upload);
    void Promise.resolve(responder(upload, res)).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    uploads,
    next: () => new Promise<Upload>((r) => waiting.push(r)),
    respond(fn) {
      responder = fn;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Reject after `ms` with `what` timed out: a hang becomes a failure with a name. */
export function deadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result after ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
