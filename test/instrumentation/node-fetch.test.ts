/**
 * node-fetch (the `fetch` of openai v4, older Anthropic SDKs and gaxios) sends its requests with `http.request`, so its
 * LLM calls are seen by the node:http interception point (instrumentation/node-http.ts): one chat span per call, and
 * the answer, JSON or SSE, read by the application byte for byte as the server sent it.
 */
import { describe, expect, it } from 'vitest';
import { recordBody } from '../support/wire-record';
import { CHAT_STREAM, CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply } from '../support/llm-server';
import { useLayer } from '../support/layer';
import { ours } from '../support/otel';

const layer = useLayer();
const chat = CHAT_TEXT;
const stream = CHAT_STREAM;

async function call(body: unknown): Promise<string> {
  // node-fetch 3 is an ES module only.
  const { default: fetch } = await import('node-fetch');
  const res = await fetch(`${layer.server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-node-fetch-secret' },
    body: JSON.stringify(body),
  });
  return res.text();
}

describe('node-fetch 3 (node:http)', () => {
  it('a JSON chat completion: one chat span, the body as the server sent it', async () => {
    layer.server.respond(() => corpusReply(chat));
    expect(await call(chat.request)).toBe(recordBody(chat));
    const span = await layer.one();
    expect(span.name).toBe(`chat ${chat.request.model as string}`);
    expect(span.attributes).toMatchObject({
      'gen_ai.request.model': chat.request.model,
      'http.response.status_code': 200,
    });
    expect(JSON.stringify(span.attributes)).not.toContain('sk-node-fetch-secret');
  });

  it('an SSE stream: the events as the server sent them, a span with the stream facts', async () => {
    const reply = corpusReply(stream);
    layer.server.respond(() => reply);
    expect(await call(stream.request)).toBe((reply.chunks ?? []).map(String).join(''));
    const spans = ours(await layer.otel.waitForSpans((s) => ours(s).length >= 1));
    expect(spans).toHaveLength(1);
    expect(spans[0]!.attributes).toMatchObject({ 'gen_ai.request.stream': true, 'faultline.response.done': true });
  });
});
