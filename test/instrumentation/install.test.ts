/**
 * Installation on the global undici dispatcher: chains to the dispatcher installed before (its interceptors still
 * run), is idempotent, restores the previous one on uninstall, and adapts a dispatcher from Node's bundled undici
 * (legacy handler API on Node 20/22) — the last one in a child process, since it needs a fresh global slot.
 */
import { join, resolve } from 'node:path';
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { FaultlineInstrumentation, installInstrumentation } from '../../instrumentation';
import { runNode } from '../support/child';
import { recordBody } from '../support/wire-record';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

const ROOT = resolve(__dirname, '../..');
vi.setConfig({ testTimeout: 120_000 });
let otel: TestOtel;
let server: LlmServer;
const rec = CHAT_TEXT;

beforeAll(async () => {
  otel = setupOtel();
  server = await startLlmServer(() => corpusReply(rec));
});
afterAll(async () => {
  await server.close();
  await otel.shutdown();
});
beforeEach(() => {
  otel.exporter.reset();
  server.requests.length = 0;
});

const call = async () =>
  (await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(rec.request) })).text();

describe('installInstrumentation', () => {
  it('chains to the previously installed dispatcher and restores it on uninstall', async () => {
    const original = getGlobalDispatcher();
    const tagging: Dispatcher = new Agent().compose(
      (dispatch) =>
        function tag(opts, handler) {
          return dispatch(
            { ...opts, headers: { ...(opts.headers as Record<string, string>), 'x-previous-dispatcher': 'yes' } },
            handler,
          );
        },
    );
    setGlobalDispatcher(tagging);
    const inst = new FaultlineInstrumentation();
    inst.enable();
    try {
      expect(getGlobalDispatcher()).not.toBe(tagging);
      expect(await call()).toBe(recordBody(rec));
      expect(server.requests[0]?.headers['x-previous-dispatcher']).toBe('yes');
      expect(ours(await otel.waitForSpans((s) => ours(s).length === 1))).toHaveLength(1);
    } finally {
      inst.disable();
    }
    expect(getGlobalDispatcher()).toBe(tagging);
    setGlobalDispatcher(original);
  });

  it('is idempotent: installing twice still gives one span per call', async () => {
    const before = getGlobalDispatcher();
    const opts = { tracer: () => otel.provider.getTracer('faultline'), captureContent: () => false };
    const a = installInstrumentation(opts);
    const b = installInstrumentation(opts);
    try {
      await call();
      await otel.waitForSpans((s) => ours(s).length >= 1);
      await call();
      const spans = ours(await otel.waitForSpans((s) => ours(s).length >= 2));
      expect(spans).toHaveLength(2);
    } finally {
      b.uninstall();
      a.uninstall();
    }
    expect(getGlobalDispatcher()).toBe(before);
  });

  it('disable() makes calls pass through with no span', async () => {
    const inst = new FaultlineInstrumentation();
    inst.enable();
    inst.disable();
    expect(await call()).toBe(recordBody(rec));
    expect(ours(otel.spans())).toHaveLength(0);
  });

  it("keeps Node's own fetch client under the layer in a fresh process, instead of swapping in npm undici's (child process)", async () => {
    const script = `
      const { FaultlineInstrumentation } = require(${JSON.stringify(join(ROOT, 'dist/instrumentation'))});
      new FaultlineInstrumentation().enable();
      const installed = globalThis[Symbol.for('faultline.instrumentation.installed')];
      (async () => {
        const body = await (await fetch(process.env.LLM_URL + '/v1/chat/completions', { method: 'POST', body: process.env.REQ })).text();
        console.log(JSON.stringify({ belowIsNodes: !(installed.previous instanceof require('undici').Dispatcher), same: body === process.env.EXPECT }));
      })();`;
    const res = await runNode(['-e', script], {
      cwd: ROOT,
      env: { LLM_URL: server.url, REQ: JSON.stringify(rec.request), EXPECT: recordBody(rec) },
    });
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ belowIsNodes: true, same: true });
  });

  it("adapts Node's bundled undici dispatcher when fetch ran before faultline (child process)", async () => {
    const script = `
      const url = process.env.LLM_URL + '/v1/chat/completions';
      (async () => {
        await (await fetch(url, { method: 'POST', body: process.env.REQ })).text(); // bundled undici fills the global slot
        const prev = globalThis[Symbol.for('undici.globalDispatcher.1')];
        const { InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
        const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
        const exporter = new InMemorySpanExporter();
        new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).register();
        const { FaultlineInstrumentation, settleExchanges } = require(${JSON.stringify(join(ROOT, 'dist/instrumentation'))});
        new FaultlineInstrumentation().enable();
        const body = await (await fetch(url, { method: 'POST', body: process.env.REQ })).text();
        await settleExchanges(); // the span ends a moment after the app has its answer
        const spans = exporter.getFinishedSpans().filter((s) => s.instrumentationScope.name === 'faultline');
        console.log(JSON.stringify({ prevIsBundled: !(prev instanceof require('undici').Dispatcher), same: body === process.env.EXPECT, spans: spans.map((s) => s.name) }));
      })();`;
    const res = await runNode(['-e', script], {
      cwd: ROOT,
      env: { LLM_URL: server.url, REQ: JSON.stringify(rec.request), EXPECT: recordBody(rec) },
    });
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({
      prevIsBundled: true,
      same: true,
      spans: [`chat ${rec.request.model as string}`],
    });
  });
});
