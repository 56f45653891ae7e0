/**
 * The node:http interception point (instrumentation/node-http.ts): an LLM call made with `http.request` gets the same
 * GenAI span as one made with fetch, and the application reads its own IncomingMessage, byte for byte.
 */
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { loadCorpus } from '../support/corpus';
import { corpusReply } from '../support/llm-server';
import { useLayer } from '../support/layer';

const layer = useLayer();
const rec = loadCorpus('openai-chat.jsonl').find((r) => r.status === 200 && r.tags.includes('text'))!;

function post(url: string, body: string): Promise<{ status: number; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-node-http-secret' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('node:http client requests', () => {
  it('an OpenAI chat call through http.request: one chat span, the answer as the server sent it', async () => {
    layer.server.respond(() => corpusReply(rec));
    const res = await post(`${layer.server.url}/v1/chat/completions`, JSON.stringify(rec.request));
    expect(res.status).toBe(200);
    expect(res.bytes.toString()).toBe(JSON.stringify(rec.response));
    const span = await layer.one();
    expect(span.name).toBe(`chat ${rec.request.model as string}`);
    expect(span.attributes['gen_ai.request.model']).toBe(rec.request.model);
    expect(span.attributes['http.response.status_code']).toBe(200);
    expect(JSON.stringify(span.attributes)).not.toContain('sk-node-http-secret');
  });

  it('leaves other node:http traffic alone: no span', async () => {
    layer.server.respond(() => ({ status: 200, body: 'ok' }));
    const res = await post(`${layer.server.url}/v1/traces`, '{}');
    expect(res.bytes.toString()).toBe('ok');
    await new Promise((r) => setTimeout(r, 50));
    expect(
      layer.otel.exporter.getFinishedSpans().filter((s) => s.instrumentationScope.name === 'faultline'),
    ).toHaveLength(0);
  });
});
