#!/usr/bin/env node
/**
 * Prints the monitors' evaluation tables (docs/monitors.md): `npm run build && node test/monitor-eval/run.mjs
 * [--seed N] [--keep]` (--keep leaves the OTLP files in the temporary directory and prints its path).
 */
import { evaluate } from './evaluate.mjs';

const args = process.argv.slice(2);
const at = args.indexOf('--seed');
const seed = at >= 0 ? Number(args[at + 1]) : 28;
if (!Number.isInteger(seed)) {
  process.stderr.write('run.mjs: --seed needs an integer\n');
  process.exit(2);
}
const t0 = Date.now();
const r = evaluate({ seed, keep: args.includes('--keep') });
if (r.monitor.code !== 0) process.stderr.write(`faultline monitor exited ${r.monitor.code}: ${r.monitor.stderr.slice(0, 2000)}\n`);
process.stdout.write(`${r.tables}\n\n(${((Date.now() - t0) / 1000).toFixed(1)} s${args.includes('--keep') ? `; files in ${r.dir}` : ''})\n`);
