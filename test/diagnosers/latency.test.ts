/**
 * Delay judged against the trace's own latency, per model: the real openai client through faultline's span layer
 * against a loopback server that answers each call after a scheduled time (the same answer, the same usage). A
 * 1.65 s stall among calls of 150 ms is a delay — short of any fixed budget; on a short trace (too few calls for a
 * spread) only a stall of seconds is, and natural spread is not; a slower model's calls are judged against that model's, not the faster one's.
 */
import { trace as otel } from '@opentelemetry/api';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diagnoseByRules } from '../../src/diagnosers/rules';
import { chatSpans, setupGuardHarness, type GuardHarness } from '../guards/harness';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { toTraces } from '../support/to-traces';

let h: GuardHarness;
let server: LlmServer;
let schedule: number[] = [];

const answer = (model: string) =>
  JSON.stringify({
    id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'Shipped on Tuesday from the Lisbon warehouse.', refusal: null },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: 30, completion_tokens: 11, total_tokens: 41 },
  });

beforeAll(async () => {
  h = setupGuardHarness();
  server = await startLlmServer(async (req) => {
    const { model } = JSON.parse(req.body.toString()) as { model: string };
    await new Promise((r) => setTimeout(r, schedule.shift() ?? 0));
    return { status: 200, headers: { 'content-type': 'application/json' }, body: answer(model) };
  });
});
afterAll(async () => {
  await server.close();
  await h.shutdown();
});

/** One agent run: a call per entry of `calls` ([model, ms the server takes]); the rule diagnosis of its trace. */
async function run(calls: Array<[string, number]>) {
  h.exporter.reset();
  schedule = calls.map(([, ms]) => ms);
  const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
  await h.task(undefined, () =>
    otel.getTracer('app').startActiveSpan('invoke_agent planner', async (span) => {
      for (const [model] of calls)
        await client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'Where is order A-10293?' }],
        });
      span.end();
    }),
  );
  const spans = await h.waitForSpans((s) => chatSpans(s).length >= calls.length, 5000);
  const [t] = toTraces(spans.filter((s) => s.spanContext().traceId === chatSpans(spans)[0]!.spanContext().traceId));
  const d = diagnoseByRules(t!);
  return { type: d.faultType, step: d.step };
}

const M = 'gpt-4o-mini';
describe('delay against the trace’s own latency', () => {
  it('a 1.65 s stall among 150 ms calls is a delay at that call', async () => {
    expect(
      await run([
        [M, 150],
        [M, 150],
        [M, 150],
        [M, 1800],
        [M, 150],
        [M, 150],
      ]),
    ).toEqual({ type: 'delay', step: 4 });
  });

  it('a short trace: a call many times what the others take is a delay (judged relative to them, not by seconds), a natural spread is none', async () => {
    expect(
      await run([
        [M, 150],
        [M, 150],
        [M, 3600],
      ]),
    ).toEqual({ type: 'delay', step: 3 });
    expect(
      await run([
        [M, 150],
        [M, 150],
        [M, 1800],
      ]),
    ).toEqual({ type: 'delay', step: 3 });
    expect(
      await run([
        [M, 150],
        [M, 400],
        [M, 900],
      ]),
    ).toEqual({ type: 'none', step: null });
    expect(
      await run([
        [M, 150],
        [M, 170],
        [M, 480],
      ]),
    ).toEqual({ type: 'none', step: null });
    expect(
      await run([
        [M, 150],
        [M, 900],
      ]),
    ).toEqual({ type: 'none', step: null });
  });

  it('a slower model’s calls against that model’s, not the faster one’s', async () => {
    expect(
      await run([
        [M, 150],
        ['gpt-4.1', 2000],
        [M, 150],
        ['gpt-4.1', 2000],
        [M, 150],
        ['gpt-4.1', 2000],
      ]),
    ).toEqual({ type: 'none', step: null });
  });
}, 60_000);
