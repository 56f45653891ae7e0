// Where a process allocates: preload it (`node -r ./bench/heap-sample.cjs SCRIPT ...`) and at exit it prints the
// sampling heap profiler's bytes by allocating function (self), and by function with all it calls (inclusive),
// counting every sampled object, those the garbage
// collector already freed included, so the table is allocation volume, not what is still alive. With HEAP_SAMPLE_OUT
// set, the profile is also written there (a .heapprofile for Chrome DevTools). Used for the diagnosis path's table in
// BENCHMARKS.md: `node -r ./bench/heap-sample.cjs bench/diagnosis-phases.cjs bench/out/traces-64mb.jsonl 64`.
'use strict';
const inspector = require('node:inspector');
const { writeFileSync } = require('node:fs');

const session = new inspector.Session();
session.connect();
session.post('HeapProfiler.enable');
session.post('HeapProfiler.startSampling', {
  samplingInterval: 4096,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});

process.on('exit', () => {
  // The main thread's session answers synchronously, so this runs to its end before the process does.
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (err) return void process.stderr.write(`heap-sample: ${err.message}\n`);
    const { profile } = result;
    if (process.env.HEAP_SAMPLE_OUT) writeFileSync(process.env.HEAP_SAMPLE_OUT, JSON.stringify(profile));
    const self = new Map();
    const inclusive = new Map();
    let total = 0;
    const walk = (node, above) => {
      const { functionName, url, lineNumber } = node.callFrame;
      const site = `${functionName || '(top level)'} ${url.replace(/^.*\/(dist|bench)\//, '$1/')}:${lineNumber + 1}`;
      self.set(site, (self.get(site) ?? 0) + node.selfSize);
      const stack = above.includes(site) ? above : [...above, site];
      for (const s of stack) inclusive.set(s, (inclusive.get(s) ?? 0) + node.selfSize);
      total += node.selfSize;
      for (const child of node.children) walk(child, stack);
    };
    walk(profile.head, []);
    const lines = [`heap-sample: ${(total / 1e6).toFixed(0)} MB allocated (sampled)`];
    for (const [title, map] of [
      ['by allocating function', self],
      ['by function with what it calls', inclusive],
    ]) {
      lines.push(`${title}:`);
      for (const [site, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, 30))
        lines.push(`${((bytes / total) * 100).toFixed(1).padStart(5)} %  ${site}`);
    }
    process.stderr.write(lines.join('\n') + '\n');
  });
});
