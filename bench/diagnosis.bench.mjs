#!/usr/bin/env node
// Diagnosis throughput as a user runs it: `faultline diagnose FILE --format jsonl > diagnoses.jsonl` (rule diagnoser;
// worker threads by default for big inputs) and the same with `--workers 0`, over generated OTLP JSON-lines files
// (bench/out/, FAULTLINE_BENCH_SIZES_MB, default 1 GB and 4 GB). Each run is a child process: wall and CPU time,
// peak RSS of the whole process, and on Linux CPU by thread (main, trace workers, the rest). At the first size the two
// configurations are interleaved over FAULTLINE_BENCH_ROUNDS rounds (default 3) with a 95 % interval of their paired
// difference. Then where the time goes, per span, in one thread over the first 64 MiB (bench/diagnosis-phases.cjs).
// Prints a Markdown section. Needs `npm run build`.
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { cpus } from 'node:os';
import {
  OUT,
  fmt,
  load,
  machine,
  measureChild,
  mib,
  sizes,
  summary,
  throughputTable,
  traceFile,
} from './big-files.mjs';

const CONFIGS = [
  { name: '`faultline diagnose --format jsonl` (default: worker threads)', key: 'default', extra: [] },
  { name: '`… --workers 0` (one thread)', key: 'one', extra: ['--workers', '0'] },
];

function countLines(file) {
  const text = readFileSync(file, 'utf8');
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * Where the CPU of the default configuration went, by thread (Linux): the main thread (reading, grouping, the memory
 * across traces, writing), the trace workers (the `workers` busiest other threads) and the rest (V8's platform
 * threads, which do the garbage collector's parallel and concurrent work, and libuv's), medians over the rounds.
 */
function threadTable(rounds) {
  const withThreads = rounds.filter((m) => m.threads !== undefined);
  if (withThreads.length === 0) return [];
  const workers = cpus().length;
  const med = (xs) => summary(xs).median;
  const main = med(withThreads.map((m) => m.threads.main));
  const busiest = med(withThreads.map((m) => m.threads.others.slice(0, workers).reduce((a, b) => a + b, 0)));
  const rest = med(withThreads.map((m) => m.threads.others.slice(workers).reduce((a, b) => a + b, 0)));
  return [
    `CPU by thread, default configuration (utime + stime from /proc, sampled every 200 ms; medians over ${withThreads.length} rounds): main thread ${fmt(main, 1)} s, the ${workers} busiest other threads (the trace workers) ${fmt(busiest, 1)} s, the other threads (V8's platform threads, where the garbage collector's parallel and concurrent work runs, and libuv's) ${fmt(rest, 1)} s.`,
    '',
  ];
}

async function main() {
  const rounds = Number(process.env.FAULTLINE_BENCH_ROUNDS ?? 3);
  const lines = ['## Diagnosis throughput (`bench/diagnosis.bench.mjs`)', ''];
  const loadBefore = load();
  let first = true;
  let sample;
  for (const mb of sizes()) {
    const f = await traceFile(mb);
    sample ??= f;
    const n = first ? rounds : 1;
    const runs = new Map(CONFIGS.map((c) => [c.key, []]));
    for (let r = 0; r < n; r++) {
      const order = CONFIGS.map((_, i) => CONFIGS[(i + r) % CONFIGS.length]);
      for (const c of order) {
        process.stderr.write(`bench diagnosis: ${mb} MiB, round ${r + 1}/${n}, ${c.key} …\n`);
        const out = join(OUT, `diagnoses-${mb}mb-${c.key}.jsonl`);
        const fd = openSync(out, 'w');
        let m;
        try {
          m = await measureChild([join('bin', 'faultline.js'), 'diagnose', f.file, '--format', 'jsonl', ...c.extra], {
            stdout: fd,
            env: { CI: '1' },
          });
        } finally {
          closeSync(fd);
        }
        const got = countLines(out);
        if (got !== f.traces) throw new Error(`${c.key}: ${got} diagnoses, the file has ${f.traces} traces`);
        runs.get(c.key).push(m);
      }
    }
    lines.push(
      `### ${fmt(mib(f.bytes))} MiB: ${fmt(f.spans)} spans in ${fmt(f.traces)} traces (one diagnosis per trace)`,
      '',
    );
    lines.push(...throughputTable(f, CONFIGS, runs, n, { workers: 'default', one: 'one' }));
    lines.push('');
    if (first) lines.push(...threadTable(runs.get('default')));
    first = false;
  }
  process.stderr.write('bench diagnosis: where the time goes …\n');
  const phases = JSON.parse(
    (await measureChild([join('bench', 'diagnosis-phases.cjs'), sample.file, '64'])).stdout.trim().split('\n').pop(),
  );
  const total = Object.values(phases.usPerSpan).reduce((a, b) => a + b, 0);
  lines.push(
    `### Where the time goes (one thread, first 64 MiB: ${fmt(phases.spans)} spans)`,
    '',
    '| step | µs per span | share |',
    '|---|--:|--:|',
    ...Object.entries(phases.usPerSpan).map(([k, v]) => `| ${k} | ${fmt(v, 2)} | ${fmt((v / total) * 100)} % |`),
    `| total | ${fmt(total, 2)} | one core: ${fmt(1e6 / total)} spans/s |`,
    '',
    `Garbage-collection pauses, inside the steps above: ${fmt(phases.gcPausesUsPerSpan, 2)} µs per span (${fmt((phases.gcPausesUsPerSpan / total) * 100)} %); the GC helper threads' work comes on top, on other cores.`,
    '',
  );
  process.stderr.write('bench diagnosis: per detector …\n');
  const each = JSON.parse(
    (await measureChild([join('bench', 'diagnosis-phases.cjs'), sample.file, '64', '--detectors'])).stdout
      .trim()
      .split('\n')
      .pop(),
  );
  lines.push(
    `### Offline detectors, one by one (same run setup, each detector's \`applies\` + \`detect\` timed in the registry)`,
    '',
    '| detector | µs per span | applies to (per span) | findings |',
    '|---|--:|--:|--:|',
    ...Object.entries(each.detectors).map(
      ([k, v]) => `| ${k} | ${fmt(v.usPerSpan, 2)} | ${fmt(v.appliesPerSpan, 2)} | ${fmt(v.findings)} |`,
    ),
    '',
    `The timers' own cost (two clock reads per call) is in each row; the detectors step of that run: ${fmt(each.usPerSpan['offline detectors'], 2)} µs per span, the rest of it building the observations and walking the trace.`,
    '',
    `Peak RSS is the whole process (worker threads included) at its exit. Load average before: ${loadBefore}; after: ${load()} (${machine()}; the machine is shared: wall times move with the load, CPU times less).`,
    `Files: ${relative(process.cwd(), OUT)}/traces-*.jsonl (generated once, git-ignored); diagnoses written to ${relative(process.cwd(), OUT)}/diagnoses-*.jsonl.`,
  );
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exitCode = 1;
});
