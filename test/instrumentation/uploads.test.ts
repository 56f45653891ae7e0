/**
 * Do no harm to uploads: a request body reaches the server unchanged and when the application sends it. A POST that
 * is not an LLM or agent call (an octet-stream upload, a bulk JSON API) goes straight through, never buffered nor
 * parsed; a streamed body of a call that is ours flows to the server while the span layer reads a copy, so a body that
 * ends only after the response started does not deadlock. Real fetch, a real loopback server watching the body arrive.
 */
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { recordBody } from '../support/wire-record';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { ours, setupOtel, type TestOtel } from '../support/otel';
import { deadline, echoSize, startUploadServer, type UploadServer } from '../support/upload-server';

let otel: TestOtel;
let server: UploadServer;
let inst: FaultlineInstrumentation;
const problems: string[] = [];
const capture: DiagLogger = {
  error: (...a: unknown[]) => problems.push(a.map(String).join(' ')),
  warn: (...a: unknown[]) => problems.push(a.map(String).join(' ')),
  info: () => {},
  debug: () => {},
  verbose: () => {},
};

const rec = CHAT_TEXT;
const MODEL = String(rec.request.model);

beforeAll(async () => {
  diag.setLogger(capture, DiagLogLevel.WARN);
  otel = setupOtel();
  inst = new FaultlineInstrumentation();
  inst.enable();
  server = await startUploadServer();
});

afterAll(async () => {
  inst.disable();
  await server.close();
  await otel.shutdown();
  diag.disable();
});

beforeEach(() => {
  problems.length = 0;
  otel.exporter.reset();
  server.respond(echoSize);
});

/** A chat request body of exactly `size` bytes (the user message padded). */
function chatBody(size: number): Buffer {
  const base = { model: MODEL, messages: [{ role: 'user', content: '' }] };
  const empty = Buffer.byteLength(JSON.stringify(base));
  if (size < empty) throw new Error(`a chat body needs at least ${empty} bytes`);
  base.messages[0]!.content = 'x'.repeat(size - empty);
  return Buffer.from(JSON.stringify(base));
}

function bytesOf(size: number, seed = 7): Buffer {
  const b = Buffer.alloc(size);
  let x = seed;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    b[i] = x & 0xff;
  }
  return b;
}

/** A ReadableStream giving `body` in pieces of the given sizes, cycled. */
function streamOf(body: Buffer, sizes: number[]): ReadableStream<Uint8Array> {
  let at = 0;
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= body.length) return controller.close();
      const n = sizes[i++ % sizes.length]!;
      controller.enqueue(new Uint8Array(body.subarray(at, at + n)));
      at += n;
    },
  });
}

const chatReply = (res: import('node:http').ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(recordBody(rec));
};

describe('a body that is not ours', () => {
  it('a streamed octet-stream upload reaches the server while the app is still producing it', async () => {
    // The app sends its second chunk only once the server has the first: a layer that buffers never gets there.
    let sawFirst!: () => void;
    const first = new Promise<void>((r) => (sawFirst = r));
    const next = server.next();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(bytesOf(1000)));
      },
      async pull(controller) {
        await first;
        controller.enqueue(new Uint8Array(bytesOf(2000, 9)));
        controller.close();
      },
    });
    const sent = fetch(`${server.url}/upload`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body,
      duplex: 'half',
    } as RequestInit);
    const upload = await deadline(next, 5000, 'upload request');
    await deadline(upload.first, 5000, 'first chunk at the server');
    sawFirst();
    const res = await deadline(sent, 5000, 'response');
    expect(await res.json()).toEqual({ bytes: 3000 });
    expect(Buffer.concat(upload.chunks)).toEqual(Buffer.concat([bytesOf(1000), bytesOf(2000, 9)]));
    expect(ours(otel.spans())).toHaveLength(0);
    expect(problems).toEqual([]);
  });

  it('a 0.7 MB JSON POST to an API that is no agent protocol is never parsed', async () => {
    const bulk = JSON.stringify({
      rows: Array.from({ length: 7000 }, (_, i) => ({
        id: i,
        name: `row ${i}`,
        text: 'lorem ipsum dolor sit amet '.repeat(3),
      })),
    });
    expect(bulk.length).toBeGreaterThan(700_000);
    // Counted: every JSON.parse of the body or a piece of it (a large body is parsed piecewise, in many small calls).
    const parse = JSON.parse;
    let parses = 0;
    JSON.parse = ((text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) => {
      if (typeof text === 'string' && text.length > 2 && bulk.includes(text)) parses++;
      return parse(text, reviver);
    }) as typeof JSON.parse;
    let answer: string;
    try {
      const res = await fetch(`${server.url}/api/bulk`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: bulk,
      });
      answer = await res.text();
    } finally {
      JSON.parse = parse;
    }
    expect(parses).toBe(0);
    expect(JSON.parse(answer)).toEqual({ bytes: Buffer.byteLength(bulk) });
    expect(server.uploads.at(-1)?.chunks.length).toBeGreaterThan(0);
    expect(ours(otel.spans())).toHaveLength(0);
  });
});

describe('a streamed body that is ours', () => {
  it('flows to the server while the app produces it, and the span still gets the model', async () => {
    server.respond(async (upload, res) => {
      await upload.done;
      chatReply(res);
    });
    const whole = chatBody(5000);
    let sawFirst!: () => void;
    const first = new Promise<void>((r) => (sawFirst = r));
    const next = server.next();
    let sentFirst = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (!sentFirst) {
          sentFirst = true;
          return controller.enqueue(new Uint8Array(whole.subarray(0, 100)));
        }
        await first;
        controller.enqueue(new Uint8Array(whole.subarray(100)));
        controller.close();
      },
    });
    const sent = fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    const upload = await deadline(next, 5000, 'chat request');
    await deadline(upload.first, 5000, 'first chunk at the server');
    sawFirst();
    const res = await deadline(sent, 5000, 'response');
    expect(await res.text()).toBe(recordBody(rec));
    expect(await upload.done).toEqual(whole);
    const [span] = ours(await otel.waitForSpans((s) => ours(s).length === 1));
    expect(span?.name).toBe(`chat ${MODEL}`);
    expect(span?.attributes['gen_ai.request.model']).toBe(MODEL);
    expect(span?.attributes['faultline.request.message_count']).toBe(1);
    expect(span?.attributes['gen_ai.usage.output_tokens']).toBe(
      (rec.response as { usage: { completion_tokens: number } }).usage.completion_tokens,
    );
    expect(problems).toEqual([]);
  });

  it('a body that ends only after the response headers arrived does not deadlock', async () => {
    // The server answers headers on the first byte and the rest once the body ended; the app ends its body only once
    // fetch resolved (the response headers are in).
    server.respond(async (upload, res) => {
      await upload.first;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      await upload.done;
      res.end(recordBody(rec));
    });
    const whole = chatBody(2000);
    for (const path of ['/v1/chat/completions', '/upload']) {
      let headersIn!: () => void;
      const gotHeaders = new Promise<void>((r) => (headersIn = r));
      let step = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (step++ === 0) return controller.enqueue(new Uint8Array(whole.subarray(0, 500)));
          await gotHeaders;
          controller.enqueue(new Uint8Array(whole.subarray(500)));
          controller.close();
        },
      });
      const init = {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        duplex: 'half',
      } as RequestInit;
      const res = await deadline(fetch(`${server.url}${path}`, init), 5000, `response headers (${path})`);
      headersIn();
      expect(await deadline(res.text(), 5000, `response body (${path})`)).toBe(recordBody(rec));
      expect(await server.uploads.at(-1)!.done).toEqual(whole);
    }
    expect(ours(await otel.waitForSpans((s) => ours(s).length === 1))).toHaveLength(1);
  });
});

describe('a streamed body and the response', () => {
  it('an abort mid-upload fails the call at once and ends the span as aborted (the body never finishes)', async () => {
    server.respond(async (upload, res) => {
      await upload.done.catch(() => undefined);
      res.end();
    });
    const whole = chatBody(4000);
    let sent = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return new Promise<void>(() => undefined); // the rest never comes
        sent = true;
        controller.enqueue(new Uint8Array(whole.subarray(0, 1000)));
      },
    });
    const ac = new AbortController();
    const next = server.next();
    const call = fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      duplex: 'half',
      signal: ac.signal,
    } as RequestInit);
    await deadline((await deadline(next, 5000, 'request')).first, 5000, 'first chunk');
    ac.abort();
    const err = await deadline(
      call.then(
        () => undefined,
        (e: unknown) => e,
      ),
      3000,
      'aborted call',
    );
    expect((err as Error).name).toBe('AbortError');
    const [span] = ours(await otel.waitForSpans((s) => ours(s).length === 1, 3000));
    expect(span?.attributes['faultline.response.aborted']).toBe(true);
  });
});

describe('byte identity of uploads', () => {
  const SIZES = [0, 1, 1000, 65_535, 65_536, 65_537, 1 << 20, 5 << 20];
  // Pieces of 1 byte only for small bodies: fetch takes seconds to send 64 KB a byte at a time.
  const CHUNKS = [[1], [7, 4096], [4096, 7], [16_384], [65_536, 3]];

  it.each(SIZES)(
    '%i bytes of octet-stream, buffered and streamed in pieces of every size, arrive unchanged',
    async (size) => {
      const body = bytesOf(size, size + 1);
      const sends: Array<() => RequestInit> = [
        () => ({ body }),
        ...CHUNKS.filter((c) => size <= 1000 || c[0]! >= 4096).map(
          (c) => () => ({ body: streamOf(body, c), duplex: 'half' }) as RequestInit,
        ),
      ];
      for (const init of sends) {
        const res = await fetch(`${server.url}/upload`, {
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream' },
          ...init(),
        });
        expect(await res.json()).toEqual({ bytes: size });
        expect((await server.uploads.at(-1)!.done).equals(body)).toBe(true);
      }
      expect(ours(otel.spans())).toHaveLength(0);
    },
  );

  it.each(SIZES.filter((s) => s >= 1000))(
    'a %i-byte chat request, buffered and streamed, arrives unchanged and makes one span',
    async (size) => {
      server.respond(async (upload, res) => {
        await upload.done;
        chatReply(res);
      });
      const body = chatBody(size);
      const sends: Array<() => RequestInit> = [
        () => ({ body: body.toString() }),
        () => ({ body }),
        ...CHUNKS.filter((c) => size <= 1000 || c[0]! >= 4096).map(
          (c) => () => ({ body: streamOf(body, c), duplex: 'half' }) as RequestInit,
        ),
      ];
      for (const init of sends) {
        otel.exporter.reset();
        const res = await fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          ...init(),
        });
        expect(await res.text()).toBe(recordBody(rec));
        expect((await server.uploads.at(-1)!.done).equals(body)).toBe(true);
        const spans = ours(await otel.waitForSpans((s) => ours(s).length === 1));
        expect(spans).toHaveLength(1);
        expect(spans[0]?.attributes['gen_ai.request.model']).toBe(MODEL);
      }
      expect(problems).toEqual([]);
    },
  );
});
