/**
 * The monitors' evaluation harness (issue 28): the labelled set (generate.mjs) is balanced and written in both
 * producers' conventions, its OTLP files are read by the real `faultline monitor` (dist/), and the scoring holds.
 *
 * What is asserted about the monitors: no false positive rate above 0.05 on clean runs, and floors at what was
 * measured on this branch minus a margin (content on: mode accuracy 0.93, step repetition recall 0.93; content off:
 * 0.52 of all faulted runs, 0.94 of those not declared unobservable) so that the test fails on a regression. The
 * goals (0.80 with content, 0.80 of what is observable without) are in docs/monitors.md with the tables.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../campaign/support/bin';
import type { LabelledRun } from './generate.mjs' with { 'resolution-mode': 'import' };
import type { Score, TraceOutput } from './evaluate.mjs' with { 'resolution-mode': 'import' };

// The set and its scorer are ES modules (node runs them as they are: run.mjs); this file is CommonJS.
type Gen = typeof import('./generate.mjs', { with: { 'resolution-mode': 'import' } });
type Ev = typeof import('./evaluate.mjs', { with: { 'resolution-mode': 'import' } });
let gen: Gen;
let ev: Ev;

const FLOORS = {
  accuracyWithContent: 0.85,
  stepRepetitionWithContent: 0.7,
  accuracyWithoutContent: 0.45,
  accuracyOfDeclaredObservableWithoutContent: 0.85,
};

let runs: LabelledRun[];
let MODES: Gen['MODES'];
let PRODUCERS: Gen['PRODUCERS'];
let dir: string;
let files: string[];
let monitor: ReturnType<Ev['runMonitor']>;
let s: Score;

const attrs = (r: LabelledRun): string[] =>
  r.otlp.resourceSpans.flatMap((rs) =>
    rs.scopeSpans.flatMap((ss) => ss.spans.flatMap((sp) => sp.attributes.map((a) => a.key))),
  );

beforeAll(async () => {
  ensureBuilt();
  gen = await import('./generate.mjs');
  ev = await import('./evaluate.mjs');
  ({ MODES, PRODUCERS } = gen);
  runs = gen.generateRuns();
  ({ dir, files } = ev.writeRuns(runs));
  monitor = ev.runMonitor(files);
  s = ev.score(runs, monitor.traces);
}, 240_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the labelled set', () => {
  it('is at least 200 runs, every mode equally often in each producer × content cell, with clean runs', () => {
    expect(runs.length).toBeGreaterThanOrEqual(200);
    for (const producer of PRODUCERS) {
      for (const content of [true, false]) {
        const cell = runs.filter((r) => r.producer === producer && r.content === content);
        const counts = MODES.map((m) => cell.filter((r) => r.label === m).length);
        expect(new Set(counts).size).toBe(1);
        expect(counts[0]).toBeGreaterThanOrEqual(5);
        expect(cell.filter((r) => r.label === 'clean').length).toBeGreaterThanOrEqual(counts[0]! * 2);
      }
    }
  });

  it('is seeded: the same seed gives the same runs, another seed others', () => {
    expect(gen.generateRuns().map((r) => r.traceId)).toEqual(runs.map((r) => r.traceId));
    expect(gen.generateRuns({ seed: 29 })[0]!.traceId).not.toBe(runs[0]!.traceId);
  });

  it('varies workflows, models, fault variants and near-misses', () => {
    expect(new Set(runs.map((r) => r.workflow)).size).toBeGreaterThanOrEqual(4);
    expect(new Set(runs.map((r) => r.provider)).size).toBeGreaterThanOrEqual(5);
    for (const m of MODES)
      expect(new Set(runs.filter((r) => r.label === m).map((r) => r.variant)).size, m).toBeGreaterThanOrEqual(2);
    const nearMisses = new Set(runs.filter((r) => r.label === 'clean').map((r) => r.variant));
    for (const v of [
      'retry_after_error',
      'tool_retry',
      'reread_after_change',
      'long_context',
      'done_early',
      'short_final',
    ])
      expect(nearMisses).toContain(v);
  });

  it('writes each producer in its own convention, content only when captured', () => {
    const has = (r: LabelledRun, re: RegExp) => attrs(r).some((k) => re.test(k));
    const CONTENT =
      /^gen_ai\.(input|output)\.messages$|^gen_ai\.system_instructions$|^gen_ai\.(prompt|completion)\.\d+\.|^gen_ai\.tool\.call\.(arguments|result)$|^traceloop\.entity\.(input|output)$|^llm\.request\.functions\./;
    for (const r of runs) {
      expect(has(r, CONTENT), r.id).toBe(r.content);
      if (r.producer === 'semconv') {
        expect(has(r, /^gen_ai\.operation\.name$/), r.id).toBe(true);
        expect(has(r, /^gen_ai\.usage\.input_tokens$/) || r.variant.startsWith('model call timeout'), r.id).toBe(true);
        expect(has(r, /^gen_ai\.(prompt|completion)\.|^traceloop\./), r.id).toBe(false);
      } else {
        expect(has(r, /^traceloop\.span\.kind$/), r.id).toBe(true);
        expect(has(r, /^gen_ai\.operation\.name$|^gen_ai\.(input|output)\.messages$/), r.id).toBe(false);
        if (r.content && !r.variant.startsWith('model call timeout'))
          expect(
            has(r, /^gen_ai\.prompt\.0\.role$/) &&
              has(r, /^gen_ai\.completion\.0\.finish_reason$/) &&
              has(r, /^llm\.request\.functions\.0\.name$/),
            r.id,
          ).toBe(true);
      }
    }
  });
});

describe('faultline monitor over the set', () => {
  it('reads every file: one trace per run, no input problem', () => {
    expect(monitor.code, monitor.stderr).toBe(0);
    expect(monitor.traces).toHaveLength(runs.length);
    expect(s.unread).toBe(0);
  });

  it('scores by MAST mode and ARCF type, and counts declared not-observable modes apart', () => {
    expect([...ev.modesOf({ mast: '1.3', failure: 'infinite_loop', detector: 'x' })]).toEqual(
      expect.arrayContaining(['step_repetition']),
    );
    expect([...ev.modesOf({ mast: '2.1', failure: 'context_overflow', detector: 'history_loss' })]).toEqual([
      'history_loss',
    ]);
    expect([...ev.modesOf({ mast: '1.4', failure: 'context_overflow', detector: 'context_overflow' })]).toEqual([
      'context_overflow',
    ]);
    // Agents waiting until a deadline are a deadlock; work that goes on and gets nowhere is no progress; a loop is 1.3.
    expect([...ev.modesOf({ mast: '1.5', failure: 'workflow_deadlock', faultType: 'timeout', detector: 'x' })]).toEqual(
      ['timeout_deadlock'],
    );
    expect([...ev.modesOf({ mast: '1.5', failure: 'workflow_deadlock', faultType: 'stale', detector: 'x' })]).toEqual([
      'no_progress',
    ]);
    expect([...ev.modesOf({ mast: '1.3', failure: 'infinite_loop', faultType: 'duplicate', detector: 'x' })]).toEqual([
      'step_repetition',
    ]);
    expect([
      ...ev.notObservableOf({
        traceId: 't',
        findings: [],
        notObservable: [{ mast: '2.5', failure: 'output_conflict', reason: 'no content' }],
      }),
    ]).toEqual(['output_conflict']);
    const run = runs.find((r) => r.label === 'output_conflict' && !r.content)!;
    const declared: TraceOutput[] = [{ traceId: run.traceId, findings: [], unobservable: ['output_conflict'] }];
    const one = ev.score([run], declared);
    expect(one.cells.find((c) => !c.content && c.mode === 'output_conflict')).toMatchObject({
      n: 1,
      hits: 0,
      notObservable: 1,
    });
  });

  it('no false positive rate above 0.05 on clean runs, content on and off', () => {
    for (const t of s.totals)
      expect(t.fpRate!, `content ${t.content}: ${t.fpVariants.join(', ')}`).toBeLessThanOrEqual(0.05);
  });

  it('holds the floors measured on this branch (minus a margin)', () => {
    const [on, off] = s.totals;
    expect(on.accuracy!).toBeGreaterThanOrEqual(FLOORS.accuracyWithContent);
    expect(off.accuracy!).toBeGreaterThanOrEqual(FLOORS.accuracyWithoutContent);
    expect(off.accuracyOfDeclaredObservable!).toBeGreaterThanOrEqual(FLOORS.accuracyOfDeclaredObservableWithoutContent);
    expect(s.cells.find((c) => c.content && c.mode === 'step_repetition')!.recall!).toBeGreaterThanOrEqual(
      FLOORS.stepRepetitionWithContent,
    );
    const tables = ev.renderTables(s, { runs: runs.length, producers: PRODUCERS, seed: 28 });
    expect(tables).toContain('mode accuracy on faulted runs');
    for (const m of MODES)
      expect(tables.split('\n').some((l) => l.startsWith('| ') && l.includes(m.split('_')[0]!))).toBe(true);
  });
});
