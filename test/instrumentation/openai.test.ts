/**
 * OpenAI chat completions through the real openai v6 client and raw fetch, against a loopback server answering
 * with chat completions the project writes in OpenAI's format (../support/openai-wire.ts): span names, kinds,
 * nesting under our span of instrumentation-undici's HTTP span, attributes.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { assertSpan } from '../support/assert-span';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { chatCompletion, chatCompletionStream, openaiError, type AnswerSpec } from '../support/openai-wire';
import { ours, parentId, setupOtel, type TestOtel } from '../support/otel';
import { exchange } from '../support/wire-text';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
let undici: UndiciInstrumentation;
let client: OpenAI;

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const request = (stream?: 'usage' | 'plain') => ({
  model: 'gpt-4o',
  messages: [
    { role: 'system', content: 'You are a concise travel assistant.' },
    { role: 'user', content: 'What is the weather in Paris and in Rome?' },
  ],
  tools: [WEATHER],
  ...(stream ? { stream: true, ...(stream === 'usage' ? { stream_options: { include_usage: true } } : {}) } : {}),
});
const PARALLEL: AnswerSpec = {
  model: 'gpt-4o-2024-08-06',
  toolCalls: [
    { name: 'get_weather', arguments: '{"city":"Paris"}' },
    { name: 'get_weather', arguments: '{"city":"Rome"}' },
  ],
  inputTokens: 88,
  outputTokens: 46,
};
const TEXT: AnswerSpec = {
  model: 'gpt-4o-2024-08-06',
  text: 'Paris is sunny at 21°C and Rome is clear at 26°C.',
  inputTokens: 120,
};
/** A long answer (its stream is well over 2000 bytes), to stop reading in the middle of. */
const LONG: AnswerSpec = {
  model: 'gpt-4o-mini-2024-07-18',
  text: Array.from(
    { length: 6 },
    (_, i) =>
      `Day ${i + 1}: start at the market before it gets busy, walk the old town at noon, rest through the heat of the afternoon and book dinner for eight, when the terraces fill up again.`,
  ).join(' '),
};

const json = (a: AnswerSpec) =>
  exchange({ endpoint: '/v1/chat/completions', request: request(), response: chatCompletion(a) });
const sse = (a: AnswerSpec, usage = true) =>
  exchange({
    endpoint: '/v1/chat/completions',
    request: request(usage ? 'usage' : 'plain'),
    sse: chatCompletionStream(a, { usage }),
  });

beforeAll(async () => {
  otel = setupOtel();
  undici = new UndiciInstrumentation();
  undici.enable();
  inst = new FaultlineInstrumentation();
  inst.enable();
  server = await startLlmServer();
  client = new OpenAI({ apiKey: 'sk-test-secret', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  inst.disable();
  undici.disable();
  await server.close();
  await otel.shutdown();
});

beforeEach(() => otel.exporter.reset());

describe('openai chat completions (JSON)', () => {
  it('emits one CLIENT chat span with the HTTP span as its child', async () => {
    const rec = json(PARALLEL);
    server.respond(() => corpusReply(rec));
    const parent = trace.getTracer('test').startSpan('workflow');
    const res = await trace.getTracer('test').startActiveSpan('workflow', async (wf) => {
      const out = await client.chat.completions.create(rec.request as never);
      wf.end();
      return out;
    });
    parent.end();
    expect(res.id).toBe((rec.response as { id: string }).id);

    const spans = await otel.waitForSpans((s) => ours(s).length === 1 && s.some((x) => x.name === 'POST'));
    const span = ours(spans)[0];
    const resp = rec.response as {
      id: string;
      model: string;
      usage: { prompt_tokens: number; completion_tokens: number };
      choices: Array<{ finish_reason: string; message: { tool_calls: unknown[] } }>;
    };
    assertSpan(span, {
      name: `chat ${rec.request.model as string}`,
      kind: SpanKind.CLIENT,
      status: SpanStatusCode.UNSET,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai_compatible',
        'gen_ai.request.model': rec.request.model,
        'gen_ai.response.id': resp.id,
        'gen_ai.response.model': resp.model,
        'gen_ai.response.finish_reasons': resp.choices.map((c) => c.finish_reason),
        'gen_ai.usage.input_tokens': resp.usage.prompt_tokens,
        'gen_ai.usage.output_tokens': resp.usage.completion_tokens,
        'server.address': '127.0.0.1',
        'server.port': server.port,
        'faultline.response.tool_call_count': resp.choices[0]?.message.tool_calls.length,
        'faultline.request.retry_count': 0,
        'http.response.status_code': 200,
      },
      absent: [
        'gen_ai.input.messages',
        'gen_ai.output.messages',
        'gen_ai.system_instructions',
        'gen_ai.request.stream',
        'gen_ai.system',
      ],
    });
    expect(span?.attributes['faultline.response.content_hash']).toMatch(/^[0-9a-f]{16}$/);
    const http = spans.find((s) => s.name === 'POST');
    expect(parentId(http!)).toBe(span?.spanContext().spanId);
    const wf = spans.find((s) => s.name === 'workflow' && s.spanContext().spanId === parentId(span!));
    expect(wf, 'chat span is a child of the active span').toBeDefined();
    // Credentials never reach a span.
    for (const s of spans) expect(JSON.stringify(s.attributes)).not.toContain('sk-test-secret');
  });

  it('without instrumentation-undici the chat span still nests under the active span, with no HTTP span', async () => {
    const rec = json(TEXT);
    server.respond(() => corpusReply(rec));
    undici.disable();
    try {
      await trace.getTracer('test').startActiveSpan('workflow', async (wf) => {
        await client.chat.completions.create(rec.request as never);
        wf.end();
      });
      const spans = await otel.waitForSpans((s) => ours(s).length === 1 && s.some((x) => x.name === 'workflow'));
      expect(spans.some((s) => s.name === 'POST')).toBe(false);
      const span = ours(spans)[0]!;
      expect(spans.find((s) => s.name === 'workflow')?.spanContext().spanId).toBe(parentId(span));
      expect(span.attributes['gen_ai.response.id']).toBe((rec.response as { id: string }).id);
    } finally {
      undici.enable();
    }
  });

  it('records HTTP errors with error.type and status ERROR', async () => {
    const rec = exchange({
      endpoint: '/v1/chat/completions',
      status: 401,
      request: request(),
      response: openaiError(
        401,
        'Incorrect API key provided: sk-test-*****cret. You can find your API key at https://platform.openai.com/account/api-keys.',
      ),
    });
    server.respond(() => corpusReply(rec));
    await expect(client.chat.completions.create(rec.request as never)).rejects.toThrow();
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    assertSpan(ours(spans)[0], {
      status: SpanStatusCode.ERROR,
      attributes: { 'error.type': '401', 'http.response.status_code': 401 },
    });
  });

  it('gives every SDK retry its own span numbered by x-stainless-retry-count', async () => {
    const rec = json(TEXT);
    let n = 0;
    server.respond(() =>
      n++ === 0
        ? {
            status: 503,
            headers: { 'content-type': 'application/json', 'retry-after-ms': '1' },
            body: '{"error":{"message":"busy","type":"server_error"}}',
          }
        : corpusReply(rec),
    );
    const retrying = new OpenAI({ apiKey: 'k', baseURL: `${server.url}/v1`, maxRetries: 2 });
    await retrying.chat.completions.create(rec.request as never);
    const spans = ours(await otel.waitForSpans((s) => ours(s).length === 2));
    expect(spans.map((s) => s.attributes['faultline.request.retry_count']).sort()).toEqual([0, 1]);
    expect(spans.map((s) => s.attributes['http.response.status_code']).sort()).toEqual([200, 503]);
  });

  it('records a connection error', async () => {
    const closed = await startLlmServer();
    await closed.close();
    const dead = new OpenAI({ apiKey: 'k', baseURL: `${closed.url}/v1`, maxRetries: 0 });
    await expect(
      dead.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toThrow();
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    assertSpan(ours(spans)[0], {
      name: 'chat gpt-4o',
      status: SpanStatusCode.ERROR,
      attributes: { 'error.type': 'ECONNREFUSED' },
    });
  });
});

describe('openai chat completions (SSE)', () => {
  it('reads parallel tool-call deltas and the usage chunk', async () => {
    const rec = sse(PARALLEL);
    server.respond(() => corpusReply(rec));
    const stream = await client.chat.completions.create(rec.request as never);
    const calls = new Map<number, string>();
    for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) {
      for (const tc of chunk.choices[0]?.delta.tool_calls ?? [])
        calls.set(tc.index, (calls.get(tc.index) ?? '') + (tc.function?.arguments ?? ''));
    }
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    const span = assertSpan(ours(spans)[0], {
      name: `chat ${rec.request.model as string}`,
      attributes: {
        'gen_ai.request.stream': true,
        'faultline.response.done': true,
        'faultline.response.tool_call_count': calls.size,
        'gen_ai.response.finish_reasons': ['tool_calls'],
      },
    });
    expect(calls.size).toBeGreaterThan(1);
    expect(span.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(span.attributes['gen_ai.response.time_to_first_chunk']).toBeGreaterThan(0);
    expect(span.attributes['faultline.response.chunk_count']).toBeGreaterThan(1);
  });

  it('streams without include_usage record no usage and still end', async () => {
    const rec = sse(TEXT, false);
    server.respond(() => corpusReply(rec));
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(rec.request),
    });
    expect(await res.text()).toBe(rec.sse);
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    assertSpan(ours(spans)[0], {
      attributes: { 'faultline.response.done': true },
      absent: ['gen_ai.usage.input_tokens'],
    });
  });

  it('ends the span with faultline.response.aborted when the consumer breaks out early', async () => {
    const rec = sse(LONG);
    expect(rec.sse!.length).toBeGreaterThan(2000);
    server.respond(() => ({ ...corpusReply(rec), gapMs: 20 }));
    const stream = await client.chat.completions.create(rec.request as never);
    for await (const _chunk of stream as unknown as AsyncIterable<unknown>) break;
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    assertSpan(ours(spans)[0], {
      status: SpanStatusCode.UNSET,
      attributes: { 'faultline.response.aborted': true, 'faultline.response.done': false },
      absent: ['error.type'],
    });
  });

  it('ends the span when a raw fetch consumer cancels the body stream', async () => {
    const rec = sse(LONG);
    expect(rec.sse!.length).toBeGreaterThan(2000);
    server.respond(() => ({ ...corpusReply(rec), gapMs: 20 }));
    const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(rec.request) });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    assertSpan(ours(spans)[0], {
      status: SpanStatusCode.UNSET,
      attributes: { 'faultline.response.aborted': true },
      absent: ['error.type'],
    });
  });
});
