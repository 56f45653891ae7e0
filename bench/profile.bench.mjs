#!/usr/bin/env node
// Where register's per-call time goes, by module: the one-process bench (inprocess.bench.mjs) run with bare and
// register only, its client under `node --cpu-prof`, and each sample of the profile assigned to the batch it fell in
// (the child writes when each batch began: BENCH_TIMELINE). A module's self time in register's batches minus its self
// time in bare's, per call, is what register costs there; faultline's modules by file, everything else by package
// (the OTel SDK, openai, undici, Node's internals, AsyncLocalStorage's hooks, the garbage collector). Self time only: a
// built-in such as JSON.parse counts in the module that called it. The profiler's own overhead inflates every row alike.
// BENCH_ROUNDS (default 100: 2,000 JSON and 1,000 streamed calls per mode). Needs `npm run build` (dist/).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DIST, root } from './paths.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 100);
const INTERVAL_US = Number(process.env.BENCH_PROFILE_INTERVAL_US ?? 500);
const dir = mkdtempSync(join(os.tmpdir(), 'faultline-profile-'));
const timelineFile = join(dir, 'timeline.json');
const t0 = Date.now();
execFileSync(process.execPath, ['--expose-gc', fileURLToPath(new URL('./inprocess.bench.mjs', import.meta.url))], {
  env: {
    ...process.env,
    BENCH_QUICK: '0',
    BENCH_MODES: 'register',
    BENCH_ROUNDS: String(ROUNDS),
    BENCH_TIMELINE: timelineFile,
    BENCH_NODE_ARGS: `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=${INTERVAL_US}`,
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const profileFile = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
if (!profileFile) throw new Error(`profile.bench: no .cpuprofile in ${dir}`);
const profile = JSON.parse(readFileSync(join(dir, profileFile), 'utf8'));
const timeline = JSON.parse(readFileSync(timelineFile, 'utf8'));
if (process.env.BENCH_PROFILE_KEEP === '1')
  process.stderr.write(`profile.bench: profile and timeline kept in ${dir}\n`);
else rmSync(dir, { recursive: true, force: true });

const dist = DIST.endsWith(sep) ? DIST : DIST + sep;
function category({ url, functionName }) {
  if (url === '')
    return functionName === '(garbage collector)'
      ? 'garbage collector'
      : functionName.startsWith('(')
        ? `${functionName} (V8)`
        : 'V8 built-ins';
  if (url.startsWith('wasm:')) return "undici's HTTP parser (llhttp, wasm)";
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  if (path.startsWith(dist)) return `faultline ${relative(dist, path).replace(/\.js$/, '')}`;
  const nm = path.lastIndexOf(`node_modules${sep}`);
  if (nm !== -1) {
    const [scope, name] = path.slice(nm + 13).split(sep);
    if (scope === '@opentelemetry') return 'OTel SDK and API (@opentelemetry/*)';
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  if (/^node:internal\/(async_hooks|async_local_storage)/.test(path))
    return 'AsyncLocalStorage and async hooks (node:internal)';
  if (path.startsWith('node:')) return 'Node internals (other)';
  return relative(root, path);
}
const byNode = new Map(profile.nodes.map((n) => [n.id, category(n.callFrame)]));

// Each sample's time is its delta (the time since the sample before), charged to the batch it fell in.
const self = new Map(); // category → { 'register json': µs, … }
const calls = {};
for (const [, mode, phase, n] of timeline) calls[`${mode} ${phase}`] = (calls[`${mode} ${phase}`] ?? 0) + n;
let t = profile.startTime;
let at = 0;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i];
  while (at + 1 < timeline.length && timeline[at + 1][0] <= t) at++;
  if (timeline.length === 0 || t < timeline[0][0]) continue;
  const [, mode, phase] = timeline[at];
  if (phase === 'between' || i + 1 >= profile.samples.length) continue;
  const cat = byNode.get(profile.samples[i]);
  const row = self.get(cat) ?? {};
  row[`${mode} ${phase}`] = (row[`${mode} ${phase}`] ?? 0) + profile.timeDeltas[i + 1];
  self.set(cat, row);
}
const per = (row, mode, phase) => (row[`${mode} ${phase}`] ?? 0) / (calls[`${mode} ${phase}`] || 1);
// Idle is time the thread waited (for the server, or for the CPU on a busy machine), not work: shown, not counted.
const rows = [...self.entries()].map(([cat, row]) => ({
  cat,
  json: per(row, 'register', 'json') - per(row, 'bare', 'json'),
  stream: per(row, 'register', 'stream') - per(row, 'bare', 'stream'),
}));
rows.sort((a, b) => b.json + b.stream - (a.json + a.stream));
const f = (x) => (Math.abs(x) < 0.05 ? '0.0' : `${x > 0 ? '+' : '−'}${Math.abs(x).toFixed(1)}`);
const sum = (xs, k) => xs.reduce((s, r) => s + r[k], 0);
const idle = rows.filter((r) => r.cat === '(idle) (V8)');
rows.splice(rows.findIndex((r) => r.cat === '(idle) (V8)') >>> 0, idle.length);
const ours = rows.filter((r) => r.cat.startsWith('faultline '));
const others = rows.filter((r) => !r.cat.startsWith('faultline '));
const shown = (xs) => xs.filter((r) => Math.abs(r.json) >= 0.5 || Math.abs(r.stream) >= 0.5);
const lines = [
  '## Where register’s per-call time goes (profile.bench.mjs)',
  '',
  `The one-process bench with bare and register only (${ROUNDS} counted rounds: ${calls['register json']} JSON and ${calls['register stream']} streamed calls per mode), its client`,
  `under \`node --cpu-prof --cpu-prof-interval=${INTERVAL_US}\`; each sample is assigned to the batch it fell in. A row is the self time in`,
  "register's batches minus that in bare's, µs per call; faultline's modules by file, the rest by package. A built-in (JSON.parse,",
  "string search) counts in the module that called it. The profiler's own overhead is charged too, so the total is above the",
  "bench's CPU added per call, and on a shared machine a row moves by a third between runs: read rows as shares. Rows under",
  '0.5 µs are left out (they are in the totals).',
  '',
  '| where | JSON call (µs) | streamed call (µs) |',
  '|---|---:|---:|',
  ...shown(ours).map((r) => `| ${r.cat.slice(10)} | ${f(r.json)} | ${f(r.stream)} |`),
  `| **faultline, all modules** | **${f(sum(ours, 'json'))}** | **${f(sum(ours, 'stream'))}** |`,
  ...shown(others).map((r) => `| ${r.cat} | ${f(r.json)} | ${f(r.stream)} |`),
  `| **total** | **${f(sum(rows, 'json'))}** | **${f(sum(rows, 'stream'))}** |`,
  ...idle.map((r) => `| (idle: waiting, not counted) | ${f(r.json)} | ${f(r.stream)} |`),
  '',
  `Load average at the end: ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(
      ' ',
    )} on ${os.cpus().length} CPUs. Run took ${((Date.now() - t0) / 1000).toFixed(0)} s on Node ${process.version}.`,
];
process.stdout.write(lines.join('\n') + '\n');
