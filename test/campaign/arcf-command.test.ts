/**
 * The `arcf` arm on a user's command: `faultline campaign --cmd … --arms none,arcf` runs the calculator agent (a
 * plain openai-SDK program that knows nothing of faultline) once more per condition under ARCF's protection
 * (FAULTLINE_GUARDS: retry, circuit) and once bare (no faultline: the overhead), and reports ARCF's table.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../src/campaign/analysis';
import type { LlmServer } from '../support/llm-server';
import { start, ensureBuilt, type Run } from './support/bin';
import { startCalcModel } from './support/calc-model';

const FIX = join(__dirname, 'fixtures');
let model: LlmServer;
let out = '';
let run: Run;
let records: RunRecord[] = [];

beforeAll(async () => {
  ensureBuilt();
  model = await startCalcModel();
  out = mkdtempSync(join(tmpdir(), 'faultline-arcf-cmd-'));
  const matrix = join(out, 'matrix.yaml');
  // The first answer cut at the token limit: the agent cannot parse the expression.
  writeFileSync(matrix, 'seed: 42\nconditions:\n  - fault: llm_truncate_single\n');
  const args = [
    'campaign',
    '--cmd',
    `${JSON.stringify(process.execPath)} calc-agent.mjs {task}`,
    '--tasks',
    'tasks.jsonl',
    '--matrix',
    matrix,
    '--oracle',
    `${JSON.stringify(process.execPath)} judge.mjs {task.expected}`,
    '--arms',
    'none,arcf',
    '--out',
    join(out, 'runs'),
    '--concurrency',
    '3',
  ];
  run = await start(args, { OPENAI_BASE_URL: `${model.url}/v1`, OPENAI_API_KEY: 'sk-test' }, 120_000, FIX).done;
  records = readFileSync(join(out, 'runs', 'runs.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RunRecord);
}, 150_000);
afterAll(() => model.close());

describe('campaign --cmd --arms none,arcf', () => {
  it('runs each condition in both arms with clean twins, and the program bare once per task', () => {
    expect(run.code).toBe(0);
    expect(records).toHaveLength(2 * (2 + 2) + 2);
    expect(
      records
        .filter((r) => r.bare)
        .map((r) => r.task)
        .sort(),
    ).toEqual(['product', 'sum']);
    const arcf = records.filter((r) => r.arm === 'arcf');
    expect(arcf.map((r) => r.faulted).sort()).toEqual([false, false, true, true]);
  });

  it('the baseline fails on the cut answer; under the arcf arm the guard retries it and the task completes', () => {
    const faulted = (arm: string) => records.filter((r) => r.arm === arm && r.faulted && !r.bare);
    expect(faulted('none').map((r) => r.success)).toEqual([false, false]);
    expect(faulted('arcf').map((r) => r.success)).toEqual([true, true]);
    expect(faulted('arcf').every((r) => (r.arcf?.retried ?? 0) >= 1 && r.arcf?.retryOk === r.arcf?.retried)).toBe(true);
    const guards = JSON.parse(readFileSync(join(out, 'runs', 'arcf-guards.json'), 'utf8')) as {
      routes: Array<{ name?: string }>;
    };
    expect(guards.routes.map((r) => r.name)).toEqual(['execution', 'llm']);
  });

  it("prints ARCF's table, the overhead measured against the bare runs", () => {
    expect(run.stdout).toContain('ARCF at a 10% fault rate: baseline vs arcf');
    expect(run.stdout).toMatch(/Workflow completion rate\s+0\.0% \(0\/2\)\s+100\.0% \(2\/2\)/);
    expect(run.stdout).toMatch(/Observability overhead: 2 pairs of a clean run without and with faultline/);
    const summary = JSON.parse(readFileSync(join(out, 'runs', 'summary.json'), 'utf8')) as {
      arcf?: { overhead?: { pairs: number } };
    };
    expect(summary.arcf?.overhead?.pairs).toBe(2);
  });
});

/**
 * ARCF's experiment on the calculator agent at a 10 % fault rate (fixtures/arcf-matrix.yaml, thirty seeds), for the
 * table in docs/campaigns.md: `FAULTLINE_ARCF_TABLE=1 npx vitest run test/campaign/arcf-command.test.ts` (about
 * twenty minutes on two shared cores; it prints the faultline command it runs and the table).
 */
describe.runIf(process.env.FAULTLINE_ARCF_TABLE === '1')('the ARCF table on a user command', () => {
  it('runs the 10 % matrix in both arms', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'faultline-arcf-table-'));
    const args = [
      'campaign',
      '--cmd',
      'node calc-agent.mjs {task}',
      '--tasks',
      'tasks.jsonl',
      '--matrix',
      'arcf-matrix.yaml',
      '--oracle',
      'node judge.mjs {task.expected}',
      '--arms',
      'none,arcf',
      '--out',
      dir,
      '--concurrency',
      '4',
    ];
    console.log(
      `faultline ${args.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ')}  (in test/campaign/fixtures, OPENAI_BASE_URL at the calculator model)`,
    );
    const r = await start(args, { OPENAI_BASE_URL: `${model.url}/v1`, OPENAI_API_KEY: 'sk-test' }, 3_000_000, FIX).done;
    console.log(r.stdout.slice(r.stdout.indexOf('ARCF at a')));
    expect(r.code).toBe(0);
  }, 3_100_000);
});
