// Why per-trace caches are kept on the object (src/memo.ts) and not in a module-level WeakMap: the same loop — a
// trace, its view cached by the trace, a diagnosis's own garbage — with the view in an old WeakMap and in an
// ObjectMemo, each run in a child process under --trace-gc-nvp; printed: bytes promoted to the old generation and
// scavenge time. Run after `npm run build`: `node bench/memo-gc.cjs` (not part of `npm run bench`: a mechanism, not
// a goal).
'use strict';
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const TRACES = 20_000;

function child(kind) {
  const { ObjectMemo } = require(path.join(__dirname, '..', 'dist', 'src', 'memo.js'));
  const store = kind === 'weakmap' ? new WeakMap() : new ObjectMemo('bench');
  // The cache is old by the time traces come, as a module-level one is.
  let junk = [];
  for (let i = 0; i < 200_000; i++) junk.push({ i });
  junk = [];
  let acc = junk.length;
  for (let t = 0; t < TRACES; t++) {
    const trace = { t, spans: Array.from({ length: 6 }, (_, i) => ({ i, name: `span ${i}` })) };
    store.set(trace, { trace, calls: trace.spans.map((s) => ({ s, text: 'x'.repeat(200) + t })) });
    for (let k = 0; k < 300; k++) acc += [k, t, k * t].length; // the diagnosis's own short-lived objects
    acc += store.get(trace).calls.length;
  }
  return acc;
}

if (process.argv[2] === 'child') {
  child(process.argv[3]);
} else {
  for (const kind of ['weakmap', 'memo', 'weakmap', 'memo']) {
    const out = execFileSync(process.execPath, ['--trace-gc-nvp', path.join(__dirname, 'memo-gc.cjs'), 'child', kind], {
      encoding: 'utf8',
    });
    let promoted = 0;
    let scavengeMs = 0;
    let scavenges = 0;
    for (const line of out.split('\n')) {
      if (!line.includes('gc=s ')) continue;
      scavenges++;
      promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
      scavengeMs += Number(/ scavenge=([\d.]+)/.exec(line)?.[1] ?? 0);
    }
    console.log(
      `${kind.padEnd(8)} ${TRACES} traces: ${scavenges} scavenges, ${(promoted / 1e6).toFixed(1)} MB promoted, ${scavengeMs.toFixed(0)} ms scavenging`,
    );
  }
}
