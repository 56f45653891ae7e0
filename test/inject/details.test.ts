/**
 * Details that real traffic brings: gzip-encoded JSON bodies, Anthropic SSE streams, and what the injected event
 * carries with content capture on (the bodies) — never credentials.
 */
import Anthropic from '@anthropic-ai/sdk';
import { gzipSync } from 'node:zlib';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LLM_ERROR_TEXT } from '../../src/catalog/agentchaos/experiments';
import { loadCorpus, recordBody, sseEvents, type CorpusRecord } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer, type Reply } from '../support/llm-server';
import { callSpans, injectedEvents, setupHarness, type Harness } from './harness';

const TEXT = loadCorpus('openai-chat.jsonl').find((r) => r.id === '55dae6f503a5')!;
const A_STREAM = loadCorpus('anthropic-messages.jsonl').find((r) => r.id === '04876445d395')!;

let h: Harness;
let server: LlmServer;
let reply: () => Reply;

beforeAll(async () => {
  h = setupHarness({ captureMessageContent: true });
  server = await startLlmServer(() => reply());
});
afterAll(async () => {
  await server.close();
  await h.shutdown();
});
beforeEach(() => h.exporter.reset());

const openai = () => new OpenAI({ apiKey: 'sk-secret-never-on-a-span', baseURL: `${server.url}/v1`, maxRetries: 0 });

describe('gzip-encoded JSON (as the real APIs send it)', () => {
  it('a content fault decodes, rewrites and re-sends the body uncompressed; without a fire the bytes are untouched', async () => {
    reply = () => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(recordBody(TEXT)),
    });
    const { result } = await h.task({ rules: [{ fault: 'llm_error_single' }] }, async () => {
      const c = openai();
      const a = await c.chat.completions.create(TEXT.request as never);
      const b = await c.chat.completions.create(TEXT.request as never);
      return [a, b].map(
        (r) => (r as unknown as { choices: [{ message: { content: string } }] }).choices[0].message.content,
      );
    });
    expect(result[0]).toBe(LLM_ERROR_TEXT);
    expect(result[1]).toBe(
      (TEXT.response as { choices: [{ message: { content: string } }] }).choices[0].message.content,
    );
  });
});

describe('Anthropic SSE streams', () => {
  beforeEach(() => {
    reply = () => corpusReply(A_STREAM);
  });
  const raw = () =>
    fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-secret' },
      body: JSON.stringify(A_STREAM.request),
    }).then((r) => r.text());

  it('stream_drop_done drops the message_stop event, and only it', async () => {
    const { result } = await h.task({ rules: [{ fault: 'stream_drop_done' }] }, raw);
    const events = sseEvents(A_STREAM.sse!);
    expect(result).toBe(events.filter((e) => !/^event: message_stop/m.test(e)).join(''));
    expect(result).not.toContain('message_stop');
  });

  it('stream_cut through the Anthropic SDK: the stream ends without a stop reason', async () => {
    const client = new Anthropic({ apiKey: 'sk-ant-secret', baseURL: server.url, maxRetries: 0, timeout: 30_000 });
    const { result } = await h.task({ rules: [{ fault: 'stream_cut', params: { afterEvents: 3 } }] }, async () => {
      const types: string[] = [];
      const stream = (await client.messages.create({
        ...(A_STREAM.request as object),
        stream: true,
      } as never)) as unknown as AsyncIterable<{ type: string }>;
      for await (const ev of stream) types.push(ev.type);
      return types;
    });
    // The first three data events as recorded (the SDK does not yield `ping`).
    const firstThree = sseEvents(A_STREAM.sse!)
      .filter((e) => /^data:/m.test(e))
      .slice(0, 3)
      .map((e) => /^event: (\S+)/m.exec(e)![1]);
    expect(result).toEqual(firstThree.filter((t) => t !== 'ping'));
    expect(result).not.toContain('message_stop');
    expect(result).not.toContain('message_delta'); // where stop_reason would have come
  });
});

describe('what the injected event records', () => {
  it('with content capture on: the original and delivered bodies, sizes and hashes; never the API key', async () => {
    reply = () => corpusReply(TEXT as CorpusRecord);
    await h.task({ rules: [{ fault: 'llm_empty_single' }] }, () =>
      openai().chat.completions.create(TEXT.request as never),
    );
    const [span] = callSpans(await h.waitForSpans((s) => callSpans(s).length >= 1));
    const [ev] = injectedEvents(span);
    const a = ev.attributes!;
    expect(JSON.parse(a['faultline.fault.original.body'] as string).choices[0].message.content).toBe(
      (TEXT.response as { choices: [{ message: { content: string } }] }).choices[0].message.content,
    );
    expect(JSON.parse(a['faultline.fault.delivered.body'] as string).choices[0].message.content).toBe('');
    expect(a['faultline.fault.delivered.bytes']).toBeLessThan(a['faultline.fault.original.bytes'] as number);
    expect(a['faultline.fault.original.hash']).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.stringify(h.exporter.getFinishedSpans().map((s) => [s.attributes, s.events]))).not.toContain(
      'sk-secret-never-on-a-span',
    );
  });
});
