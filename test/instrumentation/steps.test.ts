/**
 * The steps contract: undici interceptors composed inside the GenAI span layer (as the fault and guard layers are)
 * can (a) answer without calling downstream, (b) fail the call, (c) transform response chunks, (d) call downstream
 * more than once. They see the Exchange and our span active; our span records what the application received.
 */
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import OpenAI from 'openai';
import type { Dispatcher } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  FaultlineInstrumentation,
  getExchange,
  type Exchange,
  type ExchangeOutcome,
  type Interceptor,
} from '../../instrumentation';
import { assertSpan } from '../support/assert-span';
import { recordBody, type CorpusRecord } from '../support/wire-record';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, parentId, setupOtel, type TestOtel } from '../support/otel';

type Mode = 'none' | 'synthetic' | 'fail' | 'transform' | 'retry' | 'throw';
let mode: Mode = 'none';
const seen: { exchange?: Exchange; activeIsOurs?: boolean; ends: Array<[Exchange, ExchangeOutcome]> } = { ends: [] };

function controller(): Dispatcher.DispatchController {
  return {
    aborted: false,
    paused: false,
    reason: null,
    abort() {},
    pause() {},
    resume() {},
  } as unknown as Dispatcher.DispatchController;
}

// One step defined here, switching on `mode`: the shape a fault or guard step has.
const testStep: Interceptor = (dispatch) =>
  function testStep(opts, handler) {
    const exchange = getExchange(opts);
    if (!exchange || mode === 'none') return dispatch(opts, handler);
    seen.exchange = exchange;
    seen.activeIsOurs = trace.getActiveSpan() === exchange.span;
    const c = controller();
    switch (mode) {
      case 'synthetic': {
        const body = Buffer.from(
          JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } }),
        );
        handler.onRequestStart?.(c, {});
        handler.onResponseStart?.(
          c,
          429,
          { 'content-type': 'application/json', 'x-should-retry': 'false' },
          'Too Many Requests',
        );
        handler.onResponseData?.(c, body);
        handler.onResponseEnd?.(c, {});
        return true;
      }
      case 'fail':
        handler.onResponseError?.(c, Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
        return true;
      case 'transform':
        return dispatch(opts, {
          ...handler,
          onRequestStart: (ctl, ctx) => handler.onRequestStart?.(ctl, ctx),
          onResponseStart: (ctl, s, h, m) => handler.onResponseStart?.(ctl, s, h, m),
          onResponseData: (ctl, chunk) =>
            handler.onResponseData?.(
              ctl,
              Buffer.from(chunk.toString('latin1').split(WORD).join(WORD.toUpperCase()), 'latin1'),
            ),
          onResponseEnd: (ctl, t) => handler.onResponseEnd?.(ctl, t),
          onResponseError: (ctl, e) => handler.onResponseError?.(ctl, e),
        });
      case 'retry': {
        // First attempt is swallowed when it fails; the second is forwarded to the application.
        let status = 0;
        return dispatch(opts, {
          onRequestStart: () => {},
          onResponseStart: (_ctl, s) => {
            status = s;
          },
          onResponseData: () => {},
          onResponseEnd: () => {
            if (status >= 500) {
              exchange.attempt++;
              dispatch(opts, handler);
            }
          },
          onResponseError: (ctl, e) => handler.onResponseError?.(ctl, e),
        });
      }
      case 'throw':
        throw new Error('bug in a step');
    }
    return dispatch(opts, handler);
  };

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
let undici: UndiciInstrumentation;
let client: OpenAI;
const rec: CorpusRecord = CHAT_TEXT;
// A word of the answer that appears nowhere else in the body (keys stay intact): the transform upper-cases it.
const WORD = (() => {
  const resp = rec.response as { choices: Array<{ message: { content: string } }> };
  const content = resp.choices[0]?.message.content ?? '';
  const rest = recordBody(rec).replace(JSON.stringify(content).slice(1, -1), '');
  const word = (content.match(/[a-z]{4,}/g) ?? []).find((w) => !rest.includes(w));
  if (!word) throw new Error('no suitable word in the answer');
  return word;
})();

beforeAll(async () => {
  otel = setupOtel();
  undici = new UndiciInstrumentation();
  inst = new FaultlineInstrumentation({
    steps: [testStep],
    captureMessageContent: true,
    onExchangeEnd: (exchange, outcome) => {
      seen.ends.push([exchange, outcome]);
      // Online detectors record findings as events on the exchange's span: it must still be open here.
      exchange.span.addEvent('faultline.detection', {
        'faultline.detection.detector': 'test',
        'faultline.detection.fault_type': outcome.errorType ?? 'none',
      });
      throw new Error('a throwing onExchangeEnd must not reach the app');
    },
  });
  inst.enable();
  server = await startLlmServer(() => corpusReply(rec));
  client = new OpenAI({ apiKey: 'k', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  inst.disable();
  undici.disable();
  await server.close();
  await otel.shutdown();
});

beforeEach(() => {
  otel.exporter.reset();
  server.requests.length = 0;
  server.respond(() => corpusReply(rec));
  seen.ends = [];
  delete seen.exchange;
});

describe('steps inside the GenAI span layer', () => {
  it('(a) answer with a synthetic response without calling downstream', async () => {
    mode = 'synthetic';
    const err = await client.chat.completions.create(rec.request as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(server.requests).toHaveLength(0);
    expect(seen.activeIsOurs).toBe(true);
    expect(seen.exchange?.llmRequest?.model).toBe(rec.request.model);
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    const span = assertSpan(ours(spans)[0], {
      status: SpanStatusCode.ERROR,
      attributes: { 'error.type': '429', 'http.response.status_code': 429 },
    });
    expect(
      span.events.find((e) => e.name === 'faultline.detection')?.attributes?.['faultline.detection.fault_type'],
    ).toBe('429');
    expect(spans.filter((s) => s.name === 'POST')).toHaveLength(0);
    expect(seen.ends[0]?.[1].response?.status).toBe(429);
  });

  it('(b) fail with an error', async () => {
    mode = 'fail';
    const err = (await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify(rec.request),
    }).then(
      () => undefined,
      (e: unknown) => e,
    )) as { cause?: { code?: string } };
    expect(err?.cause?.code).toBe('ECONNRESET');
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    assertSpan(ours(spans)[0], { status: SpanStatusCode.ERROR, attributes: { 'error.type': 'ECONNRESET' } });
    expect(seen.ends[0]?.[1].errorType).toBe('ECONNRESET');
  });

  it('(c) transform response chunks: the span reads what the app received', async () => {
    mode = 'transform';
    const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(rec.request) });
    const text = await res.text();
    expect(text).toBe(recordBody(rec).split(WORD).join(WORD.toUpperCase()));
    expect(text).not.toBe(recordBody(rec));
    const spans = await otel.waitForSpans((s) => ours(s).length === 1);
    const out = JSON.parse(ours(spans)[0]?.attributes['gen_ai.output.messages'] as string) as Array<{
      parts: Array<{ content: string }>;
    }>;
    const appText = (JSON.parse(text) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message
      .content;
    expect(out[0]?.parts[0]?.content).toBe(appText);
    expect(seen.ends[0]?.[1].response?.text).toBe(appText);
  });

  it('(d) call downstream more than once (retry) within one span', async () => {
    mode = 'retry';
    let n = 0;
    server.respond(() =>
      n++ === 0 ? { status: 503, headers: { 'content-type': 'text/plain' }, body: 'busy' } : corpusReply(rec),
    );
    const res = await client.chat.completions.create(rec.request as never);
    expect(res.id).toBe((rec.response as { id: string }).id);
    expect(server.requests).toHaveLength(2);
    const spans = await otel.waitForSpans(
      (s) => ours(s).length === 1 && s.filter((x) => x.name === 'POST').length === 2,
    );
    const chat = assertSpan(ours(spans)[0], {
      status: SpanStatusCode.UNSET,
      attributes: { 'http.response.status_code': 200 },
    });
    const https = spans.filter((s) => s.name === 'POST');
    expect(https.map((s) => parentId(s))).toEqual([chat.spanContext().spanId, chat.spanContext().spanId]);
    expect(seen.ends[0]?.[0].attempt).toBe(1);
  });

  it('a step that throws falls back to the untouched call', async () => {
    mode = 'throw';
    const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(rec.request) });
    expect(await res.text()).toBe(recordBody(rec));
    expect(server.requests).toHaveLength(1);
  });
});
