// Trace reading at scale: generates a ~1 GB OTLP JSON-lines file of multi-agent GenAI traces in a temp dir
// (FAULTLINE_BENCH_TRACE_MB, default 1024), then measures readTraces in a fresh child process: spans per second,
// traces per second, and peak memory (VmHWM from /proc, plus sampled RSS). Prints a Markdown section.
// The file is deleted afterwards. Needs `npm run build` (dist/).
import { mkdtempSync, rmSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { execFileSync } from 'node:child_process';
import { generateTraceFile } from './trace-gen.mjs';

const here = dirname(fileURLToPath(import.meta.url));

function vmHwmMb() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Baseline child mode: only split lines and JSON.parse them (the floor any JSON-lines reader pays). */
async function baseline(file) {
  const { createReadStream } = await import('node:fs');
  const t0 = performance.now();
  let lines = 0;
  let pending = '';
  const s = createReadStream(file, { highWaterMark: 1 << 20, encoding: 'utf8' });
  for await (const c of s) {
    const last = c.lastIndexOf('\n');
    if (last < 0) {
      pending += c;
      continue;
    }
    const text = pending + c.slice(0, last);
    pending = c.slice(last + 1);
    for (const l of text.split('\n')) {
      if (!l) continue;
      JSON.parse(l);
      lines++;
    }
  }
  if (pending) {
    JSON.parse(pending);
    lines++;
  }
  process.stdout.write(JSON.stringify({ lines, seconds: (performance.now() - t0) / 1000, vmHwmMb: vmHwmMb() }) + '\n');
}

/** Child mode: read the file with readTraces and print one JSON line of measurements. */
async function measure(file) {
  const { readTraces } = await import(pathToFileURL(join(here, '..', 'dist', 'src', 'traces', 'read.js')).href);
  let peakRss = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 25);
  const baseRss = process.memoryUsage().rss;
  const t0 = performance.now();
  let spans = 0;
  let traces = 0;
  let maxSpans = 0;
  for await (const t of readTraces([file])) {
    traces++;
    spans += t.spans.length;
    if (t.spans.length > maxSpans) maxSpans = t.spans.length;
  }
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(timer);
  process.stdout.write(JSON.stringify({ spans, traces, maxSpans, seconds, baseRssMb: baseRss / 2 ** 20, peakRssMb: peakRss / 2 ** 20, vmHwmMb: vmHwmMb() }) + '\n');
}

async function main() {
  const mb = Number(process.env.FAULTLINE_BENCH_TRACE_MB ?? 1024);
  if (!Number.isFinite(mb) || mb <= 0) throw new Error(`FAULTLINE_BENCH_TRACE_MB must be a positive number, got ${process.env.FAULTLINE_BENCH_TRACE_MB}`);
  const dir = mkdtempSync(join(tmpdir(), 'faultline-bench-traces-'));
  const file = join(dir, 'traces.jsonl');
  try {
    process.stderr.write(`bench traces: generating ${mb} MB of OTLP JSON lines in ${dir} …\n`);
    const g0 = performance.now();
    const gen = await generateTraceFile(file, { targetBytes: mb * 1024 * 1024 });
    const genSeconds = (performance.now() - g0) / 1000;
    const size = statSync(file).size;
    process.stderr.write(`bench traces: ${gen.spans} spans in ${gen.traces} traces (${(size / 2 ** 20).toFixed(0)} MiB) in ${genSeconds.toFixed(1)} s; reading …\n`);
    const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--measure', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const m = JSON.parse(out.trim().split('\n').pop());
    const bOut = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--baseline', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const b = JSON.parse(bOut.trim().split('\n').pop());
    const ok = m.spans === gen.spans && m.traces === gen.traces;
    const lines = [
      '## Trace reading (readTraces over OTLP JSON lines)',
      '',
      `Generated file: ${(size / 2 ** 20).toFixed(0)} MiB, ${gen.spans.toLocaleString('en')} spans in ${gen.traces.toLocaleString('en')} traces ` +
        `(6 spans each: agent root, 3 chat calls with recorded outputs, a tool call, an A2A message; ${gen.faultyTraces.toLocaleString('en')} with a planted fault; ` +
        `each trace split over two lines shared with its neighbours). Set FAULTLINE_BENCH_TRACE_MB to change the size.`,
      '',
      '| measure | value |',
      '|---|---|',
      `| spans read / traces regrouped | ${m.spans.toLocaleString('en')} / ${m.traces.toLocaleString('en')} (${ok ? 'all' : 'MISMATCH with generated'}) |`,
      `| reading time | ${m.seconds.toFixed(1)} s |`,
      `| throughput | ${Math.round(m.spans / m.seconds).toLocaleString('en')} spans/s, ${(size / 2 ** 20 / m.seconds).toFixed(1)} MiB/s |`,
      `| baseline: split lines + JSON.parse only | ${b.seconds.toFixed(1)} s (${(size / 2 ** 20 / b.seconds).toFixed(1)} MiB/s); readTraces takes ${(m.seconds / b.seconds).toFixed(2)}× the baseline time |`,
      `| peak RSS (VmHWM) | ${m.vmHwmMb !== undefined ? m.vmHwmMb.toFixed(0) : 'n/a'} MiB (sampled peak ${m.peakRssMb.toFixed(0)} MiB; ${m.baseRssMb.toFixed(0)} MiB before reading) |`,
      `| peak RSS / file size | ${(((m.vmHwmMb ?? m.peakRssMb) / (size / 2 ** 20)) * 100).toFixed(1)} % |`,
      '',
      'Memory stays bounded because JSON lines are parsed one line at a time and traces are emitted once 20,000 spans',
      'went by without one of theirs (src/traces/group.ts); the generation above is streamed to disk as well.',
    ];
    process.stdout.write(lines.join('\n') + '\n');
    if (!ok) process.exitCode = 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--measure') await measure(process.argv[3]);
else if (process.argv[2] === '--baseline') await baseline(process.argv[3]);
else await main();
