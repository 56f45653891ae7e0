/**
 * Fleet scale: three `faultline collect --diagnose` processes behind a router that does what the OTel Collector's
 * `loadbalancing` exporter does (routing_key traceID, one OTLP/gRPC exporter per backend — here the real
 * @opentelemetry/exporter-trace-otlp-grpc — with a queue and retries per backend). Traces arrive in many batches,
 * out of order; one instance is restarted gracefully mid-stream (SIGTERM saves its open traces, the new process on
 * the same ports takes them back). Every trace is diagnosed exactly once, as a whole (the diagnosis `faultline
 * diagnose` gives the stored trace), no span is lost, and the per-fault-type counters exported over OTLP add up.
 */
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import type { Diagnosis } from '../../src/diagnosers/types';
import { diagnosisJson } from '../../src/report/diagnoses';
import { readTraces } from '../../src/traces/read';
import { TraceBuilder } from '../diagnosers/support/builder';
import { labelledSet } from '../diagnosers/support/labelled';
import { freePort, startCollect, type CollectProcess } from './collect-process';
import { scatter } from './scatter';

let dir = '';
let metricsServer: Server;
let metricsUrl = '';
const metricBodies: unknown[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'faultline-fleet-'));
  // Where the instances export their counters (OTLP/HTTP JSON, as OTLPMetricExporter sends by default).
  metricsServer = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      if (req.url === '/v1/metrics') metricBodies.push(JSON.parse(Buffer.concat(parts).toString('utf8')));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => metricsServer.listen(0, '127.0.0.1', () => r()));
  metricsUrl = `http://127.0.0.1:${(metricsServer.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => metricsServer.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

const diagnosesOf = (file: string): Diagnosis[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Diagnosis)
    : [];

interface MetricPoint {
  attributes: { key: string; value: { stringValue?: string } }[];
  asInt?: number | string;
  asDouble?: number;
}

/** The last cumulative `faultline.diagnoses` of every process, summed by fault type. */
function counted(): Record<string, number> {
  const last = new Map<string, Record<string, number>>();
  for (const body of metricBodies as {
    resourceMetrics: {
      resource: { attributes: { key: string; value: { stringValue?: string } }[] };
      scopeMetrics: { metrics: { name: string; sum?: { dataPoints: MetricPoint[] } }[] }[];
    }[];
  }[]) {
    for (const rm of body.resourceMetrics) {
      const instance = rm.resource.attributes.find((a) => a.key === 'service.instance.id')?.value.stringValue ?? '?';
      const byFault: Record<string, number> = {};
      for (const sm of rm.scopeMetrics)
        for (const m of sm.metrics) {
          if (m.name !== 'faultline.diagnoses') continue;
          for (const p of m.sum?.dataPoints ?? []) {
            const fault =
              p.attributes.find((a) => a.key === 'faultline.diagnosis.fault_type')?.value.stringValue ?? '?';
            byFault[fault] = (byFault[fault] ?? 0) + Number(p.asDouble ?? p.asInt ?? 0);
          }
        }
      last.set(instance, byFault);
    }
  }
  const total: Record<string, number> = {};
  for (const byFault of last.values()) for (const [k, v] of Object.entries(byFault)) total[k] = (total[k] ?? 0) + v;
  return total;
}

describe('faultline collect --diagnose behind a trace-id load balancer', () => {
  it('three instances, batches out of order, a graceful restart mid-stream: every trace diagnosed once, nothing lost', async () => {
    const builder = new TraceBuilder();
    labelledSet(builder, { seed: 33, perFault: 2, clean: 20 });
    const spans = builder.finished;
    const traceIds = [...new Set(spans.map((s) => s.spanContext().traceId))];
    const batches = scatter(spans, 12);
    const N = 3;
    const ports = await Promise.all(
      Array.from({ length: N }, async () => ({ http: await freePort(), grpc: await freePort() })),
    );
    const file = (i: number, what: string): string => join(dir, `${what}-${i}.jsonl`);
    const start = (i: number): Promise<CollectProcess> =>
      startCollect(
        [
          '--port',
          String(ports[i]!.http),
          '--grpc-port',
          String(ports[i]!.grpc),
          '--diagnose',
          '--trace-idle',
          '3s',
          '--out',
          file(i, 'traces'),
          '--diagnoses',
          file(i, 'diagnoses'),
          '--state',
          file(i, 'state'),
          '--drain-timeout',
          '2s',
          '--metrics',
        ],
        { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${metricsUrl}/v1/metrics`, OTEL_METRIC_EXPORT_INTERVAL: '600000' },
      );
    const instances = await Promise.all(Array.from({ length: N }, (_, i) => start(i)));

    // The router: trace id → backend, a queue per backend, retried until the backend takes the batch.
    const exporters = ports.map(
      (p) =>
        new GrpcExporter({
          url: `http://127.0.0.1:${p.grpc}`,
          compression: CompressionAlgorithm.GZIP,
          timeoutMillis: 2000,
        }),
    );
    const route = (traceId: string): number => parseInt(traceId.slice(0, 8), 16) % N;
    const queues: Promise<void>[] = exporters.map(() => Promise.resolve());
    let retries = 0;
    const send = (i: number, batch: ReadableSpan[]): Promise<void> => {
      const attempt = (): Promise<void> =>
        new Promise<void>((resolve) =>
          exporters[i]!.export(batch, (r) =>
            resolve(r.code === ExportResultCode.SUCCESS ? undefined : Promise.reject(r.error)),
          ),
        ).catch(async () => {
          retries++;
          await new Promise((r) => setTimeout(r, 200));
          return attempt();
        });
      queues[i] = queues[i]!.then(attempt);
      return queues[i]!;
    };
    const dispatch = async (from: number, to: number): Promise<void> => {
      for (const batch of batches.slice(from, to)) {
        const byBackend = new Map<number, ReadableSpan[]>();
        for (const s of batch) {
          const i = route(s.spanContext().traceId);
          byBackend.set(i, [...(byBackend.get(i) ?? []), s]);
        }
        for (const [i, b] of byBackend) void send(i, b);
        await new Promise((r) => setTimeout(r, 4));
      }
    };

    const half = Math.floor(batches.length / 2);
    await dispatch(0, half);
    await Promise.all(queues);
    // Instance 1 restarts while the second half is being sent: its batches wait in the router's queue meanwhile.
    const rest = dispatch(half, batches.length);
    const first = instances[1]!;
    const stopped = await first.stop('SIGTERM');
    expect(stopped.code).toBe(0);
    instances[1] = await start(1);
    await rest;
    await Promise.all(queues);

    const all = (): Diagnosis[] => Array.from({ length: N }, (_, i) => diagnosesOf(file(i, 'diagnoses'))).flat();
    const deadline = Date.now() + 30_000;
    while (all().length < traceIds.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    for (const c of instances) expect((await c.stop('SIGTERM')).code).toBe(0);
    await Promise.all(exporters.map((e) => e.shutdown()));

    // Every trace exactly once, on the instance it was routed to.
    const got = all();
    expect(got.map((d) => d.traceId).sort()).toEqual([...traceIds].sort());
    for (let i = 0; i < N; i++) for (const d of diagnosesOf(file(i, 'diagnoses'))) expect(route(d.traceId)).toBe(i);

    // The restart really happened mid-trace: open traces were saved, and taken back by the new process.
    expect(first.stdout()).toMatch(/[1-9]\d* open traces? saved to /);
    expect(instances[1]!.stdout()).toMatch(/took back [1-9]\d* open traces?/);
    expect(retries).toBeGreaterThan(0);

    // No span lost, and each diagnosis is the one of the whole stored trace.
    const outs = Array.from({ length: N }, (_, i) => file(i, 'traces'));
    const stored = [];
    for await (const t of readTraces(outs, { idleSpans: 1e9 })) stored.push(t);
    const storedIds = new Set(stored.flatMap((t) => t.spans.map((s) => s.spanId)));
    expect(spans.every((s) => storedIds.has(s.spanContext().spanId))).toBe(true);
    const rule = createDiagnoser('rule');
    const expected = new Map<string, Record<string, unknown>>();
    for (const t of stored) expected.set(t.traceId, diagnosisJson(await diagnoseTrace(rule, t)));
    for (const d of got) expect(d).toEqual(expected.get(d.traceId));
    expect(got.filter((d) => d.faultType !== 'none').length).toBeGreaterThan(20);

    // The counters the four processes exported at shutdown add up to the diagnoses written.
    const byFault: Record<string, number> = {};
    for (const d of got) byFault[d.faultType] = (byFault[d.faultType] ?? 0) + 1;
    expect(counted()).toEqual(byFault);
  }, 120_000);
});
