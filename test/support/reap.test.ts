/**
 * A test that fails while its child processes run leaves none behind (issue 26): a fixture test run by its own vitest
 * starts `sh` with a node grandchild, records their pids and fails; once that vitest has exited, both are gone.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';
import { runNode } from './child';

const ROOT = resolve(__dirname, '../..');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it('a failed test’s child and grandchild are killed when its file’s worker exits', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'faultline-reap-'));
  const pids = join(dir, 'pids.json');
  const config = join(dir, 'vitest.config.mjs');
  writeFileSync(
    config,
    `export default { test: { root: ${JSON.stringify(ROOT)}, include: ['test/support/fixtures-reap/*.fixture.ts'], pool: 'forks', setupFiles: ['test/support/reap.ts'], reporters: ['dot'] } };\n`,
  );
  const r = await runNode([join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', config], {
    cwd: ROOT,
    env: { REAP_PIDS: pids },
    timeoutMs: 60_000,
  });
  expect(r.code, r.stdout + r.stderr).not.toBe(0); // the fixture failed, as it should
  expect(existsSync(pids)).toBe(true);
  const [child, grandchild] = JSON.parse(readFileSync(pids, 'utf8')) as [number, number];
  const deadline = Date.now() + 5_000;
  while ((alive(child) || alive(grandchild)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect([alive(child), alive(grandchild)]).toEqual([false, false]);
}, 90_000);
