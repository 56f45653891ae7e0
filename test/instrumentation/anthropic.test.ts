/**
 * Anthropic messages through the real @anthropic-ai/sdk client (its own OTel tracing off, so spans are ours only),
 * JSON and SSE, against a loopback server answering in Anthropic's format with bodies the project writes
 * (../support/anthropic-wire.ts). Every recorded stream of the corpus: anthropic-corpus.test.ts (conformance tier).
 */
import Anthropic from '@anthropic-ai/sdk';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { assertSpan } from '../support/assert-span';
import { anthropicError, message, messageStream } from '../support/anthropic-wire';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, parentId, setupOtel, type TestOtel } from '../support/otel';
import { exchange } from '../support/wire-text';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
let undici: UndiciInstrumentation;
let client: Anthropic;

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'The current weather in a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const request = (stream?: boolean) => ({
  model: 'claude-sonnet-5-5',
  max_tokens: 1024,
  tools: [WEATHER_TOOL],
  messages: [{ role: 'user', content: 'What is the weather in Paris and in Rome?' }],
  ...(stream ? { stream: true } : {}),
});
/** Two parallel tool uses after a short text, with prompt-cache reads and writes in the usage. */
const TOOL_USES = {
  model: 'claude-sonnet-5-5',
  text: 'I will look up both cities.',
  toolUses: [
    { name: 'get_weather', input: { city: 'Paris' } },
    { name: 'get_weather', input: { city: 'Rome' } },
  ],
  inputTokens: 412,
  cacheReadTokens: 1800,
  cacheCreationTokens: 96,
  outputTokens: 121,
};

beforeAll(async () => {
  otel = setupOtel();
  undici = new UndiciInstrumentation();
  inst = new FaultlineInstrumentation();
  inst.enable();
  server = await startLlmServer();
  client = new Anthropic({ apiKey: 'sk-ant-test-secret', baseURL: server.url, maxRetries: 0, openTelemetry: false });
});

afterAll(async () => {
  inst.disable();
  undici.disable();
  await server.close();
  await otel.shutdown();
});

beforeEach(() => otel.exporter.reset());

type Msg = {
  id: string;
  model: string;
  stop_reason: string;
  content: Array<{ type: string }>;
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens?: number;
    cache_creation_input_tokens?: number;
  };
};

describe('anthropic messages (JSON)', () => {
  it('emits a chat span with response facts and nested HTTP span', async () => {
    const rec = exchange({ endpoint: '/v1/messages', request: request(), response: message(TOOL_USES) });
    server.respond(() => corpusReply(rec));
    const msg = await client.messages.create(rec.request as never);
    const resp = rec.response as Msg;
    expect(msg.id).toBe(resp.id);
    const spans = await otel.waitForSpans((s) => ours(s).length === 1 && s.some((x) => x.name === 'POST'));
    const span = assertSpan(ours(spans)[0], {
      name: `chat ${rec.request.model as string}`,
      kind: SpanKind.CLIENT,
      status: SpanStatusCode.UNSET,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'anthropic_compatible',
        'gen_ai.request.max_tokens': rec.request.max_tokens,
        'gen_ai.response.id': resp.id,
        'gen_ai.response.model': resp.model,
        'gen_ai.response.finish_reasons': [resp.stop_reason],
        'gen_ai.usage.input_tokens':
          resp.usage.input_tokens +
          (resp.usage.cache_read_input_tokens ?? 0) +
          (resp.usage.cache_creation_input_tokens ?? 0),
        'gen_ai.usage.output_tokens': resp.usage.output_tokens,
        'faultline.response.tool_call_count': resp.content.filter((b) => b.type === 'tool_use').length,
      },
      absent: ['gen_ai.input.messages', 'gen_ai.output.messages'],
    });
    expect(spans.find((s) => s.name === 'POST' && parentId(s) === span.spanContext().spanId)).toBeDefined();
    for (const s of spans) expect(JSON.stringify(s.attributes)).not.toContain('sk-ant-test-secret');
  });

  it('records provider errors', async () => {
    const rec = exchange({
      endpoint: '/v1/messages',
      status: 529,
      request: request(),
      response: anthropicError(529, 'Overloaded'),
    });
    server.respond(() => corpusReply(rec));
    await expect(client.messages.create(rec.request as never)).rejects.toThrow();
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    assertSpan(ours(spans)[0], { status: SpanStatusCode.ERROR, attributes: { 'error.type': String(rec.status) } });
  });
});

describe('anthropic messages (SSE)', () => {
  for (const [what, answer] of [
    [
      'text',
      {
        model: 'claude-haiku-5-5',
        text: 'Paris is sunny at 21°C; Rome is clear and warmer, at 26°C.',
        outputTokens: 24,
      },
    ],
    ['tool uses', TOOL_USES],
    [
      'thinking, then text cut at max_tokens',
      {
        model: 'claude-sonnet-5-5',
        thinking: 'The user wants both cities; I know neither forecast.',
        text: 'I cannot see live weather, but in early summer Paris',
        stopReason: 'max_tokens' as const,
        outputTokens: 64,
      },
    ],
  ] as const) {
    it(`reads a stream of ${what} to message_stop with usage and text length`, async () => {
      const rec = exchange({ endpoint: '/v1/messages', request: request(true), sse: messageStream(answer) });
      server.respond(() => corpusReply(rec));
      const final = await client.messages.stream(request() as never).finalMessage();
      const text = final.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      expect(final.usage.output_tokens).toBe(answer.outputTokens);
      const spans = await otel.waitForSpans((s) => ours(s).length === 1);
      assertSpan(ours(spans)[0], {
        attributes: {
          'gen_ai.request.stream': true,
          'faultline.response.done': true,
          'faultline.response.output_chars': text.length,
          'gen_ai.response.id': final.id,
          'gen_ai.response.finish_reasons': [final.stop_reason],
          'gen_ai.usage.output_tokens': answer.outputTokens,
        },
      });
    });
  }
});
