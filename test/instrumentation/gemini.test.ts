/**
 * Gemini generateContent through the real @google/genai client (JSON and alt=sse streams) and raw fetch (the
 * JSON-array stream other clients read), against a loopback server answering in Gemini's formats with bodies the
 * project writes (../support/gemini-wire.ts): one CLIENT
 * `generate_content {model}` span, gcp.gemini / gcp.vertex_ai, finishReason mapped to the semconv values,
 * usageMetadata, function calls.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { beforeAll, describe, expect, it } from 'vitest';
import { corpusReply } from '../support/llm-server';
import { useLayer } from '../support/layer';
import { generateContent, generateContentArray, generateContentSse, geminiError } from '../support/gemini-wire';
import { exchange } from '../support/wire-text';

const layer = useLayer();

const generate = (model: string) => `/v1beta/models/${model}:generateContent`;
const user = (text: string) => ({ contents: [{ role: 'user', parts: [{ text }] }] });

/** gemini-2.5-pro: two parallel functionCall parts, with thinking tokens. */
const TOOLS = exchange({
  endpoint: generate('gemini-2.5-pro'),
  request: user('Search the docs for "test" and multiply 5 by 3.'),
  response: {
    ...generateContent({
      model: 'gemini-2.5-pro',
      functionCalls: [
        { name: 'search_docs', args: { query: 'test' } },
        { name: 'multiply', args: { b: 3, a: 5 } },
      ],
      promptTokens: 194,
      candidatesTokens: 33,
      thoughtsTokens: 216,
    }),
    responseId: 'gk9TaPrjLbOZ1MkPq6uD-Qg',
  },
});
const STATES =
  'Alabama, Alaska, Arizona, Arkansas, California, Colorado, Connecticut, Delaware, Florida, Georgia, Hawaii, Idaho';
const MAX_TOKENS_STREAM = exchange({
  endpoint: `${generate('gemini-2.5-flash').replace('generateContent', 'streamGenerateContent')}?alt=sse`,
  request: user('list the states'),
  sse: generateContentSse({
    model: 'gemini-2.5-flash',
    text: STATES,
    finishReason: 'MAX_TOKENS',
    candidatesTokens: 32,
  }),
});
const SAFETY = exchange({
  endpoint: generate('gemini-1.5-flash'),
  request: user('x'),
  response: generateContent({ model: 'gemini-1.5-flash-002', finishReason: 'SAFETY', candidatesTokens: 0 }),
});
const NOT_FOUND = exchange({
  endpoint: generate('nope'),
  status: 404,
  request: user('x'),
  response: geminiError(
    404,
    'models/nope is not found for API version v1beta, or is not supported for generateContent.',
  ),
});
const ARRAY_STREAM = exchange({
  endpoint: generate('gemini-flash-latest').replace('generateContent', 'streamGenerateContent'),
  request: user('Explain in a few sentences why the sky is blue.'),
  stream: generateContentArray({
    model: 'gemini-flash-latest',
    text: 'Sunlight is scattered by the molecules of the air, and blue light, with its shorter wavelength, is scattered far more than red: the sky we see is that scattered blue light.',
    promptTokens: 11,
    candidatesTokens: 38,
    thoughtsTokens: 120,
  }),
  framing: 'json-array',
  model: 'gemini-flash-latest',
});

type GenAi = InstanceType<
  Awaited<typeof import('@google/genai', { with: { 'resolution-mode': 'import' } })>['GoogleGenAI']
>;
let ai: GenAi;

beforeAll(async () => {
  const { GoogleGenAI } = await import('@google/genai');
  ai = new GoogleGenAI({ apiKey: 'test-key', httpOptions: { baseUrl: layer.server.url } });
});

describe('@google/genai', () => {
  it('generateContent: one generate_content span with function calls, finish tool_call, usage with thoughts', async () => {
    layer.server.respond(() => corpusReply(TOOLS));
    const res = await ai.models.generateContent({ model: 'gemini-2.5-pro', contents: TOOLS.request.contents as never });
    expect(res.functionCalls).toHaveLength(2);
    const span = await layer.one();
    expect(span.name).toBe('generate_content gemini-2.5-pro');
    expect(span.kind).toBe(SpanKind.CLIENT);
    expect(span.attributes).toMatchObject({
      'gen_ai.operation.name': 'generate_content',
      'gen_ai.provider.name': 'gcp.gemini',
      'gen_ai.request.model': 'gemini-2.5-pro',
      'gen_ai.response.id': 'gk9TaPrjLbOZ1MkPq6uD-Qg',
      'gen_ai.response.model': 'gemini-2.5-pro',
      'gen_ai.response.finish_reasons': ['tool_call'],
      'gen_ai.usage.input_tokens': 194,
      'gen_ai.usage.output_tokens': 33 + 216,
      'gen_ai.usage.reasoning.output_tokens': 216,
      'faultline.response.tool_call_count': 2,
    });
    const out = JSON.parse(span.attributes['gen_ai.output.messages'] as string) as Array<{
      parts: Array<{ type: string; name?: string; arguments?: unknown }>;
    }>;
    expect(out[0].parts.map((p) => [p.type, p.name, p.arguments])).toEqual([
      ['tool_call', 'search_docs', { query: 'test' }],
      ['tool_call', 'multiply', { b: 3, a: 5 }],
    ]);
    // The API key travels in a header the span layer never reads.
    expect(JSON.stringify(span.attributes)).not.toContain('test-key');
  });

  it('generateContentStream (alt=sse): a streamed span, MAX_TOKENS → length, done at the finish chunk', async () => {
    layer.server.respond(() => corpusReply(MAX_TOKENS_STREAM));
    let text = '';
    for await (const chunk of await ai.models.generateContentStream({
      model: 'gemini-2.5-flash',
      contents: 'list the states',
    }))
      text += chunk.text ?? '';
    const span = await layer.one();
    expect(span.attributes).toMatchObject({
      'gen_ai.request.stream': true,
      'gen_ai.response.finish_reasons': ['length'],
      'faultline.response.done': true,
      'faultline.response.output_chars': text.length,
    });
  });

  it('SAFETY → content_filter; a 404 keeps the SDK error and records error.type', async () => {
    layer.server.respond(() => corpusReply(SAFETY));
    await ai.models.generateContent({ model: 'gemini-1.5-flash', contents: 'x' });
    expect((await layer.one()).attributes['gen_ai.response.finish_reasons']).toEqual(['content_filter']);
    layer.otel.exporter.reset();
    layer.server.respond(() => corpusReply(NOT_FOUND));
    const err = (await ai.models.generateContent({ model: 'nope', contents: 'x' }).catch((e: unknown) => e)) as {
      status?: number;
    };
    expect(err.status).toBe(404);
    const span = await layer.one();
    expect(span.attributes['error.type']).toBe('404');
    expect(span.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'HTTP 404 NOT_FOUND' });
  });
});

describe('the JSON-array stream (streamGenerateContent without alt=sse)', () => {
  const path = `/v1beta/models/${ARRAY_STREAM.model ?? 'gemini-flash-latest'}:streamGenerateContent`;
  const post = () =>
    fetch(`${layer.server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ARRAY_STREAM.request),
    });

  it('is read element by element: the elements’ usage, finish reason and closing bracket', async () => {
    layer.server.respond(() => corpusReply(ARRAY_STREAM));
    const body = await (await post()).text();
    expect(body).toBe(ARRAY_STREAM.stream);
    const elements = JSON.parse(body) as Array<{
      usageMetadata?: { candidatesTokenCount?: number; thoughtsTokenCount?: number };
    }>;
    const usage = elements[elements.length - 1].usageMetadata!;
    const span = await layer.one();
    expect(span.attributes).toMatchObject({
      'gen_ai.request.stream': true,
      'faultline.response.done': true,
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.output_tokens': (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
    });
  });

  it('cut mid-array: the elements before the cut still count, the stream is not done', async () => {
    const full = corpusReply(ARRAY_STREAM);
    const chunks = full.chunks!.slice(0, 2);
    layer.server.respond(() => ({ ...full, chunks }));
    await (await post()).text();
    const span = await layer.one();
    expect(span.attributes['faultline.response.done']).toBe(false);
    expect(span.attributes['gen_ai.response.finish_reasons']).toBeUndefined();
    expect(span.attributes['faultline.response.chunk_count']).toBe(2);
  });
});

describe('Vertex AI', () => {
  it('a Vertex-shaped path is gcp.vertex_ai', async () => {
    layer.server.respond(() => corpusReply(TOOLS));
    const url = `${layer.server.url}/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent`;
    await (
      await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(TOOLS.request),
      })
    ).text();
    expect((await layer.one()).attributes).toMatchObject({
      'gen_ai.provider.name': 'gcp.vertex_ai',
      'gen_ai.request.model': 'gemini-2.5-pro',
    });
  });
});
