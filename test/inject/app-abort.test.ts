/**
 * A call the application gave up on is recorded the same way whether a real server or an injected fault held it: the
 * application's own `AbortSignal.timeout` gives ERROR with error.type TimeoutError, an `abort(err)` that error's name,
 * a plain `abort()` a cancel (faultline.response.aborted, no error), and the rule that held the call stays on the span
 * (faultline.fault.*). Each case runs twice through the real stack: with no plan against a loopback server that really
 * holds the call, and with a plan against one that answers at once. Node's fetch passes the abort's reason on, so it
 * shows the distinction; the openai client aborts its own controller without a reason, so its timeout is a cancel
 * either way (the last case shows that parity).
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ATTR_ERROR_TYPE,
  ATTR_FL_FAULT_NAME,
  ATTR_FL_FAULT_RULE,
  ATTR_FL_RESPONSE_ABORTED,
} from '../../instrumentation/semconv';
import { chatSpans, setupGuardHarness, type GuardHarness } from '../guards/harness';
import { diagnoseByRules } from '../../src/diagnosers/rules';
import { loadCorpus, sseEvents } from '../support/corpus';
import { toTraces } from '../support/to-traces';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { deadline } from '../support/upload-server';

const TEXT = loadCorpus('openai-chat.jsonl').find((r) => r.id === '55dae6f503a5')!;
const STREAM = loadCorpus('openai-chat-stream.jsonl').find((r) => r.id === '68715d67ef39')!; // 12 data events, [DONE]
const STALL_AFTER = 2;

let h: GuardHarness;
/** Answers every call at once (JSON or SSE as asked). */
let answering: LlmServer;
/** Holds every call, as a server that never answers: no headers; a stream stops after STALL_AFTER + 1 data events. */
let holding: Server;
let holdingUrl: string;

beforeAll(async () => {
  h = setupGuardHarness();
  answering = await startLlmServer((req) =>
    corpusReply((JSON.parse(req.body.toString()) as { stream?: boolean }).stream ? STREAM : TEXT),
  );
  holding = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      if (!(JSON.parse(Buffer.concat(parts).toString()) as { stream?: boolean }).stream) return; // never answers
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      for (const e of sseEvents(STREAM.sse as string).slice(0, STALL_AFTER + 1)) res.write(e);
    });
  });
  await new Promise<void>((r) => holding.listen(0, '127.0.0.1', r));
  holdingUrl = `http://127.0.0.1:${(holding.address() as AddressInfo).port}`;
});
afterAll(async () => {
  holding.closeAllConnections();
  await new Promise((r) => holding.close(r));
  await answering.close();
  await h.shutdown();
});
beforeEach(() => {
  h.exporter.reset();
  h.config = undefined;
});

/** What the span says of how the call ended, and what `faultline diagnose` (the rule diagnoser) makes of it. */
const outcome = (s: ReadableSpan) => ({
  status: s.status.code,
  errorType: s.attributes[ATTR_ERROR_TYPE],
  aborted: s.attributes[ATTR_FL_RESPONSE_ABORTED] === true,
  diagnosed: diagnoseByRules(toTraces([s])[0]).faultType,
});

type Signal = () => AbortSignal;
const timeout: Signal = () => AbortSignal.timeout(300);
const after300 =
  (reason?: Error): Signal =>
  () => {
    const c = new AbortController();
    setTimeout(() => (reason ? c.abort(reason) : c.abort()), 300);
    return c.signal;
  };

/** One chat call through fetch, read to its end; resolves with the name of what the application got. */
async function fetchCall(url: string, signal: Signal, stream = false): Promise<string> {
  try {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify({ ...((stream ? STREAM : TEXT).request as object), stream }),
      signal: signal(),
    });
    await res.text();
    return `status ${res.status}`;
  } catch (e) {
    return (e as Error).name;
  }
}

/** Run `call` as a task under `plan`; the app's result and the call's span. */
async function run(
  plan: object | undefined,
  call: () => Promise<string>,
): Promise<{ got: string; span: ReadableSpan }> {
  h.exporter.reset();
  const { result } = await deadline(h.task(plan as never, call), 5000, 'the aborted call');
  const spans = chatSpans(await h.waitForSpans((s) => chatSpans(s).length >= 1, 3000));
  expect(spans).toHaveLength(1);
  return { got: result, span: spans[0] };
}

const rule = (fault: string, params: Record<string, unknown> = {}) => ({
  rules: [{ name: `held-by-${fault}`, fault, params, match: { operation: 'chat' } }],
});

/** The same abort with no plan on the holding server, and under `plan` on the answering one: recorded alike. */
async function sameAsReal(fault: string, params: Record<string, unknown>, signal: Signal, stream = false) {
  const real = await run(undefined, () => fetchCall(holdingUrl, signal, stream));
  const held = await run(rule(fault, params), () => fetchCall(answering.url, signal, stream));
  expect(held.got).toBe(real.got);
  expect(outcome(held.span)).toEqual(outcome(real.span));
  expect(real.span.attributes[ATTR_FL_FAULT_NAME]).toBeUndefined();
  expect(held.span.attributes).toMatchObject({ [ATTR_FL_FAULT_NAME]: fault, [ATTR_FL_FAULT_RULE]: `held-by-${fault}` });
  return outcome(held.span);
}

const TIMED_OUT = { status: SpanStatusCode.ERROR, errorType: 'TimeoutError', aborted: false, diagnosed: 'timeout' };

describe('the application’s AbortSignal.timeout ends a held call: ERROR TimeoutError, as on a real hung server', () => {
  it('timeout_hang', async () => {
    expect(await sameAsReal('timeout_hang', {}, timeout)).toEqual(TIMED_OUT);
  });

  it('slow_first_byte', async () => {
    expect(await sameAsReal('slow_first_byte', { delayMs: 5000 }, timeout)).toEqual(TIMED_OUT);
  });

  it('stream_stall (the app times out while reading the stream)', async () => {
    expect(await sameAsReal('stream_stall', { afterEvents: STALL_AFTER }, timeout, true)).toEqual(TIMED_OUT);
  });

  it('a retry guard’s back-off after an injected 503, aborted by the app', async () => {
    const retry = {
      routes: [
        { match: { provider: 'openai*' }, retry: { maxRetries: 2, baseDelayMs: 5000, jitter: 'none' as const } },
      ],
    };
    h.config = retry;
    // No plan: a real 503 from the server, the same back-off.
    const failing = await startLlmServer(() => ({
      status: 503,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"message":"overloaded","type":"server_error"}}',
    }));
    try {
      const real = await run(undefined, () => fetchCall(failing.url, timeout));
      const held = await run(rule('http_503'), () => fetchCall(answering.url, timeout));
      expect(held.got).toBe('TimeoutError');
      expect(held.got).toBe(real.got);
      expect(outcome(held.span)).toEqual(TIMED_OUT);
      expect(outcome(held.span)).toEqual(outcome(real.span));
      expect(held.span.attributes).toMatchObject({
        [ATTR_FL_FAULT_NAME]: 'http_503',
        [ATTR_FL_FAULT_RULE]: 'held-by-http_503',
      });
    } finally {
      await failing.close();
    }
  });
});

describe('the application’s own abort of a held call is recorded as it is without a plan', () => {
  it('abort(): a cancel, not an error', async () => {
    expect(await sameAsReal('timeout_hang', {}, after300())).toEqual({
      status: SpanStatusCode.UNSET,
      errorType: undefined,
      aborted: true,
      diagnosed: 'none',
    });
  });

  it('abort(err): that error', async () => {
    class UserCancelled extends Error {
      override name = 'UserCancelled';
    }
    expect(await sameAsReal('timeout_hang', {}, after300(new UserCancelled('the user closed the tab')))).toMatchObject({
      status: SpanStatusCode.ERROR,
      errorType: 'UserCancelled',
      aborted: false,
    });
  });
});

it('the openai client’s timeout (it aborts without a reason) is the same cancel with and without a plan, the rule on the span', async () => {
  const client = (url: string) => new OpenAI({ apiKey: 'sk-test', baseURL: `${url}/v1`, maxRetries: 0, timeout: 300 });
  const call = (url: string) => () =>
    client(url)
      .chat.completions.create(TEXT.request as never)
      .then(
        () => 'answered',
        (e: Error) => e.constructor.name,
      );
  const real = await run(undefined, call(holdingUrl));
  const held = await run(rule('timeout_hang'), call(answering.url));
  expect(held.got).toBe('APIConnectionTimeoutError');
  expect(held.got).toBe(real.got);
  expect(outcome(held.span)).toEqual(outcome(real.span));
  expect(held.span.attributes[ATTR_FL_FAULT_NAME]).toBe('timeout_hang');
});
