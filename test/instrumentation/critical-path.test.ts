/**
 * Off the application's critical path (issue 16): with no step deciding on the request, the span layer hands a call
 * to the dispatcher before it reads the request, and reads each response chunk only after the application has had
 * it (after the microtasks in which the application takes it), and the span still carries the real times: its start
 * when the call was made, its end when the application had its last callback, the time to first chunk the
 * application saw. Real undici and fetch, a real loopback server, the real openai reader.
 */
import { performance } from 'node:perf_hooks';
import { Agent, type Dispatcher } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGenAiInterceptor } from '../../instrumentation/interceptor';
import type { ProtocolModule, ResponseReader } from '../../instrumentation/internal-types';
import { openaiChat } from '../../instrumentation/providers/openai-chat';
import { settleExchanges } from '../../instrumentation';
import { sseEvents } from '../support/wire-record';
import { CHAT_STREAM_PLAIN } from '../support/chat-exchanges';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

let otel: TestOtel;
let server: LlmServer;
const rec = CHAT_STREAM_PLAIN;
const events = sseEvents(rec.sse as string);

const SLOW_READ_MS = 30;

/** The real openai module, its reader watched: what it read, and what the application had taken by then. */
function watched(log: { readerSaw: number[]; appTook: number[]; readAt: number[] }): ProtocolModule {
  return {
    ...openaiChat,
    reader(exchange, capture): ResponseReader {
      const real = openaiChat.reader(exchange, capture);
      let n = 0;
      return {
        ...real,
        onStart: (s, h) => real.onStart(s, h),
        onData(chunk) {
          log.readerSaw.push(n++);
          log.readAt.push(log.appTook.length);
          real.onData(chunk);
        },
        onEnd: () => real.onEnd(),
        finish: (e, f, d) => {
          // A slow reading (30 ms): the span must still end when the application had its last callback.
          const until = performance.now() + SLOW_READ_MS;
          while (performance.now() < until);
          return real.finish(e, f, d);
        },
      };
    },
  };
}

beforeAll(async () => {
  otel = setupOtel();
  server = await startLlmServer(() => ({
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    chunks: events,
    gapMs: 20,
  }));
});

afterAll(async () => {
  await server.close();
  await otel.shutdown();
});

beforeEach(() => otel.exporter.reset());

describe('the response side', () => {
  it('reads a chunk only after the application has taken it, and ends the span at the real times', async () => {
    const log = { readerSaw: [] as number[], appTook: [] as number[], readAt: [] as number[] };
    const layer = createGenAiInterceptor({
      tracer: () => otel.provider.getTracer('faultline'),
      captureContent: () => false,
      protocols: [watched(log)],
    });
    const agent = new Agent();
    const dispatcher = agent.compose(layer);
    const url = new URL(server.url);
    let firstAt = 0;
    let endAt = 0;
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart() {},
        onResponseStart() {},
        onResponseData() {
          // What the application does with a chunk happens in the microtasks after the callback.
          const i = log.appTook.length + pending++;
          if (i === 0) firstAt = performance.now();
          queueMicrotask(() => {
            pending--;
            log.appTook.push(i);
          });
        },
        onResponseEnd() {
          endAt = performance.now();
          resolve();
        },
        onResponseError: (_c, err) => reject(err),
      };
      let pending = 0;
      dispatcher.dispatch(
        {
          origin: url.origin,
          path: '/v1/chat/completions',
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(rec.request),
        },
        handler,
      );
    });
    await settleExchanges();
    expect(log.readerSaw.length).toBeGreaterThan(2);
    // When the reader read chunk i, the application had taken chunks 0..i already.
    log.readAt.forEach((taken, i) => expect(taken, `chunk ${i}`).toBeGreaterThan(i));
    const [span] = ours(otel.spans());
    expect(span).toBeDefined();
    const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;
    // The SDK turns a performance.now() time into wall time with the offset between the two clocks when the span was
    // made (Date.now(), whole milliseconds); the test maps its own readings the same way. Wall time drifts from
    // timeOrigin + performance.now() over a long run, by 4 ms on a CI machine.
    const origin = Date.now() - performance.now();
    // The span ends when the application had its last callback, not when the (slow) reading was done; the margin is for
    // a loaded machine, below the reading's own 30 ms.
    expect(Math.abs(ms(span!.endTime) - (origin + endAt))).toBeLessThan(SLOW_READ_MS - 10);
    expect(ms(span!.startTime)).toBeGreaterThanOrEqual(origin + t0 - 2); // started by the call, before its answer came
    expect(ms(span!.startTime)).toBeLessThanOrEqual(origin + firstAt + 2);
    const ttfc = Number(span!.attributes['gen_ai.response.time_to_first_chunk']) * 1000;
    expect(Math.abs(ttfc - (firstAt - t0))).toBeLessThan(20);
    await agent.close();
  });
});

describe('the request side', () => {
  it('hands the call to the dispatcher before reading its body, and the span still gets the model', async () => {
    const layer = createGenAiInterceptor({
      tracer: () => otel.provider.getTracer('faultline'),
      captureContent: () => false,
    });
    let parsedBeforeDispatch: boolean | undefined;
    const parse = JSON.parse;
    let parses = 0;
    JSON.parse = ((text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) => {
      if (typeof text === 'string' && text.includes('"messages"')) parses++;
      return parse(text, reviver);
    }) as typeof JSON.parse;
    const agent = new Agent();
    const below = agent.compose((dispatch) => (opts, handler) => {
      parsedBeforeDispatch = parses > 0;
      return dispatch(opts, handler);
    });
    const dispatcher = below.compose(layer);
    const url = new URL(server.url);
    try {
      const res = await dispatcher.request({
        origin: url.origin,
        path: '/v1/chat/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(rec.request),
      });
      await res.body.text();
    } finally {
      JSON.parse = parse;
    }
    await settleExchanges();
    expect(parsedBeforeDispatch).toBe(false);
    const [span] = ours(otel.spans());
    expect(span?.name).toBe(`chat ${String(rec.request.model)}`);
    expect(span?.attributes['gen_ai.request.model']).toBe(rec.request.model);
    await agent.close();
  });
});
