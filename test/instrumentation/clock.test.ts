/**
 * Span times: the calls of a process keep the order they were made in, even when they are less than a millisecond
 * apart (the SDK's own conversion anchors each span to a whole-millisecond `Date.now()`), and stay on the wall clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { spanTime } from '../../instrumentation/clock';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { chatCompletion } from '../support/openai-wire';
import { ours, setupOtel, type TestOtel } from '../support/otel';

const ns = ([s, n]: [number, number]) => BigInt(s) * 1_000_000_000n + BigInt(n);

describe('spanTime', () => {
  it('is non-decreasing over consecutive monotonic readings and within 2 ms of the wall clock', () => {
    let last = 0n;
    for (let i = 0; i < 20_000; i++) {
      const t = ns(spanTime(performance.now()));
      expect(t >= last).toBe(true);
      last = t;
    }
    const wall = BigInt(Date.now()) * 1_000_000n;
    const diff = Number(ns(spanTime(performance.now())) - wall) / 1e6;
    expect(Math.abs(diff)).toBeLessThan(2);
  });

  it('gives nanoseconds below one second', () => {
    for (let ms = 0; ms < 3000; ms += 0.37) expect(spanTime(ms)[1]).toBeLessThan(1e9);
  });
});

describe('call spans', () => {
  let otel: TestOtel;
  let server: LlmServer;
  let inst: FaultlineInstrumentation;
  beforeAll(async () => {
    otel = setupOtel();
    inst = new FaultlineInstrumentation();
    inst.enable();
    server = await startLlmServer((req) => {
      const model = (JSON.parse(req.body.toString()) as { model: string }).model;
      return {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chatCompletion({ model, text: 'ok' })),
      };
    });
  });
  afterAll(async () => {
    inst.disable();
    await server.close();
    await otel.shutdown();
  });

  it('start in the order of calls made back to back, with ends after starts', async () => {
    const N = 40;
    for (let i = 0; i < N; i++) {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
        body: JSON.stringify({ model: `m-${i}`, messages: [{ role: 'user', content: 'hi' }] }),
      });
      await res.arrayBuffer();
    }
    const spans = ours(await otel.waitForSpans((s) => ours(s).length >= N));
    const byStart = [...spans].sort((a, b) => (ns(a.startTime) < ns(b.startTime) ? -1 : 1));
    expect(byStart.map((s) => s.attributes['gen_ai.request.model'])).toEqual(
      Array.from({ length: N }, (_, i) => `m-${i}`),
    );
    for (let i = 1; i < N; i++) expect(ns(byStart[i].startTime) > ns(byStart[i - 1].endTime)).toBe(true);
  });
});
