/**
 * Embeddings through the real clients — openai `embeddings.create` (float and the SDK's default base64),
 * @google/genai `embedContent` (batchEmbedContents), ollama `embed` (/api/embed) and `embeddings` (/api/embeddings) —
 * against a loopback server answering in each provider's format with bodies the project writes
 * (../support/embeddings-wire.ts): one CLIENT `embeddings {model}` span each, with the
 * vector count and dimension, input tokens, and no LLM facts.
 */
import { SpanKind } from '@opentelemetry/api';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { corpusReply } from '../support/llm-server';
import { useLayer } from '../support/layer';
import { geminiBatchEmbed, ollamaEmbed, ollamaEmbeddings, openaiEmbeddings } from '../support/embeddings-wire';
import { exchange } from '../support/wire-text';

const layer = useLayer();

const FLOAT = exchange({
  endpoint: '/v1/embeddings',
  request: { model: 'text-embedding-3-small', input: 'The quick brown fox', dimensions: 256, encoding_format: 'float' },
  response: openaiEmbeddings({ model: 'text-embedding-3-small', inputs: 1, dimension: 256, promptTokens: 4 }),
});
const BASE64 = exchange({
  endpoint: '/v1/embeddings',
  request: {
    model: 'text-embedding-3-large',
    input: ['first text', 'second text', 'third text'],
    encoding_format: 'base64',
  },
  response: openaiEmbeddings({
    model: 'text-embedding-3-large',
    inputs: 3,
    dimension: 3072,
    encoding: 'base64',
    promptTokens: 6,
  }),
});
const GEMINI = exchange({
  endpoint: '/v1beta/models/gemini-embedding-2:batchEmbedContents',
  request: {
    requests: ['alpha', 'beta'].map((text) => ({ model: 'models/gemini-embedding-2', content: { parts: [{ text }] } })),
  },
  response: geminiBatchEmbed(2, 768),
});
const OLLAMA_LEGACY = exchange({
  endpoint: '/api/embeddings',
  request: { model: 'nomic-embed-text', prompt: 'The sky is blue because of Rayleigh scattering' },
  response: ollamaEmbeddings(768),
});

const noLlmFacts = (attrs: Record<string, unknown>) => {
  for (const key of [
    'gen_ai.input.messages',
    'gen_ai.output.messages',
    'faultline.response.output_chars',
    'gen_ai.response.finish_reasons',
  ])
    expect(attrs[key]).toBeUndefined();
};

describe('OpenAI-compatible /embeddings', () => {
  const openai = () => new OpenAI({ apiKey: 'sk-test', baseURL: `${layer.server.url}/v1`, maxRetries: 0 });

  it('float vectors with dimensions: embeddings {model}, dimension count, input tokens', async () => {
    layer.server.respond(() => corpusReply(FLOAT));
    // The server answers floats: ask for them (the SDK otherwise asks for base64 and decodes what comes back).
    const res = await openai().embeddings.create({ ...(FLOAT.request as object), encoding_format: 'float' } as never);
    const span = await layer.one();
    expect(span.name).toBe(`embeddings ${FLOAT.request.model as string}`);
    expect(span.kind).toBe(SpanKind.CLIENT);
    const r = FLOAT.response as { usage: { prompt_tokens: number }; model: string };
    expect(span.attributes).toMatchObject({
      'gen_ai.operation.name': 'embeddings',
      'gen_ai.provider.name': 'openai_compatible',
      'gen_ai.request.model': FLOAT.request.model,
      'gen_ai.request.encoding_formats': ['float'],
      'gen_ai.embeddings.dimension.count': res.data[0].embedding.length,
      'gen_ai.usage.input_tokens': r.usage.prompt_tokens,
      'gen_ai.response.model': r.model,
      'faultline.response.embedding_count': res.data.length,
      'faultline.request.input_count': 1,
    });
    noLlmFacts(span.attributes);
  });

  it('base64 vectors (what the openai SDK asks for by default) give the same dimension as floats', async () => {
    layer.server.respond(() => corpusReply(BASE64));
    const res = await openai().embeddings.create({
      model: BASE64.request.model as string,
      input: BASE64.request.input as string[],
    });
    const span = await layer.one();
    expect(span.attributes).toMatchObject({
      'gen_ai.request.encoding_formats': ['base64'],
      'gen_ai.embeddings.dimension.count': res.data[0].embedding.length,
      'faultline.response.embedding_count': res.data.length,
      'faultline.request.input_count': (BASE64.request.input as unknown[]).length,
    });
  });
});

describe('Gemini and Ollama embeddings', () => {
  it('@google/genai embedContent (batchEmbedContents)', async () => {
    layer.server.respond(() => corpusReply(GEMINI));
    const { GoogleGenAI } = await import('@google/genai');
    const ai = new GoogleGenAI({ apiKey: 'test-key', httpOptions: { baseUrl: layer.server.url } });
    const contents = (GEMINI.request.requests as Array<{ content: unknown }>).map((q) => q.content);
    const res = await ai.models.embedContent({ model: 'gemini-embedding-2', contents: contents as never });
    const span = await layer.one();
    expect(span.name).toBe('embeddings gemini-embedding-2');
    expect(span.attributes).toMatchObject({
      'gen_ai.provider.name': 'gcp.gemini',
      'gen_ai.embeddings.dimension.count': res.embeddings![0].values!.length,
      'faultline.response.embedding_count': res.embeddings!.length,
      'faultline.request.input_count': contents.length,
    });
  });

  it('Gemini :embedContent (one input)', async () => {
    const values = Array.from({ length: 8 }, (_, i) => i / 10);
    layer.server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ embedding: { values } }),
    }));
    await (
      await fetch(`${layer.server.url}/v1beta/models/gemini-embedding-001:embedContent`, {
        method: 'POST',
        body: JSON.stringify({ content: { parts: [{ text: 'hi' }] } }),
      })
    ).text();
    expect((await layer.one()).attributes).toMatchObject({
      'gen_ai.embeddings.dimension.count': 8,
      'faultline.response.embedding_count': 1,
    });
  });

  it('ollama embeddings (/api/embeddings) and embed (/api/embed)', async () => {
    const ollama = new Ollama({ host: layer.server.url });
    layer.server.respond(() => corpusReply(OLLAMA_LEGACY));
    const legacy = await ollama.embeddings(OLLAMA_LEGACY.request as never);
    const span = await layer.one();
    expect(span.attributes).toMatchObject({
      'gen_ai.provider.name': 'ollama',
      'gen_ai.embeddings.dimension.count': legacy.embedding.length,
      'faultline.response.embedding_count': 1,
    });
    layer.otel.exporter.reset();
    const embed = ollamaEmbed('all-minilm', 2, 3, 8);
    layer.server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify(embed),
    }));
    const res = await ollama.embed({ model: 'all-minilm', input: ['a', 'b'] });
    expect(res.embeddings).toEqual(embed.embeddings);
    expect((await layer.one()).attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 8,
      'gen_ai.embeddings.dimension.count': 3,
      'faultline.response.embedding_count': 2,
      'faultline.request.input_count': 2,
      'gen_ai.response.model': 'all-minilm',
    });
  });
});
