/**
 * Every recorded Anthropic stream of the corpus through the real @anthropic-ai/sdk client, read to message_stop:
 * the conformance tier of anthropic.test.ts (which uses project-written bodies).
 */
import Anthropic from '@anthropic-ai/sdk';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { assertSpan } from '../support/assert-span';
import { loadCorpus } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

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
