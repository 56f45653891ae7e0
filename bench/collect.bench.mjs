#!/usr/bin/env node
// `faultline collect --diagnose` throughput with 1, 2 and 3 instances behind a trace-id router (what the OTel
// Collector's loadbalancing exporter does): the spans of a generated file (FAULTLINE_BENCH_COLLECT_MB, default 128
// MiB) are re-batched per instance by trace id into requests of 256 spans and POSTed as OTLP/JSON over keep-alive
// connections, 8 requests in flight; the run ends when every trace has its diagnosis. Reports spans/s accepted (all requests answered 200) and
// end to end (until the last diagnosis, which includes the --trace-idle wait of 1 s), and each instance's peak RSS.
// The load generator runs on the same machine and takes its share of the cores. Prints a Markdown section.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { OUT, ROOT, fmt, load, machine, traceFile } from './big-files.mjs';

const MB = Number(process.env.FAULTLINE_BENCH_COLLECT_MB ?? 128);
const IDLE_MS = 1000;
const IN_FLIGHT = 8;
/** Spans per request (the Collector's batch processor sends up to 8192; SDKs 512). */
const BATCH = 256;

function startInstance(dir, i) {
  return new Promise((resolve, reject) => {
    const args = [
      '--require',
      join(ROOT, 'bench', 'peak-rss.cjs'),
      join(ROOT, 'bin', 'faultline.js'),
      'collect',
      '--port',
      '0',
      '--diagnose',
      '--trace-idle',
      `${IDLE_MS}ms`,
      '--out',
      join(dir, `traces-${i}.jsonl`),
      '--diagnoses',
      join(dir, `diagnoses-${i}.jsonl`),
    ];
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit', 'pipe'] });
    let out = '';
    let usage = '';
    child.stdio[3].on('data', (c) => (usage += c));
    const exited = new Promise((r) => child.on('close', () => r(usage ? JSON.parse(usage) : undefined)));
    child.stdout.on('data', (c) => {
      out += c;
      const url = /on (http:\S+\/v1\/traces)/.exec(out)?.[1];
      if (url && out.includes('stop with Ctrl-C'))
        resolve({ child, url, exited, diagnoses: join(dir, `diagnoses-${i}.jsonl`) });
    });
    child.on('error', reject);
  });
}

const lineCount = (file) => {
  if (!existsSync(file)) return 0;
  const t = readFileSync(file, 'utf8');
  let n = 0;
  for (let i = t.indexOf('\n'); i >= 0; i = t.indexOf('\n', i + 1)) n++;
  return n;
};

/**
 * The file's spans re-batched per instance, as the loadbalancing exporter does behind a batch processor: each
 * instance gets requests of about BATCH spans of the traces routed to it, in file order (a trace's two lines may land
 * in two requests).
 */
function bodiesFor(docs, k) {
  const route = (id) => parseInt(id.slice(0, 8), 16) % k;
  const per = Array.from({ length: k }, () => []);
  const pending = Array.from({ length: k }, () => []);
  let resource;
  let scope;
  const flush = (i) => {
    if (pending[i].length === 0) return;
    per[i].push(
      Buffer.from(JSON.stringify({ resourceSpans: [{ resource, scopeSpans: [{ scope, spans: pending[i] }] }] })),
    );
    pending[i] = [];
  };
  for (const doc of docs) {
    for (const rs of doc.resourceSpans) {
      resource = rs.resource;
      for (const ss of rs.scopeSpans) {
        scope = ss.scope;
        for (const s of ss.spans) {
          const i = route(s.traceId);
          pending[i].push(s);
          if (pending[i].length >= BATCH) flush(i);
        }
      }
    }
  }
  for (let i = 0; i < k; i++) flush(i);
  return per;
}

async function run(k, docs, traces, spans) {
  const dir = join(OUT, `collect-${k}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const instances = await Promise.all(Array.from({ length: k }, (_, i) => startInstance(dir, i)));
  const per = bodiesFor(docs, k);
  const jobs = per.flatMap((bodies, i) => bodies.map((body) => ({ url: instances[i].url, body })));
  // Interleave the instances' requests as a router would send them.
  jobs.sort((a, b) => (a.body.length % 7) - (b.body.length % 7));
  const t0 = performance.now();
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const j = jobs[next++];
      for (;;) {
        const r = await fetch(j.url, { method: 'POST', body: j.body, headers: { 'content-type': 'application/json' } });
        await r.arrayBuffer();
        if (r.status === 200) break;
        failed++;
        await new Promise((res) => setTimeout(res, 100));
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const accepted = (performance.now() - t0) / 1000;
  while (instances.reduce((n, c) => n + lineCount(c.diagnoses), 0) < traces)
    await new Promise((r) => setTimeout(r, 50));
  const done = (performance.now() - t0) / 1000;
  for (const c of instances) c.child.kill('SIGTERM');
  const usage = await Promise.all(instances.map((c) => c.exited));
  rmSync(dir, { recursive: true, force: true });
  return { k, accepted, done, failed, spans, peak: usage.map((u) => (u ? u.maxRssKb / 1024 : NaN)) };
}

async function main() {
  const f = await traceFile(MB);
  const docs = readFileSync(f.file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const loadBefore = load();
  const results = [];
  for (const k of [1, 2, 3]) {
    process.stderr.write(`bench collect: ${k} instance${k > 1 ? 's' : ''} …\n`);
    results.push(await run(k, docs, f.traces, f.spans));
  }
  const lines = [
    '## `faultline collect --diagnose` throughput (`bench/collect.bench.mjs`)',
    '',
    `${fmt(f.spans)} spans in ${fmt(f.traces)} traces (${fmt(f.bytes / 2 ** 20)} MiB of OTLP/JSON lines), re-batched per instance by trace id into requests of ${BATCH} spans, POSTed as OTLP/JSON with ${IN_FLIGHT} requests in flight; --trace-idle ${IDLE_MS} ms; the load generator shares the machine.`,
    '',
    '| instances | all accepted after s | spans/s accepted | last diagnosis after s | spans/s end to end | peak RSS per instance MiB | refused, retried |',
    '|--:|--:|--:|--:|--:|--:|--:|',
    ...results.map(
      (r) =>
        `| ${r.k} | ${fmt(r.accepted, 1)} | ${fmt(r.spans / r.accepted)} | ${fmt(r.done, 1)} | ${fmt(r.spans / r.done)} | ${r.peak.map((p) => fmt(p)).join(', ')} | ${r.failed} |`,
    ),
    '',
    `Load average before: ${loadBefore}; after: ${load()} (${machine()}).`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exitCode = 1;
});
