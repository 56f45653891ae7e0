#!/usr/bin/env node
// Runs the bench/*.bench.mjs files (each prints a Markdown section on stdout) and writes BENCHMARKS.md from the
// sections of the benches it ran (also kept in bench/out/, git-ignored), so `npm run bench -- interceptor` refreshes
// one section and keeps the others. Benchmarks compare configurations against a baseline measured in the same run
// (ratios, not absolute times: machines here are shared and noisy).
import { mkdirSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, 'out');
mkdirSync(outDir, { recursive: true });
const only = process.argv.slice(2);
const all = readdirSync(here)
  .filter((f) => f.endsWith('.bench.mjs'))
  .sort();
const files = all.filter((f) => only.length === 0 || only.some((o) => f.includes(o)));
if (files.length === 0) {
  process.stderr.write(`bench: nothing matches ${only.join(' ')}; benches: ${all.join(', ')}\n`);
  process.exit(2);
}
const machine = `Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, load average ${os
  .loadavg()
  .map((l) => l.toFixed(1))
  .join(' / ')}`;
for (const f of files) {
  process.stderr.write(`bench: ${f} …\n`);
  const started = Date.now();
  const out = execFileSync(process.execPath, ['--expose-gc', join(here, f)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  process.stdout.write(out);
  const stamp = `_Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC (${machine}), ${((Date.now() - started) / 1000).toFixed(0)} s._`;
  writeFileSync(join(outDir, f.replace('.bench.mjs', '.md')), out.trim() + '\n\n' + stamp + '\n');
}
// The sections of the benches run now replace the sections of the same title in BENCHMARKS.md, in place; every other
// section is kept as it is there (it may carry notes added by hand, such as a run with other settings).
const fresh = files.map((f) => readFileSync(join(outDir, f.replace('.bench.mjs', '.md')), 'utf8').trim());
const titleOf = (section) => section.split('\n', 1)[0].trim();
const benchmarks = join(here, '..', 'BENCHMARKS.md');
const [head, ...previous] = existsSync(benchmarks)
  ? readFileSync(benchmarks, 'utf8')
      .split(/^(?=## )/m)
      .map((s) => s.trim())
  : [undefined];
const byTitle = new Map(fresh.map((s) => [titleOf(s), s]));
const sections = previous.map((s) => {
  const now = byTitle.get(titleOf(s));
  byTitle.delete(titleOf(s));
  return now ?? s;
});
sections.push(...byTitle.values());
// What comes before the first section (the title, and notes on this round's runs) is kept too.
const header =
  head ||
  [
    '# Benchmarks',
    '',
    'Produced by `npm run bench` (all sections) or `npm run bench -- NAME` (one section, e.g. `interceptor`); each',
    'section says when and on what it ran. Machines here are shared and noisy: every number that matters is a ratio',
    'to a baseline measured in the same run, with configurations interleaved.',
  ].join('\n');
writeFileSync(benchmarks, header + '\n\n' + sections.join('\n\n') + '\n');
