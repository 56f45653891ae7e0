/**
 * Every guarded path ends, with the error the application would get without faultline or the guard's own, and
 * within a deadline: a stream cut after the application saw it start is not retried (undici's RetryHandler rule),
 * an abort during a back-off settles at once, and a streamed request body is resent from its copy only once the copy
 * is complete. Real fetch and openai SDK, real loopback servers, real back-off timers.
 */
import OpenAI from 'openai';
import { Agent } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GuardConfigInput } from '../../detectors/guards/index';
import { sseEvents } from '../support/wire-record';
import { CHAT_STREAM_PLAIN, CHAT_TEXT } from '../support/chat-exchanges';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { deadline, startUploadServer, type UploadServer } from '../support/upload-server';
import { causes, chatSpans, guardEvents, setupGuardHarness, type GuardHarness } from './harness';

const rec = CHAT_TEXT;
const streamRec = CHAT_STREAM_PLAIN;
const events = sseEvents(streamRec.sse as string);

/** What a live server sends: the recorded answer with a fresh `created` (an old one is stale to the guard's detectors). */
function fresh(): string {
  const b = structuredClone(rec.response) as { created?: number };
  if (typeof b.created === 'number') b.created = Math.floor(Date.now() / 1000);
  return JSON.stringify(b);
}

let h: GuardHarness;
let server: LlmServer;
let uploads: UploadServer;

const retrying = (baseDelayMs: number): GuardConfigInput => ({
  routes: [{ name: 'chat', match: { provider: 'openai*' }, retry: { maxRetries: 2, baseDelayMs, jitter: 'none' } }],
});

beforeAll(async () => {
  h = setupGuardHarness();
  server = await startLlmServer();
  uploads = await startUploadServer();
});

afterAll(async () => {
  await server.close();
  await uploads.close();
  await h.shutdown();
});

beforeEach(() => {
  server.requests.length = 0;
  h.exporter.reset();
});

/** Read a fetch body to its end, or to the error it fails with. */
async function readAll(res: Response): Promise<{ text: string } | { error: unknown }> {
  try {
    return { text: await res.text() };
  } catch (error) {
    return { error };
  }
}

describe('a stream cut after the application saw it start', () => {
  it('is not retried: the app gets the error fetch gives without faultline, and the server is hit once', async () => {
    h.config = retrying(50);
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [events[0]!],
      destroyAfter: true,
    }));
    const call = (init: RequestInit = {}) =>
      fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(streamRec.request),
        ...init,
      });

    // Without faultline: a dispatcher of its own, which the span layer is not in front of.
    const bare = await readAll(await call({ dispatcher: new Agent() } as unknown as RequestInit));
    expect('error' in bare).toBe(true);
    const expected = (bare as { error: Error }).error;
    server.requests.length = 0;

    const { result } = await h.task(undefined, async () => deadline(readAll(await call()), 5000, 'guarded stream'));
    expect('error' in result).toBe(true);
    const got = (result as { error: Error }).error;
    expect(got.name).toBe(expected.name);
    expect(got.message).toBe(expected.message);
    expect(server.requests).toHaveLength(1);
    const [span] = chatSpans(await h.waitForSpans((s) => chatSpans(s).length === 1));
    expect(guardEvents(span!).map((e) => e.action)).not.toContain('retry');
  });

  it('through the openai SDK: the stream iteration fails once, it does not hang or repeat events', async () => {
    h.config = retrying(50);
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: events.slice(0, 2),
      destroyAfter: true,
    }));
    const openai = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
    const { result } = await h.task(undefined, () =>
      deadline(
        (async () => {
          let chunks = 0;
          try {
            for await (const _c of (await openai.chat.completions.create(
              streamRec.request as never,
            )) as unknown as AsyncIterable<unknown>)
              chunks++;
            return { chunks };
          } catch (error) {
            return { chunks, error };
          }
        })(),
        5000,
        'SDK stream',
      ),
    );
    expect(result.error).toBeDefined();
    expect(result.chunks).toBeLessThanOrEqual(2);
    expect(server.requests).toHaveLength(1);
  });
});

describe('an abort while the guard waits to retry', () => {
  it('settles the call at once with the abort, not after the back-off (its span ends)', async () => {
    h.config = retrying(10_000);
    server.respond(() => ({
      status: 500,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"message":"down"}}',
    }));
    const t0 = Date.now();
    const { result } = await h.task(undefined, () =>
      deadline(
        fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(rec.request),
          signal: AbortSignal.timeout(200),
        }).then(
          () => undefined,
          (error: unknown) => error,
        ),
        3000,
        'aborted guarded call',
      ),
    );
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(causes(result).some((e) => (e as Error).name === 'TimeoutError' || (e as Error).name === 'AbortError')).toBe(
      true,
    );
    // fetch rejects on its own; the call behind it must settle too (its span ends), not wait out the back-off.
    expect(chatSpans(await h.waitForSpans((s) => chatSpans(s).length === 1, 2000))).toHaveLength(1);
    expect(server.requests).toHaveLength(1);
  });
});

describe('a streamed request body', () => {
  const body = Buffer.from(JSON.stringify(rec.request));
  const streamed = (): RequestInit =>
    ({
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(c) {
          c.enqueue(new Uint8Array(body.subarray(0, 10)));
          c.enqueue(new Uint8Array(body.subarray(10)));
          c.close();
        },
      }),
      duplex: 'half',
    }) as RequestInit;

  it('is resent from its copy after a retryable status: the server gets the same bytes twice', async () => {
    h.config = retrying(10);
    let n = 0;
    uploads.respond(async (upload, res) => {
      await upload.done;
      if (n++ === 0) {
        res.writeHead(500, { 'content-type': 'application/json' });
        return void res.end('{"error":{"message":"once"}}');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer);
    });
    const answer = fresh();
    const before = uploads.uploads.length;
    const { result } = await h.task(undefined, async () =>
      deadline((await fetch(`${uploads.url}/v1/chat/completions`, streamed())).text(), 5000, 'retried call'),
    );
    expect(result).toBe(answer);
    const sent = uploads.uploads.slice(before);
    expect(sent).toHaveLength(2);
    for (const u of sent) expect((await u.done).equals(body)).toBe(true);
  });

  it('whose copy is not complete when the answer comes is not retried: the app gets the answer as is', async () => {
    h.config = retrying(10);
    uploads.respond(async (upload, res) => {
      await upload.first;
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"early"}}');
    });
    let release!: () => void;
    const later = new Promise<void>((r) => (release = r));
    const before = uploads.uploads.length;
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        async pull(c) {
          if (!c.desiredSize) return;
          c.enqueue(new Uint8Array(body.subarray(0, 10)));
          await later;
          c.enqueue(new Uint8Array(body.subarray(10)));
          c.close();
        },
      }),
      duplex: 'half',
    } as RequestInit;
    const { result } = await h.task(undefined, async () => {
      const res = await deadline(fetch(`${uploads.url}/v1/chat/completions`, init), 5000, 'early answer');
      release();
      return { status: res.status, text: await deadline(res.text(), 5000, 'early answer body') };
    });
    expect(result).toEqual({ status: 503, text: '{"error":{"message":"early"}}' });
    expect(uploads.uploads.length - before).toBe(1);
  });
});
