/**
 * Anthropic messages through the real @anthropic-ai/sdk client (its own OTel tracing off, so spans are ours only),
 * JSON and SSE, against a loopback server replaying corpus records.
 */
import Anthropic from '@anthropic-ai/sdk';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { assertSpan } from '../support/assert-span';
import { loadCorpus, type CorpusRecord } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, parentId, setupOtel, type TestOtel } from '../support/otel';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
let undici: UndiciInstrumentation;
let client: Anthropic;
const records = loadCorpus('anthropic-messages.jsonl');

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

type Msg = { id: string; model: string; stop_reason: string; content: Array<{ type: string }>; usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number } };

describe('anthropic messages (JSON)', () => {
  const toolRecords = records.filter((r) => r.status === 200 && r.tags.includes('parallel_tool_use'));

  it('emits a chat span with response facts and nested HTTP span', async () => {
    const rec = toolRecords[0] as CorpusRecord;
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
        'gen_ai.usage.input_tokens': resp.usage.input_tokens + (resp.usage.cache_read_input_tokens ?? 0) + (resp.usage.cache_creation_input_tokens ?? 0),
        'gen_ai.usage.output_tokens': resp.usage.output_tokens,
        'faultline.response.tool_call_count': resp.content.filter((b) => b.type === 'tool_use').length,
      },
      absent: ['gen_ai.input.messages', 'gen_ai.output.messages'],
    });
    expect(spans.find((s) => s.name === 'POST' && parentId(s) === span.spanContext().spanId)).toBeDefined();
    for (const s of spans) expect(JSON.stringify(s.attributes)).not.toContain('sk-ant-test-secret');
  });

  it('records provider errors', async () => {
    const rec = records.find((r) => r.status >= 400) as CorpusRecord;
    server.respond(() => corpusReply(rec));
    await expect(client.messages.create(rec.request as never)).rejects.toThrow();
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    assertSpan(ours(spans)[0], { status: SpanStatusCode.ERROR, attributes: { 'error.type': String(rec.status) } });
  });
});

describe('anthropic messages (SSE)', () => {
  it('reads every corpus stream to message_stop with usage and text length', async () => {
    const streams = records.filter((r) => r.sse !== undefined);
    expect(streams.length).toBeGreaterThan(10);
    for (const rec of streams) {
      otel.exporter.reset();
      server.respond(() => corpusReply(rec));
      const stream = client.messages.stream(rec.request as never);
      const final = await stream.finalMessage();
      const text = final.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      const spans = await otel.waitForSpans((s) => ours(s).length === 1);
      assertSpan(ours(spans)[0], {
        attributes: {
          'gen_ai.request.stream': true,
          'faultline.response.done': true,
          'faultline.response.output_chars': text.length,
          'gen_ai.response.id': final.id,
          'gen_ai.response.finish_reasons': [final.stop_reason],
          'gen_ai.usage.output_tokens': final.usage.output_tokens,
        },
      });
    }
  });
});
