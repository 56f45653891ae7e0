/**
 * openai v4 (the last major before v5 moved to fetch) sends its calls through node-fetch 2, that is `http.request`:
 * seen by the node:http interception point (instrumentation/node-http.ts). Through the real SDK (installed as the
 * `openai-v4` alias) against the loopback server answering with recorded OpenAI bodies: one chat span per call, the
 * answer the SDK parses the same as without faultline (JSON and SSE), no credential on a span.
 *
 * The SDK is loaded by a module name TypeScript does not resolve: its declarations pull in the @types/node 18 it
 * depends on, which clashes with the project's; the little of its API used here is typed below.
 */
import { describe, expect, it } from 'vitest';
import { loadCorpus } from '../support/corpus';
import { corpusReply } from '../support/llm-server';
import { useLayer } from '../support/layer';
import { ours } from '../support/otel';
import { loadOpenAiV4, type OpenAiV4 } from '../support/openai-v4';

const layer = useLayer();
const chat = loadCorpus('openai-chat.jsonl').find(
  (r) => r.status === 200 && r.tags.includes('text') && !r.tags.includes('tool_calls'),
)!;
const stream = loadCorpus('openai-chat-stream.jsonl').find(
  (r) => r.tags.includes('usage_chunk') && !r.tags.includes('tool_calls'),
)!;

async function both<T>(fn: () => Promise<T>): Promise<[T, T]> {
  const instrumented = await fn();
  layer.inst.disable();
  try {
    return [instrumented, await fn()];
  } finally {
    layer.inst.enable();
  }
}

describe('openai v4 (node-fetch 2: node:http)', () => {
  let client: OpenAiV4;
  it('is the v4 SDK, on node-fetch', async () => {
    const sdk = await loadOpenAiV4();
    expect(sdk.VERSION).toMatch(/^4\./);
    client = new sdk.OpenAI({ apiKey: 'sk-openai-v4-secret', baseURL: `${layer.server.url}/v1`, maxRetries: 0 });
    expect(sdk.shimKind()).toBe('node');
  });

  it('a JSON chat completion: one chat span, the SDK’s answer as without faultline', async () => {
    layer.server.respond(() => corpusReply(chat));
    const [a, b] = await both(() => client.chat.completions.create(chat.request));
    expect(a).toEqual(b);
    expect(a).toEqual(chat.response);
    const spans = ours(layer.otel.spans());
    expect(spans).toHaveLength(1);
    expect(spans[0]!.name).toBe(`chat ${chat.request.model as string}`);
    expect(spans[0]!.attributes).toMatchObject({
      'gen_ai.provider.name': 'openai_compatible',
      'gen_ai.request.model': chat.request.model,
      'http.response.status_code': 200,
    });
    expect(JSON.stringify(spans[0]!.attributes)).not.toContain('sk-openai-v4-secret');
  });

  it('an SSE stream: every chunk the SDK yields as without faultline, a span with the stream facts', async () => {
    const reply = corpusReply(stream);
    layer.server.respond(() => reply);
    const read = async () => {
      const out: unknown[] = [];
      for await (const c of await client.chat.completions.create({ ...stream.request, stream: true })) out.push(c);
      return out;
    };
    const [a, b] = await both(read);
    expect(a).toEqual(b);
    expect(a.length).toBeGreaterThan(1);
    const spans = ours(layer.otel.spans());
    expect(spans).toHaveLength(1);
    expect(spans[0]!.attributes).toMatchObject({ 'gen_ai.request.stream': true, 'faultline.response.done': true });
  });
});
