/**
 * The collector's online path in one process: traces assembled from spans that arrive in many batches and out of
 * order (real OTLP exporters over HTTP and gRPC), each diagnosed exactly once after its idle time with the
 * diagnosis `faultline diagnose` gives the complete trace; late spans never start a second diagnosis; a state file
 * carries the open traces over a restart. And the gRPC transport's answers.
 */
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startCollector, type Collector } from '../../src/traces/collect';
import { TraceAssembler } from '../../src/traces/assemble';
import { startOnlineDiagnosis, type OnlineDiagnosis } from '../../src/traces/collect-diagnose';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import { diagnosisJson } from '../../src/report/diagnoses';
import { readTraces } from '../../src/traces/read';
import type { Diagnosis } from '../../src/diagnosers/types';
import { TraceBuilder } from '../diagnosers/support/builder';
import { labelledSet } from '../diagnosers/support/labelled';
import { FORMATS } from '../support/shared';
import { toTraces } from '../support/to-traces';
import { scatter } from './scatter';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'faultline-online-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function exportTo(
  exporter: { export(spans: ReadableSpan[], cb: (r: { code: number; error?: Error }) => void): void },
  spans: ReadableSpan[],
): Promise<void> {
  return new Promise((resolve, reject) =>
    exporter.export(spans, (r) =>
      r.code === ExportResultCode.SUCCESS ? resolve() : reject(r.error ?? new Error('export failed')),
    ),
  );
}

async function until(fn: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const lines = (file: string): Diagnosis[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Diagnosis)
    : [];

/** What `faultline diagnose` says about each complete trace of a stored file. */
/** Each trace's diagnosis as the diagnoses file carries it (the JSON line form of report/diagnoses.ts). */
async function offline(file: string): Promise<Map<string, Record<string, unknown>>> {
  const rule = createDiagnoser('rule');
  const out = new Map<string, Record<string, unknown>>();
  for await (const t of readTraces([file], { idleSpans: 1e9 }))
    out.set(t.traceId, diagnosisJson(await diagnoseTrace(rule, t)));
  return out;
}

describe('collect --diagnose in one process', () => {
  let collector: Collector | undefined;
  let online: OnlineDiagnosis | undefined;
  afterEach(async () => {
    await collector?.close();
    await online?.close();
    collector = undefined;
    online = undefined;
  });

  it('spans in many batches, out of order, over gRPC and HTTP: each trace diagnosed once, as a whole; late spans do not count twice', async () => {
    const builder = new TraceBuilder();
    labelledSet(builder, { seed: 21, perFault: 1, clean: 6 });
    const batches = scatter(builder.finished, 4);
    const out = join(dir, 'traces.jsonl');
    const diagnoses = join(dir, 'diagnoses.jsonl');
    online = await startOnlineDiagnosis({ out: diagnoses });
    const o = online;
    const assembler = new TraceAssembler({ idleMs: 1500, onTrace: (t) => o.diagnose(t) });
    assembler.start();
    collector = await startCollector({ port: 0, grpcPort: 0, out, onSpans: (s) => assembler.add(s) });
    const grpc = new GrpcExporter({ url: collector.grpcUrl!, compression: CompressionAlgorithm.GZIP });
    const proto = new ProtoExporter({ url: collector.tracesUrl });
    const traceIds = new Set(builder.finished.map((s) => s.spanContext().traceId));
    for (let i = 0; i < batches.length; i++) await exportTo(i % 2 === 0 ? grpc : proto, batches[i]!);
    await until(() => online!.stats.diagnosed === traceIds.size, 10_000, 'every trace diagnosed');
    // A late copy of a batch (an exporter retrying after a lost answer): stored, not diagnosed again.
    await exportTo(proto, batches[0]!);
    await new Promise((r) => setTimeout(r, 1600));
    assembler.tick();
    await collector.close();
    assembler.stop();
    await online.close();
    const got = lines(diagnoses);
    expect(got.map((d) => d.traceId).sort()).toEqual([...traceIds].sort());
    expect(assembler.stats).toMatchObject({ late: batches[0]!.length, openTraces: 0, forced: 0 });
    // Each online diagnosis is the one of the complete trace.
    const expected = await offline(out);
    for (const d of got) expect(d).toEqual(expected.get(d.traceId));
    expect(got.filter((d) => d.faultType !== 'none').length).toBeGreaterThan(10);
    await grpc.shutdown();
    await proto.shutdown();
  }, 30_000);

  it('a state file carries the open traces over a restart: saved on shutdown, taken back, completed once', async () => {
    const builder = new TraceBuilder();
    labelledSet(builder, { seed: 8, perFault: 0, clean: 5 });
    const batches = scatter(builder.finished, 9);
    const state = join(dir, 'state.jsonl');
    const diagnoses = join(dir, 'diagnoses.jsonl');
    const done: string[] = [];
    const first = new TraceAssembler({ idleMs: 60_000, onTrace: (t) => done.push(t.traceId) });
    const half = Math.floor(batches.length / 2);
    for (const b of batches.slice(0, half)) first.add(toTraces(b).flatMap((t) => t.spans));
    first.tick();
    await first.save(state);
    expect(done).toEqual([]);
    online = await startOnlineDiagnosis({ out: diagnoses });
    const o = online;
    const second = new TraceAssembler({ idleMs: 200, onTrace: (t) => o.diagnose(t) });
    expect(await second.load(state)).toEqual({ traces: first.stats.openTraces, spans: first.stats.heldSpans });
    for (const b of batches.slice(half)) second.add(toTraces(b).flatMap((t) => t.spans));
    await new Promise((r) => setTimeout(r, 300));
    second.tick();
    await online.close();
    online = undefined;
    const got = lines(diagnoses);
    const all = new Set(builder.finished.map((s) => s.spanContext().traceId));
    expect(got.map((d) => d.traceId).sort()).toEqual([...all].sort());
    expect(second.stats.completed).toBe(all.size);
    await expect(
      new TraceAssembler({ onTrace: () => undefined }).load(join(FORMATS, 'node-exporter-otlp-http.json.request.json')),
    ).rejects.toThrow(/not a faultline collect state file/);
  }, 30_000);

  it('bounded: past maxSpans the traces idle longest are completed early', () => {
    const done: string[] = [];
    const a = new TraceAssembler({
      idleMs: 60_000,
      maxSpans: 4,
      onTrace: (t) => done.push(`${t.traceId}:${t.spans.length}`),
    });
    const span = (traceId: string, spanId: string) => ({
      traceId,
      spanId,
      name: 'x',
      kind: 'INTERNAL' as const,
      start: 1,
      end: 2,
      attributes: {},
      events: [],
      links: [],
      status: { code: 'UNSET' as const },
      resource: {},
      scope: { name: 's' },
    });
    a.add([span('a', '1'), span('a', '2'), span('b', '1')]);
    a.add([span('c', '1'), span('c', '2')]);
    expect(done).toEqual(['a:2']);
    expect(a.stats).toMatchObject({ forced: 1, heldSpans: 3, openTraces: 2 });
  });
});

describe('the OTLP/gRPC transport', () => {
  let collector: Collector;
  beforeEach(async () => {
    collector = await startCollector({ port: 0, grpcPort: 0, out: join(dir, 'g.jsonl'), maxBodyBytes: 64 * 1024 });
  });
  afterEach(() => collector.close());

  async function call(
    path: string,
    body: Buffer,
    headers: Record<string, string> = {},
  ): Promise<{ status?: string; message?: string; data: Buffer }> {
    const client = http2.connect(collector.grpcUrl!);
    try {
      return await new Promise((resolve, reject) => {
        const req = client.request({
          ':method': 'POST',
          ':path': path,
          'content-type': 'application/grpc',
          te: 'trailers',
          ...headers,
        });
        const chunks: Buffer[] = [];
        let status: string | undefined;
        let message: string | undefined;
        req.on('response', (h) => {
          if (h['grpc-status'] !== undefined)
            [status, message] = [String(h['grpc-status']), decodeURIComponent(String(h['grpc-message'] ?? ''))];
        });
        req.on('trailers', (h) => {
          [status, message] = [String(h['grpc-status']), decodeURIComponent(String(h['grpc-message'] ?? ''))];
        });
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => resolve({ status, message, data: Buffer.concat(chunks) }));
        req.on('error', reject);
        req.end(body);
      });
    } finally {
      client.close();
    }
  }
  const frame = (msg: Buffer, compressed = false): Buffer => {
    const h = Buffer.alloc(5);
    h[0] = compressed ? 1 : 0;
    h.writeUInt32BE(msg.length, 1);
    return Buffer.concat([h, msg]);
  };
  const EXPORT = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

  it('OK with an empty response for a plain and a gzip message; INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNIMPLEMENTED otherwise', async () => {
    const bin = readFileSync(join(FORMATS, 'node-exporter-otlp-proto.request.bin'));
    expect(await call(EXPORT, frame(bin))).toEqual({ status: '0', message: '', data: Buffer.from([0, 0, 0, 0, 0]) });
    expect((await call(EXPORT, frame(gzipSync(bin), true), { 'grpc-encoding': 'gzip' })).status).toBe('0');
    expect(collector.stats).toMatchObject({ requests: 2, spans: 4 });
    const bad = await call(EXPORT, frame(Buffer.from([0x0a, 0xff, 0xff, 0x01])));
    expect(bad.status).toBe('3');
    expect(bad.message).toContain('invalid');
    expect((await call(EXPORT, frame(gzipSync(Buffer.alloc(1024 * 1024))), { 'grpc-encoding': 'gzip' })).status).toBe(
      '3',
    ); // flag says plain
    const bomb = await call(EXPORT, frame(gzipSync(Buffer.alloc(1024 * 1024)), true), { 'grpc-encoding': 'gzip' });
    expect(bomb).toMatchObject({
      status: '8',
      message: expect.stringContaining('decompressed message larger than 65536 bytes'),
    });
    expect((await call(EXPORT, frame(bin, true), { 'grpc-encoding': 'snappy' })).status).toBe('12');
    expect((await call('/opentelemetry.proto.collector.metrics.v1.MetricsService/Export', frame(bin))).status).toBe(
      '12',
    );
    expect(await readTraces([join(dir, 'g.jsonl')]).next()).toMatchObject({ value: { spans: expect.any(Array) } });
  });
});
