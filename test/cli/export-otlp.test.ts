/**
 * Issue 17 Build 3: `faultline diagnose --export otlp` sends each diagnosis back as a span of the trace it explains,
 * received here by `faultline collect` (both real bin runs, the OTel OTLP/HTTP exporters in between, protobuf and
 * JSON): a child of and linked to the faulty span, with the diagnosis as attributes. Reading the traces back with
 * the diagnosis spans among them gives the same diagnoses again.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readTraces } from '../../src/traces/read';
import type { SpanRecord } from '../../src/traces/model';
import { TraceBuilder } from '../diagnosers/support/builder';
import { labelledSet } from '../diagnosers/support/labelled';
import { otlpJson } from '../diagnosers/support/otlp-file';
import { cli, ensureBuilt, start } from '../campaign/support/bin';

let dir = '';
let file = '';

beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'faultline-export-'));
  const b = new TraceBuilder();
  labelledSet(b, { seed: 3, perFault: 1, clean: 3 });
  file = join(dir, 'traces.json');
  writeFileSync(file, otlpJson(b.finished));
}, 120_000);

async function collect(out: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const c = start(['collect', '--port', '0', '--out', out], {}, 120_000);
  let text = '';
  const url = await new Promise<string>((resolve, reject) => {
    c.child.stdout!.on('data', (d: Buffer) => {
      text += d.toString();
      const m = /on (http:\/\/127\.0\.0\.1:\d+)\/v1\/traces/.exec(text);
      if (m) resolve(m[1]!);
    });
    c.done.then(() => reject(new Error(`collect ended: ${text}`)), reject);
  });
  return {
    url,
    stop: async () => {
      c.child.kill('SIGTERM');
      await c.done;
    },
  };
}

interface D {
  traceId: string;
  faultType: string;
  spanId: string | null;
  step: number | null;
  stepKind: string | null;
  confidence: number;
  evidence: string[];
}

describe('diagnose --export otlp', () => {
  for (const protocol of ['http/protobuf', 'http/json']) {
    it(`each diagnosis arrives at faultline collect as a span linked to the faulty span (${protocol})`, async () => {
      const out = join(dir, `collected-${protocol.replace('/', '-')}.jsonl`);
      const collector = await collect(out);
      const r = await cli(['diagnose', file, '-f', 'jsonl', '--export', 'otlp'], {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      });
      await collector.stop();
      expect(r.code, r.stderr).toBe(0);
      const diagnoses = r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as D);
      const original = new Map<string, SpanRecord[]>();
      for await (const t of readTraces([file])) original.set(t.traceId, t.spans);
      const spans: SpanRecord[] = [];
      for await (const t of readTraces([out])) spans.push(...t.spans);
      expect(spans).toHaveLength(diagnoses.length);
      expect(diagnoses.some((d) => d.faultType !== 'none')).toBe(true);
      for (const d of diagnoses) {
        const s = spans.find((x) => x.traceId === d.traceId)!;
        expect(s, d.traceId).toBeDefined();
        expect(s.name).toBe('faultline.diagnosis');
        expect(s.scope.name).toBe('faultline/diagnose');
        expect(s.attributes).toMatchObject({
          'faultline.diagnosis.fault_type': d.faultType,
          'faultline.diagnosis.confidence': d.confidence,
          'faultline.diagnosis.diagnoser': 'rule',
        });
        expect(s.attributes['faultline.diagnosis.evidence']).toEqual(d.evidence);
        const spansOfTrace = original.get(d.traceId)!;
        if (d.spanId !== null) {
          const faulty = spansOfTrace.find((x) => x.spanId === d.spanId)!;
          expect(s.parentSpanId).toBe(d.spanId);
          expect(s.links.map((l) => [l.traceId, l.spanId])).toEqual([[d.traceId, d.spanId]]);
          expect(s.attributes['faultline.diagnosis.span_id']).toBe(d.spanId);
          if (d.step !== null) expect(s.attributes['faultline.diagnosis.step']).toBe(d.step);
          // Beside what it explains: the faulty span's time.
          expect(s.start).toBeCloseTo(faulty.start, 0);
        } else {
          expect(s.parentSpanId).toBe(spansOfTrace.find((x) => x.parentSpanId === undefined)!.spanId);
          expect(s.links).toEqual([]);
        }
        // Never ground truth.
        expect(Object.keys(s.attributes).some((k) => k.startsWith('faultline.fault.'))).toBe(false);
      }
      // Read back together with the traces (as from a backend), the diagnosis spans change nothing.
      const again = await cli(['diagnose', file, out, '-f', 'jsonl']);
      expect(again.stdout.trim().split('\n').sort()).toEqual(r.stdout.trim().split('\n').sort());
    }, 60_000);
  }

  it('a collector that is down: the diagnoses are printed, the failed export is one line and exit 1', async () => {
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((res) => probe.listen(0, '127.0.0.1', res));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((res) => probe.close(() => res()));
    const r = await cli(
      ['diagnose', file, '-f', 'jsonl', '--export', 'otlp', '--otlp-endpoint', `http://127.0.0.1:${port}`],
      { OTEL_EXPORTER_OTLP_TIMEOUT: '1500' },
      60_000,
    );
    expect(r.code).toBe(1);
    expect(r.stdout.trim().split('\n').length).toBeGreaterThan(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^✖ --export otlp: 0/\\d+ diagnosis spans sent to http://127\\.0\\.0\\.1:${port}/v1/traces; the rest failed: `,
        'm',
      ),
    );
  }, 60_000);
});
