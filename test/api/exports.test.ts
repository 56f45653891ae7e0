/**
 * docs/api.md lists exactly what the package exports (issue 32). It takes each entry of package.json's `exports` that
 * has types, finds the source module its declaration file is built from (dist/src/X.d.ts from src/X.ts), and asks the
 * TypeScript compiler for that module's exports, values and types alike. That set must equal the names listed under
 * the entry's heading in docs/api.md. An export added without a line in the docs, or a doc line left after its
 * export is gone, fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import { ROOT } from '../support/dist';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, string | { types?: string }>;
};
const doc = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');

/** Entry name (`faultline`, `faultline/analysis`…) → its source module. */
const entries = Object.entries(pkg.exports).flatMap(([key, v]) => {
  const types = typeof v === 'object' ? v.types : undefined;
  if (!types) return [];
  const source = types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts');
  return [{ entry: key === '.' ? pkg.name : `${pkg.name}/${key.replace(/^\.\//, '')}`, source }];
});

function exportedNames(sources: string[]): Map<string, string[]> {
  const program = ts.createProgram(
    sources.map((s) => join(ROOT, s)),
    {
      module: ts.ModuleKind.Node16,
      moduleResolution: ts.ModuleResolutionKind.Node16,
      strict: true,
      skipLibCheck: true,
      noEmit: true,
      resolveJsonModule: true,
      esModuleInterop: true,
      types: ['node'],
    },
  );
  const checker = program.getTypeChecker();
  const out = new Map<string, string[]>();
  for (const s of sources) {
    const file = program.getSourceFile(join(ROOT, s));
    const symbol = file && checker.getSymbolAtLocation(file);
    out.set(
      s,
      symbol
        ? checker
            .getExportsOfModule(symbol)
            .map((e) => e.name)
            .sort()
        : [],
    );
  }
  return out;
}

/** The names in backticks on the bullet lines under `## \`entry\``, up to the next `## ` heading. */
function documented(entry: string): string[] | undefined {
  const start = doc.indexOf(`\n## \`${entry}\`\n`);
  if (start < 0) return undefined;
  const rest = doc.slice(start + 1);
  const end = rest.indexOf('\n## ', 1);
  const section = end < 0 ? rest : rest.slice(0, end);
  const names = new Set<string>();
  let inBullet = false;
  for (const line of section.split('\n')) {
    if (line.startsWith('- ')) inBullet = true;
    else if (!line.startsWith('  ')) inBullet = false;
    if (!inBullet) continue;
    // The bold purpose label is not a name; "also in `faultline/analysis`" names an entry, not an export.
    for (const m of line.replace(/\*\*[^*]*\*\*/g, '').matchAll(/`([A-Za-z_$][\w$]*)`/g)) names.add(m[1]!);
  }
  return [...names].sort();
}

describe('docs/api.md against the package exports', () => {
  const names = exportedNames(entries.map((e) => e.source));

  test('the package has the entries of the issue, each typed and documented', () => {
    expect(entries.map((e) => e.entry)).toEqual(
      expect.arrayContaining(['faultline', 'faultline/analysis', 'faultline/extend', 'faultline/register']),
    );
  });

  for (const { entry, source } of entries) {
    test(`${entry} (${source})`, () => {
      expect(documented(entry), `docs/api.md has no section for ${entry}`).toBeDefined();
      expect(documented(entry)).toEqual(names.get(source));
    });
  }

  test('the analysis entry has diagnoseEach and the extension entry DetectionContext', () => {
    expect(names.get('src/api/analysis.ts')).toContain('diagnoseEach');
    expect(names.get('src/api/extend.ts')).toContain('DetectionContext');
  });

  test('the root keeps none of the internals the issue names', () => {
    for (const n of [
      'getExchange',
      'installInstrumentation',
      'startRuntime',
      'resolveTaskId',
      'planFromEnv',
      'injectorFromEnv',
    ])
      expect(names.get('src/index.ts')).not.toContain(n);
  });
});
