#!/usr/bin/env node
// Per-call overhead of faultline's GenAI span layer (no fault plan) against the same workload with no
// instrumentation, @opentelemetry/instrumentation-undici alone, and the GenAI instrumentations users would otherwise
// pick. Workload: the real openai v6 client calling a loopback server that replays corpus bodies (one JSON answer,
// one SSE stream with tool calls and usage). Each configuration runs in its own child process (the undici dispatcher
// and OTel registrations are process-wide); rounds are interleaved across configurations; we report medians and
// ratios to bare, from the same run. Every configuration uses the same SDK: NodeTracerProvider + BatchSpanProcessor
// with an exporter that drops spans, so only instrumentation cost differs. Needs `npm run build` (dist/).
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setImmediate } from 'node:timers';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const require = createRequire(join(root, 'package.json'));
const CORPUS = process.env.FAULTLINE_CORPUS_DIR ?? '/work/shared/corpus';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 16); // the first is warm-up, not counted
const JSON_CALLS = Number(process.env.BENCH_JSON_CALLS ?? 60);
const STREAM_CALLS = Number(process.env.BENCH_STREAM_CALLS ?? 30);

const CONFIGS = {
  bare: 'no instrumentation (SDK only)',
  'otel-undici': '@opentelemetry/instrumentation-undici 0.33 alone',
  faultline: 'faultline GenAI layer (no plan)',
  'faultline+undici': 'faultline register default (GenAI layer + instrumentation-undici)',
  'otel-openai': '@opentelemetry/instrumentation-openai 0.21',
  traceloop: '@traceloop/instrumentation-openai 0.27',
  openinference: '@arizeai/openinference-instrumentation-openai 4.2',
};

function records() {
  const lines = (f) => readFileSync(join(CORPUS, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const json = lines('openai-chat.jsonl').find((r) => r.status === 200 && r.tags.includes('text') && r.tags.includes('system_prompt'));
  const stream = lines('openai-chat-stream.jsonl').find((r) => r.tags.includes('tool_calls') && r.tags.includes('usage_chunk'));
  return { json, stream };
}

// ------------------------------------------------------------------------------------------------ child

async function child(config) {
  const { InMemorySpanExporter, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
  let spanCount = 0;
  const counter = { onStart() {}, onEnd() { spanCount++; }, forceFlush: async () => {}, shutdown: async () => {} };
  const drop = new InMemorySpanExporter();
  drop.export = (spans, cb) => cb({ code: 0 });
  const provider = new NodeTracerProvider({ spanProcessors: [counter, new BatchSpanProcessor(drop)] });
  provider.register();

  if (config === 'otel-undici' || config === 'faultline+undici') {
    const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici');
    new UndiciInstrumentation();
  }
  if (config === 'faultline' || config === 'faultline+undici') {
    const { FaultlineInstrumentation } = require(join(root, 'dist/instrumentation'));
    new FaultlineInstrumentation().enable();
  }
  if (config === 'otel-openai') {
    const { OpenAIInstrumentation } = require('@opentelemetry/instrumentation-openai');
    const inst = new OpenAIInstrumentation(); // hooks require('openai')
    // 0.21 throws on streamed usage chunks unless its metric instruments exist (they are only created once a meter
    // provider is set): give it the API's (no-op) one so it can run at all.
    inst.setMeterProvider(require('@opentelemetry/api').metrics.getMeterProvider());
  }
  // The module-patching instrumentations hook require('openai') (CJS here), as they would in an app.
  if (config === 'traceloop') {
    const { OpenAIInstrumentation } = require('@traceloop/instrumentation-openai');
    new OpenAIInstrumentation();
  }
  if (config === 'openinference') {
    const { OpenAIInstrumentation } = require('@arizeai/openinference-instrumentation-openai');
    new OpenAIInstrumentation();
  }
  const openaiModule = require('openai');
  const OpenAI = openaiModule.OpenAI ?? openaiModule.default ?? openaiModule;
  const { json, stream } = records();
  const client = new OpenAI({ apiKey: 'sk-bench', baseURL: `${process.env.BENCH_URL}/v1`, maxRetries: 0 });

  async function round() {
    const jsonMs = [];
    const streamMs = [];
    const ttfcMs = [];
    const cpu = (u) => (u.user + u.system) / 1000; // ms
    let c0 = process.cpuUsage();
    for (let i = 0; i < JSON_CALLS; i++) {
      const t0 = performance.now();
      const r = await client.chat.completions.create(json.request);
      jsonMs.push(performance.now() - t0);
      if (!r.choices) throw new Error('bad JSON answer');
    }
    const jsonCpuMs = cpu(process.cpuUsage(c0)) / JSON_CALLS;
    c0 = process.cpuUsage();
    for (let i = 0; i < STREAM_CALLS; i++) {
      const t0 = performance.now();
      const s = await client.chat.completions.create(stream.request);
      let first;
      let n = 0;
      for await (const _c of s) {
        if (first === undefined) first = performance.now() - t0;
        n++;
      }
      streamMs.push(performance.now() - t0);
      ttfcMs.push(first);
      if (n === 0) throw new Error('empty stream');
    }
    const streamCpuMs = cpu(process.cpuUsage(c0)) / STREAM_CALLS;
    await provider.forceFlush();
    return { jsonMs, streamMs, ttfcMs, jsonCpuMs, streamCpuMs, spans: spanCount };
  }

  process.on('message', async (msg) => {
    if (msg === 'round') process.send(await round());
    if (msg === 'exit') {
      await provider.shutdown();
      process.exit(0);
    }
  });
  process.send('ready');
}

// ------------------------------------------------------------------------------------------------ parent

function startServer() {
  const { json, stream } = records();
  const jsonBody = JSON.stringify(json.response);
  const events = stream.sse.split(/(?<=\n\n)/);
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      if (JSON.parse(body).stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        for (const e of events) {
          res.write(e);
          await new Promise((r) => setImmediate(r));
        }
        res.end();
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(jsonBody) });
        res.end(jsonBody);
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function parent() {
  const server = await startServer();
  const url = `http://127.0.0.1:${server.address().port}`;
  const names = Object.keys(CONFIGS);
  const children = {};
  for (const name of names) {
    const c = fork(fileURLToPath(import.meta.url), ['--child', name], { env: { ...process.env, BENCH_URL: url }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    await new Promise((resolve, reject) => {
      c.once('message', resolve);
      c.once('exit', (code) => reject(new Error(`bench child ${name} exited with ${code} before it was ready`)));
    });
    c.removeAllListeners('exit');
    children[name] = c;
  }
  const samples = Object.fromEntries(names.map((n) => [n, { jsonMs: [], streamMs: [], ttfcMs: [], jsonCpuMs: [], streamCpuMs: [], spans: 0 }]));
  const ask = (c) =>
    new Promise((resolve, reject) => {
      const onExit = (code) => reject(new Error(`bench child exited with ${code} during a round`));
      c.once('exit', onExit);
      c.once('message', (m) => {
        c.removeListener('exit', onExit);
        resolve(m);
      });
      c.send('round');
    });
  const t0 = Date.now();
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order so no configuration always runs first (or right after another).
    const order = names.map((_, i) => names[(i + round) % names.length]);
    for (const name of order) {
      const r = await ask(children[name]);
      samples[name].spans = r.spans;
      if (round === 0) continue;
      samples[name].jsonMs.push(...r.jsonMs);
      samples[name].streamMs.push(...r.streamMs);
      samples[name].ttfcMs.push(...r.ttfcMs);
      samples[name].jsonCpuMs.push(r.jsonCpuMs);
      samples[name].streamCpuMs.push(r.streamCpuMs);
    }
    process.stderr.write(`bench interceptor: round ${round + 1}/${ROUNDS}\n`);
  }
  for (const c of Object.values(children)) c.send('exit');
  server.close();

  const med = (name, key) => median(samples[name][key]);
  const us = (ms) => (ms * 1000).toFixed(0);
  const pct = (x, b) => `${x >= b ? '+' : ''}${(((x - b) / b) * 100).toFixed(1)}%`;
  const lines = [
    '## GenAI span layer overhead (interceptor.bench.mjs)',
    '',
    `openai v6 client → loopback server replaying corpus bodies (one JSON answer, one SSE stream with tool calls and usage);`,
    `${ROUNDS - 1} counted rounds × (${JSON_CALLS} JSON + ${STREAM_CALLS} streamed calls) per configuration, rounds interleaved, each configuration`,
    'in its own process, the same SDK everywhere (spans dropped by the exporter), no fault plan.',
    '',
    '**Client CPU per call** (process.cpuUsage of the client process over a round ÷ calls; median of rounds). This is the cost an',
    'instrumentation adds to the calling process, and it stays meaningful on a loaded machine, where wall-clock loopback times are',
    'dominated by scheduling delays.',
    '',
    '| configuration | JSON call CPU (µs) | added | vs bare | streamed call CPU (µs) | added | vs bare | spans |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const bj = med('bare', 'jsonCpuMs');
  const bs = med('bare', 'streamCpuMs');
  for (const name of names) {
    const j = med(name, 'jsonCpuMs');
    const st = med(name, 'streamCpuMs');
    lines.push(`| ${CONFIGS[name]} | ${us(j)} | ${us(j - bj)} | ${pct(j, bj)} | ${us(st)} | ${us(st - bs)} | ${pct(st, bs)} | ${samples[name].spans} |`);
  }
  const wj = med('bare', 'jsonMs');
  const ws = med('bare', 'streamMs');
  const wt = med('bare', 'ttfcMs');
  lines.push(
    '',
    '**Wall clock per call** (median of all counted calls) and **time to first chunk** (from `create()` to the first chunk the app',
    'iterates). Read with the load average below: on a busy machine these carry scheduler noise of several ms.',
    '',
    '| configuration | JSON call (ms) | vs bare | streamed call (ms) | vs bare | first chunk (ms) | vs bare |',
    '|---|---:|---:|---:|---:|---:|---:|',
  );
  for (const name of names) {
    const j = med(name, 'jsonMs');
    const st = med(name, 'streamMs');
    const tt = med(name, 'ttfcMs');
    lines.push(`| ${CONFIGS[name]} | ${j.toFixed(3)} | ${pct(j, wj)} | ${st.toFixed(3)} | ${pct(st, ws)} | ${tt.toFixed(3)} | ${pct(tt, wt)} |`);
  }
  lines.push('', `Load average at the end: ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} on ${os.cpus().length} CPUs.`);
  lines.push('', `Run took ${((Date.now() - t0) / 1000).toFixed(1)} s on Node ${process.version}.`);
  process.stdout.write(lines.join('\n') + '\n');
}

if (process.argv[2] === '--child') await child(process.argv[3]);
else await parent();
