// A measured child of bench/traces.bench.mjs: reads one trace file one way and prints {spans, traces} as JSON.
//   floor    — cut lines on the bytes and JSON.parse each (the least any JSON-lines reader does)
//   read     — readTraces in this thread (normalised spans grouped into traces)
//   workers  — mapTraces on worker threads with a task that only counts (the same reading, on every core)
'use strict';
const { openSync, readSync, closeSync } = require('node:fs');
const { join } = require('node:path');

const [mode, file] = process.argv.slice(2);
const dist = join(__dirname, '..', 'dist', 'src', 'traces');

async function main() {
  let spans = 0;
  let traces = 0;
  if (mode === 'floor') {
    const fd = openSync(file, 'r');
    const buf = Buffer.allocUnsafe(4 << 20);
    let carry = Buffer.alloc(0);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const chunk = carry.length > 0 ? Buffer.concat([carry, buf.subarray(0, n)]) : buf.subarray(0, n);
      let from = 0;
      for (let nl = chunk.indexOf(10, from); nl >= 0; nl = chunk.indexOf(10, from)) {
        const doc = JSON.parse(chunk.toString('utf8', from, nl));
        for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans += ss.spans.length;
        traces++; // lines, here
        from = nl + 1;
      }
      carry = Buffer.from(chunk.subarray(from));
    }
    closeSync(fd);
  } else if (mode === 'read') {
    const { readTraces } = require(join(dist, 'read.js'));
    for await (const t of readTraces([file])) {
      traces++;
      spans += t.spans.length;
    }
  } else if (mode === 'workers') {
    const { mapTraces } = require(join(dist, 'parallel.js'));
    for await (const n of mapTraces([file], { module: join(__dirname, 'count-task.cjs'), name: 'count' })) {
      traces++;
      spans += n;
    }
  } else throw new Error(`unknown mode ${mode}`);
  process.stdout.write(JSON.stringify({ spans, traces }) + '\n');
}
main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exitCode = 1;
});
