// A measured child of bench/diagnosis.bench.mjs: the diagnose path over the first N MiB of a JSON-lines trace file in
// one thread, with each step timed on its own (per span): JSON.parse of the lines, normalising them to SpanRecords,
// grouping into traces, stripping the ground truth (in place, as the diagnose path over files does), the one reading
// of each trace (src/traces/view: built once, read by the detectors and the rules alike), the offline detectors, the
// rules; and the garbage-collection pauses that fell inside those steps (a collection is paid by whichever step
// allocates when it is due, so it is reported apart; the GC helper threads' work is in no step). Prints JSON.
// With `--detectors`, each call-level detector is timed too (its `applies` and `detect`, wrapped in the registry): the
// per-detector costs and how often each applies, per span; the timers' own cost then lands in the detectors' step.
'use strict';
const { openSync, readSync, closeSync } = require('node:fs');
const { join } = require('node:path');

const dist = join(__dirname, '..', 'dist');
const { spansOfDocument } = require(join(dist, 'src', 'traces', 'readers', 'document.js'));
const { TraceGrouper } = require(join(dist, 'src', 'traces', 'group.js'));
const { PerformanceObserver } = require('node:perf_hooks');
const { setTimeout } = require('node:timers');
const { stripOwnGroundTruth } = require(join(dist, 'src', 'diagnosers', 'strip-ground-truth.js'));
const { diagnoseByRules } = require(join(dist, 'src', 'diagnosers', 'rules.js'));
const { defaultFindings } = require(join(dist, 'src', 'diagnosers', 'offline-detectors.js'));
const { viewTrace } = require(join(dist, 'src', 'traces', 'view', 'index.js'));
const { defaultDetectors, registerDetector } = require(join(dist, 'detectors', 'registry.js'));

const args = process.argv.slice(2);
const perDetector = args.includes('--detectors');
const [file, mbArg] = args.filter((a) => a !== '--detectors');
const fd = openSync(file, 'r');
const buf = Buffer.alloc(Number(mbArg ?? 64) * 1024 * 1024);
const n = readSync(fd, buf, 0, buf.length, 0);
closeSync(fd);

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
}).observe({ entryTypes: ['gc'] });
const acc = {
  'JSON.parse': 0,
  normalise: 0,
  group: 0,
  'strip ground truth': 0,
  'trace view': 0,
  'offline detectors': 0,
  rules: 0,
};
const now = () => performance.now();
/** Per detector: ms in applies + detect, observations it applied to, findings. */
const detectors = new Map();
if (perDetector) {
  for (const d of defaultDetectors) {
    if (d.level === 'workflow') continue;
    const m = { ms: 0, applied: 0, findings: 0 };
    detectors.set(d.name, m);
    registerDetector({
      ...d,
      applies(obs) {
        const t = now();
        const r = d.applies(obs);
        m.ms += now() - t;
        if (r) m.applied++;
        return r;
      },
      detect(obs, ctx) {
        const t = now();
        const r = d.detect(obs, ctx);
        m.ms += now() - t;
        m.findings += r.length;
        return r;
      },
    });
  }
}
const detect = defaultFindings();
let spans = 0;
const diagnose = (trace) => {
  let t = now();
  const stripped = stripOwnGroundTruth(trace);
  acc['strip ground truth'] += now() - t;
  t = now();
  viewTrace(stripped);
  acc['trace view'] += now() - t;
  t = now();
  const findings = detect(stripped);
  acc['offline detectors'] += now() - t;
  t = now();
  diagnoseByRules(stripped, { findings: () => findings });
  acc.rules += now() - t;
};
const grouper = new TraceGrouper();
let from = 0;
for (let nl = buf.indexOf(10, 0); nl >= 0 && nl < n; nl = buf.indexOf(10, from)) {
  let t = now();
  const doc = JSON.parse(buf.toString('utf8', from, nl));
  acc['JSON.parse'] += now() - t;
  from = nl + 1;
  t = now();
  const batch = [...spansOfDocument(doc)];
  acc.normalise += now() - t;
  spans += batch.length;
  t = now();
  const done = [];
  for (const s of batch) for (const tr of grouper.add(s)) done.push(tr);
  acc.group += now() - t;
  for (const tr of done) diagnose(tr);
}
for (const tr of grouper.flush()) diagnose(tr);
const usPerSpan = Object.fromEntries(Object.entries(acc).map(([k, v]) => [k, (v * 1000) / spans]));
const out = { spans, usPerSpan };
if (perDetector) {
  out.detectors = Object.fromEntries(
    [...detectors].map(([name, m]) => [
      name,
      { usPerSpan: (m.ms * 1000) / spans, appliesPerSpan: m.applied / spans, findings: m.findings },
    ]),
  );
}
// The observer is called from later tasks: let the last entries arrive.
setTimeout(
  () => process.stdout.write(JSON.stringify({ ...out, gcPausesUsPerSpan: (gcMs * 1000) / spans }) + '\n'),
  100,
);
