#!/usr/bin/env node
/**
 * Prints the monitors' evaluation tables and, with --write, puts them in docs/monitors.md between the
 * `<!-- monitor-eval:start … -->` and `<!-- monitor-eval:end -->` markers: `npm run build && node
 * test/monitor-eval/run.mjs [--seed N] [--clean N] [--keep] [--write]` (--clean: clean runs per producer × content
 * cell, 28 by default, for a false-positive rate on more near-misses; --keep leaves the OTLP files in the temporary
 * directory and prints its path). Without --write nothing is written (the tables were only ever printed: a run that "exited 0"
 * left the docs as they were).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { evaluate } from './evaluate.mjs';

const args = process.argv.slice(2);
const at = args.indexOf('--seed');
const seed = at >= 0 ? Number(args[at + 1]) : 28;
if (!Number.isInteger(seed)) {
  process.stderr.write('run.mjs: --seed needs an integer\n');
  process.exit(2);
}
const ci = args.indexOf('--clean');
const clean = ci >= 0 ? Number(args[ci + 1]) : undefined;
if (clean !== undefined && !(Number.isInteger(clean) && clean > 0)) {
  process.stderr.write('run.mjs: --clean needs a positive integer\n');
  process.exit(2);
}
if (clean !== undefined && args.includes('--write')) {
  process.stderr.write('run.mjs: --write writes the default set only (no --clean)\n');
  process.exit(2);
}
const t0 = Date.now();
const r = evaluate({ seed, keep: args.includes('--keep'), ...(clean !== undefined ? { clean } : {}) });
if (r.monitor.code !== 0) {
  process.stderr.write(`faultline monitor exited ${r.monitor.code}: ${r.monitor.stderr.slice(0, 2000)}\n`);
  process.exit(1);
}
process.stdout.write(
  `${r.tables}\n\n(${((Date.now() - t0) / 1000).toFixed(1)} s${args.includes('--keep') ? `; files in ${r.dir}` : ''})\n`,
);
if (args.includes('--write')) {
  const doc = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', '..', 'docs', 'monitors.md');
  const text = readFileSync(doc, 'utf8');
  const start = /<!-- monitor-eval:start[^>]*-->\n/.exec(text);
  const end = text.indexOf('<!-- monitor-eval:end -->');
  if (!start || end < start.index) {
    process.stderr.write(`run.mjs: no monitor-eval markers in ${doc}\n`);
    process.exit(1);
  }
  const marker = `<!-- monitor-eval:start (npm run build && node test/monitor-eval/run.mjs --write) -->\n`;
  writeFileSync(doc, `${text.slice(0, start.index)}${marker}${r.tables}\n${text.slice(end)}`);
  process.stdout.write(`wrote the tables into ${doc}\n`);
}
