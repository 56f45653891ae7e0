/**
 * Do no harm over HTTP/2: with the application's undici Agent negotiating h2 (allowH2) below the layer, corpus
 * answers (JSON and SSE) reach the app byte-identical and make their span, and request bodies (buffered and streamed,
 * ours and not) reach the server unchanged. A real TLS HTTP/2 server on 127.0.0.1, real fetch.
 */
import { readFileSync } from 'node:fs';
import {
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { loadCorpus, recordBody, sseEvents, type CorpusRecord } from '../support/corpus';
import { ours, setupOtel, type TestOtel } from '../support/otel';

const TLS = join(__dirname, '../support/tls');
let otel: TestOtel;
let inst: FaultlineInstrumentation;
let original: Dispatcher;
let h2: Agent;
let server: Http2SecureServer;
let url: string;
let reply: (req: Http2ServerRequest, res: Http2ServerResponse, body: Buffer) => void;
const seen: { path: string; version: string; body: Buffer }[] = [];

beforeAll(async () => {
  otel = setupOtel();
  original = getGlobalDispatcher();
  h2 = new Agent({ allowH2: true, connect: { rejectUnauthorized: false } });
  setGlobalDispatcher(h2);
  inst = new FaultlineInstrumentation({ captureMessageContent: true });
  inst.enable();
  server = createSecureServer(
    { key: readFileSync(join(TLS, 'localhost-key.pem')), cert: readFileSync(join(TLS, 'localhost-cert.pem')) },
    (req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const body = Buffer.concat(parts);
        seen.push({ path: req.url, version: req.httpVersion, body });
        reply(req, res, body);
      });
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  inst.disable();
  setGlobalDispatcher(original);
  await h2.close();
  await new Promise<void>((r) => server.close(() => r()));
  await otel.shutdown();
});

beforeEach(() => {
  otel.exporter.reset();
  seen.length = 0;
});

async function serve(rec: CorpusRecord): Promise<void> {
  reply = (_req, res, _body) => {
    if (rec.sse === undefined) {
      res.writeHead(rec.status, { 'content-type': 'application/json' });
      res.end(recordBody(rec));
      return;
    }
    res.writeHead(rec.status, { 'content-type': 'text/event-stream' });
    const events = sseEvents(rec.sse);
    const next = (i: number): void => {
      if (i === events.length) return void res.end();
      res.write(events[i]);
      setImmediate(() => next(i + 1));
    };
    next(0);
  };
}

describe('HTTP/2', () => {
  it.each([
    ['openai-chat.jsonl', '/v1/chat/completions'],
    ['openai-chat-stream.jsonl', '/v1/chat/completions'],
    ['anthropic-messages.jsonl', '/v1/messages'],
  ] as const)('%s: every record arrives unchanged over h2 and makes its span', async (file, path) => {
    const records = loadCorpus(file).slice(0, 25);
    for (const rec of records) {
      await serve(rec);
      otel.exporter.reset();
      const sent = JSON.stringify(rec.request);
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: sent,
      });
      expect(res.status).toBe(rec.status);
      expect(await res.text()).toBe(recordBody(rec));
      const last = seen.at(-1)!;
      expect(last.version).toBe('2.0');
      expect(last.body.toString()).toBe(sent);
      expect(ours(await otel.waitForSpans((s) => ours(s).length === 1))).toHaveLength(1);
    }
  });

  it('request bodies, buffered and streamed, ours and not, reach the server unchanged over h2', async () => {
    reply = (_req, res, body) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ bytes: body.length }));
    };
    const chat = Buffer.from(
      JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'z'.repeat(200_000) }] }),
    );
    const upload = Buffer.alloc(300_000, 7);
    const streamed = (b: Buffer) =>
      new ReadableStream({
        start(c) {
          for (let i = 0; i < b.length; i += 16_384) c.enqueue(new Uint8Array(b.subarray(i, i + 16_384)));
          c.close();
        },
      });
    const cases: [string, string, Buffer, () => RequestInit['body']][] = [
      ['/v1/chat/completions', 'application/json', chat, () => chat],
      ['/v1/chat/completions', 'application/json', chat, () => streamed(chat)],
      ['/upload', 'application/octet-stream', upload, () => upload],
      ['/upload', 'application/octet-stream', upload, () => streamed(upload)],
    ];
    for (const [path, type, bytes, body] of cases) {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': type },
        body: body(),
        duplex: 'half',
      } as RequestInit);
      expect(await res.json()).toEqual({ bytes: bytes.length });
      expect(seen.at(-1)!.body.equals(bytes)).toBe(true);
      expect(seen.at(-1)!.version).toBe('2.0');
    }
    const spans = ours(await otel.waitForSpans((s) => ours(s).length === 2));
    expect(spans.map((s) => s.attributes['gen_ai.request.model'])).toEqual(['gpt-4o-mini', 'gpt-4o-mini']);
  });
});
