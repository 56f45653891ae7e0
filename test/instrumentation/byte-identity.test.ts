/**
 * Do no harm: with faultline enabled and no fault planned, what the application receives is byte-identical to what
 * the server sent, for every corpus record, through the real SDKs and raw fetch; the request the server gets is
 * byte-identical to what the app sent. The conformance tier; encoded bodies, malformed JSON, truncated SSE, HTML
 * error pages and a 10 MB body are unusual-bodies.test.ts.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { loadCorpus, recordBody, type CorpusRecord } from '../support/corpus';
import { corpusReply } from '../support/llm-server';
import { useLayer } from '../support/layer';
import { ours } from '../support/otel';

const layer = useLayer({ watchProblems: true });

function served(rec: CorpusRecord): void {
  layer.server.respond(() => corpusReply(rec));
}

describe.each([
  ['openai-chat.jsonl', '/v1/chat/completions'],
  ['openai-chat-stream.jsonl', '/v1/chat/completions'],
  ['anthropic-messages.jsonl', '/v1/messages'],
] as const)('%s', (file, path) => {
  const records = loadCorpus(file);

  it(`raw fetch: every record arrives unchanged (${records.length} records)`, async () => {
    let spans = 0;
    for (const rec of records) {
      served(rec);
      layer.otel.exporter.reset();
      const before = layer.server.requests.length;
      const r = await layer.post(path, rec.request);
      expect(r.status).toBe(rec.status);
      expect(r.text).toBe(recordBody(rec));
      expect(layer.server.requests[before]?.body.toString()).toBe(r.sent);
      spans += ours(await layer.otel.waitForSpans((s) => ours(s).length === 1)).length;
    }
    expect(spans).toBe(records.length);
    expect(layer.problems).toEqual([]);
  });

  it('real SDK client: every record arrives unchanged', async () => {
    const openai = new OpenAI({ apiKey: 'k', baseURL: `${layer.server.url}/v1`, maxRetries: 0 });
    const anthropic = new Anthropic({
      apiKey: 'k',
      baseURL: layer.server.url,
      maxRetries: 0,
      openTelemetry: false,
      timeout: 600_000,
    });
    for (const rec of records) {
      served(rec);
      const call = file.startsWith('openai')
        ? openai.chat.completions.create(rec.request as never)
        : anthropic.messages.create(rec.request as never);
      if (rec.status >= 400) {
        const err = (await call.then(
          () => undefined,
          (e: unknown) => e,
        )) as { status?: number; error?: unknown };
        expect(err?.status).toBe(rec.status);
        continue;
      }
      const res = await call.asResponse();
      expect(await res.text()).toBe(recordBody(rec));
    }
    expect(layer.problems).toEqual([]);
  });
});
