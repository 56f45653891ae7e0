/**
 * OTLP traffic is recognised by what it is (issue 26): an LLM gateway on the same host:port as the OTLP endpoint is
 * instrumented (its chat calls are spans), while the OTLP export requests (the signal paths on the configured
 * endpoints) are not. One loopback server answers both an OpenAI-compatible chat endpoint and OTLP /v1/traces.
 */
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { otlpExports } from '../../instrumentation/install';
import { settleExchanges } from '../../instrumentation/interceptor';
import { startLlmServer, type LlmServer } from '../support/llm-server';

const MODEL = 'gpt-4o-mini';
const completion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: MODEL,
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
};

let server: LlmServer;
beforeAll(async () => {
  server = await startLlmServer((req) =>
    req.url.startsWith('/v1/traces')
      ? { headers: { 'content-type': 'application/json' }, body: '{"partialSuccess":{}}' }
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion) },
  );
});
afterAll(async () => {
  await server.close();
});

describe('an LLM gateway on the OTLP endpoint host:port', () => {
  it('its chat calls are spans; the OTLP export posts are not', async () => {
    const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = server.url;
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const inst = new FaultlineInstrumentation({ enabled: false });
    inst.setTracerProvider(provider);
    inst.enable();
    try {
      const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
      const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
      expect(r.choices[0]?.message.content).toBe('Hello.');
      // An OTLP/JSON export sent through fetch, shaped like a chat request so only the path tells them apart.
      const otlp = await fetch(`${server.url}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], resourceSpans: [] }),
      });
      expect(otlp.status).toBe(200);
      await otlp.text();
      await settleExchanges();
      await provider.forceFlush();
      const names = exporter
        .getFinishedSpans()
        .filter((s) => s.instrumentationScope.name === 'faultline')
        .map((s) => s.name);
      expect(names).toEqual([`chat ${MODEL}`]);
      expect(server.requests.map((q) => q.url)).toEqual(['/v1/chat/completions', '/v1/traces']);
    } finally {
      inst.disable();
      if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
      await provider.shutdown();
    }
  });

  it('otlpExports: the signal paths of a base endpoint, per-signal URLs as they are', () => {
    expect(
      otlpExports({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://Collector:4318/base/' }, ['http://127.0.0.1:9/custom/traces']),
    ).toEqual([
      'collector:4318/base/v1/traces',
      'collector:4318/base/v1/metrics',
      'collector:4318/base/v1/logs',
      '127.0.0.1:9/custom/traces',
    ]);
    expect(
      otlpExports({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://h:4318/v1/traces',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url',
      }),
    ).toEqual(['h:4318/v1/traces']);
  });
});
