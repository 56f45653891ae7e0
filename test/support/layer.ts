/**
 * The set-up most span-layer tests share: the real OTel SDK (setupOtel), faultline's GenAI layer with content capture
 * on, and a loopback LLM server speaking the recorded wire formats. `useLayer()` registers its own hooks (before all:
 * start; after all: stop; before each: clear the exporter), so a file's own `beforeAll` registered after it sees
 * everything started. With `watchProblems`, the warnings and internal errors faultline reports through the OTel diag
 * logger are collected per test (`problems`: a do-no-harm test expects none).
 */
import { diag, DiagLogLevel } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { startLlmServer, type LlmServer } from './llm-server';
import { ours, setupOtel, type TestOtel } from './otel';

export interface Layer {
  otel: TestOtel;
  server: LlmServer;
  inst: FaultlineInstrumentation;
  /** With `watchProblems`: what faultline reported through the diag logger (warn and error) since this test began. */
  problems: string[];
  /** The one span of ours the last call made (waits for it; fails when there is not exactly one). */
  one(): Promise<ReadableSpan>;
  /** POST `request` as JSON to `path` on the server with plain fetch: the status, the body as received, what was sent. */
  post(path: string, request: unknown): Promise<{ status: number; text: string; sent: string }>;
}

export function useLayer(options: { watchProblems?: boolean } = {}): Layer {
  const problems: string[] = [];
  const report = (...a: unknown[]) => void problems.push(a.map(String).join(' '));
  const layer = {
    problems,
    async one() {
      const spans = ours(await layer.otel.waitForSpans((s) => ours(s).length >= 1));
      expect(spans).toHaveLength(1);
      return spans[0]!;
    },
    async post(path: string, request: unknown) {
      const sent = JSON.stringify(request);
      const res = await fetch(`${layer.server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: sent,
      });
      return { status: res.status, text: await res.text(), sent };
    },
  } as Layer;
  beforeAll(async () => {
    if (options.watchProblems)
      diag.setLogger(
        { error: report, warn: report, info: () => {}, debug: () => {}, verbose: () => {} },
        DiagLogLevel.WARN,
      );
    layer.otel = setupOtel();
    layer.inst = new FaultlineInstrumentation({ captureMessageContent: true });
    layer.inst.enable();
    layer.server = await startLlmServer();
  });
  afterAll(async () => {
    layer.inst.disable();
    await layer.server.close();
    await layer.otel.shutdown();
    if (options.watchProblems) diag.disable();
  });
  beforeEach(() => {
    layer.otel.exporter.reset();
    problems.length = 0;
  });
  return layer;
}
