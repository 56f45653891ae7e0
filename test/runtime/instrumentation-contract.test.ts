/**
 * An OpenTelemetry instrumentation like the others (issue 13 Build 5): FaultlineInstrumentation goes through
 * `registerInstrumentations` (which used to throw `instrumentation.setMeterProvider is not a function`) with a tracer
 * and a meter provider of the app's, and through the Node SDK's `instrumentations` option, as contrib ones do.
 */
import { metrics, trace } from '@opentelemetry/api';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { DataPointType, MeterProvider, MetricReader, type HistogramMetricData } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
// Imported with the file (it loads about 1,500 modules): a pause that long between two calls can outlive the
// server's keep-alive on a loaded machine and reset the pooled connection.
import { NodeSDK } from '@opentelemetry/sdk-node';
import { getGlobalDispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { recordBody } from '../support/wire-record';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { pollSpans } from '../support/otel';

class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

let server: LlmServer;
const rec = CHAT_TEXT;
const call = async () =>
  (
    await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(rec.request),
    })
  ).text();

beforeAll(async () => {
  server = await startLlmServer(() => corpusReply(rec));
});
afterAll(async () => {
  await server.close();
});

describe('FaultlineInstrumentation', () => {
  it('registerInstrumentations: tracer and meter providers of the app, enable/disable through the returned function', async () => {
    const before = getGlobalDispatcher();
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const reader = new TestReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const inst = new FaultlineInstrumentation({ enabled: false });
    expect(inst.isEnabled).toBe(false);
    expect(getGlobalDispatcher()).toBe(before);
    const unregister = registerInstrumentations({ instrumentations: [inst], tracerProvider, meterProvider });
    try {
      expect(inst.isEnabled).toBe(true);
      expect(await call()).toBe(recordBody(rec));
      const spans = await pollSpans(exporter, (s) => s.some((x) => x.instrumentationScope.name === 'faultline'));
      expect(spans.map((s) => s.name)).toContain(`chat ${rec.request.model as string}`);
      // The meter provider given, not the global one (still the no-op here).
      expect(metrics.getMeterProvider().constructor.name).toBe('NoopMeterProvider');
      const { resourceMetrics } = await reader.collect();
      const names = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.descriptor.name));
      expect(names).toContain('gen_ai.client.operation.duration');
      const duration = resourceMetrics.scopeMetrics
        .flatMap((s) => s.metrics)
        .find((m) => m.descriptor.name === 'gen_ai.client.operation.duration') as HistogramMetricData;
      expect(duration.dataPointType).toBe(DataPointType.HISTOGRAM);
      expect(duration.dataPoints[0]?.value.count).toBe(1);
    } finally {
      unregister();
    }
    expect(inst.isEnabled).toBe(false);
    expect(getGlobalDispatcher()).toBe(before);
    await tracerProvider.shutdown();
    await meterProvider.shutdown();
  });

  it('enables itself when constructed, as contrib instrumentations do, and reports the contract fields', () => {
    const before = getGlobalDispatcher();
    const inst = new FaultlineInstrumentation();
    try {
      expect(inst.isEnabled).toBe(true);
      expect(getGlobalDispatcher()).not.toBe(before);
      expect(inst.instrumentationName).toBe('faultline');
      expect(typeof inst.instrumentationVersion).toBe('string');
      expect(inst.getConfig().enabled).toBe(true);
    } finally {
      inst.disable();
    }
    expect(getGlobalDispatcher()).toBe(before);
  });

  it('NodeSDK: `instrumentations: [new FaultlineInstrumentation()]` gives GenAI spans through the SDK it sets up', async () => {
    const exporter = new InMemorySpanExporter();
    const reader = new TestReader();
    const sdk = new NodeSDK({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
      metricReaders: [reader],
      instrumentations: [new FaultlineInstrumentation()],
      autoDetectResources: false,
    });
    sdk.start();
    try {
      expect(await call()).toBe(recordBody(rec));
      const spans = await pollSpans(exporter, (s) => s.some((x) => x.instrumentationScope.name === 'faultline'));
      const chat = spans.find((s) => s.instrumentationScope.name === 'faultline')!;
      expect(chat.name).toBe(`chat ${rec.request.model as string}`);
      expect(chat.attributes['gen_ai.provider.name']).toBeDefined();
      const { resourceMetrics } = await reader.collect();
      expect(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.descriptor.name))).toContain(
        'gen_ai.client.operation.duration',
      );
    } finally {
      await sdk.shutdown();
      trace.disable();
      metrics.disable();
    }
  });
});
