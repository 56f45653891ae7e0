/**
 * `faultline campaign --cmd` options, through the bin: --dry-run, the checks that fail before any run (matrix,
 * tasks, placeholders, shell syntax, another campaign in --out, an unwritable --out), a module oracle with a call
 * budget, and a per-run timeout on a program that never ends.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../src/campaign/analysis';
import type { LlmServer } from '../support/llm-server';
import { cli, ensureBuilt } from './support/bin';
import { startCalcModel } from './support/calc-model';

const FIX = join(__dirname, 'fixtures');
const NODE = JSON.stringify(process.execPath);
let dir = '';
let model: LlmServer;

beforeAll(async () => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'faultline-cmd-opts-'));
  model = await startCalcModel();
}, 120_000);
afterAll(async () => {
  await model?.close();
});

const base = (out: string, extra: string[] = []): string[] => [
  'campaign',
  '--cmd',
  `${NODE} calc-agent.mjs {task}`,
  '--tasks',
  'tasks.jsonl',
  '--matrix',
  'matrix.yaml',
  '--out',
  out,
  ...extra,
];

describe('campaign --cmd: before any run', () => {
  it('--dry-run lists every run with its command line and plan, and runs nothing', async () => {
    const out = join(dir, 'dry');
    const r = await cli(base(out, ['--dry-run', '--oracle', 'check.mjs']), {}, 30_000, FIX);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      '2 tasks × 3 conditions × 1 repetition = 6 faulted runs, each with its clean twin: 12 runs',
    );
    expect(r.stdout).toContain(`calc-agent.mjs 'What is 17 plus 25?'`);
    expect(r.stdout).toMatch(/http_503: \[\{"fault":"http_503","match":\{"operation":"chat"\}\}\]/);
    expect(r.stdout.match(/^ +\d+ (faulted|clean)/gm)).toHaveLength(12);
    expect(r.stdout).toContain('success: check.mjs');
    expect(model.requests).toHaveLength(0);
  });

  it('bad input fails at once with one line naming the file and the place (exit 2)', async () => {
    const m = join(dir, 'bad-matrix.yaml');
    writeFileSync(m, 'conditions:\n  - fault: llm_truncte_single\n');
    const t = join(dir, 'bad-tasks.jsonl');
    writeFileSync(t, '{"id":"a","input":"x"}\n{"input":"no id"}\n');
    const cases: Array<[string[], RegExp]> = [
      [
        ['campaign', '--cmd', 'node a.js', '--tasks', join(FIX, 'tasks.jsonl'), '--matrix', m, '--dry-run'],
        /conditions\[0\] \("llm_truncte_single"\)[\s\S]*did you mean "llm_truncate_single"/,
      ],
      [
        ['campaign', '--cmd', 'node a.js', '--tasks', t, '--matrix', join(FIX, 'matrix.yaml'), '--dry-run'],
        /bad-tasks\.jsonl: line 2: a task object needs an "id"/,
      ],
      [
        [
          'campaign',
          '--cmd',
          'node a.js {task.answer}',
          '--tasks',
          join(FIX, 'tasks.jsonl'),
          '--matrix',
          join(FIX, 'matrix.yaml'),
          '--dry-run',
        ],
        /\{task\.answer\} names a field task "sum" does not have/,
      ],
      [
        [
          'campaign',
          '--cmd',
          'node a.js {task} | tee log',
          '--tasks',
          join(FIX, 'tasks.jsonl'),
          '--matrix',
          join(FIX, 'matrix.yaml'),
          '--dry-run',
        ],
        /"\|" \(no shell runs the command/,
      ],
      [['campaign', '--cmd', 'node a.js', '--matrix', join(FIX, 'matrix.yaml')], /--cmd needs --tasks FILE/],
      [
        [
          'campaign',
          '--cmd',
          'node a.js',
          '--tasks',
          join(FIX, 'tasks.jsonl'),
          '--matrix',
          join(FIX, 'matrix.yaml'),
          '--preset',
          'paper',
        ],
        /--preset is for the example workflows/,
      ],
      [['campaign', '--matrix', join(FIX, 'matrix.yaml')], /--matrix goes with --cmd/],
    ];
    for (const [args, msg] of cases) {
      const r = await cli(args, {}, 30_000);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^✖ /);
      expect(r.stderr).toMatch(msg);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('issue 13: campaign --out /proc/x (cannot be written) is one line and exit 2 within seconds, not a spin', async () => {
    for (const args of [
      base('/proc/faultline-x'),
      ['campaign', '--preset', 'smoke', '--out', '/proc/faultline-x'],
      ['demo', '--out', '/proc/faultline-x'],
    ]) {
      const r = await cli(args, {}, 20_000, FIX);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim()).toMatch(/^✖ cannot write --out \/proc\/faultline-x: no such directory$/);
      expect(r.ms).toBeLessThan(15_000);
    }
  });
});

describe('campaign --cmd: oracles, budget, timeout', () => {
  it('a module oracle judges each run; --max-calls stops scheduling before the budget is spent; another campaign in --out is refused', async () => {
    const out = join(dir, 'budget');
    const m = join(dir, 'one-fault.yaml');
    writeFileSync(m, 'conditions:\n  - fault: llm_truncate_single\n');
    const args = [
      'campaign',
      '--cmd',
      `${NODE} calc-agent.mjs {task}`,
      '--tasks',
      'tasks.jsonl',
      '--matrix',
      m,
      '--oracle',
      'check.mjs',
      '--max-calls',
      '3',
      '--concurrency',
      '1',
      '--out',
      out,
    ];
    const r = await cli(args, { OPENAI_BASE_URL: `${model.url}/v1` }, 60_000, FIX);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('budget reached (3 LLM calls');
    const runs = readFileSync(join(out, 'runs.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as RunRecord);
    // The faulted run stops after its first (truncated) call, its clean twin makes two: 3 calls, then no new run.
    expect(runs.map((x) => [x.condition, x.llmCalls, x.success])).toEqual([
      ['llm_truncate_single', 1, false],
      ['clean', 2, true],
    ]);
    expect(runs[0]!.reason).toBe('got "I could not work out the question."');
    expect(r.stdout).toContain('BUDGET REACHED');
    const other = await cli(
      [
        'campaign',
        '--cmd',
        `${NODE} calc-agent.mjs --verbose {task}`,
        '--tasks',
        'tasks.jsonl',
        '--matrix',
        m,
        '--out',
        out,
      ],
      {},
      30_000,
      FIX,
    );
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/holds 2 runs of another campaign .* --fresh/);
  });

  it('--timeout ends a run that never finishes (its process group is killed) and records it as failed', async () => {
    const out = join(dir, 'timeout');
    const t = join(dir, 'one-task.jsonl');
    writeFileSync(t, '"hang"\n');
    const m = join(dir, 'one.yaml');
    writeFileSync(m, 'conditions:\n  - fault: http_503\n');
    const r = await cli(
      [
        'campaign',
        '--cmd',
        `${NODE} -e "setInterval(() => {}, 1000)" {task}`,
        '--tasks',
        t,
        '--matrix',
        m,
        '--timeout',
        '1s',
        '--out',
        out,
      ],
      {},
      60_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const runs = readFileSync(join(out, 'runs.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as RunRecord);
    expect(runs).toHaveLength(2);
    for (const x of runs) {
      expect(x.success).toBe(false);
      expect(x.reason).toBe('timed out after 1 s');
      expect(x.durationMs).toBeLessThan(8000);
    }
    // The untriggered faulted run (no call to fault) is excluded and counted.
    expect(JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')).summary.untriggered).toBe(1);
    expect(r.stderr).toContain('wrote no spans');
  });
});
