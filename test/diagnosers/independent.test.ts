/**
 * The independent evaluation's harness (test/independent/), fast: one task per fault of its provider-documented fault
 * model and one per near-miss clean run, through every producer (instrumentation-openai with its logs file,
 * OpenLLMetry 0.22 and current, OpenInference), content on and off, and the reworded variant once; then the real CLI
 * over the files. It checks that the generator makes valid traces as the producers write them, that content off
 * really leaves content out, that the ground truth is there and is stripped, and that diagnosis runs on every trace.
 * Accuracy is not asserted here: it is measured by `node test/independent/evaluate.cjs` into docs/diagnosis.md.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasGroundTruth, stripGroundTruth } from '../../src/diagnosers/index';
import { readTraces } from '../../src/traces/read';
import type { TraceRecord } from '../../src/traces/model';
import { FAULT_TYPES } from '../../src/taxonomy';

const run = promisify(execFile);
const root = join(__dirname, '..', '..');
const PRODUCERS = ['contrib', 'traceloop-0.22', 'traceloop', 'openinference'] as const;
const SETS = [
  ...PRODUCERS.flatMap((p) => (['on', 'off'] as const).map((content) => ({ producer: p, content, variant: 'base' }))),
  { producer: 'contrib', content: 'on', variant: 'reworded' },
];

interface Label {
  task: string;
  traceId: string;
  fault: string;
  nearMiss: string | null;
  type: string;
  step: number | null;
  observable: boolean;
}
interface Set {
  name: string;
  dir: string;
  files: string[];
  labels: Label[];
  traces: TraceRecord[];
  stdout: string;
  stderr: string;
  code: number;
}

const base = mkdtempSync(join(tmpdir(), 'faultline-independent-'));
const sets: Set[] = [];
// User prompts the workflows send: with content off, none may be in any file.
const PROMPTS = [
  'Route the message to a queue',
  'Split the changelog into one task',
  'Write release notes for customers',
  'You order outdoor gear',
];

beforeAll(async () => {
  const made = await Promise.all(
    SETS.map(async ({ producer, content, variant }) => {
      const name = `${producer}-${content}-${variant}`;
      const dir = join(base, name);
      await run(
        process.execPath,
        [
          join(root, 'test/independent/generate.cjs'),
          '--producer',
          producer,
          '--content',
          content,
          '--variant',
          variant,
          '--out',
          dir,
          '--suite',
          'cases',
          '--scale',
          '0.05',
        ],
        { timeout: 90_000 },
      );
      const files = [join(dir, 'traces.jsonl'), ...(producer === 'contrib' ? [join(dir, 'logs.jsonl')] : [])];
      const labels = (JSON.parse(readFileSync(join(dir, 'labels.json'), 'utf8')) as { tasks: Label[] }).tasks;
      const traces: TraceRecord[] = [];
      for await (const t of readTraces(files)) traces.push(t);
      let out: { stdout: string; stderr: string; code: number };
      try {
        const r = await run(
          process.execPath,
          [join(root, 'bin/faultline.js'), 'diagnose', ...files, '--format', 'jsonl'],
          { timeout: 60_000, maxBuffer: 1 << 26 },
        );
        out = { ...r, code: 0 };
      } catch (err) {
        const e = err as { stdout?: string; stderr?: string; code?: number };
        out = { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: e.code ?? -1 };
      }
      return { name, dir, files, labels, traces, ...out };
    }),
  );
  sets.push(...made);
}, 150_000);

describe('the independent set (real producers, provider-documented faults)', () => {
  it('dist/ is built (the CLI is run from it)', () => {
    expect(existsSync(join(root, 'dist'))).toBe(true);
  });

  it('every labelled task is one trace in the files, read without a bad line, with its LLM calls', () => {
    for (const s of sets) {
      expect(s.traces.map((t) => t.traceId).sort(), s.name).toEqual(s.labels.map((l) => l.traceId).sort());
      for (const l of s.labels.filter((x) => x.fault === 'clean')) {
        const t = s.traces.find((x) => x.traceId === l.traceId)!;
        expect(t.spans.length, `${s.name} ${l.task}`).toBeGreaterThanOrEqual(4);
      }
    }
  });

  it('covers every fault of the model and every near-miss, and content off hides content', () => {
    const on = sets.find((s) => s.name === 'contrib-on-base')!;
    expect(on.labels.filter((l) => l.fault.startsWith('untriggered:'))).toEqual([]);
    expect(new Set(on.labels.map((l) => l.nearMiss).filter(Boolean)).size).toBeGreaterThanOrEqual(5);
    for (const s of sets) {
      const text = s.files.map((f) => readFileSync(f, 'utf8')).join('\n');
      for (const p of PROMPTS) expect(text.includes(p), `${s.name}: ${p}`).toBe(s.name.includes('-on-'));
      if (s.name.includes('-on-')) expect(s.labels.every((l) => l.observable)).toBe(true);
    }
    expect(sets.filter((s) => s.name.includes('-off-')).every((s) => s.labels.some((l) => !l.observable))).toBe(true);
  });

  it('carries the ground truth, which the diagnose path strips', () => {
    for (const s of sets) {
      expect(
        s.traces.every((t) => hasGroundTruth(t)),
        s.name,
      ).toBe(true);
      expect(s.traces.some((t) => !hasGroundTruth(stripGroundTruth(t)))).toBe(true);
      expect(
        s.traces.every((t) => !hasGroundTruth(stripGroundTruth(t))),
        s.name,
      ).toBe(true);
    }
  });

  it('the real CLI diagnoses every trace, clean runs included, without a crash or a bad line', () => {
    const known = new Set<string>([...FAULT_TYPES, 'not_observable']);
    for (const s of sets) {
      expect([0, 1], `${s.name}: ${s.stderr}`).toContain(s.code);
      const rows = s.stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { traceId: string; faultType: string });
      expect(rows.map((r) => r.traceId).sort(), s.name).toEqual(s.labels.map((l) => l.traceId).sort());
      for (const r of rows) expect(known.has(r.faultType), `${s.name} ${r.faultType}`).toBe(true);
    }
  });
});
