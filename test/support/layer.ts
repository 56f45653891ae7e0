/**
 * The set-up most span-layer tests share: the real OTel SDK (setupOtel), faultline's GenAI layer with content capture
 * on, and a loopback LLM server speaking the recorded wire formats. `useLayer()` registers its own hooks (before all:
 * start; after all: stop; before each: clear the exporter), so a file's own `beforeAll` registered after it sees
 * everything started.
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { startLlmServer, type LlmServer } from './llm-server';
import { ours, setupOtel, type TestOtel } from './otel';

export interface Layer {
  otel: TestOtel;
  server: LlmServer;
  inst: FaultlineInstrumentation;
  /** The one span of ours the last call made (waits for it; fails when there is not exactly one). */
  one(): Promise<ReadableSpan>;
}

export function useLayer(): Layer {
  const layer = {
    async one() {
      const spans = ours(await layer.otel.waitForSpans((s) => ours(s).length >= 1));
      expect(spans).toHaveLength(1);
      return spans[0]!;
    },
  } as Layer;
  beforeAll(async () => {
    layer.otel = setupOtel();
    layer.inst = new FaultlineInstrumentation({ captureMessageContent: true });
    layer.inst.enable();
    layer.server = await startLlmServer();
  });
  afterAll(async () => {
    layer.inst.disable();
    await layer.server.close();
    await layer.otel.shutdown();
  });
  beforeEach(() => layer.otel.exporter.reset());
  return layer;
}
