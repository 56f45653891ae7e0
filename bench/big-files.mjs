// Bench-only helpers shared by the trace-reading and diagnosis benches: the generated trace files (kept in
// bench/out/, git-ignored, regenerated when missing or from another generator version) and running a measured
// configuration in a child process (wall time, CPU time, peak RSS of the whole process, worker threads included).
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpus, loadavg } from 'node:os';
import { generateTraceFile } from './trace-gen.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const OUT = join(here, 'out');
export const ROOT = join(here, '..');
const GEN_VERSION = 1;

/** Sizes to run at, MiB: FAULTLINE_BENCH_SIZES_MB (comma-separated), default 1 GB and 4 GB. */
export function sizes() {
  const raw = process.env.FAULTLINE_BENCH_SIZES_MB ?? '1024,4096';
  const list = raw.split(',').map((s) => Number(s.trim()));
  if (list.some((n) => !Number.isFinite(n) || n <= 0))
    throw new Error(`FAULTLINE_BENCH_SIZES_MB must list positive numbers, got ${raw}`);
  return list;
}

/** The generated file of about `mb` MiB and what it holds (generated once, then reused). */
export async function traceFile(mb) {
  mkdirSync(OUT, { recursive: true });
  const file = join(OUT, `traces-${mb}mb.jsonl`);
  const meta = `${file}.meta.json`;
  if (existsSync(file) && existsSync(meta)) {
    const m = JSON.parse(readFileSync(meta, 'utf8'));
    if (m.version === GEN_VERSION && statSync(file).size === m.bytes) return { file, ...m };
  }
  process.stderr.write(`bench: generating ${mb} MiB of OTLP JSON lines at ${file} …\n`);
  const t0 = performance.now();
  const g = await generateTraceFile(file, { targetBytes: mb * 1024 * 1024 });
  const m = { version: GEN_VERSION, ...g, seconds: (performance.now() - t0) / 1000 };
  writeFileSync(meta, JSON.stringify(m));
  return { file, ...m };
}

const TICKS_PER_SECOND = 100; // USER_HZ, as /proc reports utime and stime on Linux

/**
 * CPU seconds of each thread of process `pid` so far (utime + stime from /proc/PID/task/TID/stat), by thread id;
 * undefined where /proc is not there (not Linux) or the process is gone.
 */
function threadCpu(pid) {
  try {
    const out = new Map();
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        out.set(Number(tid), (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND);
      } catch {
        // the thread ended between the listing and the read
      }
    }
    return out;
  } catch {
    return undefined;
  }
}

/**
 * Run `node args…`; resolves with wall seconds, CPU seconds (user + system) and peak RSS (MiB) of the child, read by
 * a preload (bench/peak-rss.cjs) at its exit through fd 3, and its stdout when `stdout` is 'capture' (a file
 * descriptor to write it to, or 'ignore'). On Linux also `threads`: each thread's CPU seconds as last sampled (every
 * 200 ms; a thread's last 200 ms before it ended can be missing), the main thread first, then by CPU.
 */
export function measureChild(args, { env = {}, stdout = 'capture' } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ['--require', join(here, 'peak-rss.cjs'), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', stdout === 'capture' ? 'pipe' : stdout, 'pipe', 'pipe'],
    });
    const seen = new Map();
    const sample = () => {
      for (const [tid, s] of threadCpu(child.pid) ?? []) seen.set(tid, s);
    };
    const sampler = setInterval(sample, 200);
    let err = '';
    let out = '';
    let usage = '';
    child.stdout?.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.stdio[3].on('data', (c) => (usage += c));
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(sampler);
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) return reject(new Error(`node ${args.join(' ')} exited ${code}: ${err.slice(-2000)}`));
      const u = JSON.parse(usage);
      const main = seen.get(child.pid);
      const others = [...seen].filter(([tid]) => tid !== child.pid).map(([, s]) => s);
      const threads = main === undefined ? undefined : { main, others: others.sort((a, b) => b - a) };
      resolve({
        seconds,
        cpuSeconds: (u.userUs + u.systemUs) / 1e6,
        peakRssMb: u.maxRssKb / 1024,
        stdout: out,
        threads,
      });
    });
  });
}

export function machine() {
  return `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}`;
}

export const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');

export const mib = (bytes) => bytes / 2 ** 20;
export const fmt = (n, d = 0) => n.toLocaleString('en', { maximumFractionDigits: d, minimumFractionDigits: d });

/** Median and range of a list. */
export function summary(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return { median: s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2, min: s[0], max: s[s.length - 1] };
}

/** 95 % interval of the mean of paired differences (Student t; n ≥ 2). */
export function pairedInterval(diffs) {
  const n = diffs.length;
  const mean = diffs.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean, lo: NaN, hi: NaN };
  const sd = Math.sqrt(diffs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1));
  const t = [12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262][n - 2] ?? 1.96;
  const h = (t * sd) / Math.sqrt(n);
  return { mean, lo: mean - h, hi: mean + h };
}

/**
 * The throughput table of one file: a row per configuration (wall time median and range, spans/s, MiB/s, CPU, peak RSS)
 * from `runs` (configuration key → its measurements, one per round), then the paired wall-time difference of
 * `workers` minus `one` when there were several rounds.
 */
export function throughputTable(f, configs, runs, n, { workers, one }) {
  const lines = [
    `| configuration | wall s (median${n > 1 ? ', range' : ''}) | spans/s | MiB/s | CPU s | peak RSS MiB |`,
    '|---|--:|--:|--:|--:|--:|',
  ];
  for (const c of configs) {
    const ms = runs.get(c.key);
    const w = summary(ms.map((m) => m.seconds));
    const cpu = summary(ms.map((m) => m.cpuSeconds));
    const rss = summary(ms.map((m) => m.peakRssMb));
    lines.push(
      `| ${c.name} | ${fmt(w.median, 1)}${n > 1 ? ` (${fmt(w.min, 1)}–${fmt(w.max, 1)})` : ''} | ${fmt(f.spans / w.median)} | ${fmt(mib(f.bytes) / w.median, 1)} | ${fmt(cpu.median, 1)} | ${fmt(rss.max)} |`,
    );
  }
  if (n > 1) {
    const diff = pairedInterval(runs.get(workers).map((m, i) => m.seconds - runs.get(one)[i].seconds));
    lines.push(
      '',
      `Workers minus one thread, wall time: ${fmt(diff.mean, 1)} s (95 % interval ${fmt(diff.lo, 1)} to ${fmt(diff.hi, 1)} s, ${n} paired rounds).`,
    );
  }
  return lines;
}
