/**
 * The fault step on openai v4's calls (node-fetch 2: node:http, instrumentation/node-http.ts), through the real SDK
 * (the `openai-v4` alias) against a loopback server answering with recorded OpenAI bodies: a 429 in OpenAI's error
 * shape reaches the SDK as its RateLimitError (the request never sent), a JSON answer is truncated as the SDK parses
 * it, a stream is cut after its 2nd event; with a plan whose rules select other calls, the answer is the server's.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadCorpus } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { loadOpenAiV4, type OpenAiV4, type OpenAiV4Module } from '../support/openai-v4';
import { callSpans, faultName, setupHarness, type Harness } from './harness';

const chat = loadCorpus('openai-chat.jsonl').find(
  (r) => r.status === 200 && r.tags.includes('text') && !r.tags.includes('tool_calls'),
)!;
const stream = loadCorpus('openai-chat-stream.jsonl').find(
  (r) => r.tags.includes('usage_chunk') && !r.tags.includes('tool_calls'),
)!;
const TEXT = (chat.response as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;

let h: Harness;
let server: LlmServer;
let sdk: OpenAiV4Module;
let client: OpenAiV4;
beforeAll(async () => {
  h = setupHarness();
  server = await startLlmServer(() => corpusReply(chat));
  sdk = await loadOpenAiV4();
  client = new sdk.OpenAI({ apiKey: 'sk-openai-v4-secret', baseURL: `${server.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
  await h.shutdown();
});
beforeEach(() => {
  h.exporter.reset();
  server.requests.length = 0;
  server.respond(() => corpusReply(chat));
});

const plan = (
  fault: string,
  params: Record<string, unknown> = {},
  match: Record<string, unknown> = { operation: 'chat' },
) => ({ rules: [{ fault, params, match }] });
const spansOf = async (n: number) => callSpans(await h.waitForSpans((s) => callSpans(s).length >= n));

describe('faults on openai v4 (node:http)', () => {
  it('a rule for other calls: the SDK gets the server’s answer', async () => {
    const { result } = await h.task(plan('http_429', {}, { provider: 'aws.bedrock' }), () =>
      client.chat.completions.create(chat.request),
    );
    expect(result).toEqual(chat.response);
    expect(server.requests).toHaveLength(1);
  });

  it('http_429: the SDK’s RateLimitError with OpenAI’s error body; the request never left', async () => {
    const err = await h
      .task(plan('http_429', { retryAfterS: 0 }), () => client.chat.completions.create(chat.request))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(sdk.RateLimitError);
    expect((err as { status?: number }).status).toBe(429);
    expect(server.requests).toHaveLength(0);
    const [span] = await spansOf(1);
    expect(faultName(span!)).toBe('http_429');
    expect(JSON.stringify(span!.attributes)).not.toContain('sk-openai-v4-secret');
  });

  it('llm_truncate_single: the SDK parses the answer cut to 30 %, finish_reason length', async () => {
    const { result } = await h.task(plan('llm_truncate_single'), () => client.chat.completions.create(chat.request));
    const r = result as unknown as { choices: Array<{ message: { content: string }; finish_reason: string }> };
    expect(r.choices[0]!.message.content).toBe(TEXT.slice(0, Math.max(1, Math.floor(TEXT.length * 0.3))));
    expect(r.choices[0]!.finish_reason).toBe('length');
  });

  it('stream_cut after 2 events: the SDK’s stream ends with two chunks, no finish reason', async () => {
    server.respond(() => corpusReply(stream));
    const { result } = await h.task(plan('stream_cut', { afterEvents: 2 }), async () => {
      const out: Array<{ choices?: Array<{ finish_reason?: string | null }> }> = [];
      for await (const c of await client.chat.completions.create({ ...stream.request, stream: true }))
        out.push(c as (typeof out)[number]);
      return out;
    });
    expect(result).toHaveLength(2);
    expect(result.some((c) => c.choices?.[0]?.finish_reason)).toBe(false);
    const [span] = await spansOf(1);
    expect(faultName(span!)).toBe('stream_cut');
    expect(span!.attributes['faultline.response.done']).toBe(false);
  });
});
