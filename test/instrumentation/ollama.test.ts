/**
 * Ollama's native API through the real `ollama` client: chat and generate, JSON and NDJSON streams, against a
 * loopback server answering in Ollama's formats with bodies the project writes (../support/ollama-wire.ts): one CLIENT `chat {model}` / `text_completion {model}` span with
 * done_reason as the finish reason, prompt_eval_count / eval_count as usage, tool calls, and the stream's last line.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { Ollama, type ChatRequest, type GenerateRequest } from 'ollama';
import { beforeAll, describe, expect, it } from 'vitest';
import { corpusReply } from '../support/llm-server';
import { useLayer } from '../support/layer';
import { chat, chatStream, generate, generateStream, ollamaError } from '../support/ollama-wire';
import { exchange } from '../support/wire-text';
import type { CorpusRecord } from '../support/wire-record';

const layer = useLayer();
let ollama: Ollama;

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const ask = (content: string) => [{ role: 'user', content }];
/** qwen3.6 with thinking: a thought, then one tool call (done_reason stop). */
const TOOLS = exchange({
  endpoint: '/api/chat',
  request: {
    model: 'qwen3.6:latest',
    messages: ask('What is the weather in Oslo?'),
    tools: [WEATHER],
    think: true,
    stream: false,
    options: { temperature: 0, seed: 42 },
  },
  response: chat({
    model: 'qwen3.6:latest',
    thinking: 'The user wants the weather in Oslo; the get_weather tool gives it.',
    toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }],
    promptEvalCount: 151,
    evalCount: 38,
  }),
});
const CHAT_STREAM = exchange({
  endpoint: '/api/chat',
  request: { model: 'llama3.2:1b', messages: ask('Name three primary colours.'), stream: true },
  stream: chatStream({
    model: 'llama3.2:1b',
    text: 'The three primary colours are red, yellow and blue.',
    evalCount: 13,
  }),
  framing: 'ndjson',
});
const GENERATE = exchange({
  endpoint: '/api/generate',
  request: { model: 'llama3.2:1b', prompt: 'Why is the sea salty? One sentence.', stream: false },
  response: generate({
    model: 'llama3.2:1b',
    text: 'Rivers carry minerals from rocks into the sea, and evaporation leaves the salt behind.',
  }),
});
const GENERATE_STREAM = exchange({
  endpoint: '/api/generate',
  request: { model: 'llama3.2:1b', prompt: 'Count to five.', stream: true },
  stream: generateStream({ model: 'llama3.2:1b', text: 'One, two, three, four, five.', evalCount: 11 }),
  framing: 'ndjson',
});
const NOT_FOUND = exchange({
  endpoint: '/api/chat',
  status: 404,
  request: { model: 'no-such-model', messages: ask('hi'), stream: false },
  response: ollamaError('model "no-such-model" not found, try pulling it first'),
});

beforeAll(async () => {
  ollama = new Ollama({ host: layer.server.url });
});

const lines = (r: CorpusRecord) =>
  (r.stream ?? '')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('ollama chat', () => {
  it('JSON: one chat span with the tool call, done_reason stop → tool_call, token counts', async () => {
    layer.server.respond(() => corpusReply(TOOLS));
    const res = await ollama.chat({ ...(TOOLS.request as unknown as ChatRequest), stream: false });
    expect(res.message.tool_calls).toHaveLength(1);
    const span = await layer.one();
    expect(span.name).toBe('chat qwen3.6:latest');
    expect(span.kind).toBe(SpanKind.CLIENT);
    const r = TOOLS.response as { prompt_eval_count: number; eval_count: number };
    expect(span.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'ollama',
      'gen_ai.request.model': 'qwen3.6:latest',
      'gen_ai.request.temperature': 0,
      'gen_ai.request.seed': 42,
      'gen_ai.response.model': 'qwen3.6:latest',
      'gen_ai.response.finish_reasons': ['tool_call'],
      'gen_ai.usage.input_tokens': r.prompt_eval_count,
      'gen_ai.usage.output_tokens': r.eval_count,
      'faultline.response.tool_call_count': 1,
    });
    expect(span.attributes['gen_ai.request.stream']).toBeUndefined();
    const out = JSON.parse(span.attributes['gen_ai.output.messages'] as string) as Array<{
      parts: Array<{ type: string }>;
    }>;
    expect(out[0].parts.map((p) => p.type)).toEqual(['reasoning', 'tool_call']);
  });

  it('NDJSON stream: read line by line, the done line gives finish reason and usage', async () => {
    layer.server.respond(() => corpusReply(CHAT_STREAM));
    let text = '';
    for await (const part of await ollama.chat({ ...(CHAT_STREAM.request as object), stream: true } as never))
      text += part.message.content;
    const last = lines(CHAT_STREAM).at(-1)!;
    const span = await layer.one();
    expect(span.attributes).toMatchObject({
      'gen_ai.request.stream': true,
      'faultline.response.done': true,
      'gen_ai.response.finish_reasons': [last.done_reason],
      'gen_ai.usage.output_tokens': last.eval_count,
      'faultline.response.output_chars': text.length,
      'faultline.response.chunk_count': lines(CHAT_STREAM).length,
    });
  });

  it('a request without "stream" streams (Ollama’s default)', async () => {
    layer.server.respond(() => corpusReply(CHAT_STREAM));
    const { stream: _omit, ...request } = CHAT_STREAM.request;
    const res = await fetch(`${layer.server.url}/api/chat`, { method: 'POST', body: JSON.stringify(request) });
    await res.text();
    expect((await layer.one()).attributes['gen_ai.request.stream']).toBe(true);
  });

  it('a stream cut before the done line is not done; an error line is the call’s error', async () => {
    const full = corpusReply(CHAT_STREAM);
    layer.server.respond(() => ({ ...full, chunks: full.chunks!.slice(0, 3) }));
    await (
      await fetch(`${layer.server.url}/api/chat`, { method: 'POST', body: JSON.stringify(CHAT_STREAM.request) })
    ).text();
    const cut = await layer.one();
    expect(cut.attributes['faultline.response.done']).toBe(false);
    expect(cut.attributes['gen_ai.response.finish_reasons']).toBeUndefined();
    layer.otel.exporter.reset();
    layer.server.respond(() => ({
      ...full,
      chunks: [...full.chunks!.slice(0, 2), '{"error":"an error was encountered while running the model"}\n'],
    }));
    const err = await (async () => {
      for await (const _p of await ollama.chat({ ...(CHAT_STREAM.request as object), stream: true } as never)) {
        /* drain */
      }
    })().catch((e: unknown) => e as Error);
    expect(err?.message).toBe('an error was encountered while running the model');
    const span = await layer.one();
    expect(span.attributes['error.type']).toBe('an error was encountered while running the model');
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('a 404 keeps the client’s ResponseError and records error.type', async () => {
    layer.server.respond(() => corpusReply(NOT_FOUND));
    const err = (await ollama.chat(NOT_FOUND.request as never).catch((e: unknown) => e)) as { status_code?: number };
    expect(err.status_code).toBe(404);
    expect((await layer.one()).attributes['error.type']).toBe('404');
  });
});

describe('ollama generate', () => {
  it('JSON and NDJSON: text_completion spans with the prompt as input and the response text as output', async () => {
    layer.server.respond(() => corpusReply(GENERATE));
    const res = await ollama.generate({ ...(GENERATE.request as unknown as GenerateRequest), stream: false });
    const span = await layer.one();
    expect(span.name).toBe(`text_completion ${GENERATE.request.model as string}`);
    expect(span.attributes).toMatchObject({
      'gen_ai.operation.name': 'text_completion',
      'faultline.response.output_chars': (res.response ?? '').length,
      'gen_ai.response.finish_reasons': ['stop'],
    });
    expect(JSON.parse(span.attributes['gen_ai.input.messages'] as string)).toEqual([
      { role: 'user', parts: [{ type: 'text', content: GENERATE.request.prompt }] },
    ]);
    layer.otel.exporter.reset();
    layer.server.respond(() => corpusReply(GENERATE_STREAM));
    let text = '';
    for await (const part of await ollama.generate({ ...(GENERATE_STREAM.request as object), stream: true } as never))
      text += part.response;
    const streamed = await layer.one();
    expect(streamed.attributes).toMatchObject({
      'gen_ai.request.stream': true,
      'faultline.response.done': true,
      'faultline.response.output_chars': text.length,
      'gen_ai.usage.output_tokens': lines(GENERATE_STREAM).at(-1)!.eval_count,
    });
  });
});
