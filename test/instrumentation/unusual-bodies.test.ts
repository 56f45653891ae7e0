/**
 * Do no harm on unusual bodies: with faultline enabled and no fault planned, gzip and brotli bodies, a gzip SSE
 * stream, malformed JSON, SSE cut by a connection reset, an HTML error page, a 10 MB body and repeated response
 * headers reach the application exactly as the server sent them, with no internal error of ours; non-LLM traffic
 * gets no span. The answers are project-written (../support/chat-exchanges.ts); every corpus record through the
 * same path is byte-identity.test.ts (conformance tier).
 */
import { gzipSync, brotliCompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CHAT_STREAM, CHAT_TEXT } from '../support/chat-exchanges';
import { recordBody, type CorpusRecord } from '../support/wire-record';
import { useLayer } from '../support/layer';
import { ours } from '../support/otel';

const layer = useLayer({ watchProblems: true });

describe('unusual bodies pass unchanged', () => {
  const rec: CorpusRecord = CHAT_TEXT;
  const streamRec: CorpusRecord = CHAT_STREAM;
  const body = recordBody(rec);

  it.each([
    ['gzip', gzipSync(body)],
    ['br', brotliCompressSync(body)],
  ])('%s-encoded JSON: app gets the decoded body, span still has usage', async (encoding, encoded) => {
    layer.otel.exporter.reset();
    layer.server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'content-encoding': encoding },
      body: encoded,
    }));
    const r = await layer.post('/v1/chat/completions', rec.request);
    expect(r.text).toBe(body);
    const span = ours(await layer.otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['gen_ai.usage.output_tokens']).toBe(
      (rec.response as { usage: { completion_tokens: number } }).usage.completion_tokens,
    );
    expect(span?.attributes['faultline.response.body_bytes']).toBe(encoded.length);
    expect(layer.problems).toEqual([]);
  });

  it('gzip-encoded SSE stream is parsed', async () => {
    layer.otel.exporter.reset();
    layer.server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' },
      body: gzipSync(streamRec.sse as string),
    }));
    const r = await layer.post('/v1/chat/completions', streamRec.request);
    expect(r.text).toBe(streamRec.sse);
    const span = ours(await layer.otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['faultline.response.done']).toBe(true);
  });

  it('malformed JSON body', async () => {
    layer.otel.exporter.reset();
    const bad = '{"id": "chatcmpl-x", "choices": [ {"message": ';
    layer.server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: bad }));
    const r = await layer.post('/v1/chat/completions', rec.request);
    expect(r.text).toBe(bad);
    const span = ours(await layer.otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['faultline.response.output_chars']).toBe(0);
    expect(layer.problems).toEqual([]);
  });

  it('truncated SSE (connection reset mid-stream): app sees the same error, span records it', async () => {
    const sse = streamRec.sse as string;
    const cut = sse.slice(0, Math.floor(sse.length / 2));
    const results: string[] = [];
    for (const instrumented of [false, true]) {
      if (!instrumented) layer.inst.disable();
      layer.otel.exporter.reset();
      layer.server.respond(() => ({
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        chunks: [cut],
        destroyAfter: true,
      }));
      const res = await fetch(`${layer.server.url}/v1/chat/completions`, {
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
      if (!instrumented) layer.inst.enable();
    }
    expect(results[1]).toBe(results[0]);
    const span = ours(await layer.otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['faultline.response.done']).toBe(false);
    expect(layer.problems).toEqual([]);
  });

  it('HTML error page', async () => {
    layer.otel.exporter.reset();
    const html = '<html><body><h1>502 Bad Gateway</h1></body></html>';
    layer.server.respond(() => ({ status: 502, headers: { 'content-type': 'text/html' }, body: html }));
    const r = await layer.post('/v1/chat/completions', rec.request);
    expect(r.status).toBe(502);
    expect(r.text).toBe(html);
    const span = ours(await layer.otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['error.type']).toBe('502');
    expect(layer.problems).toEqual([]);
  });

  it('10 MB JSON body', async () => {
    layer.otel.exporter.reset();
    const big = JSON.stringify({
      ...(rec.response as object),
      choices: [
        { index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'x'.repeat(10 * 1024 * 1024) } },
      ],
    });
    layer.server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: big }));
    const r = await layer.post('/v1/chat/completions', rec.request);
    expect(r.text.length).toBe(big.length);
    expect(r.text === big).toBe(true);
    const span = ours(await layer.otel.waitForSpans((s) => ours(s).length === 1))[0];
    expect(span?.attributes['faultline.response.output_chars']).toBe(10 * 1024 * 1024);
    expect(layer.problems).toEqual([]);
  });

  it('response headers reach the app as without faultline (repeated headers, cookies, case)', async () => {
    const headers = {
      'content-type': 'application/json',
      'X-Request-Id': 'req_1',
      'x-dup': ['a', 'b'],
      'set-cookie': ['s=1; Path=/', 't=2'],
    };
    layer.server.respond(() => ({
      status: 200,
      headers: headers as unknown as Record<string, string>,
      body: recordBody(rec),
    }));
    const seen = async () => {
      const res = await fetch(`${layer.server.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify(rec.request),
      });
      await res.text();
      return { all: [...res.headers].filter(([k]) => k !== 'date'), cookies: res.headers.getSetCookie() };
    };
    layer.otel.exporter.reset();
    const instrumented = await seen();
    layer.inst.disable();
    const plain = await seen().finally(() => layer.inst.enable());
    expect(instrumented).toEqual(plain);
    expect(instrumented.cookies).toEqual(['s=1; Path=/', 't=2']);
    expect(ours(await layer.otel.waitForSpans((s) => ours(s).length === 1))).toHaveLength(1);
  });

  it('non-LLM traffic gets no span of ours', async () => {
    layer.otel.exporter.reset();
    layer.server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' }));
    const res = await fetch(`${layer.server.url}/v1/files`, { method: 'POST', body: '{"purpose":"batch"}' });
    expect(await res.text()).toBe('{"ok":true}');
    const get = await fetch(`${layer.server.url}/v1/chat/completions`);
    expect(await get.text()).toBe('{"ok":true}');
    expect(ours(layer.otel.spans())).toEqual([]);
  });
});
