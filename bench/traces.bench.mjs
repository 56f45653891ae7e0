// Trace reading at scale: readTraces in one thread and mapTraces on worker threads (a task that only counts), against
// the floor (cut lines + JSON.parse), over generated OTLP JSON-lines files of multi-agent GenAI traces (bench/out/,
// FAULTLINE_BENCH_SIZES_MB, default 1 GB and 4 GB). Each configuration runs in a child process (wall and CPU time,
// peak RSS of the whole process); at the first size the configurations are interleaved over
// FAULTLINE_BENCH_ROUNDS rounds (default 3) and the worker/one-thread difference is given with a 95 % interval.
// Prints a Markdown section. Needs `npm run build` (dist/).
import { join, relative } from 'node:path';
import { OUT, fmt, load, machine, measureChild, mib, sizes, throughputTable, traceFile } from './big-files.mjs';

const CONFIGS = [
  { name: 'floor: cut lines + JSON.parse', mode: 'floor' },
  { name: 'readTraces, one thread', mode: 'read' },
  { name: 'mapTraces, worker threads (default for ≥ 64 MiB)', mode: 'workers' },
];

async function main() {
  const rounds = Number(process.env.FAULTLINE_BENCH_ROUNDS ?? 3);
  const lines = ['## Trace reading (`bench/traces.bench.mjs`)', ''];
  const loadBefore = load();
  let first = true;
  for (const mb of sizes()) {
    const f = await traceFile(mb);
    const n = first ? rounds : 1;
    const runs = new Map(CONFIGS.map((c) => [c.mode, []]));
    for (let r = 0; r < n; r++) {
      // Rotate the order each round so that no configuration always runs first (or last) in a noisy stretch.
      const order = CONFIGS.map((_, i) => CONFIGS[(i + r) % CONFIGS.length]);
      for (const c of order) {
        process.stderr.write(`bench traces: ${mb} MiB, round ${r + 1}/${n}, ${c.mode} …\n`);
        const m = await measureChild([join('bench', 'read-child.cjs'), c.mode, f.file]);
        const got = JSON.parse(m.stdout.trim().split('\n').pop());
        if (got.spans !== f.spans || (c.mode !== 'floor' && got.traces !== f.traces)) {
          throw new Error(
            `${c.mode} read ${got.spans} spans / ${got.traces} traces, the file has ${f.spans} / ${f.traces}`,
          );
        }
        runs.get(c.mode).push(m);
      }
    }
    lines.push(
      `### ${fmt(mib(f.bytes))} MiB: ${fmt(f.spans)} spans in ${fmt(f.traces)} traces`,
      '',
      'Each trace: an agent root, three chat calls with recorded outputs, a tool call and an A2A message; one in eight with a planted fault; each trace split over two lines shared with its neighbours.',
      '',
    );
    lines.push(
      ...throughputTable(
        f,
        CONFIGS.map((c) => ({ ...c, key: c.mode })),
        runs,
        n,
        { workers: 'workers', one: 'read' },
      ),
    );
    lines.push('');
    first = false;
  }
  lines.push(
    `Peak RSS is the whole process (worker threads included) at its exit. Load average before: ${loadBefore}; after: ${load()} (${machine()}; the machine is shared: wall times move with the load, CPU times less).`,
    `Files: ${relative(process.cwd(), OUT)}/traces-*.jsonl (generated once, git-ignored).`,
  );
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exitCode = 1;
});
