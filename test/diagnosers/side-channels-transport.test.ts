/**
 * No side channels in injected transport faults: an HTTP 503 faultline's injector makes and a 503 a real server sends
 * look the same to the application and on the call span, once the ground truth (`faultline.fault.*`) is stripped —
 * the same attribute keys and value shapes, and a request id the provider's way, never a constant marker.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { stripSpan } from '../../src/diagnosers/strip-ground-truth';
import { startLlmServer, type LlmServer, type Reply } from '../support/llm-server';
import { spanRecord } from '../support/to-traces';
import { callSpans, faultName, setupHarness, type Harness } from '../inject/harness';

let h: Harness;
let server: LlmServer;
let reply: () => Reply;

const REQUEST = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi.' }] };
const OK: Reply = {
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hi.' }, finish_reason: 'stop' }],
  }),
};
/** What OpenAI sends for an overloaded engine (the body faultline's http_503 imitates), with a request id of its own. */
const REAL_503 = (): Reply => ({
  status: 503,
  headers: {
    'content-type': 'application/json',
    'retry-after': '1',
    'x-request-id': `req_${Math.random().toString(16).slice(2).padEnd(32, '0').slice(0, 32)}`,
  },
  body: JSON.stringify({
    error: {
      message: 'The engine is currently overloaded, please try again later.',
      type: 'server_error',
      param: null,
      code: null,
    },
  }),
});

beforeAll(async () => {
  h = setupHarness();
  server = await startLlmServer(() => reply());
});
afterAll(async () => {
  await server.close();
  await h.shutdown();
});
beforeEach(() => {
  h.exporter.reset();
  reply = () => OK;
});

const client = () => new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
const plan = { rules: [{ fault: 'http_503', match: { operation: 'chat' } }] };

async function callOnce(
  planned: boolean,
): Promise<{ err: InstanceType<typeof OpenAI.APIError>; span: ReturnType<typeof stripSpan>; injected: boolean }> {
  h.exporter.reset();
  const { result } = await h.task(planned ? plan : undefined, () =>
    client()
      .chat.completions.create(REQUEST as never)
      .then(
        () => undefined,
        (e: unknown) => e,
      ),
  );
  const spans = callSpans(await h.waitForSpans((s) => callSpans(s).length >= 1));
  return {
    err: result as InstanceType<typeof OpenAI.APIError>,
    span: stripSpan(spanRecord(spans[0]!)),
    injected: faultName(spans[0]!) !== undefined,
  };
}

const shape = (v: unknown): string =>
  typeof v === 'string' ? v.replace(/[0-9a-f]{8,}/gi, 'H').replace(/[0-9]+/g, '#') : typeof v;

describe('an injected HTTP 503 against a real one', () => {
  it('the application sees the same error, with a request id shaped like the provider’s and different every time', async () => {
    reply = REAL_503;
    const real = await callOnce(false);
    reply = () => OK;
    const a = await callOnce(true);
    const b = await callOnce(true);
    expect(a.injected && b.injected).toBe(true);
    expect(real.injected).toBe(false);
    for (const x of [real, a, b]) {
      expect(x.err).toBeInstanceOf(OpenAI.InternalServerError);
      expect(x.err.status).toBe(503);
      expect(x.err.requestID).toMatch(/^req_[0-9a-f]{32}$/);
    }
    expect(a.err.requestID).not.toBe(b.err.requestID);
    expect(a.err.message).toBe(real.err.message);
  });

  it('the stripped call span has the same keys, value shapes, status and events as the real one', async () => {
    reply = REAL_503;
    const real = await callOnce(false);
    reply = () => OK;
    const injected = await callOnce(true);
    const view = (s: typeof real.span) => ({
      keys: Object.keys(s.attributes).sort(),
      shapes: Object.fromEntries(Object.entries(s.attributes).map(([k, v]) => [k, shape(v)])),
      status: s.status,
      events: s.events.map((e) => e.name),
      kind: s.kind,
      name: s.name,
    });
    expect(view(injected.span)).toEqual(view(real.span));
  });
});
