/**
 * A fault proxy between an HTTP client and its server on 127.0.0.1: every request passes through it, and for the
 * JSON requests it is told to, it makes a communication fault on the wire — the connection reset before the request
 * reaches the server (non-delivery), held until the client gives up (timeout), held then forwarded (delay), forwarded
 * twice (duplicate), rewritten (stale replay, content faults), or answered with an error without forwarding (a
 * transient failure a client retries). Everything else is piped through unchanged, streaming responses included.
 */
import {
  request as httpRequest,
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Json } from './operators';

export type WireFault =
  | { kind: 'drop' }
  | { kind: 'timeout'; holdMs: number }
  | { kind: 'delay'; ms: number }
  | { kind: 'duplicate' }
  | { kind: 'rewrite'; body: Json }
  | { kind: 'fail'; status: number };

export interface FaultProxy {
  url: string;
  close(): Promise<void>;
}

/** Decide, per JSON request body, what the wire does with it (undefined: forward unchanged). */
export type Decide = (body: Json) => WireFault | undefined;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startProxy(upstream: string, decide: Decide): Promise<FaultProxy> {
  const target = new URL(upstream);
  const sockets = new Set<import('node:net').Socket>();
  const forward = (req: IncomingMessage, body: Buffer, res: ServerResponse | undefined): Promise<void> =>
    new Promise((resolve) => {
      const headers: Record<string, string | string[] | undefined> = { ...req.headers, host: target.host };
      if (body.length > 0) headers['content-length'] = String(body.length);
      else if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE')
        delete headers['content-length'];
      const up = httpRequest(
        { hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers },
        (upRes) => {
          if (res === undefined) {
            upRes.resume();
            upRes.on('end', resolve);
            upRes.on('error', () => resolve());
            return;
          }
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
          upRes.on('end', resolve);
          upRes.on('error', () => resolve());
          res.on('close', () => upRes.destroy());
        },
      );
      up.on('error', () => {
        if (res && !res.headersSent) res.writeHead(502).end();
        else res?.destroy();
        resolve();
      });
      if (body.length > 0) up.write(body);
      up.end();
    });

  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      let parsed: Json | undefined;
      if (body.length > 0 && /json/i.test(String(req.headers['content-type'] ?? ''))) {
        try {
          parsed = JSON.parse(body.toString('utf8')) as Json;
        } catch {
          parsed = undefined;
        }
      }
      const fault = parsed === undefined ? undefined : decide(parsed);
      switch (fault?.kind) {
        case undefined:
          return forward(req, body, res);
        case 'drop':
          req.socket.destroy();
          return;
        case 'timeout':
          await new Promise((r) => setTimeout(r, fault.holdMs));
          req.socket.destroy();
          return;
        case 'delay':
          await new Promise((r) => setTimeout(r, fault.ms));
          return forward(req, body, res);
        case 'duplicate': {
          const first = forward(req, body, res);
          await forward(req, body, undefined);
          return first;
        }
        case 'rewrite':
          return forward(req, Buffer.from(JSON.stringify(fault.body)), res);
        case 'fail':
          res.writeHead(fault.status, { 'content-type': 'text/plain' }).end('temporarily unavailable');
          return;
      }
    })().catch(() => res.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
