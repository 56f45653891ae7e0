/**
 * Issue 17 Build 1: `faultline campaign --cmd` on a program of its own — a two-step calculator agent written against
 * the plain openai SDK (fixtures/calc-agent.mjs), talking to a loopback server in OpenAI's recorded wire format —
 * over three faults and two tasks, each run with its clean twin, judged by an oracle command; interrupted by SIGTERM
 * half-way and continued by running the same command again; then `faultline eval` on the labelled traces it wrote.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groundTruth } from '../../src/diagnosers/ground-truth';
import { stripGroundTruth } from '../../src/diagnosers/strip-ground-truth';
import { readTraces } from '../../src/traces/read';
import type { TraceRecord } from '../../src/traces/model';
import { isLlmSpan } from '../../src/traces/steps';
import type { RunRecord } from '../../src/campaign/analysis';
import type { LlmServer } from '../support/llm-server';
import { cli, ensureBuilt, start, type Run } from './support/bin';
import { startCalcModel } from './support/calc-model';

const FIX = join(__dirname, 'fixtures');
let model: LlmServer;
let out = '';
let env: NodeJS.ProcessEnv;
let args: string[];
let first: Run;
let firstRecorded = 0;
let second: Run;
let records: RunRecord[] = [];
const traces: TraceRecord[] = [];

const lines = (f: string): string[] =>
  existsSync(f)
    ? readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
    : [];

async function until(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  ensureBuilt();
  model = await startCalcModel(150);
  out = mkdtempSync(join(tmpdir(), 'faultline-cmd-'));
  env = { OPENAI_BASE_URL: `${model.url}/v1`, OPENAI_API_KEY: 'sk-test' };
  args = [
    'campaign',
    '--cmd',
    `${JSON.stringify(process.execPath)} calc-agent.mjs {task}`,
    '--tasks',
    'tasks.jsonl',
    '--matrix',
    'matrix.yaml',
    '--oracle',
    `${JSON.stringify(process.execPath)} judge.mjs {task.expected}`,
    '--out',
    out,
    '--concurrency',
    '3',
  ];
  // Interrupted once a few runs are recorded…
  const s = start(args, env, 90_000, FIX);
  await until(() => lines(join(out, 'runs.jsonl')).length >= 3, 80_000);
  s.child.kill('SIGTERM');
  first = await s.done;
  firstRecorded = lines(join(out, 'runs.jsonl')).length;
  // … and continued by the same command.
  second = await cli(args, env, 90_000, FIX);
  records = lines(join(out, 'runs.jsonl')).map((l) => JSON.parse(l) as RunRecord);
  for await (const t of readTraces([join(out, 'traces.jsonl')])) traces.push(t);
}, 200_000);

afterAll(async () => {
  await model?.close();
});

describe('faultline campaign --cmd', () => {
  it('stops on SIGTERM without losing a finished run, and continues where it stopped', () => {
    expect(first.code).toBe(143);
    expect(firstRecorded).toBeGreaterThanOrEqual(3);
    expect(firstRecorded).toBeLessThan(12);
    expect(first.stdout).toContain('run the same command again to continue');
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain(`continuing the campaign in ${out}: ${firstRecorded} of 12 runs already made`);
    // Every (task × condition × role) exactly once: nothing lost, nothing made twice.
    expect(records).toHaveLength(12);
    expect(new Set(records.map((r) => r.key)).size).toBe(12);
    expect(lines(join(out, 'traces.jsonl'))).toHaveLength(12);
  });

  it('makes every faulted run with its clean twin, judged by the oracle: pass@1, Δpass@1, CCL per fault', () => {
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      summary: {
        runs: number;
        untriggered: number;
        main: {
          byCondition: Array<{
            key: string;
            pairs: number;
            cleanPass: { rate: number };
            faultPass: { rate: number };
            deltaPass: number;
            ccl: { k: number; n: number };
          }>;
        };
      };
    };
    expect(summary.summary.runs).toBe(12);
    expect(summary.summary.untriggered).toBe(0);
    const row = (k: string) => summary.summary.main.byCondition.find((c) => c.key === k)!;
    // The truncated and the empty first answer leave the agent without an expression: it says so and exits 0.
    for (const k of ['llm_truncate_single', 'llm_empty_single']) {
      expect(row(k)).toMatchObject({
        pairs: 2,
        cleanPass: { rate: 1 },
        faultPass: { rate: 0 },
        deltaPass: 100,
        ccl: { k: 2, n: 2 },
      });
    }
    // One 503: the SDK's own retry recovers it.
    expect(row('http_503')).toMatchObject({ pairs: 2, faultPass: { rate: 1 }, deltaPass: 0 });
    for (const r of records) {
      expect(r.reason).toMatch(r.success ? /^correct: / : /^expected \d+, got /);
      if (r.faulted) expect(records.find((c) => c.taskId === r.matchedTo)?.condition).toBe('clean');
    }
    const report = readFileSync(join(out, 'report.html'), 'utf8');
    expect(report).toContain('<svg');
    expect(report).toContain('Clean-conditional loss per task × fault');
    expect(second.stdout).toMatch(/llm_truncate_single\s+2\s+100\.0%\s+0\.0%\s+\+100\.0/);
  });

  it("writes one labelled trace per run: the program's spans under the run's root, ground truth on faulted runs only", () => {
    expect(traces).toHaveLength(12);
    for (const r of records) {
      const t = traces.find((x) => x.traceId === r.traceId)!;
      expect(t, r.key).toBeDefined();
      const roots = t.spans.filter((s) => s.parentSpanId === undefined);
      expect(roots.map((s) => s.name)).toEqual([`invoke_workflow ${r.task}`]);
      expect(t.spans.filter(isLlmSpan).length).toBe(r.llmCalls);
      const truth = groundTruth(t);
      expect(truth.status).toBe(r.faulted ? 'faulty' : 'clean');
      if (r.faulted) expect(truth.step).toBe(1);
    }
  });

  it('labels a faulted run and its clean twin alike once ground truth is stripped', () => {
    for (const f of records.filter((r) => r.faulted)) {
      const root = (id: string | undefined) => {
        const rec = records.find((r) => r.taskId === id)!;
        return stripGroundTruth(traces.find((x) => x.traceId === rec.traceId)!).spans.find(
          (s) => s.parentSpanId === undefined,
        )!;
      };
      const a = root(f.taskId);
      const b = root(f.matchedTo);
      const labels = (s: typeof a) =>
        Object.fromEntries(Object.entries(s.attributes).filter(([k]) => k.startsWith('faultline.campaign.')));
      expect(labels(a)).toEqual(labels(b));
      expect(Object.keys(a.attributes).sort()).toEqual(Object.keys(b.attributes).sort());
    }
  });

  it('its labelled traces are what faultline eval scores', async () => {
    const r = await cli(['eval', join(out, 'traces.jsonl'), '-f', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as {
      traces: number;
      faulty: number;
      clean: number;
      untriggered: number;
      diagnosers: Array<{ accuracy: { typeAccuracy: number; perType: Array<{ faultType: string; n: number }> } }>;
    };
    expect(report).toMatchObject({ traces: 12, faulty: 6, clean: 6, untriggered: 0 });
    expect(report.diagnosers[0]!.accuracy.perType.map((p) => p.faultType).sort()).toEqual([
      'empty',
      'error',
      'truncate',
    ]);
    expect(report.diagnosers[0]!.accuracy.typeAccuracy).toBeGreaterThan(50);
  }, 30_000);
});
