/** GenAI client metrics through a meter provider the app registered (picked up even after faultline started). */
import { metrics } from '@opentelemetry/api';
import { DataPointType, MeterProvider, MetricReader, type HistogramMetricData } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
const rec = CHAT_TEXT;

beforeAll(async () => {
  otel = setupOtel();
  inst = new FaultlineInstrumentation();
  inst.enable();
  server = await startLlmServer(() => corpusReply(rec));
});
afterAll(async () => {
  inst.disable();
  await server.close();
  await otel.shutdown();
  metrics.disable();
});

it('records gen_ai.client.operation.duration and gen_ai.client.token.usage with the spec buckets', async () => {
  // No meter provider yet: a call records nothing and costs nothing.
  await (
    await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(rec.request) })
  ).text();
  // Metrics are recorded when the span ends, a moment after the app has its answer.
  await otel.waitForSpans((s) => ours(s).length === 1);
  const reader = new TestReader();
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  await (
    await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(rec.request) })
  ).text();
  await otel.waitForSpans((s) => ours(s).length === 2);
  const { resourceMetrics } = await reader.collect();
  const all = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
  const duration = all.find((m) => m.descriptor.name === 'gen_ai.client.operation.duration') as HistogramMetricData;
  const tokens = all.find((m) => m.descriptor.name === 'gen_ai.client.token.usage') as HistogramMetricData;
  expect(duration.dataPointType).toBe(DataPointType.HISTOGRAM);
  expect(duration.descriptor.unit).toBe('s');
  expect(duration.dataPoints).toHaveLength(1);
  expect(duration.dataPoints[0]?.value.count).toBe(1);
  expect(duration.dataPoints[0]?.value.buckets.boundaries).toEqual([
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
  ]);
  expect(duration.dataPoints[0]?.attributes).toMatchObject({
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': rec.request.model,
    'gen_ai.provider.name': 'openai_compatible',
  });
  const usage = (rec.response as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
  const byType = Object.fromEntries(tokens.dataPoints.map((p) => [p.attributes['gen_ai.token.type'], p.value.sum]));
  expect(byType).toEqual({ input: usage.prompt_tokens, output: usage.completion_tokens });
  expect(tokens.dataPoints[0]?.value.buckets.boundaries[0]).toBe(1);
  expect(tokens.dataPoints[0]?.value.buckets.boundaries.at(-1)).toBe(67108864);
});
