/**
 * Gemini generateContent through the real @google/genai client (JSON and alt=sse streams) and raw fetch (the
 * JSON-array stream other clients read), against a loopback server replaying recorded Gemini traffic: one CLIENT
 * `generate_content {model}` span, gcp.gemini / gcp.vertex_ai, finishReason mapped to the semconv values,
 * usageMetadata, function calls.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadCorpus, type CorpusRecord } from '../support/corpus';
import { corpusReply } from '../support/llm-server';
import { useLayer } from '../support/layer';

const layer = useLayer();

const records = loadCorpus('gemini.jsonl');
const byId = (id: string): CorpusRecord => records.find((r) => r.id === id)!;
const TOOLS = byId('1b0f45e4ef40'); // gemini-2.5-pro, two parallel functionCall parts, thoughts
const MAX_TOKENS_STREAM = byId('68e48658cae6');
const SAFETY = byId('a561e8a21605');
const NOT_FOUND = byId('9d168473ad4b');
const ARRAY_STREAM = records.find((r) => r.framing === 'json-array')!;

type GenAi = InstanceType<Awaited<typeof import('@google/genai', { with: { 'resolution-mode': 'import' } })>['GoogleGenAI']>;
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
      'gen_ai.response.id': '68LIaOibB4my1MkP8sn7-Ak',
      'gen_ai.response.model': 'gemini-2.5-pro',
      'gen_ai.response.finish_reasons': ['tool_call'],
      'gen_ai.usage.input_tokens': 194,
      'gen_ai.usage.output_tokens': 33 + 216,
      'gen_ai.usage.reasoning.output_tokens': 216,
      'faultline.response.tool_call_count': 2,
    });
    const out = JSON.parse(span.attributes['gen_ai.output.messages'] as string) as Array<{ parts: Array<{ type: string; name?: string; arguments?: unknown }> }>;
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
    for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'list the states' })) text += chunk.text ?? '';
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
    const err = (await ai.models.generateContent({ model: 'nope', contents: 'x' }).catch((e: unknown) => e)) as { status?: number };
    expect(err.status).toBe(404);
    const span = await layer.one();
    expect(span.attributes['error.type']).toBe('404');
    expect(span.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'HTTP 404 NOT_FOUND' });
  });
});

describe('the JSON-array stream (streamGenerateContent without alt=sse)', () => {
  const path = `/v1beta/models/${ARRAY_STREAM.model ?? 'gemini-flash-latest'}:streamGenerateContent`;
  const post = () => fetch(`${layer.server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ARRAY_STREAM.request) });

  it('is read element by element: the elements’ usage, finish reason and closing bracket', async () => {
    layer.server.respond(() => corpusReply(ARRAY_STREAM));
    const body = await (await post()).text();
    expect(body).toBe(ARRAY_STREAM.stream);
    const elements = JSON.parse(body) as Array<{ usageMetadata?: { candidatesTokenCount?: number; thoughtsTokenCount?: number } }>;
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
    await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(TOOLS.request) })).text();
    expect((await layer.one()).attributes).toMatchObject({ 'gen_ai.provider.name': 'gcp.vertex_ai', 'gen_ai.request.model': 'gemini-2.5-pro' });
  });
});
