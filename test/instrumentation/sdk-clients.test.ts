/**
 * Higher-level clients over the chat formats, against a loopback server answering with project-written bodies: the AI SDK's
 * @ai-sdk/anthropic (Anthropic messages) and LangChain's ChatOpenAI in its default mode (chat completions), one JSON
 * and one streamed call each — one CLIENT chat span per call with the semconv attributes, and what the application
 * gets the same as without faultline. (The AI SDK's default openai(model) and ChatOpenAI's Responses mode are in
 * openai-responses.test.ts.)
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { SpanKind } from '@opentelemetry/api';
import { generateText, streamText } from 'ai';
import { describe, expect, it } from 'vitest';
import { ANTHROPIC_TEXT, ANTHROPIC_TEXT_SSE, CHAT_STREAM, CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply } from '../support/llm-server';
import { ours } from '../support/otel';
import { useLayer } from '../support/layer';

const layer = useLayer();

const A_JSON = ANTHROPIC_TEXT;
const A_SSE = ANTHROPIC_TEXT_SSE;
const chat = CHAT_TEXT;
const chatStream = CHAT_STREAM;

async function both<T>(fn: () => Promise<T>): Promise<[T, T]> {
  const instrumented = await fn();
  layer.inst.disable();
  try {
    return [instrumented, await fn()];
  } finally {
    layer.inst.enable();
  }
}

const onlySpan = () => {
  const spans = ours(layer.otel.spans());
  expect(spans).toHaveLength(1);
  return spans[0];
};

describe('AI SDK (ai 6) with @ai-sdk/anthropic', () => {
  const model = () =>
    createAnthropic({ apiKey: 'sk-ant-test', baseURL: `${layer.server.url}/v1` })('claude-sonnet-4-5');

  it('generateText: one chat span with the usage and stop reason of the answer', async () => {
    layer.server.respond(() => corpusReply(A_JSON));
    const [a, b] = await both(() => generateText({ model: model(), prompt: 'hi', maxRetries: 0 }));
    expect(a.text).toBe(b.text);
    const span = onlySpan();
    const r = A_JSON.response as { usage: { output_tokens: number }; stop_reason: string; id: string };
    expect(span.kind).toBe(SpanKind.CLIENT);
    expect(span.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'claude-sonnet-4-5',
      'gen_ai.response.id': r.id,
      'gen_ai.response.finish_reasons': [r.stop_reason],
      'gen_ai.usage.output_tokens': r.usage.output_tokens,
      'faultline.response.output_chars': a.text.length,
    });
  });

  it('streamText: one streamed chat span that saw message_stop', async () => {
    layer.server.respond(() => corpusReply(A_SSE));
    const read = async () => {
      let text = '';
      for await (const t of streamText({ model: model(), prompt: 'hi', maxRetries: 0 }).textStream) text += t;
      return text;
    };
    const [a, b] = await both(read);
    expect(a).toBe(b);
    expect(onlySpan().attributes).toMatchObject({
      'gen_ai.request.stream': true,
      'faultline.response.done': true,
      'faultline.response.output_chars': a.length,
    });
  });
});

describe('@langchain/openai ChatOpenAI (chat completions, its default)', () => {
  const model = () =>
    new ChatOpenAI({
      model: 'gpt-4o-mini',
      apiKey: 'sk-test',
      configuration: { baseURL: `${layer.server.url}/v1` },
      maxRetries: 0,
    });

  it('invoke and stream: one chat span each, the same answer as without faultline', async () => {
    layer.server.respond(() => corpusReply(chat));
    const [a, b] = await both(() => model().invoke('hello'));
    expect(a.content).toEqual(b.content);
    expect(onlySpan().attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'faultline.response.output_chars': String(a.content).length,
    });
    layer.otel.exporter.reset();
    layer.server.respond(() => corpusReply(chatStream));
    const read = async () => {
      let text = '';
      for await (const c of await model().stream('hello')) text += String(c.content);
      return text;
    };
    const [s1, s2] = await both(read);
    expect(s1).toBe(s2);
    expect(onlySpan().attributes).toMatchObject({
      'gen_ai.request.stream': true,
      'faultline.response.done': true,
      'faultline.response.output_chars': s1.length,
    });
  });
});
