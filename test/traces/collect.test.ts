/**
 * The embedded OTLP/HTTP receiver with the real OTLP exporters (JSON and protobuf, with and without gzip) sending
 * real spans from a real TracerProvider over 127.0.0.1, and the JSON lines it writes read back by readTraces.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { startCollector, type Collector } from '../../src/traces/collect';
import { readTraces } from '../../src/traces/read';
import type { TraceRecord } from '../../src/traces/model';
import { FORMATS } from '../support/shared';

let dir: string;
let out: string;
let collector: Collector;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'faultline-collect-'));
  out = join(dir, 'traces.jsonl');
  collector = await startCollector({ port: 0, out, maxBodyBytes: 256 * 1024 });
});

afterEach(async () => {
  await collector.close();
  rmSync(dir, { recursive: true, force: true });
});

async function linesEventually(file: string, n: number, timeoutMs = 10_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
    if (lines.length >= n) return lines;
    if (Date.now() > deadline) throw new Error(`expected ${n} lines in ${file}, found ${lines.length}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function tracesOf(file: string): Promise<TraceRecord[]> {
  const out: TraceRecord[] = [];
  for await (const t of readTraces([file])) out.push(t);
  return out;
}

/** An agent run: a SERVER root, an LLM CLIENT child with gen_ai attributes of every type, an event, a link, an error. */
function emitAgentRun(tracer: Tracer): { traceId: string; rootId: string; chatId: string } {
  const root = tracer.startSpan('invoke_agent planner', { kind: SpanKind.SERVER });
  const chat = tracer.startSpan(
    'chat gpt-4o',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.usage.input_tokens': 123,
        'gen_ai.request.temperature': 0.25,
        'gen_ai.request.stream': true,
        'gen_ai.response.finish_reasons': ['length'],
        'big.int': 2 ** 40,
      },
      links: [{ context: root.spanContext(), attributes: { 'link.kind': 'caused-by' } }],
    },
    trace.setSpan(ROOT_CONTEXT, root),
  );
  chat.addEvent('gen_ai.content.chunk', { index: 3 });
  chat.setStatus({ code: SpanStatusCode.ERROR, message: 'truncated' });
  chat.end();
  root.end();
  return { traceId: root.spanContext().traceId, rootId: root.spanContext().spanId, chatId: chat.spanContext().spanId };
}

const EXPORTERS = [
  { name: 'otlp-http JSON', make: (url: string) => new JsonExporter({ url }) },
  {
    name: 'otlp-http JSON + gzip',
    make: (url: string) => new JsonExporter({ url, compression: 'gzip' as CompressionAlgorithm }),
  },
  { name: 'otlp-proto', make: (url: string) => new ProtoExporter({ url }) },
  {
    name: 'otlp-proto + gzip',
    make: (url: string) => new ProtoExporter({ url, compression: 'gzip' as CompressionAlgorithm }),
  },
];

describe.each(EXPORTERS)('collector receiving from $name', ({ make }) => {
  it('writes canonical OTLP/JSON lines that readTraces reads back to the same spans', async () => {
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'collect-test' }),
      spanProcessors: [new SimpleSpanProcessor(make(collector.tracesUrl))],
    });
    const tracer = provider.getTracer('faultline-test', '1.2.3');
    const ids = emitAgentRun(tracer);
    await provider.forceFlush();
    await provider.shutdown();

    const lines = await linesEventually(out, 2); // SimpleSpanProcessor: one request per span
    for (const line of lines) {
      const doc = JSON.parse(line) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
      const span = doc.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
      // Canonical encoding whatever came in: hex ids, integer kind, int64 as strings.
      expect(span.traceId).toBe(ids.traceId);
      expect(typeof span.kind).toBe('number');
      expect(span.startTimeUnixNano).toMatch(/^\d{19}$/);
    }
    expect(collector.stats).toMatchObject({ spans: 2, rejected: 0 });

    const traces = await tracesOf(out);
    expect(traces).toHaveLength(1);
    const t = traces[0]!;
    expect(t.traceId).toBe(ids.traceId);
    // The SDK's start times are whole milliseconds, so the order of the two spans may be decided by span id.
    expect(t.spans.map((s) => s.spanId).sort()).toEqual([ids.rootId, ids.chatId].sort());
    const root = t.spans.find((s) => s.spanId === ids.rootId)!;
    const chat = t.spans.find((s) => s.spanId === ids.chatId)!;
    expect(root).toMatchObject({ name: 'invoke_agent planner', kind: 'SERVER', status: { code: 'UNSET' } });
    expect(root.parentSpanId).toBeUndefined();
    expect(chat).toMatchObject({
      name: 'chat gpt-4o',
      kind: 'CLIENT',
      parentSpanId: ids.rootId,
      status: { code: 'ERROR', message: 'truncated' },
      resource: { 'service.name': 'collect-test' },
      scope: { name: 'faultline-test', version: '1.2.3' },
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.usage.input_tokens': 123,
        'gen_ai.request.temperature': 0.25,
        'gen_ai.request.stream': true,
        'gen_ai.response.finish_reasons': ['length'],
        'big.int': 2 ** 40,
      },
    });
    expect(chat.events).toHaveLength(1);
    expect(chat.events[0]).toMatchObject({ name: 'gen_ai.content.chunk', attributes: { index: 3 } });
    expect(chat.events[0]!.time).toBeGreaterThanOrEqual(chat.start);
    expect(chat.links).toEqual([
      { traceId: ids.traceId, spanId: ids.rootId, attributes: { 'link.kind': 'caused-by' } },
    ]);
    expect(chat.start).toBeGreaterThan(Date.now() - 60_000);
    expect(chat.end).toBeGreaterThanOrEqual(chat.start);
  });
});

describe('collector protocol answers', () => {
  const post = (body: Buffer | string, headers: Record<string, string>, path = '/v1/traces'): Promise<Response> =>
    fetch(`${collector.url}${path}`, { method: 'POST', body, headers });

  it('200 with {} for JSON, with an empty protobuf body for protobuf; gzip accepted', async () => {
    const doc = readFileSync(FORMATS + '/node-exporter-otlp-http.json.request.json');
    const r1 = await post(doc, { 'content-type': 'application/json' });
    expect(r1.status).toBe(200);
    expect(r1.headers.get('content-type')).toBe('application/json');
    expect(await r1.text()).toBe('{}');
    const bin = readFileSync(FORMATS + '/node-exporter-otlp-proto.request.bin');
    const r2 = await post(gzipSync(bin), { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' });
    expect(r2.status).toBe(200);
    expect(r2.headers.get('content-type')).toBe('application/x-protobuf');
    expect((await r2.arrayBuffer()).byteLength).toBe(0);
    const traces = await tracesOf(out);
    expect(traces.map((t) => t.spans.length)).toEqual([2, 2]);
    expect(collector.stats).toMatchObject({ requests: 2, spans: 4, rejected: 0 });
  });

  it('400 with a Status for bad JSON, bad protobuf, bad ids and bad gzip; nothing written', async () => {
    const bad = await post('{"resourceSpans":[', { 'content-type': 'application/json' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 3, message: expect.stringContaining('invalid JSON body') });

    const badId = await post(
      '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"eee19b7ec3c1b174"}]}]}]}',
      {
        'content-type': 'application/json',
      },
    );
    expect(badId.status).toBe(400);
    expect(((await badId.json()) as { message: string }).message).toContain(
      'resourceSpans[0].scopeSpans[0].spans[0].traceId',
    );

    const garbage = await post(Buffer.from([0x0a, 0xff, 0xff, 0x01, 0x02]), {
      'content-type': 'application/x-protobuf',
    });
    expect(garbage.status).toBe(400);
    const status = Buffer.from(await garbage.arrayBuffer());
    expect(status[0]).toBe(0x08); // google.rpc.Status.code
    expect(status[1]).toBe(3);
    expect(status.toString('utf8')).toContain('runs past the end');

    const badGzip = await post(Buffer.from('not gzip'), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    expect(badGzip.status).toBe(400);
    expect(existsSync(out) ? readFileSync(out, 'utf8') : '').toBe('');
    expect(collector.stats.rejected).toBe(4);
  });

  it('415 for other content types and encodings, 404 for other paths, 405 for other methods, 413 above the limit', async () => {
    expect((await post('x', { 'content-type': 'text/plain' })).status).toBe(415);
    expect((await post('{}', { 'content-type': 'application/json', 'content-encoding': 'snappy' })).status).toBe(415);
    expect((await post('{}', { 'content-type': 'application/json' }, '/v1/metrics')).status).toBe(404);
    const get = await fetch(collector.tracesUrl);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const big = await post(Buffer.alloc(300 * 1024, 0x20), { 'content-type': 'application/json' }).catch(
      (e: unknown) => e,
    );
    if (big instanceof Response) expect(big.status).toBe(413);
    // A gzip bomb is stopped at the decompressed limit too.
    const bomb = await post(gzipSync(Buffer.alloc(1024 * 1024, 0x20)), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    expect(bomb.status).toBe(413);
  });

  it('an empty request ({}) is accepted and writes nothing', async () => {
    const r = await post('{}', { 'content-type': 'application/json' });
    expect(r.status).toBe(200);
    expect(existsSync(out) ? readFileSync(out, 'utf8') : '').toBe('');
  });
});

describe('collector with other OTLP/JSON flavours', () => {
  it('Tempo-style enum names and base64 ids are stored canonically; an empty resourceSpans writes nothing', async () => {
    const tempo = readFileSync(FORMATS + '/tempo.api-traces-id.v1.generated.json');
    const r = await fetch(collector.tracesUrl, {
      method: 'POST',
      body: tempo,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(r.status).toBe(200);
    const empty = await fetch(collector.tracesUrl, {
      method: 'POST',
      body: '{"resourceSpans":[]}',
      headers: { 'content-type': 'application/json' },
    });
    expect(empty.status).toBe(200);
    const lines = await linesEventually(out, 1);
    expect(lines).toHaveLength(1);
    const span = (JSON.parse(lines[0]!) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] })
      .resourceSpans[0]!.scopeSpans[0]!.spans[1]!;
    expect(span).toMatchObject({
      traceId: '5b8efff798038103d269b633813fc60c',
      spanId: 'eee19b7ec3c1b174',
      parentSpanId: 'eee19b7ec3c1b173',
      kind: 3,
      status: { code: 2, message: 'truncated' },
    });
    const traces = await tracesOf(out);
    expect(traces[0]!.spans).toHaveLength(2);
  });
});
