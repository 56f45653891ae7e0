/** start(): adopts a tracer provider the app registered (adds only instrumentation) and shuts down cleanly. */
import { getGlobalDispatcher } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { shutdown, start } from '../../src/start';
import { recordBody } from '../support/wire-record';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

let otel: TestOtel;
let server: LlmServer;
const rec = CHAT_TEXT;

beforeAll(async () => {
  otel = setupOtel(); // the application's own SDK, registered first
  server = await startLlmServer(() => corpusReply(rec));
});
afterAll(async () => {
  await server.close();
  await otel.shutdown();
});

it('uses the already-registered provider, is idempotent, and restores the dispatcher on shutdown', async () => {
  const before = getGlobalDispatcher();
  const runtime = await start({ exitHooks: false, env: { OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'undici' } });
  expect(await start()).toBe(runtime);
  expect(runtime.sdk.external).toBe(true);
  expect(runtime.sdk.tracerProvider).toBeUndefined();
  expect(runtime.tracesFile).toBeUndefined();
  const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(rec.request) });
  expect(await res.text()).toBe(recordBody(rec));
  const spans = await otel.waitForSpans((s) => ours(s).length === 1 && s.some((x) => x.name === 'POST'));
  expect(ours(spans)).toHaveLength(1);
  await shutdown();
  expect(getGlobalDispatcher()).toBe(before);
  otel.exporter.reset();
  await (
    await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(rec.request) })
  ).text();
  // Our spans end before the app sees the body end (SimpleSpanProcessor exports at once): none may appear.
  expect(ours(otel.spans())).toHaveLength(0);
});
