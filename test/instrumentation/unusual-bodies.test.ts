/**
 * Do no harm on unusual bodies: with faultline enabled and no fault planned, gzip and brotli bodies, a gzip SSE
 * stream, malformed JSON, SSE cut by a connection reset, an HTML error page, a 10 MB body and repeated response
 * headers reach the application exactly as the server sent them, with no internal error of ours; non-LLM traffic
 * gets no span. The answers are project-written (../support/chat-exchanges.ts); every corpus record through the
 * same path is byte-identity.test.ts (conformance tier).
 */
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import { gzipSync, brotliCompressSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { CHAT_STREAM, CHAT_TEXT } from '../support/chat-exchanges';
import { recordBody, type CorpusRecord } from '../support/wire-record';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
const problems: string[] = [];

const capture: DiagLogger = {
  error: (...a: unknown[]) => problems.push(a.map(String).join(' ')),
  warn: (...a: unknown[]) => problems.push(a.map(String).join(' ')),
  info: () => {},
  debug: () => {},
  verbose: () => {},
};

beforeAll(async () => {
  diag.setLogger(capture, DiagLogLevel.WARN);
  otel = setupOtel();
  inst = new FaultlineInstrumentation({ captureMessageContent: true });
  inst.enable();
  server = await startLlmServer();
});

afterAll(async () => {
  inst.disable();
  await server.close();
  await otel.shutdown();
  diag.disable();
});

beforeEach(() => {
  problems.length = 0;
});

async function rawFetch(path: string, request: unknown): Promise<{ status: number; text: string; sent: string }> {
  const sent = JSON.stringify(request);
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: sent,
  });
  return { status: res.status, text: await res.text(), sent };
}

describe('unusual bodies pass unchanged', () => {
  const rec: CorpusRecord = CHAT_TEXT;
  const streamRec: CorpusRecord = CHAT_STREAM;
  const body = recordBody(rec);

  it.each([
    ['gzip', gzipSync(body)],
    ['br', brotliCompressSync(body)],
  ])('%s-encoded JSON: app gets the decoded body, span still has usage', async (encoding, encoded) => {
    otel.exporter.reset();
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'content-encoding': encoding },
      body: encoded,
    }));
    const r = await rawFetch('/v1/chat/completions', rec.request);
    expect(r.text).toBe(body);
    const span = ours(await otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['gen_ai.usage.output_tokens']).toBe(
      (rec.response as { usage: { completion_tokens: number } }).usage.completion_tokens,
    );
    expect(span?.attributes['faultline.response.body_bytes']).toBe(encoded.length);
    expect(problems).toEqual([]);
  });

  it('gzip-encoded SSE stream is parsed', async () => {
    otel.exporter.reset();
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' },
      body: gzipSync(streamRec.sse as string),
    }));
    const r = await rawFetch('/v1/chat/completions', streamRec.request);
    expect(r.text).toBe(streamRec.sse);
    const span = ours(await otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['faultline.response.done']).toBe(true);
  });

  it('malformed JSON body', async () => {
    otel.exporter.reset();
    const bad = '{"id": "chatcmpl-x", "choices": [ {"message": ';
    server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: bad }));
    const r = await rawFetch('/v1/chat/completions', rec.request);
    expect(r.text).toBe(bad);
    const span = ours(await otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['faultline.response.output_chars']).toBe(0);
    expect(problems).toEqual([]);
  });

  it('truncated SSE (connection reset mid-stream): app sees the same error, span records it', async () => {
    const sse = streamRec.sse as string;
    const cut = sse.slice(0, Math.floor(sse.length / 2));
    const results: string[] = [];
    for (const instrumented of [false, true]) {
      if (!instrumented) inst.disable();
      otel.exporter.reset();
      server.respond(() => ({
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        chunks: [cut],
        destroyAfter: true,
      }));
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify(streamRec.request),
      });
      let got = '';
      const err = await (async () => {
        const reader = res.body!.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return 'none';
          got += Buffer.from(value).toString();
        }
      })().catch((e: Error) => `${e.name}: ${e.message}`);
      results.push(`${got === cut}|${err}`);
      if (!instrumented) inst.enable();
    }
    expect(results[1]).toBe(results[0]);
    const span = ours(await otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['faultline.response.done']).toBe(false);
    expect(problems).toEqual([]);
  });

  it('HTML error page', async () => {
    otel.exporter.reset();
    const html = '<html><body><h1>502 Bad Gateway</h1></body></html>';
    server.respond(() => ({ status: 502, headers: { 'content-type': 'text/html' }, body: html }));
    const r = await rawFetch('/v1/chat/completions', rec.request);
    expect(r.status).toBe(502);
    expect(r.text).toBe(html);
    const span = ours(await otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['error.type']).toBe('502');
    expect(problems).toEqual([]);
  });

  it('10 MB JSON body', async () => {
    otel.exporter.reset();
    const big = JSON.stringify({
      ...(rec.response as object),
      choices: [
        { index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'x'.repeat(10 * 1024 * 1024) } },
      ],
    });
    server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: big }));
    const r = await rawFetch('/v1/chat/completions', rec.request);
    expect(r.text.length).toBe(big.length);
    expect(r.text === big).toBe(true);
    const span = ours(await otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['faultline.response.output_chars']).toBe(10 * 1024 * 1024);
    expect(problems).toEqual([]);
  });

  it('response headers reach the app as without faultline (repeated headers, cookies, case)', async () => {
    const headers = {
      'content-type': 'application/json',
      'X-Request-Id': 'req_1',
      'x-dup': ['a', 'b'],
      'set-cookie': ['s=1; Path=/', 't=2'],
    };
    server.respond(() => ({
      status: 200,
      headers: headers as unknown as Record<string, string>,
      body: recordBody(rec),
    }));
    const seen = async () => {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify(rec.request),
      });
      await res.text();
      return { all: [...res.headers].filter(([k]) => k !== 'date'), cookies: res.headers.getSetCookie() };
    };
    otel.exporter.reset();
    const instrumented = await seen();
    inst.disable();
    const plain = await seen().finally(() => inst.enable());
    expect(instrumented).toEqual(plain);
    expect(instrumented.cookies).toEqual(['s=1; Path=/', 't=2']);
    expect(ours(await otel.waitForSpans((s) => ours(s).length === 1))).toHaveLength(1);
  });

  it('non-LLM traffic gets no span of ours', async () => {
    otel.exporter.reset();
    server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' }));
    const res = await fetch(`${server.url}/v1/files`, { method: 'POST', body: '{"purpose":"batch"}' });
    expect(await res.text()).toBe('{"ok":true}');
    const get = await fetch(`${server.url}/v1/chat/completions`);
    expect(await get.text()).toBe('{"ok":true}');
    expect(ours(otel.spans())).toEqual([]);
  });
});
