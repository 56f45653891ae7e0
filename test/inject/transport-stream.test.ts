/**
 * Transport and streaming faults through the real openai and Anthropic clients: what a real client really sees
 * (HTTP errors with provider bodies, resets, timeouts, slow first byte; cut, stalled, unterminated and corrupted
 * streams), and that nothing changes without a matching rule.
 */
import Anthropic from '@anthropic-ai/sdk';
import { SpanStatusCode } from '@opentelemetry/api';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ATTR_FL_FAULT_MODE, ATTR_FL_FAULT_TYPE, ATTR_HTTP_RESPONSE_STATUS_CODE } from '../../instrumentation/semconv';
import { loadCorpus, recordBody, sseEvents, type CorpusRecord } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer, type Reply } from '../support/llm-server';
import { callSpans, faultName, injectedEvents, setupHarness, type Harness } from './harness';

const chat = loadCorpus('openai-chat.jsonl');
const streams = loadCorpus('openai-chat-stream.jsonl');
const anthropic = loadCorpus('anthropic-messages.jsonl');
const TEXT = chat.find((r) => r.id === '55dae6f503a5')!;
const STREAM = streams.find((r) => r.id === '68715d67ef39')!; // 12 data events, usage chunk, [DONE]
const A_TEXT = anthropic.find((r) => r.id === '55fa0793d37c')!;
const A_TOOL = anthropic.find((r) => r.id === 'fbce18b9673f')!;

let h: Harness;
let server: LlmServer;
let reply: (r: CorpusRecord) => Reply = corpusReply;
let current: CorpusRecord = TEXT;

beforeAll(async () => {
  h = setupHarness();
  server = await startLlmServer(() => reply(current));
});
afterAll(async () => {
  await server.close();
  await h.shutdown();
});
beforeEach(() => {
  h.exporter.reset();
  server.requests.length = 0;
  reply = corpusReply;
  current = TEXT;
});

const openai = (o: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
  new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0, ...o });
// A full garbage collection on demand (as --expose-gc gives), to show a held call survives one.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const plan = (fault: string, params: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  rules: [{ fault, params, match: { operation: 'chat' }, ...extra }],
});
const spansOf = async (n: number) => callSpans(await h.waitForSpans((s) => callSpans(s).length >= n));

describe('HTTP errors with provider-shaped bodies', () => {
  it('a 429 reaches the openai SDK as RateLimitError; the SDK’s own retry then succeeds', async () => {
    const { result, taskId } = await h.task(plan('http_429', { retryAfterS: 0 }), () =>
      openai({ maxRetries: 2 }).chat.completions.create(TEXT.request as never),
    );
    expect(result.choices[0].message.content).toBe(
      (TEXT.response as { choices: [{ message: { content: string } }] }).choices[0].message.content,
    );
    expect(server.requests).toHaveLength(1); // the faulted attempt never left the process
    const spans = await spansOf(2);
    expect(faultName(spans[0])).toBe('http_429');
    expect(spans[0].attributes).toMatchObject({
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 429,
      [ATTR_FL_FAULT_TYPE]: 'error',
      [ATTR_FL_FAULT_MODE]: 'transport',
    });
    expect(spans[0].status.code).toBe(SpanStatusCode.ERROR);
    expect(faultName(spans[1])).toBeUndefined();
    // The retry is the same call again (same request after a failure): not a second match.
    expect(h.injector.triggerReport(taskId).tasks[0].rules[0]).toMatchObject({ matched: 1, fires: 1, triggered: true });
  });

  it('without retries the app sees the RateLimitError with the OpenAI error body and Retry-After', async () => {
    const err = await h
      .task(plan('http_429', { retryAfterS: 7 }), () => openai().chat.completions.create(TEXT.request as never))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const e = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.status).toBe(429);
    expect(e.headers.get('retry-after')).toBe('7');
    expect(e.code).toBe('rate_limit_exceeded');
    expect(e.type).toBe('requests');
  });

  it.each([
    ['http_500', 500],
    ['http_502', 502],
    ['http_503', 503],
    ['http_529', 529],
  ])('%s reaches the openai SDK as an APIError with status %i', async (fault, status) => {
    const err = await h
      .task(plan(fault), () => openai().chat.completions.create(TEXT.request as never))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(status);
    if (status >= 500) expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(server.requests).toHaveLength(0);
  });

  it('Anthropic 529 arrives as overloaded_error through the Anthropic SDK', async () => {
    current = A_TEXT;
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: server.url, maxRetries: 0, timeout: 30_000 });
    const err = await h
      .task(plan('http_529'), () => client.messages.create(A_TEXT.request as never))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    const e = err as InstanceType<typeof Anthropic.APIError>;
    expect(e.status).toBe(529);
    expect((e.error as { error: { type: string } }).error.type).toBe('overloaded_error');
  });
});

describe('connection faults and timeouts', () => {
  it('conn_reset and conn_refused reach the SDK as APIConnectionError; nothing reaches the server', async () => {
    for (const fault of ['conn_reset', 'conn_refused']) {
      const err = await h
        .task(plan(fault), () => openai().chat.completions.create(TEXT.request as never))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIConnectionError);
      expect(
        String(
          (err as Error & { cause?: { cause?: { code?: string } } }).cause?.cause?.code ??
            (err as { cause?: { code?: string } }).cause?.code,
        ),
      ).toMatch(fault === 'conn_reset' ? /ECONNRESET/ : /ECONNREFUSED/);
    }
    expect(server.requests).toHaveLength(0);
  });

  it('timeout_hang holds the call until the client gives up (APIConnectionTimeoutError)', async () => {
    const t0 = Date.now();
    const err = await h
      .task(plan('timeout_hang'), () => openai({ timeout: 300 }).chat.completions.create(TEXT.request as never))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    const [span] = await spansOf(1);
    expect(span.attributes[ATTR_FL_FAULT_TYPE]).toBe('timeout');
  });

  it('a held call survives a garbage collection: the client’s timeout still ends it', async () => {
    // A hung call has no socket and no timer; fetch follows the caller's abort signal only weakly, so if nothing kept
    // the held call reachable, a collection would take it and the timeout would never reach the application.
    // (test/e2e/register-plan.test.ts also shows that, once the application gave up, the process exits by itself.)
    setTimeout(gc, 100);
    const err = await h
      .task(plan('timeout_hang'), () => openai({ timeout: 300 }).chat.completions.create(TEXT.request as never))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
  });

  it('timeout_hang with stallMs resets after the stall', async () => {
    const t0 = Date.now();
    const err = await h
      .task(plan('timeout_hang', { stallMs: 200 }), () => openai().chat.completions.create(TEXT.request as never))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionError);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
  });

  it('slow_first_byte delays the call; the body is byte-identical', async () => {
    const t0 = Date.now();
    const { result } = await h.task(plan('slow_first_byte', { delayMs: 300 }), async () =>
      (
        await fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(TEXT.request),
        })
      ).text(),
    );
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(result).toBe(recordBody(TEXT));
    const [span] = await spansOf(1);
    expect(span.attributes[ATTR_FL_FAULT_TYPE]).toBe('delay');
  });
});

async function collect(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
  const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}
const finishReasons = (chunks: OpenAI.Chat.Completions.ChatCompletionChunk[]) =>
  chunks.flatMap((c) => c.choices.map((x) => x.finish_reason).filter(Boolean));
const streamCall = async (signal?: AbortSignal) =>
  (await openai().chat.completions.create(
    STREAM.request as never,
    signal ? { signal } : {},
  )) as unknown as AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>;
const rawStream = () =>
  fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(STREAM.request),
  });

describe('streaming faults (event-wise, never buffered)', () => {
  beforeEach(() => {
    current = STREAM;
  });

  it('stream_cut ends the stream after N events without a finish reason', async () => {
    const { result } = await h.task(plan('stream_cut', { afterEvents: 3 }), async () => collect(await streamCall()));
    expect(result).toHaveLength(3);
    expect(finishReasons(result)).toEqual([]);
    const [span] = await spansOf(1);
    expect(span.attributes[ATTR_FL_FAULT_TYPE]).toBe('truncate');
    expect(injectedEvents(span)[0].attributes?.['faultline.fault.noop']).toBe(false);
  });

  it('stream_cut with reset: the app’s iteration fails mid-stream; with partialEvent the raw body ends inside an event', async () => {
    const err = await h
      .task(plan('stream_cut', { afterEvents: 2, reset: true }), async () => collect(await streamCall()))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    const { result } = await h.task(plan('stream_cut', { afterEvents: 2, partialEvent: true }), async () =>
      (await rawStream()).text(),
    );
    const events = sseEvents(STREAM.sse!);
    expect(result.startsWith(events[0] + events[1])).toBe(true);
    expect(result.length).toBeGreaterThan((events[0] + events[1]).length);
    expect(result.endsWith('\n\n')).toBe(false);
  });

  it('stream_drop_done drops [DONE]; everything else arrives byte for byte', async () => {
    const { result } = await h.task(plan('stream_drop_done'), async () => (await rawStream()).text());
    expect(result).toBe(STREAM.sse!.replace(/data: \[DONE\]\r?\n\r?\n$/, ''));
    expect(result).not.toContain('[DONE]');
  });

  it('stream_stall holds the stream until the client aborts; with stallMs it resumes complete', async () => {
    const ac = new AbortController();
    const t0 = Date.now();
    const { result: got } = await h.task(plan('stream_stall', { afterEvents: 2 }), async () => {
      const s = await streamCall(ac.signal);
      const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
      setTimeout(() => ac.abort(), 250);
      // The openai SDK ends the iteration quietly when the user aborts.
      for await (const c of s) chunks.push(c);
      return chunks;
    });
    expect(got).toHaveLength(2);
    expect(finishReasons(got)).toEqual([]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(240);
    const [span] = await spansOf(1);
    expect(faultName(span)).toBe('stream_stall');
    // The same stall survives a garbage collection while it holds the stream (the real response may be over by then).
    const ac2 = new AbortController();
    const { result: again } = await h.task(plan('stream_stall', { afterEvents: 2 }), async () => {
      const s = await streamCall(ac2.signal);
      const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
      setTimeout(gc, 100);
      setTimeout(() => ac2.abort(), 250);
      for await (const c of s) chunks.push(c);
      return chunks;
    });
    expect(again).toHaveLength(2);
    const t1 = Date.now();
    const { result } = await h.task(plan('stream_stall', { afterEvents: 2, stallMs: 200 }), async () =>
      (await rawStream()).text(),
    );
    expect(Date.now() - t1).toBeGreaterThanOrEqual(190);
    expect(result).toBe(STREAM.sse);
    h.exporter.reset();
  });

  it('stream_corrupt_chunk garbles one event: the SDK fails to parse it', async () => {
    const err = await h
      .task(plan('stream_corrupt_chunk', { eventIndex: 2 }), async () => collect(await streamCall()))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    const { result } = await h.task(plan('stream_corrupt_chunk', { eventIndex: 2 }), async () =>
      (await rawStream()).text(),
    );
    const events = sseEvents(STREAM.sse!);
    expect(result.startsWith(events[0])).toBe(true);
    expect(result).toContain('\uFFFD');
    expect(result.endsWith(events.slice(2).join(''))).toBe(true);
  });

  it('a content fault on a stream is not applicable: the stream passes untouched and unbuffered, reported as such', async () => {
    reply = (r) => ({ ...corpusReply(r), gapMs: 40 });
    const { result, taskId } = await h.task(plan('llm_truncate_single'), async () => {
      const res = await rawStream();
      const reader = res.body!.getReader();
      const first = await reader.read();
      const firstAt = Date.now();
      let text = Buffer.from(first.value!).toString();
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        text += Buffer.from(r.value).toString();
      }
      return { text, firstAt, endAt: Date.now() };
    });
    expect(result.text).toBe(STREAM.sse);
    expect(result.endAt - result.firstAt).toBeGreaterThan(200); // the first event arrived long before the last
    expect(h.injector.triggerReport(taskId).tasks[0].rules[0]).toMatchObject({
      fires: 0,
      notApplicable: 1,
      triggered: false,
    });
  });
});

describe('Anthropic messages bodies (content faults through the chat view)', () => {
  it('llm_truncate_single cuts the text blocks and sets stop_reason max_tokens', async () => {
    current = A_TEXT;
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: server.url, maxRetries: 0, timeout: 30_000 });
    const { result } = await h.task(plan('llm_truncate_single'), () => client.messages.create(A_TEXT.request as never));
    const orig = (A_TEXT.response as { content: Array<{ type: string; text: string }> }).content
      .filter((b) => b.type === 'text')
      .map((b) => b.text)
      .join('');
    const cps = Array.from(orig);
    expect(result.content).toEqual([{ type: 'text', text: cps.slice(0, Math.floor(cps.length * 0.3)).join('') }]);
    expect(result.stop_reason).toBe('max_tokens');
  });

  it('tool_error_single empties the first tool_use input', async () => {
    current = A_TOOL;
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: server.url, maxRetries: 0, timeout: 30_000 });
    const { result } = await h.task(plan('tool_error_single'), () => client.messages.create(A_TOOL.request as never));
    const tool = result.content.find((b) => b.type === 'tool_use') as { input: unknown; name: string };
    expect(tool.input).toEqual({});
    expect(tool.name).toBe(
      (A_TOOL.response as { content: Array<{ type: string; name?: string }> }).content.find(
        (b) => b.type === 'tool_use',
      )!.name,
    );
  });
});

describe('do no harm', () => {
  it('without a plan, or when no rule matches, the body is byte-identical and nothing is recorded', async () => {
    const body = async () =>
      (
        await fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(TEXT.request),
        })
      ).text();
    const none = await h.task(undefined, body);
    expect(none.result).toBe(recordBody(TEXT));
    const other = await h.task({ rules: [{ fault: 'llm_error_persistent', match: { model: 'no-such-model' } }] }, body);
    expect(other.result).toBe(recordBody(TEXT));
    const spans = await spansOf(2);
    expect(spans.every((s) => faultName(s) === undefined && injectedEvents(s).length === 0)).toBe(true);
  });

  it('a mojibake fire on ASCII text is a no-op: recorded, not counted as triggered', async () => {
    const ascii = chat.find(
      (r) =>
        r.status === 200 &&
        r.tags.includes('text') &&
        !r.tags.includes('tool_calls') &&
        [...JSON.stringify(r.response)].every((ch) => ch.charCodeAt(0) < 128),
    )!;
    current = ascii;
    const { taskId, result } = await h.task(plan('llm_corrupt_single'), async () =>
      (
        await fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(ascii.request),
        })
      ).text(),
    );
    expect(result).toBe(recordBody(ascii));
    const [span] = await spansOf(1);
    expect(span.attributes['faultline.fault.noop']).toBe(true);
    expect(h.injector.triggerReport(taskId).tasks[0].rules[0]).toMatchObject({ fires: 1, noops: 1, triggered: false });
  });
});
