#!/usr/bin/env node
// Runs every bench/*.bench.mjs in turn (each prints a Markdown section on stdout) and writes BENCHMARKS.md.
// Benchmarks compare configurations against a baseline measured in the same run (ratios, not absolute times).
import { readdirSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
const sections = [];
for (const f of files) {
  process.stderr.write(`bench: ${f} …\n`);
  const out = execFileSync(process.execPath, ['--expose-gc', join(here, f)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  sections.push(out.trim());
  process.stdout.write(out);
}
const header = [
  '# Benchmarks',
  '',
  `Produced by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}.`,
  'Machines here are shared and noisy: every number that matters is a ratio to a baseline measured in the same run,',
  'with configurations interleaved.',
  '',
].join('\n');
if (only.length === 0) writeFileSync(join(here, '..', 'BENCHMARKS.md'), header + '\n' + sections.join('\n\n') + '\n');
