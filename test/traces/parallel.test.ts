/**
 * mapTraces on worker threads gives what readTraces gives in one thread: the same traces (the grouping rule of
 * group.ts, across blocks and files), in the same order, with the same errors at the same lines; a failing task or
 * a consumer that stops early ends the run instead of hanging it. Runs over the compiled package (workers load
 * JavaScript).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TraceBuilder } from '../diagnosers/support/builder';
import { labelledSet } from '../diagnosers/support/labelled';
import { built } from './dist';

type Parallel = typeof import('../../src/traces/parallel');
type Read = typeof import('../../src/traces/read');
type Diagnosis = import('../../src/diagnosers/types').Diagnosis;

interface Summary {
  traceId: string;
  spans: string[];
  threadId: number;
}

let dir = '';
let mapTraces: Parallel['mapTraces'];
let readTraces: Read['readTraces'];
const TASK = { module: join(__dirname, 'fixtures', 'summary-task.cjs'), name: 'summary' };

beforeAll(() => {
  const parallel = built('src/traces/parallel');
  ({ mapTraces } = require(parallel) as Parallel);
  ({ readTraces } = require(built('src/traces/read')) as Read);
  dir = mkdtempSync(join(tmpdir(), 'faultline-parallel-'));
}, 300_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A small deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const hex = (n: number, w: number): string => n.toString(16).padStart(w, '0');
const span = (trace: number, id: number, start: number): Record<string, unknown> => ({
  traceId: hex(trace + 1, 32),
  spanId: hex(trace * 100 + id + 1, 16),
  name: `s${id}`,
  kind: 1,
  startTimeUnixNano: `${1_700_000_000_000 + start}000000`,
  endTimeUnixNano: `${1_700_000_000_000 + start + 5}000000`,
  attributes: [{ key: 'gen_ai.output', value: { stringValue: `text ✓ ${'y'.repeat(40 + (id % 7) * 30)}` } }],
});
const line = (spans: unknown[]): string =>
  JSON.stringify({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: 't' }, spans }] }] });

/**
 * Interleaved traces as an exporter fleet writes them: a trace's spans over several lines near each other, out of
 * order, some traces coming back after a long gap (split by the idle rule), some damaged lines.
 */
function fleetLines(seed: number, traces: number, firstTrace = 0): string[] {
  const r = rng(seed);
  const pending: Record<string, unknown>[] = [];
  const lines: string[] = [];
  let next = firstTrace;
  const late: Record<string, unknown>[] = [];
  while (next < firstTrace + traces || pending.length > 0) {
    while (pending.length < 30 && next < firstTrace + traces) {
      const n = 1 + Math.floor(r() * 8);
      for (let k = 0; k < n; k++) (r() < 0.03 ? late : pending).push(span(next, k, Math.floor(r() * 1000)));
      next++;
    }
    const take = 1 + Math.floor(r() * 9);
    const batch: unknown[] = [];
    for (let k = 0; k < take && pending.length > 0; k++)
      batch.push(pending.splice(Math.floor(r() * pending.length), 1)[0]);
    lines.push(line(batch));
    if (r() < 0.01)
      lines.push(
        [
          '{"resourceSpans": [ nope',
          '{"hello":"world"}',
          line([{ ...span(next, 0, 0), startTimeUnixNano: 'soon' }]),
          '',
        ][Math.floor(r() * 4)]!,
      );
  }
  for (let i = 0; i < late.length; i += 3) lines.push(line(late.slice(i, i + 3)));
  return lines;
}

async function collect<T>(gen: AsyncIterable<T>): Promise<{ out: T[]; error?: unknown }> {
  const out: T[] = [];
  try {
    for await (const x of gen) out.push(x);
  } catch (error) {
    return { out, error };
  }
  return { out };
}

describe('mapTraces on worker threads', () => {
  it('the same traces, order and errors as in one thread, across blocks, files, gzip and the idle rule', async () => {
    const a = join(dir, 'fleet-a.jsonl');
    const b = join(dir, 'fleet-b.jsonl.gz');
    writeFileSync(a, fleetLines(1, 900).join('\n') + '\n');
    // The second file continues traces of the first (a file rotated mid-trace), gzip-compressed, no final newline.
    writeFileSync(b, gzipSync(fleetLines(2, 400, 880).join('\n')));
    const opts = { idleSpans: 60, blockBytes: 8 * 1024 };
    const one = await collect(mapTraces<Summary>([a, b], TASK, { ...opts, workers: 0 }));
    const two = await collect(mapTraces<Summary>([a, b], TASK, { ...opts, workers: 2 }));
    const strip = (xs: Summary[]): Omit<Summary, 'threadId'>[] => xs.map(({ threadId: _t, ...rest }) => rest);
    expect(strip(two.out)).toEqual(strip(one.out));
    expect(one.out.length).toBeGreaterThan(1200);
    // What readTraces itself yields, trace for trace.
    const direct = await collect(readTraces([a, b], { idleSpans: 60 }));
    expect(strip(two.out)).toEqual(
      direct.out.map((t) => ({ traceId: t.traceId, spans: t.spans.map((s) => s.spanId) })),
    );
    // Both the workers and this thread (traces whose pieces lie in several blocks) did work.
    expect(two.out.filter((s) => s.threadId !== 0).length).toBeGreaterThan(100);
    // The input was cut into many blocks, shared by both workers: their traces alternate in the output.
    const threads = two.out.map((s) => s.threadId).filter((t) => t !== 0);
    expect(new Set(threads).size).toBe(2);
    expect(threads.filter((t, i) => i > 0 && t !== threads[i - 1]).length).toBeGreaterThan(20);
    expect(two.out.some((s) => s.threadId === 0)).toBe(true);
    // Traces split by the idle rule come out as two records with the same id, in both.
    const ids = one.out.map((s) => s.traceId);
    expect(new Set(ids).size).toBeLessThan(ids.length);
    // The same problems, at the same lines, thrown together after the last trace.
    expect((two.error as Error).message).toBe((one.error as Error).message);
    expect((one.error as Error).message).toMatch(/problems reading traces:\n {2}.*fleet-a\.jsonl: line \d+/);
  }, 60_000);

  it('blocks of the default size: a 12 MB file is shared by the workers block by block', async () => {
    const p = join(dir, 'default-blocks.jsonl');
    const lines: string[] = [];
    for (let t = 0; t < 30_000; t++) lines.push(line([span(t, 0, 0), span(t, 1, 3)]));
    writeFileSync(p, lines.join('\n') + '\n');
    const two = await collect(mapTraces<Summary>([p], TASK, { workers: 2 }));
    expect(two.out).toHaveLength(30_000);
    const threads = two.out.map((s) => s.threadId);
    // Blocks of 4 MiB (read 1 MiB at a time): at least three, alternating between the two workers.
    expect(threads.filter((t, i) => i > 0 && t !== threads[i - 1]).length).toBeGreaterThanOrEqual(2);
    expect(new Set(threads).size).toBe(2);
  }, 30_000);

  it('a byte-order mark is allowed on the first line of a file only, in workers as in one thread', async () => {
    const bom = join(dir, 'bom.jsonl');
    const lines = Array.from({ length: 40 }, (_, i) => line([span(i, 0, 0)]));
    writeFileSync(bom, '\uFEFF' + lines.slice(0, 20).join('\n') + '\n\uFEFF' + lines.slice(20).join('\n') + '\n');
    const one = await collect(mapTraces<Summary>([bom], TASK, { workers: 0, blockBytes: 256 }));
    const two = await collect(mapTraces<Summary>([bom], TASK, { workers: 2, blockBytes: 256 }));
    expect(two.out.map((s) => s.traceId)).toEqual(one.out.map((s) => s.traceId));
    expect(one.out).toHaveLength(39);
    expect((two.error as Error).message).toBe((one.error as Error).message);
    expect((one.error as Error).message).toMatch(/bom\.jsonl: line 21: column 1: invalid JSON/);
  }, 30_000);

  it('the idle rule at its exact edge, across block boundaries', async () => {
    // One span per line, one line per block. idleSpans 3: trace 0 comes back 3 spans after its last (one trace:
    // group.ts emits a trace once 3 spans went by without one of its own), then 5 spans after (a second trace).
    const order = [0, 1, 2, 0, 3, 4, 5, 6, 0, 7];
    const p = join(dir, 'edge.jsonl');
    writeFileSync(p, order.map((t, i) => line([span(t, i, i)])).join('\n') + '\n');
    const opts = { idleSpans: 3, blockBytes: 64 };
    const two = await collect(mapTraces<Summary>([p], TASK, { ...opts, workers: 2 }));
    const one = await collect(mapTraces<Summary>([p], TASK, { ...opts, workers: 0 }));
    const ids = (xs: Summary[]): [string, number][] => xs.map((s) => [s.traceId.slice(-1), s.spans.length]);
    expect(ids(one.out)).toEqual([
      ['2', 1],
      ['3', 1],
      ['1', 2],
      ['4', 1],
      ['5', 1],
      ['6', 1],
      ['7', 1],
      ['1', 1],
      ['8', 1],
    ]);
    expect(ids(two.out)).toEqual(ids(one.out));
  }, 30_000);

  it('the rule diagnoser on workers gives the diagnoses of the one-thread path, on real serializer output split over lines', async () => {
    const builder = new TraceBuilder();
    labelledSet(builder, { seed: 11, perFault: 3, clean: 20, untriggered: 2 });
    const spans = [...builder.finished];
    const r = rng(3);
    // Batches of a few spans each, shuffled within a window: spans of a trace arrive out of order over many lines.
    for (let i = spans.length - 1; i > 0; i--) {
      const j = Math.max(0, i - Math.floor(r() * 12));
      [spans[i], spans[j]] = [spans[j]!, spans[i]!];
    }
    const lines: string[] = [];
    for (let i = 0; i < spans.length; i += 3)
      lines.push(Buffer.from(JsonTraceSerializer.serializeRequest(spans.slice(i, i + 3))!).toString('utf8'));
    const p = join(dir, 'labelled.jsonl');
    writeFileSync(p, lines.join('\n') + '\n');
    const task = { module: built('src/diagnosers/task'), name: 'diagnosisTask', options: { diagnoser: 'rule' } };
    type Result = import('../../src/diagnosers/task').TaskResult;
    const one = await collect(mapTraces<Result>([p], task, { workers: 0 }));
    const two = await collect(mapTraces<Result>([p], task, { workers: 2, blockBytes: 4 * 1024 }));
    expect(one.error).toBeUndefined();
    expect(two.out).toEqual(one.out);
    const diagnoses = one.out.map((r) => r.result as Diagnosis);
    expect(diagnoses.filter((d) => d.faultType !== 'none').length).toBeGreaterThan(10);
    // As JSON lines made in the workers (what `diagnose --format jsonl` prints): the same diagnoses, line for line.
    type Text = import('../../src/diagnosers/task').DiagnosisText;
    const { diagnosisLine } = require(built('src/report/diagnoses')) as typeof import('../../src/report/diagnoses');
    const asLines = { ...task, options: { diagnoser: 'rule', lines: true } };
    const text = await collect(mapTraces<Result>([p], asLines, { workers: 2, blockBytes: 4 * 1024 }));
    expect(text.error).toBeUndefined();
    expect(text.out.map((r) => (r.result as Text).line)).toEqual(diagnoses.map(diagnosisLine));
    expect(text.out.map((r) => (r.result as Text).faulty)).toEqual(diagnoses.map((d) => d.faultType !== 'none'));
    expect(text.out.map((r) => r.result.traceId)).toEqual(diagnoses.map((d) => d.traceId));
    expect(text.out.map((r) => r.documents)).toEqual(one.out.map((r) => r.documents));
  }, 60_000);

  it('OTLP logs among the inputs join their spans as in one thread (read there: workers hold no log records)', async () => {
    const p = join(dir, 'with-logs.jsonl');
    writeFileSync(p, fleetLines(7, 200).join('\n') + '\n');
    const target = span(10, 0, 0);
    const logs = join(dir, 'with-logs.logs.jsonl');
    const record = {
      traceId: target.traceId,
      spanId: target.spanId,
      timeUnixNano: '1700000000000000000',
      attributes: [{ key: 'event.name', value: { stringValue: 'gen_ai.choice' } }],
      body: { kvlistValue: { values: [] } },
    };
    writeFileSync(
      logs,
      [record, record]
        .map((r) =>
          JSON.stringify({ resourceLogs: [{ resource: {}, scopeLogs: [{ scope: { name: 'l' }, logRecords: [r] }] }] }),
        )
        .join('\n') + '\n',
    );
    const EVENTS = { ...TASK, name: 'events' };
    type Events = { traceId: string; events: string[][] };
    const one = await collect(mapTraces<Events>([logs, p], EVENTS, { workers: 0, blockBytes: 4 * 1024 }));
    const two = await collect(mapTraces<Events>([logs, p], EVENTS, { workers: 2, blockBytes: 4 * 1024 }));
    expect(two.out).toEqual(one.out);
    expect((two.error as Error).message).toBe((one.error as Error).message);
    expect(one.out.filter((t) => t.events.some((e) => e.includes('gen_ai.choice')))).toHaveLength(1);
  }, 30_000);

  it('a task that throws, and a consumer that stops early, end the run (no hang)', async () => {
    const p = join(dir, 'small.jsonl');
    writeFileSync(p, fleetLines(5, 300).join('\n') + '\n');
    const failOn = hex(150, 32);
    const failing = await collect(
      mapTraces<Summary>([p], { ...TASK, options: { failOn } }, { workers: 2, blockBytes: 4 * 1024 }),
    );
    expect(String(failing.error)).toContain(`task failed on ${failOn}`);
    let n = 0;
    for await (const _ of mapTraces<Summary>([p], TASK, { workers: 2, blockBytes: 4 * 1024 })) if (++n === 5) break;
    expect(n).toBe(5);
  }, 30_000);
});
