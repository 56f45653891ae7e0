/**
 * Span times: the calls of a process keep the order they were made in, even when they are less than a millisecond
 * apart (the SDK's own conversion anchors each span to a whole-millisecond `Date.now()`), and stay on the wall clock.
 * Every span faultline makes reads the same clock, so a wall clock a few milliseconds off the monotonic one (a slew,
 * the truncation of `Date.now()`) cannot put a span before one that ended ahead of it, or a child before its parent.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { FaultlineInstrumentation } from '../../instrumentation';
import { MessageChannel } from '../../instrumentation/agents/channel';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../instrumentation/agents/task';
import { startMirror } from '../../instrumentation/frameworks/scope';
import { context } from '@opentelemetry/api';
import { spanTime } from '../../src/clock';
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

  it('keeps its anchor through a reading interrupted between the two clocks (a GC pause, the thread descheduled)', () => {
    const at = performance.now();
    const before = ns(spanTime(at));
    const mono = performance.now.bind(performance);
    const wall = Date.now.bind(Date);
    // Each read of the wall clock is followed by an 8 ms pause before the next monotonic read.
    let paused = false;
    const monoSpy = vi.spyOn(performance, 'now').mockImplementation(() => {
      const t = mono() + (paused ? 8 : 0);
      paused = false;
      return t;
    });
    const wallSpy = vi.spyOn(Date, 'now').mockImplementation(() => {
      paused = true;
      return wall();
    });
    let during: bigint;
    try {
      during = ns(spanTime(at));
    } finally {
      monoSpy.mockRestore();
      wallSpy.mockRestore();
    }
    expect(Math.abs(Number(during - before)) / 1e6).toBeLessThan(1);
    expect(ns(spanTime(at))).toBe(before);
  });

  it('gives nanoseconds below one second', () => {
    for (let ms = 0; ms < 3000; ms += 0.37) expect(spanTime(ms)[1]).toBeLessThan(1e9);
  });
});

describe('spans', () => {
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
  afterEach(() => otel.exporter.reset());
  afterAll(async () => {
    inst.disable();
    await server.close();
    await otel.shutdown();
  });

  const chat = async (model = 'gpt-4o') => {
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await res.arrayBuffer();
  };

  it('of calls made back to back start in their order, with ends after starts', async () => {
    const N = 40;
    for (let i = 0; i < N; i++) await chat(`m-${i}`);
    const spans = ours(await otel.waitForSpans((s) => ours(s).length >= N));
    const byStart = [...spans].sort((a, b) => (ns(a.startTime) < ns(b.startTime) ? -1 : 1));
    expect(byStart.map((s) => s.attributes['gen_ai.request.model'])).toEqual(
      Array.from({ length: N }, (_, i) => `m-${i}`),
    );
    for (let i = 1; i < N; i++) expect(ns(byStart[i].startTime) > ns(byStart[i - 1].endTime)).toBe(true);
  });

  it('with the wall clock 3 ms ahead of the monotonic one, children lie inside their parents and siblings keep their order', async () => {
    const wall = Date.now.bind(Date);
    // Less than the clock's follow threshold: the span clock keeps its anchor, as it does for a slew or truncation.
    const skew = vi.spyOn(Date, 'now').mockImplementation(() => wall() + 3);
    try {
      const channel = new MessageChannel().on('worker', () => undefined);
      await runWorkflow('flow', async () => {
        await runAgent('planner', async () => {
          // A framework's tool run (a LangGraph tool, an Agents SDK function span), then the next LLM call.
          const tool = startMirror('execute_tool lookup', context.active());
          tool.span.end(spanTime(performance.now()));
          await chat();
        });
        await channel.send({ source: 'planner', target: 'worker', payload: 'go' });
        await runAgent('worker', () => chat());
      });
    } finally {
      skew.mockRestore();
    }
    const spans = ours(await otel.waitForSpans((s) => ours(s).some((x) => x.name === 'invoke_workflow flow')));
    const id = (s: ReadableSpan) => s.spanContext().spanId;
    const children = (p: ReadableSpan) =>
      spans
        .filter((s) => s.parentSpanContext?.spanId === id(p))
        .sort((a, b) => (ns(a.startTime) < ns(b.startTime) ? -1 : 1));
    const outline = (p: ReadableSpan, depth = 0): string[] => [
      `${'  '.repeat(depth)}${p.name}`,
      ...children(p).flatMap((c) => outline(c, depth + 1)),
    ];
    const root = spans.find((s) => s.name === 'invoke_workflow flow')!;
    expect(outline(root)).toEqual([
      'invoke_workflow flow',
      '  invoke_agent planner',
      '    execute_tool lookup',
      '    chat gpt-4o',
      '  handoff worker',
      '  receive worker',
      '  invoke_agent worker',
      '    chat gpt-4o',
    ]);
    for (const s of spans) {
      const parent = spans.find((p) => id(p) === s.parentSpanContext?.spanId);
      if (parent === undefined) continue;
      expect(ns(s.startTime) >= ns(parent.startTime), `${s.name} starts inside ${parent.name}`).toBe(true);
      expect(ns(s.endTime) <= ns(parent.endTime), `${s.name} ends inside ${parent.name}`).toBe(true);
    }
    for (const p of spans) {
      const cs = children(p);
      for (let i = 1; i < cs.length; i++)
        if (cs[i].name !== 'receive worker')
          expect(ns(cs[i].startTime) >= ns(cs[i - 1].endTime), `${cs[i].name} after ${cs[i - 1].name}`).toBe(true);
    }
  });
});
