#!/usr/bin/env node
// Start-up cost of `node --import faultline/register` in a process that loads the openai SDK, against the contrib
// GenAI instrumentation a user would otherwise preload, and the choice of SDK wiring behind register (the hand-wired
// one in src/sdk.ts against @opentelemetry/sdk-node's NodeSDK, with the same instrumentations). Every configuration
// runs the same CommonJS app in a fresh process: require openai, make one chat call to a loopback server (the first
// call is where lazy parts load), then CALLS more calls; it reports the time from process start to the first answer,
// the CPU and wall time per later call, its peak RSS and the CommonJS modules loaded. Rounds interleave the
// configurations (rotating order); each is compared with bare (and with contrib) round by round: median of the paired
// differences and its 95% distribution-free interval. Needs `npm run build` (dist/).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median, pairedMedian } from './stats.mjs';
import { DIST, root } from './paths.mjs';
import { pinning } from './pin.mjs';

const CORPUS = process.env.FAULTLINE_CORPUS_DIR ?? '/work/shared/corpus';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const CALLS = Number(process.env.BENCH_STARTUP_CALLS ?? 100);

const work = mkdtempSync(join(os.tmpdir(), 'faultline-startup-'));
const nodeModules = join(root, 'node_modules');
const req = (m) => JSON.stringify(join(nodeModules, m));

// The app: plain openai SDK, CommonJS (so instrumentation-openai patches it through its require hook, as it does
// for most users). Prints one JSON line on stdout.
const APP = `
const t0 = performance.now();
const OpenAI = require(${req('openai')});
const client = new OpenAI({ baseURL: process.env.BENCH_URL + '/v1', apiKey: 'sk-bench', maxRetries: 0 });
const body = JSON.parse(process.env.BENCH_REQ);
(async () => {
  await client.chat.completions.create(body);
  const firstAnswer = performance.now();
  const rssAtFirst = process.memoryUsage().rss / 1048576;
  const modulesAtFirst = Object.keys(require.cache).length;
  const cpu0 = process.cpuUsage();
  const w0 = performance.now();
  for (let i = 0; i < ${CALLS}; i++) await client.chat.completions.create(body);
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - w0;
  process.stdout.write(JSON.stringify({
    firstAnswerMs: firstAnswer, appMs: firstAnswer - t0, rssAtFirstMb: rssAtFirst, modulesAtFirst,
    callCpuUs: (cpu.user + cpu.system) / ${CALLS}, callWallUs: (wall * 1000) / ${CALLS},
    maxRssMb: process.resourceUsage().maxRSS / 1024,
  }) + '\\n');
})();
`;

// What a user of the contrib instrumentation preloads: the trace SDK, an OTLP exporter, instrumentation-openai.
const CONTRIB = `
import { createRequire } from 'node:module';
const require = createRequire(${JSON.stringify(join(root, 'package.json'))});
const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');
const { registerInstrumentations } = require('@opentelemetry/instrumentation');
const { OpenAIInstrumentation } = require('@opentelemetry/instrumentation-openai');
new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] }).register();
registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()] });
`;

// The SDK choice, with the same instrumentations and exporter: faultline's hand-wired SDK (start() with detection
// off, so that only the SDK and the two instrumentations remain) …
const HAND_SDK = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
require(${JSON.stringify(join(DIST, 'src/start.js'))}).startRuntime({ detect: false, announce: false });
`;
// … and NodeSDK from the environment (its default exporter is OTLP/protobuf, like ours with an endpoint).
const NODE_SDK = `
import { createRequire } from 'node:module';
const require = createRequire(${JSON.stringify(join(root, 'package.json'))});
const { NodeSDK } = require('@opentelemetry/sdk-node');
const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici');
const { FaultlineInstrumentation } = require(${JSON.stringify(join(DIST, 'instrumentation/index.js'))});
new NodeSDK({ instrumentations: [new FaultlineInstrumentation(), new UndiciInstrumentation()] }).start();
`;

writeFileSync(join(work, 'app.cjs'), APP);
writeFileSync(join(work, 'contrib.mjs'), CONTRIB);
writeFileSync(join(work, 'hand-sdk.mjs'), HAND_SDK);
writeFileSync(join(work, 'node-sdk.mjs'), NODE_SDK);
const REGISTER = pathToFileURL(join(DIST, 'src/register.mjs')).href;

const CONFIGS = {
  bare: { label: 'no instrumentation', args: [] },
  contrib: {
    label: '@opentelemetry/instrumentation-openai + trace SDK + OTLP exporter',
    args: ['--import', pathToFileURL(join(work, 'contrib.mjs')).href],
    otlp: true,
  },
  register: { label: 'faultline/register as installed (spans to the trace file)', args: ['--import', REGISTER] },
  'register-otlp': { label: 'faultline/register with an OTLP endpoint', args: ['--import', REGISTER], otlp: true },
  'register-lean': {
    label:
      'faultline/register without the online detectors and HTTP spans (FAULTLINE_DETECT=false, OTEL_NODE_DISABLED_INSTRUMENTATIONS=undici)',
    args: ['--import', REGISTER],
    env: { FAULTLINE_DETECT: 'false', OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'undici' },
  },
  'hand-sdk': {
    label: 'SDK choice: faultline src/sdk.ts + faultline & undici instrumentations, OTLP',
    args: ['--import', pathToFileURL(join(work, 'hand-sdk.mjs')).href],
    otlp: true,
  },
  'node-sdk': {
    label: 'SDK choice: NodeSDK + faultline & undici instrumentations, OTLP',
    args: ['--import', pathToFileURL(join(work, 'node-sdk.mjs')).href],
    otlp: true,
  },
};

function records() {
  const lines = readFileSync(join(CORPUS, 'openai-chat.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  return lines.find((r) => r.status === 200 && r.tags.includes('text') && r.tags.includes('system_prompt'));
}

async function startServers(rec) {
  const answer = JSON.stringify(rec.response);
  const llm = createServer((q, s) => {
    q.resume();
    q.on('end', () => {
      s.writeHead(200, { 'content-type': 'application/json' });
      s.end(answer);
    });
  });
  let received = 0;
  const otlp = createServer((q, s) => {
    q.on('data', (c) => (received += c.length));
    q.on('end', () => {
      s.writeHead(200, { 'content-type': 'application/x-protobuf' });
      s.end();
    });
  });
  await Promise.all([
    new Promise((r) => llm.listen(0, '127.0.0.1', r)),
    new Promise((r) => otlp.listen(0, '127.0.0.1', r)),
  ]);
  return {
    llm,
    otlp,
    llmUrl: `http://127.0.0.1:${llm.address().port}`,
    otlpUrl: `http://127.0.0.1:${otlp.address().port}`,
    received: () => received,
  };
}

function run(config, env, pin) {
  const c = CONFIGS[config];
  const args = [...c.args, join(work, 'app.cjs')];
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = pin
      ? spawn('taskset', ['-c', pin, process.execPath, ...args], { env, cwd: work })
      : spawn(process.execPath, args, { env, cwd: work });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      const wallMs = performance.now() - t0;
      if (code !== 0) return reject(new Error(`${config} exited with ${code}: ${err}`));
      resolve({ ...JSON.parse(out.trim().split('\n').pop()), wallMs });
    });
  });
}

const rec = records();
const servers = await startServers(rec);
const pin = pinning()?.client;
const names = Object.keys(CONFIGS);
const MEASURES = ['firstAnswerMs', 'wallMs', 'rssAtFirstMb', 'maxRssMb', 'callCpuUs', 'callWallUs', 'modulesAtFirst'];
const rounds = Object.fromEntries(names.map((n) => [n, Object.fromEntries(MEASURES.map((m) => [m, []]))]));
const baseEnv = {
  PATH: process.env.PATH,
  BENCH_URL: servers.llmUrl,
  BENCH_REQ: JSON.stringify({ ...rec.request, stream: false }),
};
for (let round = 0; round < ROUNDS + 1; round++) {
  const order = names.map((_, i) => names[(i + round) % names.length]);
  for (const name of order) {
    const env = {
      ...baseEnv,
      FAULTLINE_TRACES_FILE: join(work, `${name}.jsonl`),
      ...(CONFIGS[name].otlp ? { OTEL_EXPORTER_OTLP_ENDPOINT: servers.otlpUrl, OTEL_TRACES_EXPORTER: 'otlp' } : {}),
      ...CONFIGS[name].env,
    };
    if (!CONFIGS[name].otlp) delete env.FAULTLINE_TRACES_FILE; // register as installed: ./faultline-traces.jsonl in the app's directory
    const r = await run(name, env, pin);
    if (round === 0) continue; // the first round warms the file system cache
    for (const m of MEASURES) rounds[name][m].push(r[m]);
  }
  process.stderr.write(`bench startup: round ${round + 1}/${ROUNDS + 1}\n`);
}
servers.llm.close();
servers.otlp.close();

const diffs = (a, b, m) => rounds[a][m].map((v, i) => v - rounds[b][m][i]);
const fmt = (x, d = 0) => (x >= 0 ? '+' : '') + x.toFixed(d);
const ci = (p, d = 0) => `${fmt(p.median, d)} (${fmt(p.lo, d)} … ${fmt(p.hi, d)})`;
const lines = [
  '## Start-up (startup.bench.mjs)',
  '',
  `A CommonJS app that requires the openai v6 SDK and makes one chat call to a loopback server, then ${CALLS} more; a fresh process`,
  `per run, ${ROUNDS} counted rounds (after one warm-up round), configurations interleaved in rotating order${pin ? `, every app pinned to CPU ${pin} (taskset)` : ''}.`,
  '"first answer" is the time from process start to the first answer in the app, and RSS and modules are taken there (what',
  'start-up costs the app); "+ vs bare" and "+ vs contrib" are medians of per-round paired differences with their 95% intervals',
  `(ms, MB). "peak RSS" is the process's maxRSS at the end, after the ${CALLS} further calls (start-up plus what the calls kept).`,
  '',
  '| configuration | first answer (ms) | + vs bare | + vs contrib | RSS (MB) | + vs bare | + vs contrib | peak RSS + vs contrib | modules |',
  '|---|--:|--:|--:|--:|--:|--:|--:|--:|',
];
for (const n of names) {
  const vsBare = n === 'bare' ? '' : ci(pairedMedian(diffs(n, 'bare', 'firstAnswerMs')));
  const vsContrib = n === 'bare' || n === 'contrib' ? '' : ci(pairedMedian(diffs(n, 'contrib', 'firstAnswerMs')));
  const rssBare = n === 'bare' ? '' : ci(pairedMedian(diffs(n, 'bare', 'rssAtFirstMb')), 1);
  const rssContrib = n === 'bare' || n === 'contrib' ? '' : ci(pairedMedian(diffs(n, 'contrib', 'rssAtFirstMb')), 1);
  const peakContrib = n === 'bare' || n === 'contrib' ? '' : ci(pairedMedian(diffs(n, 'contrib', 'maxRssMb')), 1);
  lines.push(
    `| ${n}: ${CONFIGS[n].label} | ${median(rounds[n].firstAnswerMs).toFixed(0)} | ${vsBare} | ${vsContrib} | ${median(rounds[n].rssAtFirstMb).toFixed(1)} | ${rssBare} | ${rssContrib} | ${peakContrib} | ${median(rounds[n].modulesAtFirst)} |`,
  );
}
lines.push(
  '',
  `Per later call (µs, median over rounds of each run's mean over ${CALLS} calls; a JSON chat completion on loopback):`,
  '',
  '| configuration | CPU per call | + vs bare | wall per call | + vs bare |',
  '|---|--:|--:|--:|--:|',
);
for (const n of names) {
  const cpu = n === 'bare' ? '' : ci(pairedMedian(diffs(n, 'bare', 'callCpuUs')));
  const wall = n === 'bare' ? '' : ci(pairedMedian(diffs(n, 'bare', 'callWallUs')));
  lines.push(
    `| ${n} | ${median(rounds[n].callCpuUs).toFixed(0)} | ${cpu} | ${median(rounds[n].callWallUs).toFixed(0)} | ${wall} |`,
  );
}
const sdkFirst = pairedMedian(diffs('node-sdk', 'hand-sdk', 'firstAnswerMs'));
const sdkRss = pairedMedian(diffs('node-sdk', 'hand-sdk', 'rssAtFirstMb'));
const sdkCpu = pairedMedian(diffs('node-sdk', 'hand-sdk', 'callCpuUs'));
const goal = pairedMedian(diffs('register', 'contrib', 'firstAnswerMs'));
const goalRss = pairedMedian(diffs('register', 'contrib', 'rssAtFirstMb'));
const verdict = (p) => (p.hi < 0 ? 'below' : p.lo > 0 ? 'above' : 'not distinguishable from');
lines.push(
  '',
  `**Goal check** (issue 16): register as installed minus contrib, first answer ${ci(goal)} ms (${verdict(goal)} contrib), RSS at the first answer ${ci(goalRss, 1)} MB (${verdict(goalRss)} contrib).`,
  `**SDK choice**: NodeSDK minus the hand-wired SDK, same instrumentations and exporter: first answer ${ci(sdkFirst)} ms, RSS at the first answer ${ci(sdkRss, 1)} MB, CPU per call ${ci(sdkCpu)} µs.`,
);
process.stdout.write(lines.join('\n') + '\n');
