/**
 * `faultline diagnose` (the bin over dist/, built first by `npm test`) on traces an OpenLLMetry-instrumented app wrote
 * with content capture off (test/diagnosers/fixtures/producer-classes.cjs): the run whose own code failed after a call
 * whose output was not recorded is printed as "not observable", counted apart from faulty and clean in the summary,
 * and `not_observable` in JSON lines; with `--fail-on-fault` the exit code still says something went wrong.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'faultline.js');

describe('faultline diagnose prints not_observable readably', () => {
  it('table row, summary and JSON lines', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'faultline-notobs-')), 'traces.json');
    execFileSync(
      process.execPath,
      [join(ROOT, 'test', 'diagnosers', 'fixtures', 'producer-classes.cjs'), file, 'traceloop', 'off'],
      { stdio: ['ignore', 'ignore', 'inherit'], timeout: 60_000 },
    );
    const env = { ...process.env, CI: '1', NO_COLOR: '1', FAULTLINE_LLM_BASE_URL: '' };
    const table = spawnSync(process.execPath, [BIN, 'diagnose', file], { cwd: ROOT, env, encoding: 'utf8' });
    expect(table.status).toBe(0);
    const row = table.stdout.split('\n').find((l) => l.includes('not observable') && l.includes('SyntaxError'));
    expect(row).toContain('failed (SyntaxError');
    expect(table.stdout).toMatch(/7 traces: 2 faulty, 4 clean, 1 not observable without content/);
    const jsonl = spawnSync(process.execPath, [BIN, 'diagnose', file, '--format', 'jsonl', '--fail-on-fault'], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    });
    expect(jsonl.status).toBe(1);
    const types = jsonl.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => (JSON.parse(l) as { faultType: string }).faultType);
    expect(types.filter((t) => t === 'not_observable')).toHaveLength(1);
    const d = jsonl.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { faultType: string; summary: string })
      .find((x) => x.faultType === 'not_observable')!;
    expect(d.summary).toMatch(/cannot name \(not observable\).*content capture/);
  }, 90_000);
});
