/**
 * Faults on compressed bodies (issue 13: `stream_cut` on a gzip-compressed SSE response gave the application 0 bytes
 * and hung). The fault step decodes with the one decompressor, streaming: the application gets the planned fault on
 * the decoded body; a body that does not decode gives the error fetch gives anyway; a coding we cannot decode, or an
 * answer that inflates past the bound, makes the fault not applicable and the body passes as it came. Every test has
 * a deadline.
 */
import OpenAI from 'openai';
import { constants, createBrotliCompress, createDeflate, createGzip, gzipSync, type Gzip } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadCorpus, recordBody, sseEvents } from '../support/corpus';
import { startLlmServer, type LlmServer, type Reply } from '../support/llm-server';
import { callSpans, faultName, setupHarness, type Harness } from './harness';

const STREAM = loadCorpus('openai-chat-stream.jsonl').find((r) => r.id === '68715d67ef39')!; // 12 data events, [DONE]
const TEXT = loadCorpus('openai-chat.jsonl').find((r) => r.id === '55dae6f503a5')!;
const NDJSON = loadCorpus('ollama.jsonl').find((r) => r.id === '491eb5f299c5')!;

let h: Harness;
let server: LlmServer;
let reply: () => Reply;

beforeAll(async () => {
  h = setupHarness();
  server = await startLlmServer(() => reply());
});
afterAll(async () => {
  await server.close();
  await h.shutdown();
});
beforeEach(() => h.exporter.reset());

const deadline = <T>(p: Promise<T>, ms = 5000): Promise<T> =>
  Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref()),
  ]);
const rule = (fault: string, params: Record<string, unknown> = {}) => ({ rules: [{ fault, params }] });
const report = (taskId: string) => h.injector.triggerReport(taskId).tasks[0]!.rules[0]!;

/** The body compressed as a server streams it: one flushed piece per event, so each arrives decodable on its own. */
async function compressedPieces(pieces: string[], coding: 'gzip' | 'br' | 'deflate'): Promise<Buffer[]> {
  const z = (coding === 'gzip' ? createGzip() : coding === 'br' ? createBrotliCompress() : createDeflate()) as Gzip;
  const out: Buffer[] = [];
  let current: Buffer[] = [];
  z.on('data', (b: Buffer) => current.push(b));
  for (const p of pieces) {
    z.write(p);
    await new Promise<void>((resolve) =>
      z.flush(coding === 'br' ? constants.BROTLI_OPERATION_FLUSH : constants.Z_SYNC_FLUSH, () => resolve()),
    );
    out.push(Buffer.concat(current));
    current = [];
  }
  await new Promise<void>((resolve) => z.end(() => resolve()));
  await new Promise((r) => setImmediate(r));
  if (current.length > 0) out.push(Buffer.concat(current));
  return out;
}

async function fetchText(path: string, body: unknown): Promise<string> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return res.text();
}

describe('stream faults on compressed streams', () => {
  it.each(['gzip', 'br', 'deflate'] as const)(
    'stream_cut on a %s SSE stream: the app gets the first 3 events, decoded, and a clean end',
    async (coding) => {
      const events = sseEvents(STREAM.sse!);
      const chunks = await compressedPieces(events, coding);
      reply = () => ({
        status: 200,
        headers: { 'content-type': 'text/event-stream', 'content-encoding': coding },
        chunks,
      });
      const { result, taskId } = await h.task(rule('stream_cut', { afterEvents: 3 }), () =>
        deadline(fetchText('/v1/chat/completions', STREAM.request)),
      );
      expect(result).toBe(events.slice(0, 3).join(''));
      expect(report(taskId)).toMatchObject({ fires: 1, triggered: true });
      const span = callSpans(await h.waitForSpans((s) => callSpans(s).length === 1))[0]!;
      expect(faultName(span)).toBe('stream_cut');
      expect(span.attributes['faultline.response.done']).toBe(false);
    },
  );

  it('through the openai SDK: a gzip stream cut after 4 chunks ends the iteration after 4 chunks', async () => {
    const chunks = await compressedPieces(sseEvents(STREAM.sse!), 'gzip');
    reply = () => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' },
      chunks,
    });
    const client = new OpenAI({ apiKey: 'k', baseURL: `${server.url}/v1`, maxRetries: 0 });
    const { result } = await h.task(rule('stream_cut', { afterEvents: 4 }), () =>
      deadline(
        (async () => {
          let n = 0;
          for await (const _c of (await client.chat.completions.create(
            STREAM.request as never,
          )) as unknown as AsyncIterable<unknown>)
            n++;
          return n;
        })(),
      ),
    );
    expect(result).toBe(4);
  });

  it('stream_stall on a gzip NDJSON stream resumes and delivers every line, decoded, in order', async () => {
    const lines = NDJSON.stream!.split(/(?<=\n)/);
    const chunks = await compressedPieces(lines, 'gzip');
    reply = () => ({
      status: 200,
      headers: { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' },
      chunks,
    });
    const t0 = Date.now();
    const { result } = await h.task(rule('stream_stall', { afterEvents: 2, stallMs: 200 }), () =>
      deadline(fetchText('/api/chat', NDJSON.request)),
    );
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    expect(result).toBe(NDJSON.stream);
  });

  it('a gzip stream that does not decode: the app gets the error fetch gives without faultline (TypeError: terminated, Z_DATA_ERROR)', async () => {
    const good = gzipSync(STREAM.sse!);
    const bad = Buffer.concat([good.subarray(0, 30), Buffer.from('not deflate data at all'), good.subarray(60)]);
    reply = () => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' },
      body: bad,
    });
    const read = () =>
      fetchText('/v1/chat/completions', STREAM.request).then(
        () => 'no error',
        (e: Error & { cause?: { code?: string } }) => `${e.name}: ${e.message} (${e.cause?.code})`,
      );
    const { result: faulted } = await h.task(rule('stream_cut', { afterEvents: 3 }), () => deadline(read()));
    const { result: plain } = await h.task(undefined, () => deadline(read()));
    expect(plain).toBe('TypeError: terminated (Z_DATA_ERROR)');
    expect(faulted).toBe(plain);
  });

  it('a coding the decompressor does not know: the stream fault is not applicable, the bytes pass as they came', async () => {
    reply = () => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'content-encoding': 'x-unknown' },
      chunks: sseEvents(STREAM.sse!),
    });
    const { result, taskId } = await h.task(rule('stream_cut', { afterEvents: 3 }), () =>
      deadline(fetchText('/v1/chat/completions', STREAM.request)),
    );
    expect(result).toBe(STREAM.sse);
    expect(report(taskId)).toMatchObject({ fires: 0, notApplicable: 1 });
  });
});

describe('content faults on compressed answers', () => {
  it('llm_truncate_single on a gzip JSON answer: decoded, faulted, delivered without Content-Encoding', async () => {
    reply = () => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(recordBody(TEXT)),
    });
    const { result } = await h.task(rule('llm_truncate_single'), () =>
      deadline(fetchText('/v1/chat/completions', TEXT.request)),
    );
    const content = (TEXT.response as { choices: [{ message: { content: string } }] }).choices[0].message.content;
    const faulted = JSON.parse(result) as { choices: [{ message: { content: string }; finish_reason: string }] };
    expect(faulted.choices[0].message.content).toBe(content.slice(0, Math.max(1, Math.floor(content.length * 0.3))));
    expect(faulted.choices[0].finish_reason).toBe('length');
  });

  it('an answer that inflates past the bound (a gzip bomb): the fault is not applicable and the app gets what it would get anyway', async () => {
    const huge = JSON.stringify({ ...(TEXT.response as object), pad: 'x'.repeat(33 * 1024 * 1024) });
    const bomb = gzipSync(huge);
    expect(bomb.length).toBeLessThan(100 * 1024);
    reply = () => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: bomb,
    });
    const { result, taskId } = await h.task(rule('llm_truncate_single'), () =>
      deadline(fetchText('/v1/chat/completions', TEXT.request), 15_000),
    );
    expect(result.length).toBe(huge.length);
    expect(report(taskId)).toMatchObject({ fires: 0, notApplicable: 1 });
  }, 20_000);

  it('a JSON answer that does not decode: not applicable, the app gets fetch’s own decoding error', async () => {
    const good = gzipSync(recordBody(TEXT));
    const bad = Buffer.concat([good.subarray(0, 20), Buffer.from('garbage garbage garbage'), good.subarray(50)]);
    reply = () => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: bad,
    });
    const read = () =>
      fetchText('/v1/chat/completions', TEXT.request).then(
        () => 'no error',
        (e: Error & { cause?: { code?: string } }) => `${e.name}: ${e.message} (${e.cause?.code})`,
      );
    const { result: faulted, taskId } = await h.task(rule('llm_truncate_single'), () => deadline(read()));
    const { result: plain } = await h.task(undefined, () => deadline(read()));
    expect(faulted).toBe(plain);
    expect(report(taskId)).toMatchObject({ fires: 0, notApplicable: 1 });
  });
});
