/**
 * Value variants (int64, enums, ids), damaged and foreign files, JSON lines, grouping into traces, streaming of big
 * documents, gzip, and the protobuf stream form.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { readSpans, readTraces } from '../../src/traces/read';
import type { SpanRecord, TraceRecord } from '../../src/traces/model';
import type { FaultlineInputError } from '../../src/errors';
import { JsonStreamParser } from '../../src/traces/json-stream';
import { selectOtlp } from '../../src/traces/readers/otlp-json';

import { FORMATS } from '../support/shared';
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'faultline-read-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string | Buffer): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

async function spansOf(path: string, opts: Parameters<typeof readSpans>[1] = {}): Promise<SpanRecord[]> {
  const out: SpanRecord[] = [];
  for await (const s of readSpans(path, opts)) out.push(s);
  return out;
}

async function tracesOf(paths: string[], opts: Parameters<typeof readTraces>[1] = {}): Promise<TraceRecord[]> {
  const out: TraceRecord[] = [];
  for await (const t of readTraces(paths, opts)) out.push(t);
  return out;
}

async function failure(p: Promise<unknown>): Promise<FaultlineInputError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (e === undefined) throw new Error('expected a failure');
  return e as FaultlineInputError;
}

const T = '5b8efff798038103d269b633813fc60c';
const otlpSpan = (spanId: string, extra: Record<string, unknown> = {}, traceId = T): Record<string, unknown> => ({
  traceId,
  spanId,
  name: `span ${spanId}`,
  kind: 1,
  startTimeUnixNano: '1700000000000000000',
  endTimeUnixNano: '1700000000001500000',
  ...extra,
});
const otlpDoc = (spans: unknown[], resource = 'svc'): Record<string, unknown> => ({
  resourceSpans: [
    {
      resource: { attributes: [{ key: 'service.name', value: { stringValue: resource } }] },
      scopeSpans: [{ scope: { name: 's' }, spans }],
    },
  ],
});

describe('value variants', () => {
  it('int64 as number or string, unsafe int64 kept as text, enums as names or ints, base64 and uppercase ids', async () => {
    const doc = {
      resourceSpans: [
        {
          resource: { attributes: [] },
          // The pre-1.0 name of scopeSpans.
          instrumentationLibrarySpans: [
            {
              instrumentationLibrary: { name: 'old-lib', version: '0.9' },
              spans: [
                {
                  traceId: 'W47/95gDgQPSabYzgT/GDA==',
                  spanId: '7uGbfsPBsXQ=',
                  parentSpanId: '0000000000000000',
                  name: 'p',
                  kind: 'SPAN_KIND_PRODUCER',
                  startTimeUnixNano: 1700000000000000000,
                  endTimeUnixNano: '1700000000002000000',
                  status: { code: 'STATUS_CODE_OK' },
                  attributes: [
                    { key: 'n', value: { intValue: 7 } },
                    { key: 's', value: { intValue: '-42' } },
                    { key: 'huge', value: { intValue: '9223372036854775807' } },
                    { key: 'd', value: { doubleValue: '1.5' } },
                    { key: 'kv', value: { kvlistValue: { values: [{ key: 'a', value: { intValue: '1' } }] } } },
                    {
                      key: 'nested',
                      value: { arrayValue: { values: [{ arrayValue: { values: [{ boolValue: true }] } }] } },
                    },
                    { key: 'bytes', value: { bytesValue: 'AAAwOQ==' } },
                    { key: 'empty', value: {} },
                  ],
                },
                { traceId: T.toUpperCase(), spanId: 'EEE19B7EC3C1B173', kind: 4, status: { code: 2 } },
              ],
            },
          ],
        },
      ],
    };
    const spans = await spansOf(file('variants.json', JSON.stringify(doc)));
    expect(spans[0]).toMatchObject({
      traceId: T,
      spanId: 'eee19b7ec3c1b174',
      kind: 'PRODUCER',
      start: 1700000000000,
      end: 1700000000002,
      status: { code: 'OK' },
      scope: { name: 'old-lib', version: '0.9' },
      attributes: {
        n: 7,
        s: -42,
        huge: '9223372036854775807',
        d: 1.5,
        kv: '{"a":1}',
        nested: '[[true]]',
        bytes: 'AAAwOQ==',
      },
    });
    expect(spans[0]!.parentSpanId).toBeUndefined(); // all-zero parent = none
    expect('empty' in spans[0]!.attributes).toBe(false);
    expect(spans[1]).toMatchObject({
      traceId: T,
      spanId: 'eee19b7ec3c1b173',
      kind: 'PRODUCER',
      status: { code: 'ERROR' },
      start: 0,
    });
  });

  it('a bad id names the field path', async () => {
    const p = file('bad-id.json', JSON.stringify(otlpDoc([otlpSpan('eee19b7ec3c1b173'), otlpSpan('not-an-id!')])));
    const e = await failure(spansOf(p));
    expect(e.code).toBe('FAULTLINE_TRACE_MALFORMED');
    expect(e.message).toBe(
      `${p}: resourceSpans[0].scopeSpans[0].spans[1].spanId: expected 16 hex characters or base64 of 8 bytes, got "not-an-id!"`,
    );
  });
});

describe('damaged and foreign files', () => {
  const sample = readFileSync(join(FORMATS, 'jaeger.skills.sibling_errors.otlp.json'), 'utf8');

  it.each([
    ['JSON.parse', {}],
    ['streaming', { streamThresholdBytes: 0 }],
  ])(
    'truncated JSON (%s): names the line, the column and the JSON path; the spans before the cut are kept',
    async (_m, opts) => {
      const cut = sample.slice(0, sample.indexOf('"oteldemo.PaymentService/Charge"', sample.indexOf('"payment"')) + 10);
      const p = file('truncated.json', cut);
      const e = await failure(spansOf(p, opts));
      expect(e.code).toBe('FAULTLINE_TRACE_MALFORMED');
      const lines = cut.split('\n');
      expect(e.message).toMatch(
        new RegExp(
          `^${p}: line ${lines.length} column \\d+ \\(in resourceSpans\\[1\\]\\.scopeSpans\\[0\\]\\.spans\\[0\\]\\.name\\): invalid JSON: unterminated string$`,
        ),
      );
      const seen: FaultlineInputError[] = [];
      const spans = await spansOf(p, { ...opts, onError: (err) => seen.push(err) });
      expect(seen).toHaveLength(1);
      // Streaming delivers the 4 complete spans of the first resource before the damage; JSON.parse re-parses to locate it.
      expect(spans.map((s) => s.spanId)).toEqual([
        'a1b2c3d4e5f60718',
        'b2c3d4e5f6071829',
        'c3d4e5f60718293a',
        'e5f60718293a4b5c',
      ]);
    },
  );

  it('binary garbage, plain text, an empty file: unknown format, saying what was seen', async () => {
    const bin = file('garbage.bin', Buffer.from([0x00, 0x01, 0xfe, 0xff, 0x13, 0x37, 0x00, 0x42, 0x99]));
    const e1 = await failure(spansOf(bin));
    expect(e1.code).toBe('FAULTLINE_TRACE_UNKNOWN_FORMAT');
    expect(e1.message).toBe(
      `${bin}: not a trace file this reader knows (OTLP/JSON, JSON lines, Jaeger JSON, Tempo JSON, OTLP protobuf): it starts with bytes 00 01 fe ff 13 37 00 42`,
    );
    const csv = file('spans.csv', 'traceId,spanId\n1,2\n');
    expect((await failure(spansOf(csv))).message).toContain('it starts with "traceId,spanId 1,2"');
    const empty = file('empty.json', '');
    expect((await failure(spansOf(empty))).message).toContain('the file is empty');
  });

  it('damaged gzip data', async () => {
    const p = file('broken.json.gz', Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), Buffer.alloc(40, 0xab)]));
    const e = await failure(spansOf(p));
    expect(e.code).toBe('FAULTLINE_TRACE_MALFORMED');
    expect(e.message).toMatch(new RegExp(`^${p}: damaged gzip data`));
  });

  it('a missing file', async () => {
    const e = await failure(spansOf(join(dir, 'nope.json')));
    expect(e.code).toBe('FAULTLINE_FILE_NOT_FOUND');
    expect(e.message).toBe(`${join(dir, 'nope.json')}: no such file`);
  });

  it('a format override that does not match the content', async () => {
    const e = await failure(spansOf(join(FORMATS, 'otlp-json.curl-request.sent-to-tempo.json'), { format: 'jaeger' }));
    expect(e.code).toBe('FAULTLINE_TRACE_UNKNOWN_FORMAT');
    expect(e.message).toContain('expected jaeger but this is otlp-json');
  });

  it('truncated protobuf names the field and byte', async () => {
    const bin = readFileSync(join(FORMATS, 'node-exporter-otlp-proto.request.bin'));
    const p = file('cut.bin', bin.subarray(0, 300));
    const e = await failure(spansOf(p));
    expect(e.code).toBe('FAULTLINE_TRACE_MALFORMED');
    expect(e.message).toMatch(
      /cut\.bin: ExportTraceServiceRequest \(byte 1\): length 587 runs past the end of the message$/,
    );
  });
});

describe('JSON lines', () => {
  const line = (spans: unknown[], svc = 'svc'): string => JSON.stringify(otlpDoc(spans, svc));

  it('a bad line is reported by number; with onError the other lines are still read', async () => {
    const p = file(
      'one-bad.jsonl',
      [
        line([otlpSpan('0000000000000001')]),
        line([otlpSpan('0000000000000002')]),
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId"',
        line([otlpSpan('0000000000000004')]),
      ].join('\n') + '\n',
    );
    const e = await failure(spansOf(p));
    expect(e.code).toBe('FAULTLINE_TRACE_MALFORMED');
    expect(e.message).toBe(
      `${p}: line 3: column 54 (in resourceSpans[0].scopeSpans[0].spans[0]): invalid JSON: unexpected end of file`,
    );
    const errors: FaultlineInputError[] = [];
    const spans = await spansOf(p, { onError: (err) => errors.push(err) });
    expect(spans.map((s) => s.spanId)).toEqual(['0000000000000001', '0000000000000002', '0000000000000004']);
    expect(errors.map((x) => x.message)).toHaveLength(1);
    expect(errors[0]!.message).toContain('line 3');
  });

  it('a line of another shape, and a bad value inside a line, name the line and the path', async () => {
    const p = file(
      'shapes.jsonl',
      [
        line([otlpSpan('0000000000000001')]),
        '{"hello":"world"}',
        line([otlpSpan('0000000000000003', { startTimeUnixNano: 'soon' })]),
      ].join('\n'),
    );
    const errors: string[] = [];
    await spansOf(p, { onError: (err) => errors.push(err.message) });
    expect(errors).toEqual([
      `${p}: line 2: expected OTLP/JSON (resourceSpans), Jaeger JSON (data / traceID) or Tempo JSON (batches / trace), found an object with keys "hello"`,
      `${p}: line 3: resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano: expected unix nanoseconds as a decimal string or number, got "soon"`,
    ]);
  });

  it('a trace spread over lines (and resources) is grouped into one; spans sorted by start', async () => {
    const other = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
    const p = file(
      'spread.jsonl',
      [
        line([otlpSpan('0000000000000002', { startTimeUnixNano: '1700000000000000002' })], 'a'),
        line([otlpSpan('00000000000000b1', {}, other)], 'b'),
        line([otlpSpan('0000000000000001', { startTimeUnixNano: '1700000000000000001' })], 'c'),
      ].join('\n'),
    );
    const traces = await tracesOf([p]);
    expect(traces.map((t) => [t.traceId, t.spans.map((s) => s.spanId)])).toEqual([
      [other, ['00000000000000b1']],
      [T, ['0000000000000001', '0000000000000002']],
    ]);
    expect(traces[1]!.spans.map((s) => s.resource['service.name'])).toEqual(['c', 'a']);
  });

  it('faultline span-record lines and Jaeger/Tempo documents as lines', async () => {
    const rec: SpanRecord = {
      traceId: T,
      spanId: '00000000000000aa',
      name: 'rec',
      kind: 'CLIENT',
      start: 1,
      end: 2,
      attributes: { a: [1, 2] },
      events: [],
      links: [],
      status: { code: 'ERROR', message: 'x' },
      resource: {},
      scope: { name: 'faultline' },
    };
    const jaegerTrace = readFileSync(join(FORMATS, 'jaeger.ui_01.trace.json'), 'utf8').replace(/\s*\n\s*/g, '');
    const tempoV1 = readFileSync(join(FORMATS, 'tempo.api-traces-id.v1.generated.json'), 'utf8').trim();
    const p = file('mixed.jsonl', [JSON.stringify(rec), jaegerTrace, tempoV1].join('\n') + '\n');
    const spans = await spansOf(p);
    expect(spans[0]).toEqual(rec);
    expect(spans).toHaveLength(1 + 5 + 2);
  });

  it('the idle rule holds through a long run of one trace: the trace it outlasted is emitted, its next span starts anew', async () => {
    const tid = (c: string): string => c.repeat(32);
    // idleSpans 3: A, then four spans of B in one line (a run), then A again, 5 spans after its last.
    const p = file(
      'run.jsonl',
      [
        line([otlpSpan('00000000000000a1', {}, tid('a'))]),
        line(['b1', 'b2', 'b3', 'b4'].map((x) => otlpSpan(`00000000000000${x}`, {}, tid('b')))),
        line([otlpSpan('00000000000000a2', {}, tid('a'))]),
      ].join('\n'),
    );
    const traces = await tracesOf([p], { idleSpans: 3 });
    expect(traces.map((t) => `${t.traceId[0]}:${t.spans.length}`)).toEqual(['a:1', 'b:4', 'a:1']);
  });

  it('the idle rule emits a trace once enough other spans went by, and bounds what is held', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 50; i++) {
      const tid = i.toString(16).padStart(32, '0');
      lines.push(line([otlpSpan('0000000000000001', {}, tid), otlpSpan('0000000000000002', {}, tid)]));
    }
    const p = file('many.jsonl', lines.join('\n'));
    const emittedAt: number[] = [];
    let read = 0;
    for await (const t of readTraces([p], { idleSpans: 10 })) {
      expect(t.spans).toHaveLength(2);
      emittedAt.push(read++);
    }
    expect(emittedAt).toHaveLength(50);
  });
});

describe('several files', () => {
  it('a bad file is reported at the end; every trace of the good files is still delivered', async () => {
    const good1 = join(FORMATS, 'jaeger.skills.sibling_errors.otlp.json');
    const bad = file('bad.json', '{"resourceSpans": [ nope ]}');
    const good2 = join(FORMATS, 'tempo.api-traces-id.v1.generated.json');
    const got: string[] = [];
    const e = await failure(
      (async () => {
        for await (const t of readTraces([good1, bad, join(dir, 'missing.jsonl'), good2])) got.push(t.traceId);
      })(),
    );
    expect(got.sort()).toEqual(['5b8efff798038103d269b633813fc60c', '7c4f1a90b3e84d2f9a6c5e8017b3d264']);
    expect(e.message).toBe(
      [
        '2 problems reading traces:',
        `  ${bad}: line 1 column 21 (in resourceSpans[0]): invalid JSON: unexpected character "n"`,
        `  ${join(dir, 'missing.jsonl')}: no such file`,
      ].join('\n'),
    );
    expect((e.details as { errors: unknown[] }).errors).toHaveLength(2);
    const seen: string[] = [];
    const traces = await tracesOf([good1, bad, good2], { onError: (x) => seen.push(x.code) });
    expect(traces).toHaveLength(2);
    expect(seen).toEqual(['FAULTLINE_TRACE_MALFORMED']);
  });
});

describe('big documents are streamed', () => {
  it('an OTLP/JSON document and a Jaeger download read the same streamed as parsed', async () => {
    const rs = [];
    for (let i = 0; i < 400; i++) {
      const tid = (i + 1).toString(16).padStart(32, '0');
      const spans = [];
      for (let k = 0; k < 5; k++) {
        spans.push(
          otlpSpan(
            (k + 1).toString(16).padStart(16, '0'),
            {
              parentSpanId: k === 0 ? '' : '0000000000000001',
              attributes: [
                { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
                { key: 'gen_ai.output', value: { stringValue: `é ✓ \\"quoted\\" ${'x'.repeat(200)}` } },
                { key: 'gen_ai.usage.output_tokens', value: { intValue: String(k * 100) } },
              ],
            },
            tid,
          ),
        );
      }
      rs.push({
        resource: { attributes: [{ key: 'service.name', value: { stringValue: `svc${i}` } }] },
        scopeSpans: [{ scope: { name: 'x' }, spans }],
      });
    }
    const p = file('big.json', JSON.stringify({ resourceSpans: rs }, null, 1));
    const parsed = await spansOf(p);
    const streamed = await spansOf(p, { streamThresholdBytes: 0 });
    expect(parsed).toHaveLength(2000);
    expect(streamed).toEqual(parsed);

    const jaegerTrace = JSON.parse(readFileSync(join(FORMATS, 'jaeger.ui_01.trace.json'), 'utf8')) as unknown;
    const j = file('download.json', JSON.stringify({ data: Array.from({ length: 300 }, () => jaegerTrace) }));
    const jp = await spansOf(j);
    expect(jp).toHaveLength(1500);
    expect(await spansOf(j, { streamThresholdBytes: 0 })).toEqual(jp);
  });

  it('gzip-compressed files are read transparently (streamed)', async () => {
    const src = readFileSync(join(FORMATS, 'node-exporter-otlp-http.json.request.json'));
    const p = file('trace.json.gz', gzipSync(src));
    expect(await spansOf(p)).toEqual(await spansOf(join(FORMATS, 'node-exporter-otlp-http.json.request.json')));
    const jl = file('lines.jsonl.gz', gzipSync(Buffer.concat([src, Buffer.from('\n'), src, Buffer.from('\n')])));
    expect(await spansOf(jl)).toHaveLength(4);
  });
});

describe('OTLP protobuf stream (collector file exporter, format: proto)', () => {
  it('reads length-prefixed messages and reports a truncated tail by byte offset', async () => {
    const bin = readFileSync(join(FORMATS, 'node-exporter-otlp-proto.request.bin'));
    const frame = Buffer.alloc(4);
    frame.writeUInt32BE(bin.length);
    const p = file('stream.binpb', Buffer.concat([frame, bin, frame, bin]));
    const spans = await spansOf(p);
    expect(spans).toHaveLength(4);
    expect(spans[2]).toEqual(spans[0]);
    const cut = file('stream-cut.binpb', Buffer.concat([frame, bin, frame, bin.subarray(0, 100)]));
    const errors: string[] = [];
    expect(await spansOf(cut, { onError: (e) => errors.push(e.message) })).toHaveLength(2);
    expect(errors).toEqual([
      `${cut}: byte ${4 + bin.length}: truncated: 104 bytes left over after the last complete message`,
    ]);
  });
});

describe('streaming hand-out (bounded memory)', () => {
  it('hands each OTLP span out as soon as it is complete and keeps none of them in the document', async () => {
    const text = JSON.stringify(
      otlpDoc([otlpSpan('0000000000000001'), otlpSpan('0000000000000002'), otlpSpan('0000000000000003')]),
    );
    const events: string[] = [];
    let rest: unknown;
    const parser = new JsonStreamParser({
      select: selectOtlp,
      onSelect: (_v, path) => events.push(path.join('.')),
      onDocument: (d) => (rest = d),
    });
    const cut = text.indexOf('0000000000000003');
    parser.write(text.slice(0, cut));
    // Two spans are out before the third has even been read.
    expect(events).toEqual(['resourceSpans.0.scopeSpans.0.spans.0', 'resourceSpans.0.scopeSpans.0.spans.1']);
    parser.write(text.slice(cut));
    parser.end();
    expect(events.slice(2)).toEqual(['resourceSpans.0.scopeSpans.0.spans.2', 'resourceSpans.0']);
    expect(rest).toEqual({ resourceSpans: [] });
  });

  it('a resource written after its spans still reaches them (deferred to the end of the ResourceSpans)', async () => {
    const doc = `{"resourceSpans":[{"scopeSpans":[{"spans":[${JSON.stringify(otlpSpan('0000000000000001'))}],"scope":{"name":"late"}}],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"late-svc"}}]}}]}`;
    const p = file('late-resource.json', doc);
    const streamed = await spansOf(p, { streamThresholdBytes: 0 });
    expect(streamed).toEqual(await spansOf(p));
    expect(streamed[0]).toMatchObject({ resource: { 'service.name': 'late-svc' }, scope: { name: 'late' } });
  });
});

describe('JSON lines: one JSON.parse per line, the tokenizer only where a line needs it', () => {
  const line = (spans: unknown[], svc = 'svc'): string => JSON.stringify(otlpDoc(spans, svc));
  const many = (n: number, text: string): unknown[] =>
    Array.from({ length: n }, (_, i) =>
      otlpSpan((i + 1).toString(16).padStart(16, '0'), {
        attributes: [{ key: 'gen_ai.output', value: { stringValue: `${text} ${i}` } }],
      }),
    );

  it('a line past the line limit is streamed through the tokenizer and reads the same', async () => {
    const long = line(many(300, 'é ✓ '.repeat(200)));
    const p = file(
      'long-line.jsonl',
      [line([otlpSpan('00000000000000a1')]), long, line([otlpSpan('00000000000000a2')])].join('\n') + '\n',
    );
    const parsed = await spansOf(p);
    expect(parsed).toHaveLength(302);
    // A limit below the long line's size (about 1.3 MB, read in 1 MiB chunks): it goes through the tokenizer.
    expect(await spansOf(p, { streamThresholdBytes: 64 * 1024 })).toEqual(parsed);
    // And a damaged long line keeps what came before its damage, naming the line, column and path.
    const bad = file(
      'long-bad.jsonl',
      [
        line([otlpSpan('00000000000000a1')]),
        long.slice(0, -5) + '!' + long.slice(-4),
        line([otlpSpan('00000000000000a3')]),
      ].join('\n'),
    );
    const errors: string[] = [];
    const got = await spansOf(bad, { streamThresholdBytes: 64 * 1024, onError: (e) => errors.push(e.message) });
    expect(got.map((s) => s.spanId).slice(-1)).toEqual(['00000000000000a3']);
    expect(got).toHaveLength(302);
    expect(errors).toEqual([
      `${bad}: line 2: column ${long.length - 4} (in resourceSpans[0].scopeSpans[0]): invalid JSON: expected ',' or '}', got "!"`,
    ]);
  });

  it('lines split across chunks, multi-byte characters on a chunk boundary, CRLF, blank lines and a BOM', async () => {
    // 1 MiB chunks: pad the first line so that a 3-byte character straddles the boundary.
    const first = line([otlpSpan('00000000000000b1', { name: '✓'.repeat(10) })]);
    const pad = line([
      otlpSpan('00000000000000b0', { name: 'x'.repeat(1024 * 1024 - 2 - Buffer.byteLength(first) - 200) }),
    ]);
    const text =
      '\uFEFF' + pad + '\r\n\r\n' + line([otlpSpan('00000000000000b2', { name: '✓'.repeat(400) })]) + '\n  \n' + first;
    const p = file('boundaries.jsonl', text);
    const spans = await spansOf(p);
    expect(spans.map((s) => s.spanId)).toEqual(['00000000000000b0', '00000000000000b2', '00000000000000b1']);
    expect(spans[1]!.name).toBe('✓'.repeat(400));
    expect(spans[2]!.name).toBe('✓'.repeat(10));
  });
});

describe('"__proto__" is a key like any other', () => {
  const proto = (attrs: Record<string, unknown>): void => {
    expect(Object.getPrototypeOf(attrs)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(attrs, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(attrs, '__proto__')?.value).toBe('boom');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  };

  it('the streaming tokenizer makes it an own key, as JSON.parse does', () => {
    const text = '{"__proto__":{"polluted":true},"a":{"__proto__":"boom"}}';
    let doc: Record<string, unknown> | undefined;
    const parser = new JsonStreamParser({ onDocument: (d) => (doc = d as Record<string, unknown>) });
    parser.write(text);
    parser.end();
    expect(doc).toEqual(JSON.parse(text));
    expect(Object.getPrototypeOf(doc)).toBe(Object.prototype);
    expect(Object.keys(doc!)).toEqual(['__proto__', 'a']);
    expect((doc as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('as an attribute key of a span: OTLP key-values, kvlists, plain attribute objects; parsed, streamed and as lines', async () => {
    const span = otlpSpan('00000000000000c1', {
      attributes: [
        { key: '__proto__', value: { stringValue: 'boom' } },
        { key: 'nested', value: { kvlistValue: { values: [{ key: '__proto__', value: { stringValue: 'x' } }] } } },
      ],
    });
    const doc = file('proto.json', JSON.stringify(otlpDoc([span])));
    for (const opts of [{}, { streamThresholdBytes: 0 }]) {
      const [s] = await spansOf(doc, opts);
      proto(s!.attributes);
      expect(s!.attributes.nested).toBe('{"__proto__":"x"}');
    }
    const rec = {
      traceId: T,
      spanId: '00000000000000c2',
      name: 'rec',
      start: 1,
      end: 2,
      attributes: { __proto__: 'boom' },
    };
    // Object literals treat __proto__ specially: write the line as text.
    const recLine = JSON.stringify(rec).replace('"attributes":{}', '"attributes":{"__proto__":"boom"}');
    const lines = file('proto.jsonl', [recLine, JSON.stringify(otlpDoc([span]))].join('\n') + '\n');
    for (const opts of [{}, { streamThresholdBytes: 16 }]) {
      const spans = await spansOf(lines, opts);
      expect(spans).toHaveLength(2);
      for (const s of spans) proto(s.attributes);
    }
    const tempo = file(
      'proto.tempo.json',
      `{"trace":{"traceId":"${T}","services":[{"serviceName":"s","scopes":[{"name":"x","spans":[{"spanId":"00000000000000c3","name":"n","startTimeUnixNano":"1","attributes":{"__proto__":"boom"}}]}]}]}}`,
    );
    for (const opts of [{}, { streamThresholdBytes: 0 }]) proto((await spansOf(tempo, opts))[0]!.attributes);
  });
});
