/** The compiled package for tests that need it (worker threads load JavaScript): built when missing or stale. */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');

function newestMtime(dir: string): number {
  let m = 0;
  for (const f of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, f.name);
    m = Math.max(m, f.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return m;
}

/** Path of a compiled module (e.g. `src/traces/parallel`), building dist/ first when it is older than the sources. */
export function built(module: string): string {
  const out = join(ROOT, 'dist', `${module}.js`);
  const newest = Math.max(...['src', 'instrumentation', 'detectors'].map((d) => newestMtime(join(ROOT, d))));
  if (!existsSync(out) || statSync(out).mtimeMs < newest) {
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
  return out;
}
