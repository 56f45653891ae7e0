/**
 * What `start()` (and so `faultline/register`) turns on by default: the GenAI span layer with its content-free facts,
 * nothing more. instrumentation-undici's HTTP child span and the online detectors each cost about as much per call as
 * a GenAI instrumentation (bench/interceptor.bench.mjs); each is one documented variable away:
 * OTEL_NODE_ENABLED_INSTRUMENTATIONS=undici and FAULTLINE_DETECT=true. Real start(), the app's own SDK, a real server.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { shutdown, start } from '../../src/start';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

let otel: TestOtel;
let server: LlmServer;
const rec = CHAT_TEXT;
/** An answer the online detectors flag (no text, no tool call: empty_output). */
const empty = (() => {
  const b = structuredClone(rec.response) as { choices: Array<{ message: { content: string } }>; created?: number };
  b.choices[0]!.message.content = '';
  b.created = Math.floor(Date.now() / 1000);
  return JSON.stringify(b);
})();

beforeAll(async () => {
  otel = setupOtel();
  server = await startLlmServer(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: empty }));
});
afterEach(async () => {
  await shutdown();
  otel.exporter.reset();
});
afterAll(async () => {
  await server.close();
  await otel.shutdown();
});

const call = async () =>
  (
    await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(rec.request),
    })
  ).text();

it('by default: one GenAI span with its content-free facts, no HTTP child span, no online detection', async () => {
  await start({ exitHooks: false, env: {} });
  await call();
  const spans = await otel.waitForSpans((s) => ours(s).length === 1);
  expect(spans.map((s) => s.name)).toEqual([`chat ${String(rec.request.model)}`]);
  const [chat] = ours(spans);
  expect(chat?.attributes['faultline.response.output_chars']).toBe(0);
  expect(chat?.attributes['faultline.response.content_hash']).toEqual(expect.any(String));
  expect(chat?.events.filter((e) => e.name === 'faultline.detection')).toEqual([]);
});

it('OTEL_NODE_ENABLED_INSTRUMENTATIONS=undici and FAULTLINE_DETECT=true turn each on', async () => {
  await start({ exitHooks: false, env: { OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'undici', FAULTLINE_DETECT: 'true' } });
  await call();
  const spans = await otel.waitForSpans((s) => ours(s).length === 1 && s.some((x) => x.name === 'POST'));
  const [chat] = ours(spans);
  const http = spans.find((s) => s.name === 'POST');
  expect(http?.parentSpanContext?.spanId).toBe(chat?.spanContext().spanId);
  expect(
    chat?.events
      .filter((e) => e.name === 'faultline.detection')
      .map((e) => e.attributes?.['faultline.detection.fault_type']),
  ).toContain('empty');
});
