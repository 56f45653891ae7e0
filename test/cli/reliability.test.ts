/**
 * `faultline reliability` end to end over the built dist/: example workflows run through the real stack (one of the
 * runs with a persistent fault on the Planner's calls), their spans written as OTLP/JSON by the real serializer, the
 * report read back as a table and as JSON; bad input exits 2 with one line naming it.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, statSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectModel, FAMILIES, runTask, type ModelConnection } from '../../examples';
import { setupWorkflowStack, type WorkflowStack } from '../support/workflow-stack';
import { writeOtlpJson } from '../diagnosers/support/otlp-file';

const ROOT = join(__dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'faultline.js');

function newest(dir: string): number {
  let m = 0;
  for (const f of readdirSync(dir, { withFileTypes: true }))
    m = Math.max(m, f.isDirectory() ? newest(join(dir, f.name)) : statSync(join(dir, f.name)).mtimeMs);
  return m;
}

function ensureBuilt(): void {
  const out = join(ROOT, 'dist', 'src', 'cli', 'commands', 'reliability.js');
  if (
    existsSync(out) &&
    statSync(out).mtimeMs >= Math.max(...['src/cli', 'src/reliability', 'detectors'].map((d) => newest(join(ROOT, d))))
  )
    return;
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      { cwd: ROOT, stdio: 'ignore' },
    );
  } catch {
    /* type errors elsewhere in the tree still emit JavaScript */
  }
}

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let dir: string;
let file: string;
let stack: WorkflowStack;
let llm: ModelConnection;

beforeAll(async () => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'faultline-reliability-'));
  file = join(dir, 'traces.json');
  stack = setupWorkflowStack({ capture: false });
  llm = await connectModel({ env: {} });
  const family = FAMILIES.shopping!;
  for (const task of family.tasks) await runTask({ family, task, topology: 'sequential', llm });
  // One run whose Planner never gets a usable answer: the workflow fails, the Planner's component fails.
  stack.plan = { rules: [{ fault: 'llm_truncate_persistent', match: { operation: 'chat' } }] };
  await runTask({ family, task: family.tasks[0], topology: 'sequential', llm });
  stack.plan = undefined;
  await new Promise((r) => setTimeout(r, 50));
  writeOtlpJson(file, stack.exporter.getFinishedSpans());
}, 60_000);
afterAll(async () => {
  await llm.close();
  await stack.shutdown();
});

describe('faultline reliability', () => {
  it('prints equations 1–3 beside the observed completion, per workflow, with intervals', async () => {
    const r = await cli(['reliability', file]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ARCF reliability model over 5 traces \(1 workflow group\)/);
    expect(r.stdout).toMatch(/shopping-sequential: 5 runs/);
    expect(r.stdout).toMatch(/observed\s+80\.0%\s+\[\d+\.\d%, \d+\.\d%\] \(4\/5\)/);
    expect(r.stdout).toMatch(/\(1\) R_base = Π P\(c\)/);
    expect(r.stdout).toMatch(/\(2\) with k = 3 attempts/);
    expect(r.stdout).toMatch(/agent Planner\s+5\s+80\.0% \[[\d.]+%, [\d.]+%\] \(4\/5\)/);
  });

  it('--format json carries the same numbers; --attempts is k', async () => {
    const r = await cli(['reliability', file, '--format', 'json', '--attempts', '2']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as {
      traces: number;
      workflows: Array<{
        workflow: string;
        k: number;
        observed: { k: number; n: number };
        base: { p: number };
        retry: { p: number };
        components: Array<{ name: string; p: { p: number } }>;
      }>;
    };
    expect(report.traces).toBe(5);
    const w = report.workflows[0]!;
    expect(w).toMatchObject({ workflow: 'shopping-sequential', k: 2, observed: { k: 4, n: 5 } });
    const product = w.components.reduce((p, c) => p * c.p.p, 1);
    expect(w.base.p).toBeCloseTo(product, 10);
    expect(w.retry.p).toBeCloseTo(
      w.components.reduce((p, c) => p * (1 - (1 - c.p.p) ** 2), 1),
      10,
    );
  });

  it('bad input: one line naming it, exit 2', async () => {
    const none = await cli(['reliability']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^✖ no traces given/);
    const truth = await cli(['reliability', file, '--group-by', 'faultline.fault.condition']);
    expect(truth.code).toBe(2);
    expect(truth.stderr).toBe(
      '✖ --group-by faultline.fault.condition: faultline.fault.* is ground truth, which the reliability model does not read\n',
    );
    const k = await cli(['reliability', file, '--attempts', '0']);
    expect(k.code).toBe(2);
    expect(k.stderr).toMatch(/--attempts must be a positive integer/);
    const missing = await cli(['reliability', join(dir, 'nope.json')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/nope\.json/);
  });
});
