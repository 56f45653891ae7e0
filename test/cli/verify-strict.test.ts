/**
 * Issue 17 Build 4: `faultline verify --strict` fails when a rule never matched. A plain openai-SDK program runs
 * under faultline/register (a child process) with a two-rule plan, one rule of which selects a model the program
 * never calls; verify names that rule and exits 1 with --strict, and a trace file with no fire at all is no longer
 * "0/0 tasks triggered", exit 0.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmServer } from '../support/llm-server';
import { ROOT, cli, ensureBuilt } from '../campaign/support/bin';
import { startCalcModel } from '../campaign/support/calc-model';

let dir = '';
let model: LlmServer;
let plan = '';
let faulted = '';
let clean = '';

function runApp(env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [
        '--require',
        join(ROOT, 'dist', 'src', 'register.js'),
        join(__dirname, '..', 'campaign', 'fixtures', 'calc-agent.mjs'),
        'What is 2 plus 3?',
      ],
      { env: { PATH: process.env.PATH, OPENAI_BASE_URL: `${model.url}/v1`, ...env }, timeout: 60_000 },
      (err, _out, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve()),
    );
  });
}

beforeAll(async () => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'faultline-verify-'));
  model = await startCalcModel();
  plan = join(dir, 'plan.yaml');
  writeFileSync(
    plan,
    'rules:\n  - fault: llm_truncate_single\n  - name: planner-rate-limited\n    fault: http_429\n    match: { model: "gpt-9*" }\n',
  );
  faulted = join(dir, 'faulted.jsonl');
  clean = join(dir, 'clean.jsonl');
  await runApp({ FAULTLINE_PLAN: plan, FAULTLINE_TRACES_FILE: faulted });
  await runApp({ FAULTLINE_TRACES_FILE: clean });
}, 120_000);
afterAll(async () => {
  await model?.close();
});

describe('faultline verify --strict', () => {
  it('names the plan rule that never fired and fails with --strict', async () => {
    const strict = await cli(['verify', faulted, '--plan', plan, '--strict']);
    expect(strict.code, strict.stderr).toBe(1);
    expect(strict.stdout).toMatch(/^1\/1 tasks triggered/);
    expect(strict.stdout).toContain('triggered  llm_truncate_single (llm_truncate_single): fired 1');
    expect(strict.stdout).toContain(`✖ rule planner-rate-limited of ${plan} never fired`);
    const lenient = await cli(['verify', faulted, '--plan', plan]);
    expect(lenient.code).toBe(0);
    // FAULTLINE_PLAN is the default plan, as for the run itself.
    expect((await cli(['verify', faulted, '--strict'], { FAULTLINE_PLAN: plan })).code).toBe(1);
    const json = await cli(['verify', faulted, '--plan', plan, '-f', 'json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      totalTasks: 1,
      triggeredTasks: 1,
      neverFired: ['planner-rate-limited'],
    });
  });

  it('a run where nothing fired is not a pass under --strict', async () => {
    const r = await cli(['verify', clean, '--strict'], { FAULTLINE_PLAN: '' });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('0/0 tasks triggered');
    expect(r.stdout).toContain(`no fault fired in ${clean}`);
    expect((await cli(['verify', clean], { FAULTLINE_PLAN: '' })).code).toBe(0);
  });
});
