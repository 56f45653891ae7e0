/**
 * A loopback HTTP server (127.0.0.1, port 0) that speaks a provider's wire format: each test sets what to answer.
 * Bodies come from the project-written wire modules (openai-wire.ts, anthropic-wire.ts, gemini-wire.ts, ollama-wire.ts,
 * embeddings-wire.ts, via wire-text.ts's exchange) or, in the conformance tier, from the corpus; streams are written
 * event by event, flushed, as providers do.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { recordBody, sseEvents, streamPieces, type CorpusRecord } from './wire-record';

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  /** Whole body. */
  body?: string | Buffer;
  /** Or: body parts written one by one, with `gapMs` between them. */
  chunks?: Array<string | Buffer>;
  gapMs?: number;
  /** Destroy the socket after writing (truncation / reset). */
  destroyAfter?: boolean;
}

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

export type Responder = (req: SeenRequest) => Reply | Promise<Reply>;

export interface LlmServer {
  url: string;
  port: number;
  requests: SeenRequest[];
  respond(fn: Responder): void;
  close(): Promise<void>;
}

export async function startLlmServer(initial?: Responder): Promise<LlmServer> {
  let responder: Responder = initial ?? (() => ({ status: 404, body: 'no responder' }));
  const requests: SeenRequest[] = [];
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const seen: SeenRequest = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(parts),
      };
      requests.push(seen);
      void Promise.resolve(responder(seen)).then((reply) => write(res, reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
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

async function write(res: ServerResponse, reply: Reply): Promise<void> {
  res.writeHead(reply.status ?? 200, reply.headers ?? {});
  if (reply.chunks) {
    res.flushHeaders();
    for (const c of reply.chunks) {
      res.write(c);
      if (reply.gapMs) await new Promise((r) => setTimeout(r, reply.gapMs));
      else await new Promise((r) => setImmediate(r));
    }
  } else if (reply.body !== undefined) {
    res.write(reply.body);
  }
  if (reply.destroyAfter) {
    await new Promise((r) => setImmediate(r));
    res.socket?.destroy();
    return;
  }
  res.end();
}

/**
 * The reply a provider would send for a recorded or project-written exchange: JSON in one write, SSE event by event, Gemini's JSON-array
 * stream element by element (as application/json), Ollama's NDJSON line by line (as application/x-ndjson).
 */
export function corpusReply(r: CorpusRecord): Reply {
  const status = r.status ?? 200;
  if (r.sse !== undefined) {
    return {
      status,
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
      chunks: sseEvents(r.sse),
    };
  }
  if (r.stream !== undefined) {
    const type = r.framing === 'ndjson' ? 'application/x-ndjson' : 'application/json; charset=UTF-8';
    return { status, headers: { 'content-type': type }, chunks: streamPieces(r) };
  }
  return { status, headers: { 'content-type': 'application/json' }, body: recordBody(r) };
}
