/**
 * The conformance tier: test files that read the shared reference material (../shared/corpus, ../shared/reference)
 * beside the repository, found by following their relative imports to test/support/shared.ts. A lone clone has no
 * `shared`, so vitest.config.ts leaves these files out and test/conformance.test.ts reports each as skipped with how
 * to run it; with FAULTLINE_CONFORMANCE=require (set by .ci/run) a missing folder is a failure instead.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { SHARED_DIR } from './shared';

export const SHARED_PRESENT = existsSync(SHARED_DIR);
export const CONFORMANCE_REQUIRED = process.env.FAULTLINE_CONFORMANCE === 'require';
export const SKIP_REASON = `needs the shared corpus at ${SHARED_DIR}: set FAULTLINE_SHARED_DIR or place shared/ beside the repository to run it`;

const ROOT = resolve(__dirname, '../..');
const SHARED_MODULE = resolve(__dirname, 'shared');
const IMPORT = /(?:from\s+|import\s*\(\s*|require\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

function resolveImport(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  for (const c of [base, `${base}.ts`, `${base}.cjs`, `${base}.mjs`, `${base}.js`, join(base, 'index.ts')]) {
    if (c.startsWith(join(ROOT, 'test')) && existsSync(c) && !c.endsWith('/')) {
      try {
        readFileSync(c);
        return c;
      } catch {
        /* a directory */
      }
    }
  }
  return undefined;
}

function readsShared(file: string, seen: Map<string, boolean>): boolean {
  const known = seen.get(file);
  if (known !== undefined) return known;
  seen.set(file, false);
  const text = readFileSync(file, 'utf8');
  let result = /shared\/corpus|shared\/reference/.test(text) && !file.endsWith('.ts');
  for (const m of text.matchAll(IMPORT)) {
    if (result) break;
    const target = resolveImport(file, m[1]);
    if (target === undefined) continue;
    if (target.replace(/\.ts$/, '') === SHARED_MODULE) result = true;
    else result = readsShared(target, seen);
  }
  seen.set(file, result);
  return result;
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

/** The conformance tier's test files, relative to the repository root (as vitest's include/exclude globs are). */
export function conformanceFiles(): string[] {
  const seen = new Map<string, boolean>();
  return testFiles(join(ROOT, 'test'))
    .filter((f) => f !== join(ROOT, 'test/conformance.test.ts') && readsShared(f, seen))
    .map((f) => relative(ROOT, f))
    .sort();
}
