/**
 * HTTP guards through the real SDKs (openai, @anthropic-ai/sdk) against loopback servers speaking the provider wire
 * format with project-written bodies (../support/chat-exchanges.ts), faults injected by the real fault step from a plan, guards composed outside it.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectSpans } from '../../detectors/from-span';
import { runDetectors, detectionContext } from '../../detectors/index';
import { llmObservationFromWire } from '../../detectors/wire';
import { guard, type GuardConfigInput } from '../../detectors/guards/index';
import { recordBody } from '../support/wire-record';
import { ANTHROPIC_TEXT, CHAT_STREAM, CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { causes, chatSpans, guardEvents, setupGuardHarness, toRecord, type GuardHarness } from './harness';

// A plain text answer (no tool call) whose clean response no detector flags.
const TEXT = CHAT_TEXT;
const CONTENT = (TEXT.response as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;
const ANTHROPIC = ANTHROPIC_TEXT;

describe('the clean answer', () => {
  it('is one no detector flags when it arrives fresh (what the guards below start from)', () => {
    const obs = llmObservationFromWire(
      'openai.chat',
      TEXT.request,
      { status: 200, chunks: [recordBody(TEXT)] },
      undefined,
      Date.now(),
    );
    expect(runDetectors(obs, detectionContext())).toEqual([]);
  });
});

/** What a live server sends: the recorded body with a fresh `created`. */
function fresh(body: unknown): string {
  const b = structuredClone(body) as { created?: number };
  if (typeof b.created === 'number') b.created = Math.floor(Date.now() / 1000);
  return JSON.stringify(b);
}

let h: GuardHarness;
let server: LlmServer;
let openai: OpenAI;
let anthropic: Anthropic;
const sleeps: number[] = [];
let clock = Date.now();

beforeAll(async () => {
  // sleep and clock are injected so back-off and cool-down are asserted, not waited for.
  h = setupGuardHarness({ sleep: async (ms) => void sleeps.push(ms), now: () => clock, random: () => 0.5 });
  server = await startLlmServer(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: fresh(TEXT.response),
  }));
  // The SDKs' own retries are off: what is retried here is the guard's doing.
  openai = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: 'sk-ant-test', baseURL: server.url, maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
  await h.shutdown();
});

const ask = () =>
  openai.chat.completions.create(TEXT.request as never) as unknown as Promise<{
    choices: Array<{ message: { content: string }; finish_reason: string }>;
  }>;

describe('retry', () => {
  it('a truncated response is retried and the app receives the complete one', async () => {
    h.config = {
      routes: [{ name: 'chat', match: { provider: 'openai*' }, retry: { maxRetries: 2, baseDelayMs: 100 } }],
    } satisfies GuardConfigInput;
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: fresh(TEXT.response),
    }));
    const before = server.requests.length;
    sleeps.length = 0;
    const { result } = await h.task({ rules: [{ fault: 'llm_truncate_single' }] }, ask);
    expect(result.choices[0]!.message.content).toBe(CONTENT);
    expect(result.choices[0]!.finish_reason).toBe('stop');
    expect(server.requests.length - before).toBe(2);
    // ARCF back-off: base 100 ms × 2^0 × AdaptFactor(r) with r = 0/1 after the failed attempt → ×2.0 = 200 ms;
    // equal jitter at random 0.5 → 100 + 50 = 150 ms.
    expect(sleeps).toEqual([150]);
    const spans = await h.waitForSpans((s) => chatSpans(s).some((x) => guardEvents(x).length > 0));
    const span = chatSpans(spans).find((x) => guardEvents(x).length > 0)!;
    expect(guardEvents(span)).toEqual([
      expect.objectContaining({
        action: 'retry',
        reason: expect.stringMatching(/^truncate \(finish_reason: finish reason length/),
      }),
    ]);
    expect(span.events.some((e) => e.name === 'faultline.fault.injected')).toBe(true);
    // What the application received was clean: the online detectors found nothing on the exchange.
    const found = detectSpans({
      traceId: span.spanContext().traceId,
      spans: spans.map(toRecord).filter((s) => s.traceId === span.spanContext().traceId),
    });
    expect([...found.values()].flat().filter((f) => f.location?.spanId === span.spanContext().spanId)).toEqual([]);
  });

  it('Retry-After is honoured for a 429 and the stream that follows is not buffered', async () => {
    h.config = { routes: [{ match: { provider: 'openai*' }, retry: { maxRetries: 2, baseDelayMs: 10 } }] };
    const stream = CHAT_STREAM;
    server.respond(() => corpusReply(stream as never));
    sleeps.length = 0;
    const { result } = await h.task({ rules: [{ fault: 'http_429', params: { retryAfterS: 2 } }] }, async () => {
      const s = await openai.chat.completions.create({ ...(stream.request as object), stream: true } as never);
      let text = '';
      for await (const chunk of s as unknown as AsyncIterable<{ choices: Array<{ delta?: { content?: string } }> }>)
        text += chunk.choices[0]?.delta?.content ?? '';
      return text;
    });
    expect(result.length).toBeGreaterThan(0);
    expect(sleeps).toEqual([2000]);
  });

  it('a failing route falls back to another model once retries are exhausted', async () => {
    h.config = {
      routes: [
        {
          name: 'primary',
          match: { model: TEXT.model! },
          retry: { maxRetries: 1, baseDelayMs: 10 },
          fallback: [{ name: 'mini', model: 'gpt-4o-mini' }],
          circuit: false,
        },
      ],
    };
    server.respond((req) => {
      const model = (JSON.parse(req.body.toString()) as { model: string }).model;
      if (model === 'gpt-4o-mini')
        return {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: fresh({ ...(TEXT.response as object), model: 'gpt-4o-mini' }),
        };
      return {
        status: 500,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          error: { message: 'The server had an error', type: 'server_error', param: null, code: null },
        }),
      };
    });
    const { result } = await h.task(undefined, ask);
    expect((result as unknown as { model: string }).model).toBe('gpt-4o-mini');
    expect(result.choices[0]!.message.content).toBe(CONTENT);
    const spans = await h.waitForSpans((s) =>
      chatSpans(s).some((x) => guardEvents(x).some((e) => e.action === 'fallback')),
    );
    const actions = guardEvents(chatSpans(spans).find((x) => guardEvents(x).some((e) => e.action === 'fallback'))!).map(
      (e) => e.action,
    );
    expect(actions).toEqual(['retry', 'fallback']);
  });

  it('an unrecoverable fault is rejected with a typed error the agent can catch', async () => {
    h.config = {
      routes: [
        {
          match: { provider: 'openai*' },
          retry: { maxRetries: 1, baseDelayMs: 10 },
          onFailure: 'reject',
          circuit: false,
        },
      ],
    };
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: fresh(TEXT.response),
    }));
    const err = await h.task({ rules: [{ fault: 'llm_truncate_persistent' }] }, ask).catch((e: unknown) => e);
    const coded = causes(err).find((c) => (c as { code?: string }).code === 'FAULTLINE_GUARD_REJECTED') as
      { findings: Array<{ faultType: string }> } | undefined;
    expect(coded).toBeDefined();
    expect(coded!.findings[0]!.faultType).toBe('truncate');
  });

  it('Anthropic: an in-band error notice is retried through the Anthropic SDK', async () => {
    h.config = { routes: [{ match: { provider: 'anthropic*' }, retry: { maxRetries: 2, baseDelayMs: 10 } }] };
    let calls = 0;
    server.respond(() => {
      calls++;
      const body = structuredClone(ANTHROPIC.response) as { content: Array<{ type: string; text?: string }> };
      if (calls === 1)
        body.content = [
          {
            type: 'text',
            text: '[SERVICE UNAVAILABLE] HTTP 503: The server is temporarily unable to handle the request.',
          },
        ];
      return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
    });
    const { result } = await h.task(
      undefined,
      () =>
        anthropic.messages.create(ANTHROPIC.request as never) as unknown as Promise<{
          content: Array<{ text?: string }>;
        }>,
    );
    expect(result.content[0]!.text).toBe(
      (ANTHROPIC.response as { content: Array<{ text?: string }> }).content[0]!.text,
    );
    expect(calls).toBe(2);
  });
});

describe('circuit breaker', () => {
  it('a route that keeps failing opens its circuit, fails fast, and half-opens after the cool-down', async () => {
    h.config = {
      routes: [
        {
          name: 'flaky',
          match: { provider: 'openai*' },
          retry: false,
          circuit: { failureThreshold: 3, coolDownMs: 30_000 },
        },
      ],
    };
    server.respond(() => ({
      status: 503,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error: { message: 'overloaded', type: 'server_error', param: null, code: null } }),
    }));
    for (let i = 0; i < 3; i++) {
      const e = await h.task(undefined, ask).catch((x: unknown) => x);
      expect((e as { status?: number }).status).toBe(503);
    }
    expect(h.guards.runtime.circuits.peek('flaky')?.state).toBe('open');
    const seen = server.requests.length;
    const fast = await h.task(undefined, ask).catch((x: unknown) => x);
    expect(causes(fast).some((c) => (c as { code?: string }).code === 'FAULTLINE_CIRCUIT_OPEN')).toBe(true);
    expect(server.requests.length).toBe(seen); // failed fast: nothing reached the server
    // Cool-down passes (injected clock); the route recovered: the probe goes through and closes the circuit.
    clock += 30_001;
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: fresh(TEXT.response),
    }));
    const { result } = await h.task(undefined, ask);
    expect(result.choices[0]!.message.content).toBe(CONTENT);
    expect(h.guards.runtime.circuits.peek('flaky')?.state).toBe('closed');
    const spans = await h.waitForSpans((s) =>
      chatSpans(s).some((x) => guardEvents(x).some((e) => e.action === 'circuit_closed')),
    );
    const actions = chatSpans(spans)
      .flatMap((x) => guardEvents(x).map((e) => e.action))
      .filter((a) => a.startsWith('circuit') || a === 'fail_fast');
    expect(actions).toEqual(['circuit_open', 'fail_fast', 'circuit_half_open', 'circuit_closed']);
    expect(h.guards.runtime.health.score('flaky')).toBeCloseTo(1 / 4);
  });
});

describe('no fault, no harm on a guarded route', () => {
  it('a clean JSON answer is delivered byte-identical after the guard judged it', async () => {
    h.config = { routes: [{ match: { provider: 'openai*' }, retry: { maxRetries: 2 } }] };
    const body = fresh(TEXT.response);
    server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }));
    const res = await h.task(undefined, () =>
      fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(TEXT.request),
      }).then((r) => r.text()),
    );
    expect(res.result).toBe(body);
  });

  it('a stream on a guarded route is not buffered: the first event arrives long before the last', async () => {
    h.config = { routes: [{ match: { provider: 'openai*' }, retry: { maxRetries: 2 } }] };
    const stream = CHAT_STREAM;
    const reply = corpusReply(stream as never);
    server.respond(() => ({ ...reply, gapMs: 40 }));
    const { result } = await h.task(undefined, async () => {
      const t0 = Date.now();
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...(stream.request as object), stream: true }),
      });
      const reader = res.body!.getReader();
      await reader.read();
      const first = Date.now() - t0;
      let text = '';
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += Buffer.from(r.value).toString();
      return { first, total: Date.now() - t0, text };
    });
    expect(result.text).toContain('[DONE]');
    expect(result.total - result.first).toBeGreaterThanOrEqual(40 * (reply.chunks!.length - 2));
  });
});

describe('no guard, no harm', () => {
  it('a request on no guarded route passes through byte-identical', async () => {
    h.config = { routes: [{ match: { provider: 'nobody' }, retry: { maxRetries: 2 } }] };
    const body = fresh(TEXT.response);
    server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }));
    const res = await h.task(undefined, () =>
      fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(TEXT.request),
      }).then((r) => r.text()),
    );
    expect(res.result).toBe(body);
  });
});

describe('online detection and the wrapper API', () => {
  it('findings on what the app received are recorded on the exchange and read back offline', async () => {
    h.config = { routes: [{ match: { provider: 'openai*' }, retry: false, onFailure: 'record', circuit: false }] };
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: fresh(TEXT.response),
    }));
    const { result } = await h.task({ rules: [{ fault: 'llm_truncate_single' }] }, ask);
    expect(result.choices[0]!.finish_reason).toBe('length'); // recorded, delivered as is
    const recorded = (s: ReturnType<typeof chatSpans>) =>
      chatSpans(s).find((x) => guardEvents(x).some((e) => e.action === 'record'));
    // The findings ride on the exchange span (onExchangeEnd runs before it ends), or on a `faultline.detection` child
    // span when an interceptor ends the span first: both are read back the same way.
    const spans = await h.waitForSpans((s) => {
      const c = recorded(s);
      if (!c) return false;
      if (c.events.some((e) => e.name === 'faultline.detection')) return true;
      return s.some((x) => x.name === 'faultline.detection' && x.parentSpanContext?.spanId === c.spanContext().spanId);
    });
    const chat = recorded(spans)!;
    expect(guardEvents(chat).map((e) => e.action)).toEqual(['record']);
    const trace = {
      traceId: chat.spanContext().traceId,
      spans: spans.filter((s) => s.spanContext().traceId === chat.spanContext().traceId).map(toRecord),
    };
    // Content was not captured: the offline detectors see only facts, the online events carry the finding.
    const found = detectSpans(trace).get(chat.spanContext().spanId) ?? [];
    expect(found.filter((f) => f.faultType === 'truncate').map((f) => f.detector)).toContain('finish_reason');
  });

  it('guard(fn) retries a truncated completion returned by the SDK', async () => {
    h.config = undefined;
    let calls = 0;
    server.respond(() => {
      calls++;
      const body = structuredClone(TEXT.response) as {
        choices: Array<{ message: { content: string }; finish_reason: string }>;
      };
      if (calls === 1) {
        body.choices[0]!.message.content = CONTENT.slice(0, 40);
        body.choices[0]!.finish_reason = 'length';
      }
      return { status: 200, headers: { 'content-type': 'application/json' }, body: fresh(body) };
    });
    const guarded = guard(
      (req: unknown) => openai.chat.completions.create(req as never) as unknown as Promise<unknown>,
      { route: 'wrapped-chat', retry: { maxRetries: 2, baseDelayMs: 1 }, request: (req: unknown) => req },
    );
    const { result } = await h.task(undefined, () => guarded(TEXT.request));
    const r = result as { choices: Array<{ message: { content: string } }> };
    expect(r.choices[0]!.message.content).toBe(CONTENT);
    expect(calls).toBe(2);
  });
});
