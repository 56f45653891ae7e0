/**
 * Every sample in /work/shared/reference/formats/ read and checked against the values written in the file.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readSpans, readTraces, detectFileFormat } from '../../src/traces/read';
import type { SpanRecord } from '../../src/traces/model';
import { isFaultlineError } from '../../src/errors';

import { FORMATS } from '../support/shared';
const f = (name: string): string => join(FORMATS, name);

async function spansOf(file: string, opts: Parameters<typeof readSpans>[1] = {}): Promise<SpanRecord[]> {
  const out: SpanRecord[] = [];
  for await (const s of readSpans(file, opts)) out.push(s);
  return out;
}

/** Every sample must be readable both with JSON.parse (small) and with the streaming parser (threshold 0). */
const MODES = [
  { name: 'JSON.parse', opts: {} },
  { name: 'streaming', opts: { streamThresholdBytes: 0 } },
];

describe.each(MODES)('sample trace files ($name)', ({ opts }) => {
  it('OTLP/JSON example from opentelemetry-proto: uppercase hex ids, kind as integer, int64 strings', async () => {
    const file = f('otlp-json.opentelemetry-proto.examples.trace.json');
    expect(await detectFileFormat(file)).toBe('otlp-json');
    const spans = await spansOf(file, opts);
    expect(spans).toEqual([
      {
        traceId: '5b8efff798038103d269b633813fc60c',
        spanId: 'eee19b7ec3c1b174',
        parentSpanId: 'eee19b7ec3c1b173',
        name: "I'm a server span",
        kind: 'SERVER',
        start: 1544712660000,
        end: 1544712661000,
        attributes: { 'my.span.attr': 'some value' },
        events: [],
        links: [],
        status: { code: 'UNSET' },
        resource: { 'service.name': 'my.service' },
        scope: { name: 'my.library', version: '1.0.0' },
      },
    ]);
  });

  it('Node http exporter body: intValue as a JSON number, arrays, doubles, events, status ERROR', async () => {
    const spans = await spansOf(f('node-exporter-otlp-http.json.request.json'), opts);
    expect(spans).toHaveLength(2);
    const [chat, root] = spans as [SpanRecord, SpanRecord];
    expect(chat.traceId).toBe('86acd1651d3d74fddef24e8ace96521a');
    expect(chat.parentSpanId).toBe('d1270281e5535b23');
    expect(chat.kind).toBe('CLIENT');
    expect(chat.start).toBe(1795978010254);
    expect(chat.end).toBe(1795978010254.517);
    expect(chat.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'gpt-x',
      'gen_ai.usage.input_tokens': 123,
      'gen_ai.response.finish_reasons': ['length'],
      'chaos.fault.type': 'latency',
      'chaos.fault.injected': true,
      'chaos.fault.delay_ms': 1500.5,
    });
    expect(chat.events).toEqual([
      { name: 'chaos.fault', time: 1795978010254.374, attributes: { 'chaos.fault.type': 'latency' } },
    ]);
    expect(chat.status).toEqual({ code: 'ERROR', message: 'timeout after fault' });
    expect(chat.resource).toEqual({ 'service.name': 'capture-demo', 'deployment.environment.name': 'test' });
    expect(chat.scope).toEqual({ name: 'capture-scope', version: '0.1.0' });
    expect(root).toMatchObject({
      spanId: 'd1270281e5535b23',
      name: 'agent.run',
      kind: 'SERVER',
      status: { code: 'UNSET' },
    });
    expect(root.parentSpanId).toBeUndefined();
  });

  it('curl body sent to Tempo: intValue as a string', async () => {
    const spans = await spansOf(f('otlp-json.curl-request.sent-to-tempo.json'), opts);
    expect(spans.map((s) => s.spanId)).toEqual(['eee19b7ec3c1b173', 'eee19b7ec3c1b174']);
    expect(spans[1]?.attributes['gen_ai.usage.output_tokens']).toBe(4096);
    expect(spans[1]?.attributes['chaos.fault.probability']).toBe(0.25);
    expect(spans[0]?.start).toBe(1795978636371.861); // microseconds kept (ns truncated)
    expect(spans[0]?.status).toEqual({ code: 'ERROR', message: 'agent failed' });
  });

  it('Jaeger OTLP input (telemetrygen): two identical spans kept as written', async () => {
    const spans = await spansOf(f('jaeger.otlp2jaeger-in.otlp.json'), opts);
    expect(spans).toHaveLength(2);
    expect(spans[0]).toMatchObject({
      traceId: '83a9efd15c1c98a977e0711cc93ee28b',
      spanId: 'e127af99e3b3e074',
      parentSpanId: '909541b92cf05311',
      kind: 'SERVER',
      start: 1706678909209.712,
      end: 1706678909209.835,
      attributes: { 'net.peer.ip': '1.2.3.4', 'peer.service': 'telemetrygen-client' },
      resource: { 'service.name': 'telemetrygen' },
      scope: { name: 'telemetrygen' },
      status: { code: 'UNSET' },
    });
  });

  it('Jaeger /api/traces output of the same trace reads to the same spans as its OTLP input', async () => {
    const file = f('jaeger.otlp2jaeger-out.api-traces.json');
    expect(await detectFileFormat(file)).toBe('jaeger');
    const fromJaeger = await spansOf(file, opts);
    const fromOtlp = await spansOf(f('jaeger.otlp2jaeger-in.otlp.json'), opts);
    expect(fromJaeger).toEqual(fromOtlp);
  });

  it('Jaeger UI trace: tag types, short trace ids, logs, references, processes', async () => {
    const spans = await spansOf(f('jaeger.ui_01.trace.json'), opts);
    expect(spans).toHaveLength(5);
    for (const s of spans) expect(s.traceId).toBe('00000000000000000000000000000001');
    const [first, tagged, child, refs, last] = spans as [SpanRecord, SpanRecord, SpanRecord, SpanRecord, SpanRecord];
    expect(first.events).toEqual([
      { name: 'some-event', time: 1485467191639.875, attributes: {} },
      { name: 'log', time: 1485467191639.875, attributes: { x: 'y' } },
    ]);
    expect(first.resource).toEqual({ 'service.name': 'service-x' });
    expect(tagged.attributes).toEqual({
      'peer.service': 'service-y',
      'peer.ipv4': 23456,
      temperature: 72.5,
      javascript_limit: '9223372036854775222',
      blob: 'AAAwOQ==',
    });
    expect(tagged.status.code).toBe('ERROR'); // the `error: true` tag
    expect(tagged.start).toBe(1485467191639.875);
    expect(tagged.end).toBe(1485467191639.88);
    expect(child.parentSpanId).toBe('0000000000000002');
    expect(child.resource).toEqual({ 'service.name': 'service-y' });
    // The first CHILD_OF into the same trace is the parent; the others are links.
    expect(refs.parentSpanId).toBe('0000000000000002');
    expect(refs.links).toEqual([
      {
        traceId: '000000000000000000000000000000ff',
        spanId: '00000000000000ff',
        attributes: { 'opentracing.ref_type': 'child_of' },
      },
      {
        traceId: '00000000000000000000000000000001',
        spanId: '0000000000000002',
        attributes: { 'opentracing.ref_type': 'follows_from' },
      },
    ]);
    expect(last.parentSpanId).toBe('0000000000000004');
    expect(last.end - last.start).toBeCloseTo(0.004, 3);
  });

  it('Jaeger skills fixture: enum names, three resources, the labelled root cause is findable', async () => {
    const file = f('jaeger.skills.sibling_errors.otlp.json');
    const traces = [];
    for await (const t of readTraces([file], opts)) traces.push(t);
    expect(traces).toHaveLength(1);
    const t = traces[0]!;
    expect(t.traceId).toBe('7c4f1a90b3e84d2f9a6c5e8017b3d264');
    expect(t.spans.map((s) => s.start - t.spans[0]!.start)).toEqual([0, 5, 20, 22, 120, 122]);
    const locus = t.spans.find((s) => s.spanId === 'd4e5f60718293a4b')!;
    expect(locus).toMatchObject({
      kind: 'CLIENT',
      parentSpanId: 'c3d4e5f60718293a',
      status: { code: 'ERROR', message: 'payment declined: card processor rejected transaction' },
      resource: { 'service.name': 'payment' },
      scope: { name: '' },
    });
    expect(t.spans[0]).toMatchObject({ kind: 'SERVER', status: { code: 'ERROR', message: 'order failed' } });
    expect(t.spans.filter((s) => s.status.code === 'ERROR')).toHaveLength(5);
  });

  it('Tempo v1 (batches) and v2 (trace.resourceSpans): base64 ids, enum names — same spans as the OTLP body sent', async () => {
    const sent = await spansOf(f('otlp-json.curl-request.sent-to-tempo.json'), opts);
    for (const name of ['tempo.api-traces-id.v1.generated.json', 'tempo.api-v2-traces-id.generated.json']) {
      expect(await detectFileFormat(f(name))).toBe('tempo');
      expect(await spansOf(f(name), opts)).toEqual(sent);
    }
  });

  it('Tempo LLM form (application/vnd.grafana.llm): plain attributes, hex ids — same spans as sent', async () => {
    const sent = await spansOf(f('otlp-json.curl-request.sent-to-tempo.json'), opts);
    const llm = await spansOf(f('tempo.api-v2-traces-id.llm.generated.json'), opts);
    expect(llm).toEqual(sent);
  });
});

describe('sample files that are not traces', () => {
  it('Tempo search results are refused with a hint to fetch the traces', async () => {
    const err = await spansOf(f('tempo.api-search-traceql.generated.json')).catch((e: unknown) => e);
    expect(isFaultlineError(err)).toBe(true);
    expect(err).toMatchObject({ code: 'FAULTLINE_TRACE_UNKNOWN_FORMAT' });
    expect((err as Error).message).toContain('tempo.api-search-traceql.generated.json');
    expect((err as Error).message).toContain('/api/v2/traces/<traceID>');
  });

  it('the skills manifest (a label file) is an unknown format naming its keys', async () => {
    const err = await spansOf(f('jaeger.skills.sibling_errors.manifest.json')).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'FAULTLINE_TRACE_UNKNOWN_FORMAT' });
    expect((err as Error).message).toMatch(/sibling_errors\.manifest\.json: .*"fixture", "skill"/);
  });
});

describe('OTLP protobuf sample (exporter-trace-otlp-proto body)', () => {
  it('decodes the binary request: ids, kinds, times, AnyValue types, events, status, flags ignored', async () => {
    const file = f('node-exporter-otlp-proto.request.bin');
    expect(await detectFileFormat(file)).toBe('otlp-proto');
    const spans = await spansOf(file);
    expect(spans).toHaveLength(2);
    const [chat, root] = spans as [SpanRecord, SpanRecord];
    expect(chat.traceId).toMatch(/^04d0300c00d67d3e965e0724f1253ecf$/);
    expect(chat.spanId).toBe('2a89309bb132d2d5');
    expect(chat.parentSpanId).toBe('99a6386c9b5fdb52');
    expect(root.spanId).toBe('99a6386c9b5fdb52');
    expect(root.parentSpanId).toBeUndefined();
    expect(chat.kind).toBe('CLIENT');
    expect(root.kind).toBe('SERVER');
    expect(chat.name).toBe('chat gpt-x');
    expect(chat.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'gpt-x',
      'gen_ai.usage.input_tokens': 123,
      'gen_ai.response.finish_reasons': ['length'],
      'chaos.fault.type': 'latency',
      'chaos.fault.injected': true,
      'chaos.fault.delay_ms': 1500.5,
    });
    expect(chat.events).toHaveLength(1);
    expect(chat.events[0]).toMatchObject({ name: 'chaos.fault', attributes: { 'chaos.fault.type': 'latency' } });
    expect(chat.status).toEqual({ code: 'ERROR', message: 'timeout after fault' });
    expect(chat.resource).toEqual({ 'service.name': 'capture-demo', 'deployment.environment.name': 'test' });
    expect(chat.scope).toEqual({ name: 'capture-scope', version: '0.1.0' });
    // Same exporter run as the JSON sample: start times are whole milliseconds, ends have sub-ms precision.
    expect(Number.isInteger(chat.start)).toBe(true);
    expect(chat.end).toBeGreaterThan(chat.start);
    expect(chat.start).toBeGreaterThan(1.7e12);
    expect(chat.events[0]!.time).toBeGreaterThanOrEqual(chat.start);
  });
});
