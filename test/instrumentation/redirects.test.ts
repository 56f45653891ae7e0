/**
 * One span per model answer, not per redirect hop: a gateway that answers 307/308 to a versioned path makes one chat
 * span that reads the final answer (http.request.resend_count = 1), the online detectors find nothing, and the rule
 * diagnoser reports no fault; the bytes the app gets are the server's. A redirect the client does not follow
 * (`redirect: 'manual'`) still ends its span, with no detection. Real openai SDK and fetch, a real loopback server,
 * the online detectors register wires.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOnlineDetection } from '../../detectors/online';
import { FaultlineInstrumentation } from '../../instrumentation';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers';
import { corpusReply, startLlmServer, type LlmServer, type Reply } from '../support/llm-server';
import { recordBody } from '../support/wire-record';
import { CHAT_STREAM_PLAIN, CHAT_TEXT } from '../support/chat-exchanges';
import { ours, setupOtel, type TestOtel } from '../support/otel';
import { toTraces } from '../support/to-traces';
import { deadline } from '../support/upload-server';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;

/** A text answer no detector flags, with a fresh `created` as a live server sends. */
const rec = CHAT_TEXT;
const streamRec = CHAT_STREAM_PLAIN;

function fresh(): string {
  const b = structuredClone(rec.response) as { created?: number };
  if (typeof b.created === 'number') b.created = Math.floor(Date.now() / 1000);
  return JSON.stringify(b);
}

beforeAll(async () => {
  otel = setupOtel();
  inst = new FaultlineInstrumentation({ onExchangeEnd: createOnlineDetection().onExchangeEnd });
  inst.enable();
  server = await startLlmServer();
});

afterAll(async () => {
  inst.disable();
  await server.close();
  await otel.shutdown();
});

beforeEach(() => {
  otel.exporter.reset();
  server.requests.length = 0;
});

/** A gateway: `/v1/…` answers `status` with a Location under `/v2/…`, which answers `final`. */
function gateway(status: number, final: () => ReturnType<typeof corpusReply>): void {
  server.respond((req) =>
    req.url.startsWith('/v1/')
      ? {
          status,
          headers: { location: req.url.replace('/v1/', '/v2/'), 'content-type': 'text/html' },
          body: '<a href="/v2/">moved</a>',
        }
      : final(),
  );
}

describe('a redirecting gateway', () => {
  it.each([307, 308])(
    '%i to /v2 through the openai SDK: one chat span with the answer, no empty_output, no fault diagnosed',
    async (status) => {
      gateway(status, () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fresh() }));
      const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
      const answer = await deadline(client.chat.completions.create(rec.request as never), 5000, 'chat call');
      expect(answer.id).toBe((rec.response as { id: string }).id);
      expect(server.requests.map((r) => r.url)).toEqual(['/v1/chat/completions', '/v2/chat/completions']);
      const spans = ours(await otel.waitForSpans((s) => ours(s).length >= 1));
      // Any second span would end within the wait for a follow-up; give it the time to show.
      await new Promise((r) => setTimeout(r, 300));
      expect(ours(otel.spans())).toHaveLength(1);
      const span = spans[0]!;
      expect(span.attributes['http.response.status_code']).toBe(200);
      expect(span.attributes['http.request.resend_count']).toBe(1);
      expect(span.attributes['gen_ai.response.id']).toBe((rec.response as { id: string }).id);
      expect(span.events.filter((e) => e.name === 'faultline.detection')).toEqual([]);
      const [trace] = toTraces(otel.spans());
      const diagnosis = await diagnoseTrace(createDiagnoser('rule'), trace!);
      expect(diagnosis.faultType).toBe('none');
    },
  );

  it('a streamed answer behind a 307: one span, the stream read to [DONE]', async () => {
    gateway(307, () => corpusReply(streamRec));
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(streamRec.request),
    });
    expect(await res.text()).toBe(recordBody(streamRec));
    const spans = ours(await otel.waitForSpans((s) => ours(s).length >= 1));
    await new Promise((r) => setTimeout(r, 300));
    expect(ours(otel.spans())).toHaveLength(1);
    expect(spans[0]?.attributes['faultline.response.done']).toBe(true);
    expect(spans[0]?.attributes['http.request.resend_count']).toBe(1);
  });

  it('a redirect the app does not follow ends its span, with nothing detected', async () => {
    gateway(307, () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fresh() }));
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(rec.request),
      redirect: 'manual',
    });
    expect(res.status).toBe(307);
    expect(await res.text()).toBe('<a href="/v2/">moved</a>');
    const spans = ours(await otel.waitForSpans((s) => ours(s).length === 1, 3000));
    expect(spans).toHaveLength(1);
    expect(spans[0]?.attributes['http.response.status_code']).toBe(307);
    expect(spans[0]?.events.filter((e) => e.name === 'faultline.detection')).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('parallel calls redirected to the same URL each get their own answer', async () => {
    server.respond((req): Reply => {
      if (req.url.startsWith('/v1/')) return { status: 307, headers: { location: '/v2/chat/completions' }, body: '' };
      const { model } = JSON.parse(req.body.toString()) as { model: string };
      const body = structuredClone(rec.response) as { model: string; id: string };
      body.model = model;
      body.id = `id-${model}`;
      return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
    });
    const models = ['m-a', 'm-b', 'm-c', 'm-d'];
    await Promise.all(
      models.map((model) =>
        fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ...rec.request, model }),
        }).then((r) => r.text()),
      ),
    );
    const spans = ours(await otel.waitForSpans((s) => ours(s).length === models.length));
    expect(spans).toHaveLength(models.length);
    for (const s of spans) expect(s.attributes['gen_ai.response.model']).toBe(s.attributes['gen_ai.request.model']);
  });
});
