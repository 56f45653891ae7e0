#!/usr/bin/env node
// Per-call cost of each GenAI instrumentation with all of them in ONE process, switched on one at a time, batch by
// batch. interceptor.bench.mjs gives every configuration processes of its own, which is how a user runs it, but two
// things there are not the instrumentation's per-call work: each process keeps its own luck (what V8 compiled, where
// the heap landed) for the whole run, which the per-round pairing does not cancel, and each round starts in a process
// that has sat idle while the other configurations ran, so its first calls re-warm caches and the young generation
// (a bare call costs about 1 ms back to back and 1.7 ms after 3 s idle, on this machine). Here one process runs
// batches of calls back to back with the modes in rotating order, so they share the same compiled code, heap and CPU
// neighbours, and a difference is only what the mode does on each call. What this design cannot show, the
// per-process bench does: the cost of loading a package (a bigger heap), and AsyncLocalStorage's promise hooks, which
// any tracer turns on the first time a context is entered and which then cost every mode here, bare included.
// The openai v6 client calls the loopback server of llm-loopback.mjs (JSON answer, SSE stream with tool calls).
// `npm run bench -- inprocess` runs it alone; BENCH_QUICK=1 runs a short version (bare, register and the three GenAI
// instrumentations, 40 rounds) in about a minute, e.g. to measure a change: `BENCH_QUICK=1 node bench/inprocess.bench.mjs`.
// BENCH_TIMELINE=FILE writes when each batch of each mode ran (process.hrtime, µs), for profile.bench.mjs.
// Needs `npm run build` (dist/).
import { spanSink } from './span-sink.mjs';
import { fork, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapMedian, median } from './stats.mjs';
import { THINK_MS, jsonCalls, records, startServer, streamedCalls } from './llm-loopback.mjs';
import { DIST, require } from './paths.mjs';
import { pinning } from './pin.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 40 : 150));
const WARM_ROUNDS = Number(process.env.BENCH_WARM_ROUNDS ?? (QUICK ? 10 : 30));
const JSON_CALLS = Number(process.env.BENCH_JSON_CALLS ?? 20);
const STREAM_CALLS = Number(process.env.BENCH_STREAM_CALLS ?? 10);
// BENCH_IDLE_MS: the client sleeps this long before each batch, as a process that calls the model now and then does.
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 0);

const MODES = {
  bare: 'no instrumentation (the SDK registered)',
  floor: 'HTTP-level reading alone, no span (bench/http-floor.cjs)',
  'floor-span': 'HTTP-level reading + one span without attributes',
  register: "faultline register default (startRuntime with the environment's defaults)",
  'otel-openai': '@opentelemetry/instrumentation-openai 0.21',
  traceloop: '@traceloop/instrumentation-openai 0.27',
  openinference: '@arizeai/openinference-instrumentation-openai 4.2',
  'sdk-span': "prototype: faultline's span made at the SDK level (bench/sdk-span-proto.cjs; issue 30)",
};
// BENCH_MODES=bare,register,… runs only those (bare always), e.g. to profile one of them.
const ONLY =
  process.env.BENCH_MODES?.split(',').map((m) => m.trim()) ??
  (QUICK ? ['register', 'otel-openai', 'traceloop', 'openinference'] : undefined);
for (const name of Object.keys(MODES)) if (ONLY && name !== 'bare' && !ONLY.includes(name)) delete MODES[name];
const GENAI = ['otel-openai', 'traceloop', 'openinference'].filter((n) => n in MODES);

// ------------------------------------------------------------------------------------------------ child

async function child() {
  const api = require('@opentelemetry/api');
  const sink = spanSink();
  // The floor sits on the process-wide dispatcher first, passing every call through unless its mode is on; faultline's
  // layer goes in front of it while its mode is on.
  const floor = require(join(here, 'http-floor.cjs'));
  void globalThis.Headers;
  const undici = require('undici');
  const base = undici.getGlobalDispatcher();
  const floors = { floor: floor.floorDispatch(base), 'floor-span': floor.floorDispatch(base, { span: true }) };
  const through = (opts, handler) => base.dispatch(opts, handler);
  let mode = 'bare';
  undici.setGlobalDispatcher(floor.withDispatch(base, (opts, handler) => (floors[mode] ?? through)(opts, handler)));
  // One provider for every mode: faultline's runtime registers it, with the bench's processors in place of the trace file.
  const { startRuntime } = require(join(DIST, 'src', 'start'));
  const runtime = startRuntime({
    spanProcessors: sink.spanProcessors,
    exitHooks: false,
    env: { ...process.env, OTEL_TRACES_EXPORTER: 'none' },
  });
  const { settleExchanges } = require(join(DIST, 'instrumentation'));
  // The module-patching instrumentations hook require('openai'), so they exist before it loads.
  const otel = new (require('@opentelemetry/instrumentation-openai').OpenAIInstrumentation)();
  otel.setMeterProvider(api.metrics.getMeterProvider()); // 0.21 needs its instruments for streamed usage chunks
  const patching = {
    'otel-openai': otel,
    traceloop: new (require('@traceloop/instrumentation-openai').OpenAIInstrumentation)(),
    openinference: new (require('@arizeai/openinference-instrumentation-openai').OpenAIInstrumentation)(),
    register: runtime.instrumentation, // enable() puts a new layer in front: one cold route lookup per batch
  };
  const setMode = (next) => {
    for (const [name, inst] of Object.entries(patching)) if (name !== next) inst.disable();
    patching[next]?.enable();
    mode = next;
  };
  setMode('bare');
  const openaiModule = require('openai');
  const OpenAI = openaiModule.OpenAI ?? openaiModule.default ?? openaiModule;
  if ('sdk-span' in MODES)
    patching['sdk-span'] = require(join(here, 'sdk-span-proto.cjs')).sdkSpanPrototype(OpenAI, api, DIST);
  const { json, stream } = records();
  const client = new OpenAI({ apiKey: 'sk-bench', baseURL: `${process.env.BENCH_URL}/v1`, maxRetries: 0 });
  const cpu = (u) => u.user + u.system; // µs

  async function batch() {
    const spans0 = sink.count();
    timeline.push([now(), mode, 'json', JSON_CALLS]);
    let c0 = process.cpuUsage();
    const jsonMs = await jsonCalls(client, json.request, JSON_CALLS);
    await settleExchanges(); // a span ends a moment after the app has its answer
    const jsonCpu = cpu(process.cpuUsage(c0)) / JSON_CALLS;
    timeline.push([now(), mode, 'stream', STREAM_CALLS]);
    c0 = process.cpuUsage();
    const { ttfc: ttfcMs } = await streamedCalls(client, stream.request, STREAM_CALLS);
    await settleExchanges();
    const streamCpu = cpu(process.cpuUsage(c0)) / STREAM_CALLS;
    timeline.push([now(), mode, 'between', 0]);
    return {
      jsonCpu,
      streamCpu,
      jsonWall: median(jsonMs) * 1000,
      ttfc: median(ttfcMs) * 1000,
      spans: sink.count() - spans0,
    };
  }

  const names = Object.keys(MODES);
  const timeline = [];
  const now = () => Number(process.hrtime.bigint() / 1000n); // the clock of --cpu-prof's sample times
  const rounds = Object.fromEntries(
    names.map((n) => [n, { jsonCpu: [], streamCpu: [], jsonWall: [], ttfc: [], spans: 0 }]),
  );
  for (let round = 0; round < WARM_ROUNDS + ROUNDS; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + round) % names.length];
      setMode(name);
      if (IDLE_MS > 0) await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
      if (round === WARM_ROUNDS && i === 0) timeline.length = 0;
      const r = await batch();
      if (round < WARM_ROUNDS) continue;
      const m = rounds[name];
      for (const k of ['jsonCpu', 'streamCpu', 'jsonWall', 'ttfc']) m[k].push(r[k]);
      m.spans += r.spans;
    }
    if ((round + 1) % 10 === 0) process.send({ progress: round + 1 });
  }
  setMode('bare');
  await runtime.shutdown();
  if (process.env.BENCH_TIMELINE) writeFileSync(process.env.BENCH_TIMELINE, JSON.stringify(timeline));
  process.send({ rounds }, () => process.exit(0));
}

// ------------------------------------------------------------------------------------------------ parent

async function parent() {
  const pin = pinning()?.client;
  const server = await startServer();
  // BENCH_NODE_ARGS: options for the client's node, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where its time goes.
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const args = [fileURLToPath(import.meta.url), '--child'];
  const options = {
    env: { ...process.env, BENCH_URL: `http://127.0.0.1:${server.address().port}` },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    execArgv: nodeArgs,
  };
  const c = pin
    ? spawn('taskset', ['-c', pin, process.execPath, ...nodeArgs, ...args], options)
    : fork(args[0], args.slice(1), options);
  const t0 = Date.now();
  const rounds = await new Promise((resolve, reject) => {
    c.on('message', (m) => {
      if (m.progress) process.stderr.write(`bench inprocess: round ${m.progress}/${WARM_ROUNDS + ROUNDS}\n`);
      if (m.rounds) resolve(m.rounds);
    });
    c.once('exit', (code) => reject(new Error(`bench child exited with ${code}`)));
  });
  server.close();

  const names = Object.keys(MODES);
  const diffs = (a, b, m) => rounds[a][m].map((v, i) => v - rounds[b][m][i]);
  const us = (x) => x.toFixed(0);
  const signed = (x) => `${x > 0 ? '+' : x < 0 ? '−' : ''}${us(Math.abs(x))}`;
  const interval = (d) => `${signed(d.median)} (${signed(d.lo)} … ${signed(d.hi)})`;
  const boot = (a, b, m) => bootstrapMedian(diffs(a, b, m));
  const verdict = (d) => (d.hi < 0 ? 'below' : d.lo > 0 ? 'above' : 'not distinguishable');
  const lines = [
    '## GenAI instrumentation cost in one process (inprocess.bench.mjs)',
    '',
    `One client process with every instrumentation loaded, one switched on at a time (enable/disable; faultline's runtime`,
    `started once, its instrumentation enabled only in its mode), ${ROUNDS} counted rounds after ${WARM_ROUNDS} warm-up rounds; each round`,
    `runs every mode once in rotating order: ${JSON_CALLS} JSON calls, then ${STREAM_CALLS} streamed calls, ${IDLE_MS > 0 ? `after ${IDLE_MS} ms idle (BENCH_IDLE_MS)` : 'back to back'}. Every mode exports`,
    'through the same provider (spans dropped). openai v6 client → loopback server (llm-loopback.mjs; each request differs from',
    `the last in its final message, as an agent's turns do; ${THINK_MS > 0 ? `the server thinks ${THINK_MS} ms before each answer, BENCH_THINK_MS` : 'the server answers at once'});`,
    `${pin ? `the client pinned to CPU ${pin}, the server to CPU 0` : 'processes not pinned'}. "added" is the median over rounds of the`,
    'mode minus bare in the same round, with the 95% bootstrap interval of that median (the rounds resampled); it is the',
    "mode's own work per call.",
    'What a package costs a process beyond its calls (loaded code, a bigger heap, AsyncLocalStorage once a context is',
    'entered, which every mode here shares) is in the per-process bench above.',
    '',
    '| mode | JSON call CPU (µs) | added (µs, 95%) | streamed call CPU (µs) | added (µs, 95%) | first chunk added (µs, wall) | spans per call |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const n of names) {
    const r = rounds[n];
    const cell = (m) => (n === 'bare' ? '0' : interval(boot(n, 'bare', m)));
    const calls = ROUNDS * (JSON_CALLS + STREAM_CALLS);
    lines.push(
      `| ${MODES[n]} | ${us(median(r.jsonCpu))} | ${cell('jsonCpu')} | ${us(median(r.streamCpu))} | ${cell('streamCpu')} | ${cell('ttfc')} | ${(r.spans / calls).toFixed(2)} |`,
    );
  }
  if ('register' in MODES && GENAI.length > 0) {
    lines.push(
      '',
      '**faultline register default minus each GenAI instrumentation** (µs per call: CPU, and wall time to the first chunk of a stream; median over rounds of the paired difference, 95% bootstrap interval):',
      '',
    );
    lines.push('| | JSON call CPU | streamed call CPU | first chunk |', '|---|---|---|---|');
    const mine = ['register', 'sdk-span'].filter((n) => n in MODES);
    for (const a of mine)
      for (const g of GENAI) {
        const [j, s, f] = ['jsonCpu', 'streamCpu', 'ttfc'].map((m) => boot(a, g, m));
        lines.push(
          `| ${a} − ${g} | ${interval(j)} ${verdict(j)} | ${interval(s)} ${verdict(s)} | ${interval(f)} ${verdict(f)} |`,
        );
      }
  }
  lines.push(
    '',
    `Load average at the end: ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(
        ' ',
      )} on ${os.cpus().length} CPUs. Run took ${((Date.now() - t0) / 1000).toFixed(0)} s on Node ${process.version}.`,
  );
  process.stdout.write(lines.join('\n') + '\n');
}

if (process.argv[2] === '--child') await child();
else await parent();
