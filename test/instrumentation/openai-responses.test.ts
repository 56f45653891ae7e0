/**
 * The OpenAI Responses API through the clients that use it — openai 6 `responses.create`, the AI SDK's default
 * `openai('model')`, LangChain's ChatOpenAI with `useResponsesApi` — against a loopback server answering with
 * Responses bodies the project writes in OpenAI's format (../support/openai-wire.ts): one CLIENT `chat {model}` span per call with the semconv attributes, the finish reason from
 * `status` / `incomplete_details`, usage with cached and reasoning tokens, output items in the semconv shape, and
 * what the application gets byte-identical to a run without faultline.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { openaiError, response, responseFailedStream, responseStream, type AnswerSpec } from '../support/openai-wire';
import { ours, parentId, setupOtel, type TestOtel } from '../support/otel';
import { exchange } from '../support/wire-text';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
let undici: UndiciInstrumentation;
let client: OpenAI;

const DB_LOOKUP = {
  type: 'function',
  name: 'db_lookup',
  description: 'Look a customer up by id.',
  parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  strict: true,
};
const ENDPOINT = '/v1/responses';
const json = (request: Record<string, unknown>, a: AnswerSpec) =>
  exchange({ endpoint: ENDPOINT, request, response: response(a) });
const sse = (request: Record<string, unknown>, a: AnswerSpec) =>
  exchange({ endpoint: ENDPOINT, request: { ...request, stream: true }, sse: responseStream(a) });

/** Reasoning, then two parallel function calls; reasoning tokens in the usage, nothing cached. */
const TOOLS_JSON = json(
  {
    model: 'gpt-5-mini',
    input: 'Look up customers c-17 and c-42.',
    tools: [DB_LOOKUP],
    reasoning: { effort: 'low', summary: 'auto' },
  },
  {
    model: 'gpt-5-mini-2025-08-07',
    reasoning: 'Two ids were given: look both up at once.',
    toolCalls: [
      { name: 'db_lookup', arguments: '{"id":"c-17"}' },
      { name: 'db_lookup', arguments: '{"id":"c-42"}' },
    ],
    inputTokens: 96,
    outputTokens: 180,
    reasoningTokens: 128,
  },
);
/** A text answer read partly from the prompt cache. */
const TEXT_JSON = json(
  { model: 'gpt-4.1', instructions: 'Answer in one sentence.', input: 'What does a lighthouse do?' },
  {
    model: 'gpt-4.1-2025-04-14',
    text: 'A lighthouse marks a coast or a hazard with a light that ships can see from far away at night.',
    inputTokens: 1320,
    cachedTokens: 1152,
  },
);
/** Function-call argument deltas, cut at max_output_tokens: the stream ends with response.incomplete. */
const TOOL_STREAM = sse(
  { model: 'gpt-4o-mini', input: 'Write the whole report into the db.', tools: [DB_LOOKUP], max_output_tokens: 1000 },
  {
    model: 'gpt-4o-mini-2024-07-18',
    toolCalls: [{ name: 'db_lookup', arguments: '{"id":"c-17 quarterly report: revenue rose in every region, led by' }],
    finishReason: 'length',
    outputTokens: 1000,
  },
);
const TEXT_STREAM = sse(
  { model: 'gpt-4o', input: 'What is 4200 + 42?' },
  { model: 'gpt-4o-2024-08-06', text: '4200 + 42 equals 4242.' },
);
/** An `error` event (the account ran out of quota), then response.failed. */
const FAILED = responseFailedStream(
  'gpt-5-nano-2025-08-07',
  'insufficient_quota',
  'You exceeded your current quota, please check your plan and billing details.',
);
const PREVIOUS = json(
  { model: 'gpt-4.1', previous_response_id: 'resp_68a1f2c3d4e5f60718293a4b5c6d7e8f', input: 'And in Fahrenheit?' },
  { model: 'gpt-4.1-2025-04-14', text: 'That is about 70°F.' },
);
const BAD = exchange({
  endpoint: ENDPOINT,
  status: 400,
  request: { model: 'gpt-4.1', input: 'hi', temperature: 7 },
  response: openaiError(
    400,
    "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 7 instead.",
    'temperature',
  ),
});

beforeAll(async () => {
  otel = setupOtel();
  undici = new UndiciInstrumentation();
  undici.enable();
  inst = new FaultlineInstrumentation({ captureMessageContent: true });
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

const one = async () => {
  const spans = ours(await otel.waitForSpans((s) => ours(s).length >= 1));
  expect(spans).toHaveLength(1);
  return spans[0];
};

/** What the application receives, read the same way with and without faultline. */
async function both<T>(fn: () => Promise<T>): Promise<[T, T]> {
  const instrumented = await fn();
  inst.disable();
  try {
    return [instrumented, await fn()];
  } finally {
    inst.enable();
  }
}

describe('openai 6 responses.create', () => {
  it('JSON: one CLIENT chat span with output items, tool calls, usage with cached and reasoning tokens', async () => {
    server.respond(() => corpusReply(TOOLS_JSON));
    const res = await client.responses.create(TOOLS_JSON.request as never);
    const span = await one();
    const response = TOOLS_JSON.response as {
      id: string;
      model: string;
      output: Array<{ type: string }>;
      usage: { input_tokens: number; output_tokens: number; output_tokens_details: { reasoning_tokens: number } };
    };
    expect(res.id).toBe(response.id);
    expect(span.name).toBe(`chat ${TOOLS_JSON.request.model as string}`);
    expect(span.kind).toBe(SpanKind.CLIENT);
    const calls = response.output.filter((i) => i.type === 'function_call').length;
    expect(span.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'openai.api.type': 'responses',
      'gen_ai.request.model': TOOLS_JSON.request.model,
      'gen_ai.response.id': response.id,
      'gen_ai.response.model': response.model,
      'gen_ai.response.finish_reasons': ['tool_call'],
      'gen_ai.usage.input_tokens': response.usage.input_tokens,
      'gen_ai.usage.output_tokens': response.usage.output_tokens,
      'gen_ai.usage.cache_read.input_tokens': 0,
      'gen_ai.usage.reasoning.output_tokens': response.usage.output_tokens_details.reasoning_tokens,
      'faultline.response.tool_call_count': calls,
      'faultline.request.tool_names': ['db_lookup'],
    });
    const out = JSON.parse(span.attributes['gen_ai.output.messages'] as string) as Array<{
      parts: Array<{ type: string; name?: string }>;
    }>;
    expect(out[0].parts.filter((p) => p.type === 'tool_call')).toHaveLength(calls);
    // The HTTP client span of instrumentation-undici is the chat span's child.
    const http = otel.spans().find((s) => s.instrumentationScope.name.includes('undici'));
    expect(http && parentId(http)).toBe(span.spanContext().spanId);
  });

  it('JSON text answer: finish reason stop, cached tokens counted', async () => {
    server.respond(() => corpusReply(TEXT_JSON));
    await client.responses.create(TEXT_JSON.request as never);
    const span = await one();
    const usage = (TEXT_JSON.response as { usage: { input_tokens_details: { cached_tokens: number } } }).usage;
    expect(span.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);
    expect(span.attributes['gen_ai.usage.cache_read.input_tokens']).toBe(usage.input_tokens_details.cached_tokens);
    expect(span.attributes['faultline.response.output_chars']).toBeGreaterThan(0);
  });

  it('stream: function-call argument deltas, response.incomplete → finish reason length, terminal marker seen', async () => {
    server.respond(() => corpusReply(TOOL_STREAM));
    const stream = await client.responses.create(TOOL_STREAM.request as never);
    let args = '';
    for await (const e of stream as unknown as AsyncIterable<{ type: string; delta?: string }>)
      if (e.type === 'response.function_call_arguments.delta') args += e.delta ?? '';
    const span = await one();
    expect(span.attributes).toMatchObject({
      'gen_ai.request.stream': true,
      'gen_ai.response.finish_reasons': ['length'],
      'faultline.response.done': true,
      'faultline.response.tool_call_count': 1,
      'gen_ai.usage.output_tokens': 1000,
    });
    const out = JSON.parse(span.attributes['gen_ai.output.messages'] as string) as Array<{
      parts: Array<{ arguments?: unknown }>;
      finish_reason: string;
    }>;
    expect(out[0].finish_reason).toBe('length');
    expect(out[0].parts[0].arguments).toBe(args); // cut JSON stays the raw string
  });

  it('stream cut before response.completed: the answer is rebuilt from the item events, the terminal marker is missing', async () => {
    const full = corpusReply(TEXT_STREAM);
    const chunks = (full.chunks ?? []).filter((c) => !String(c).startsWith('event: response.completed'));
    server.respond(() => ({ ...full, chunks }));
    const stream = await client.responses.create(TEXT_STREAM.request as never);
    let text = '';
    for await (const e of stream as unknown as AsyncIterable<{ type: string; delta?: string }>)
      if (e.type === 'response.output_text.delta') text += e.delta ?? '';
    const span = await one();
    expect(span.attributes['faultline.response.done']).toBe(false);
    expect(span.attributes['gen_ai.response.finish_reasons']).toBeUndefined();
    expect(span.attributes['faultline.response.output_chars']).toBe(text.length);
  });

  it('an `error` event: error.type is the provider code, the span is an error, the SDK throws', async () => {
    server.respond(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: FAILED }));
    const stream = await client.responses.create({ model: 'gpt-5-nano', input: 'hi', stream: true });
    const err = await (async () => {
      for await (const _e of stream) {
        /* drain */
      }
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const span = await one();
    expect(span.attributes['error.type']).toBe('insufficient_quota');
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('response.failed read to the end (raw fetch): finish reason error', async () => {
    server.respond(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: FAILED }));
    const res = await fetch(`${server.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"gpt-5-nano","input":"hi","stream":true}',
    });
    await res.text();
    const span = await one();
    expect(span.attributes).toMatchObject({
      'gen_ai.response.finish_reasons': ['error'],
      'error.type': 'insufficient_quota',
      'faultline.response.done': true,
    });
  });

  it('previous_response_id and conversation are recorded', async () => {
    server.respond(() => corpusReply(PREVIOUS));
    await client.responses.create(PREVIOUS.request as never);
    expect((await one()).attributes['faultline.request.previous_response_id']).toBe(
      PREVIOUS.request.previous_response_id,
    );
    otel.exporter.reset();
    server.respond(() => corpusReply(TEXT_JSON));
    await client.responses.create({
      ...(TEXT_JSON.request as object),
      conversation: 'conv_689667905b048191b4740501625afd940c7533ace33a2dab',
    } as never);
    expect((await one()).attributes['gen_ai.conversation.id']).toBe(
      'conv_689667905b048191b4740501625afd940c7533ace33a2dab',
    );
  });

  it('HTTP errors: error.type is the status, the SDK error is unchanged', async () => {
    const bad = BAD;
    server.respond(() => corpusReply(bad));
    const [a, b] = await both(() =>
      client.responses.create(bad.request as never).then(
        () => undefined,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      ),
    );
    expect(a?.status).toBe(400);
    expect(JSON.stringify(a?.error)).toBe(JSON.stringify(b?.error));
    const span = ours(otel.spans())[0];
    expect(span.attributes['error.type']).toBe('400');
  });

  it('Azure OpenAI paths (/openai/v1/responses, /openai/responses?api-version=…) are recognised', async () => {
    server.respond(() => corpusReply(TEXT_JSON));
    for (const baseURL of [`${server.url}/openai/v1`, `${server.url}/openai`]) {
      otel.exporter.reset();
      const azure = new OpenAI({
        apiKey: 'k',
        baseURL,
        defaultQuery: { 'api-version': '2025-04-01-preview' },
        maxRetries: 0,
      });
      await azure.responses.create(TEXT_JSON.request as never);
      expect((await one()).attributes['openai.api.type']).toBe('responses');
    }
  });

  it('other POST …/responses endpoints without Responses evidence are not ours', async () => {
    server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' }));
    const res = await fetch(`${server.url}/survey/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"answers":[1,2]}',
    });
    expect(await res.text()).toBe('{"ok":true}');
    expect(ours(otel.spans())).toEqual([]);
  });

  it('what the application reads is byte-identical to a run without faultline (JSON and stream)', async () => {
    for (const rec of [TOOLS_JSON, TOOL_STREAM]) {
      server.respond(() => corpusReply(rec));
      const [a, b] = await both(async () => (await client.responses.create(rec.request as never).asResponse()).text());
      expect(a).toBe(b);
    }
  });
});

describe('the AI SDK (ai 6) with @ai-sdk/openai’s default openai(model): the Responses API', () => {
  const provider = () => createOpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1` });

  it('generateText: one chat span, the text and usage the SDK reports', async () => {
    server.respond(() => corpusReply(TEXT_JSON));
    const [a, b] = await both(() => generateText({ model: provider()('gpt-4o'), prompt: 'hello', maxRetries: 0 }));
    expect(a.text).toBe(b.text);
    expect(JSON.stringify(a.response.body)).toBe(JSON.stringify(b.response.body));
    const span = ours(otel.spans())[0];
    expect(span.attributes['openai.api.type']).toBe('responses');
    expect(span.attributes['gen_ai.usage.output_tokens']).toBe(a.usage.outputTokens);
    expect(span.attributes['faultline.response.output_chars']).toBe(a.text.length);
  });

  it('streamText: one streamed chat span ending at response.completed', async () => {
    server.respond(() => corpusReply(TEXT_STREAM));
    const read = async () => {
      const r = streamText({ model: provider()('gpt-4o'), prompt: 'hello', maxRetries: 0 });
      let text = '';
      for await (const t of r.textStream) text += t;
      return text;
    };
    const [a, b] = await both(read);
    expect(a).toBe(b);
    const span = ours(otel.spans())[0];
    expect(span.attributes).toMatchObject({
      'gen_ai.request.stream': true,
      'faultline.response.done': true,
      'faultline.response.output_chars': a.length,
    });
  });
});

describe('@langchain/openai ChatOpenAI with useResponsesApi', () => {
  it('invoke and stream each make one Responses chat span', async () => {
    const model = new ChatOpenAI({
      model: 'gpt-4o',
      apiKey: 'sk-test',
      configuration: { baseURL: `${server.url}/v1` },
      useResponsesApi: true,
      maxRetries: 0,
    });
    server.respond(() => corpusReply(TEXT_JSON));
    const [a, b] = await both(() => model.invoke('hello'));
    expect(a.content).toEqual(b.content);
    expect(ours(otel.spans())[0].attributes['openai.api.type']).toBe('responses');
    otel.exporter.reset();
    server.respond(() => corpusReply(TEXT_STREAM));
    let text = '';
    for await (const chunk of await model.stream('hello')) {
      const c = chunk.content as string | Array<{ type: string; text?: string }>;
      text += typeof c === 'string' ? c : c.map((b) => (b.type === 'text' ? (b.text ?? '') : '')).join('');
    }
    const span = await one();
    expect(span.attributes['faultline.response.output_chars']).toBe(text.length);
  });
});
