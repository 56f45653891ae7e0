#!/usr/bin/env node
// Per-call overhead of faultline's GenAI span layer (no fault plan) against the same workload with no
// instrumentation, @opentelemetry/instrumentation-undici alone, the GenAI instrumentations users would otherwise
// pick, and a floor: reading both bodies at the HTTP level with no span at all, and with one bare span
// (http-floor.cjs). Workload: the real openai v6 client calling a loopback server that replays corpus bodies (one JSON
// answer, one SSE stream with tool calls and usage). Each configuration runs in child processes of its own
// (BENCH_PROCS, default 3: the undici dispatcher and OTel registrations are process-wide); rounds are interleaved
// across configurations; we report medians, ratios to bare and paired differences with intervals, from the same run. Every configuration uses the same SDK: NodeTracerProvider + BatchSpanProcessor
// with an exporter that drops spans, so only instrumentation cost differs. Needs `npm run build` (dist/).
import { spanSink } from './span-sink.mjs';
import { fork, spawn } from 'node:child_process';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, pairedMedian } from './stats.mjs';
import { THINK_MS, distinct, jsonCalls, records, startServer, streamedCalls } from './llm-loopback.mjs';
import { DIST, require } from './paths.mjs';
import { pinning } from './pin.mjs';

const here = dirname(fileURLToPath(import.meta.url));
// An earlier build to compare register's default with in the same run (an A/B of a change): its dist/ directory.
const BASE_DIST = process.env.BENCH_BASE_DIST;
// Processes per configuration, used in turn round by round: one process keeps its own luck (what V8 compiled and when,
// where the heap landed) for the whole run, and between runs that moved a configuration's median by 100 µs or more.
const PROCS = Math.max(1, Number(process.env.BENCH_PROCS ?? 3));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 120 + PROCS); // the first round of each process is not counted
const JSON_CALLS = Number(process.env.BENCH_JSON_CALLS ?? 40);
const STREAM_CALLS = Number(process.env.BENCH_STREAM_CALLS ?? 20);
// Calls each process makes before the counted rounds: V8 keeps compiling the request path for the first thousand or
// so calls, and a configuration with more code to compile would otherwise pay for it in the first rounds.
const WARM_CALLS = Number(process.env.BENCH_WARM_CALLS ?? 1500);

const CONFIGS = {
  bare: 'no instrumentation (SDK only)',
  // The same as bare in processes of its own: what this bench reports between two identical configurations is its
  // resolution (process luck, which the per-round pairing does not cancel, included).
  'bare-again': 'no instrumentation, a second set of processes (A/A control)',
  'otel-undici': '@opentelemetry/instrumentation-undici 0.33 alone',
  floor: 'HTTP-level reading alone, no spans (JSON.parse of request and answer / every event)',
  'floor-span': 'HTTP-level reading + one span without attributes, entered around the dispatch',
  faultline: 'faultline GenAI layer alone (FaultlineInstrumentation, no plan, no detectors)',
  register: "faultline register default, as installed (startRuntime with the environment's defaults)",
  'register-undici':
    "register default + instrumentation-undici's HTTP child span (OTEL_NODE_ENABLED_INSTRUMENTATIONS=undici)",
  'register-detect': 'register default + online detectors (FAULTLINE_DETECT=true)',
  'plan-nomatch': 'register default + a fault plan whose rule matches no call',
  guards: 'register default + guards on (a route on every call: retry, detectors judging each JSON answer)',
  'otel-openai': '@opentelemetry/instrumentation-openai 0.21',
  traceloop: '@traceloop/instrumentation-openai 0.27',
  openinference: '@arizeai/openinference-instrumentation-openai 4.2',
  ...(BASE_DIST ? { 'register-base': `register default as the build in ${BASE_DIST} has it (BENCH_BASE_DIST)` } : {}),
};

/**
 * The configurations that run faultline's runtime as `faultline/register` does (src/start.ts: its defaults, read from
 * the environment), with the bench's span processors in place of the trace file so every row exports the same way.
 */
const RUNTIME = {
  register: {},
  'register-undici': { env: { OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'undici' } },
  'register-detect': { env: { FAULTLINE_DETECT: 'true' } },
  'plan-nomatch': { options: { plan: { rules: [{ fault: 'http_429', match: { model: 'no-such-model' } }] } } },
  guards: {
    options: { guards: { routes: [{ name: 'chat', match: { provider: 'openai*' }, retry: { maxRetries: 1 } }] } },
  },
  ...(BASE_DIST ? { 'register-base': { dist: BASE_DIST } } : {}),
};

// ------------------------------------------------------------------------------------------------ child

async function child(config) {
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
  const sink = spanSink();
  const spanProcessors = sink.spanProcessors;
  let provider;
  if (RUNTIME[config]) {
    const { options = {}, env = {}, dist = DIST } = RUNTIME[config];
    const { startRuntime } = require(join(dist, 'src', 'start'));
    const runtime = startRuntime({
      ...options,
      spanProcessors,
      exitHooks: false,
      env: { ...process.env, ...env, OTEL_TRACES_EXPORTER: 'none' },
    });
    provider = { forceFlush: () => runtime.forceFlush(), shutdown: () => runtime.shutdown() };
  } else {
    provider = new NodeTracerProvider({ spanProcessors });
    provider.register();
  }
  // A span ends a moment after the app has its answer: settle those before counting.
  const settle = config === 'faultline' ? require(join(DIST, 'instrumentation')).settleExchanges : async () => {};

  if (config === 'otel-undici') {
    const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici');
    new UndiciInstrumentation();
  }
  if (config === 'faultline') {
    const { FaultlineInstrumentation } = require(join(DIST, 'instrumentation'));
    new FaultlineInstrumentation().enable();
  }
  if (config === 'floor' || config === 'floor-span')
    require(join(here, 'http-floor.cjs')).install({ span: config === 'floor-span' });
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
    const cpu = (u) => (u.user + u.system) / 1000; // ms
    let c0 = process.cpuUsage();
    const jsonMs = await jsonCalls(client, json.request, JSON_CALLS);
    const jsonCpuMs = cpu(process.cpuUsage(c0)) / JSON_CALLS;
    c0 = process.cpuUsage();
    const { ms: streamMs, ttfc: ttfcMs } = await streamedCalls(client, stream.request, STREAM_CALLS);
    const streamCpuMs = cpu(process.cpuUsage(c0)) / STREAM_CALLS;
    await settle();
    await provider.forceFlush();
    return { jsonMs, streamMs, ttfcMs, jsonCpuMs, streamCpuMs, spans: sink.count() };
  }

  async function warm() {
    for (let i = 0; i < WARM_CALLS; i++) {
      if (i % 3 !== 2) await client.chat.completions.create(distinct(json.request));
      else for await (const _c of await client.chat.completions.create(distinct(stream.request)));
    }
    await settle();
    await provider.forceFlush();
    return 'warm';
  }

  process.on('message', async (msg) => {
    if (msg === 'warm') process.send(await warm());
    if (msg === 'round') process.send(await round());
    if (msg === 'exit') {
      await provider.shutdown();
      process.exit(0);
    }
  });
  process.send('ready');
}

// ------------------------------------------------------------------------------------------------ parent

const mad = (xs) => {
  const m = median(xs);
  return median(xs.map((x) => Math.abs(x - m)));
};

/** Per-round values of one measure, for every configuration. */
const MEASURES = ['jsonCpu', 'streamCpu', 'jsonWall', 'streamWall', 'ttfc'];

async function parent() {
  const pin = pinning();
  const server = await startServer();
  const url = `http://127.0.0.1:${server.address().port}`;
  const names = Object.keys(CONFIGS);
  // children[name][k]: the k-th process of a configuration.
  const children = Object.fromEntries(names.map((n) => [n, []]));
  for (let k = 0; k < PROCS; k++) {
    for (const name of names) {
      const args = [fileURLToPath(import.meta.url), '--child', name];
      const options = { env: { ...process.env, BENCH_URL: url }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] };
      const c = pin
        ? spawn('taskset', ['-c', pin.client, process.execPath, ...args], options)
        : fork(args[0], args.slice(1), options);
      await new Promise((resolve, reject) => {
        c.once('message', resolve);
        c.once('exit', (code) => reject(new Error(`bench child ${name} exited with ${code} before it was ready`)));
      });
      c.removeAllListeners('exit');
      children[name].push(c);
    }
  }
  // rounds[name][measure] = one value per counted round (CPU: round total ÷ calls; wall: the round's median call).
  const rounds = Object.fromEntries(names.map((n) => [n, Object.fromEntries(MEASURES.map((m) => [m, []]))]));
  // spans[name][k]: spans the k-th process has ended so far.
  const spans = Object.fromEntries(names.map((n) => [n, []]));
  const ask = (c, what = 'round') =>
    new Promise((resolve, reject) => {
      const onExit = (code) => reject(new Error(`bench child exited with ${code} during a round`));
      c.once('exit', onExit);
      c.once('message', (m) => {
        c.removeListener('exit', onExit);
        resolve(m);
      });
      c.send(what);
    });
  // Warm every configuration up, one after the other, before any counted round.
  for (const name of names) {
    for (const c of children[name]) await ask(c, 'warm');
    process.stderr.write(`bench interceptor: warmed up ${name} (${PROCS} × ${WARM_CALLS} calls)\n`);
  }
  const t0 = Date.now();
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order so no configuration always runs first (or right after another).
    const order = names.map((_, i) => names[(i + round) % names.length]);
    const k = round % PROCS;
    for (const name of order) {
      const r = await ask(children[name][k]);
      spans[name][k] = r.spans;
      if (round < PROCS) continue;
      const m = rounds[name];
      m.jsonCpu.push(r.jsonCpuMs);
      m.streamCpu.push(r.streamCpuMs);
      m.jsonWall.push(median(r.jsonMs));
      m.streamWall.push(median(r.streamMs));
      m.ttfc.push(median(r.ttfcMs));
    }
    process.stderr.write(`bench interceptor: round ${round + 1}/${ROUNDS}\n`);
  }
  for (const c of Object.values(children).flat()) c.send('exit');
  server.close();

  // Each configuration is compared with bare *round by round* (both measured minutes apart at most, in the same
  // rotation), and the summary is the median over rounds: drift on a shared machine cancels out of the pairs.
  const value = (name, m) => median(rounds[name][m]);
  // a minus b, round by round (both measured in the same round).
  const diffs = (a, b, m) => rounds[a][m].map((v, i) => v - rounds[b][m][i]);
  const added = (name, m) => median(diffs(name, 'bare', m));
  const ratio = (name, m) => median(rounds[name][m].map((v, i) => v / rounds.bare[m][i] - 1));
  const us = (ms) => (ms * 1000).toFixed(0);
  const pct = (x) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
  const counted = ROUNDS - PROCS;
  const lines = [
    '## GenAI span layer overhead (interceptor.bench.mjs)',
    '',
    'openai v6 client → loopback server replaying corpus bodies (one JSON answer, one SSE stream with tool calls and usage;',
    "each request differs from the last in its final message, as an agent's turns do: llm-loopback.mjs `distinct`);",
    `${counted} counted rounds × (${JSON_CALLS} JSON + ${STREAM_CALLS} streamed calls) per configuration, rounds interleaved (rotating order), each`,
    `configuration in ${PROCS} processes of its own, used in turn (a process keeps its own JIT and heap luck for the whole run), the same SDK`,
    `everywhere (spans dropped by the exporter), no fault plan; ${THINK_MS > 0 ? `the server thinks ${THINK_MS} ms before each answer (BENCH_THINK_MS)` : 'the server answers at once'};`,
    `${WARM_CALLS} warm-up calls per process, whose first round is not counted either; ${pin ? `every client pinned to CPU ${pin.client}, the server to CPU ${pin.server} (taskset)` : 'processes not pinned'}.`,
    '"added" and "vs bare" are medians over rounds of the difference / ratio to bare *in the same round*, so drift of a shared',
    'machine cancels out; ± is the median absolute deviation of those per-round values. Between runs on this shared machine the',
    "medians still move by 100 µs or more (more when it is busy): compare configurations within one run, through the goal check's",
    'intervals.',
    '',
    'What the rows measure differently: faultline works at the HTTP level, so it reads both bodies itself (JSON.parse of the',
    'request, and of the answer or of every stream event) to record response id, finish reasons, usage, output length, tool calls',
    'and a content fingerprint; the module-patching instrumentations receive the objects the SDK has already parsed. The floor',
    'row (bench/http-floor.cjs) does only that reading, with no span and no OTel: it is the least any HTTP-level instrumentation pays.',
    'The floor-with-span row adds the one thing such an instrumentation exists for: a span (no attributes) around each call, entered as',
    "the active context for the dispatch (which turns on AsyncLocalStorage's promise hooks, as every row that emits spans does).",
    "The register rows run faultline's runtime (src/start.ts) with its defaults as the environment gives them, exporting like every",
    'other row; the variants add or remove one default each, or add a plan or guards.',
    '',
    '**Client CPU per call** (process.cpuUsage of the client process over a round ÷ calls). This is the cost an instrumentation adds',
    'to the calling process, and it stays meaningful on a loaded machine, where wall-clock loopback times are dominated by',
    'scheduling delays.',
    '',
    '| configuration | JSON call CPU (µs) | added (µs) | vs bare | streamed call CPU (µs) | added (µs) | vs bare | spans |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const spread = (name, m) => us(mad(diffs(name, 'bare', m)));
  for (const name of names) {
    lines.push(
      `| ${CONFIGS[name]} | ${us(value(name, 'jsonCpu'))} | ${us(added(name, 'jsonCpu'))} ± ${spread(name, 'jsonCpu')} | ${pct(ratio(name, 'jsonCpu'))} | ` +
        `${us(value(name, 'streamCpu'))} | ${us(added(name, 'streamCpu'))} ± ${spread(name, 'streamCpu')} | ${pct(ratio(name, 'streamCpu'))} | ${spans[name].reduce((a, b) => a + b, 0)} |`,
    );
  }
  lines.push(
    '',
    '**Wall clock per call** and **time to first chunk** (from `create()` to the first chunk the app iterates): per round the',
    'median call, then as above. Read with the load average below: on a busy machine these carry scheduler noise.',
    '',
    '| configuration | JSON call (ms) | vs bare | streamed call (ms) | vs bare | first chunk (ms) | added (µs) | vs bare |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const name of names) {
    lines.push(
      `| ${CONFIGS[name]} | ${value(name, 'jsonWall').toFixed(3)} | ${pct(ratio(name, 'jsonWall'))} | ${value(name, 'streamWall').toFixed(3)} | ` +
        `${pct(ratio(name, 'streamWall'))} | ${value(name, 'ttfc').toFixed(3)} | ${us(added(name, 'ttfc'))} ± ${spread(name, 'ttfc')} | ${pct(ratio(name, 'ttfc'))} |`,
    );
  }
  // The goal of issue 2: faultline's added median below every GenAI instrumentation, JSON and streamed, and no
  // measurable delay of the first chunk. Within one round every configuration ran minutes apart at most, so the
  // per-round differences are paired; "below" / "above" only when the 95% interval excludes zero.
  const genai = ['otel-openai', 'traceloop', 'openinference'];
  const lowest = (m) => Math.min(...genai.map((n) => added(n, m)));
  const vs = (a, b, m) => pairedMedian(diffs(a, b, m));
  const signed = (ms) => `${ms > 0 ? '+' : ms < 0 ? '−' : ''}${us(Math.abs(ms))}`;
  const call = (d) =>
    `${signed(d.median)} (${signed(d.lo)} … ${signed(d.hi)}) ${d.hi < 0 ? 'below' : d.lo > 0 ? 'above' : 'not distinguishable'}`;
  lines.push(
    '',
    '**Goal check** (issue 16): one configuration minus another, per round, then the median and its 95% confidence interval over',
    'rounds (µs; CPU per call, and wall clock: the round\'s median call, and first chunk). "below" / "above" only when the interval',
    "excludes zero. For register's default, with a plan that matches no call, and with guards on: against each GenAI",
    'instrumentation (CPU below every one), and against bare (the first chunk and the full answer: not distinguishable from zero).',
    'The last rows give the A/A control (two sets of processes with no instrumentation: what this bench reports between',
    "identical configurations), the floor with a span and each instrumentation's own delay against bare.",
    '',
    '| | JSON call CPU | JSON call wall | streamed call CPU | streamed call wall | first chunk |',
    '|---|---|---|---|---|---|',
  );
  const short = {
    bare: 'bare',
    'bare-again': 'bare (second set of processes)',
    'floor-span': 'the floor with a span',
    faultline: 'the GenAI layer alone',
    register: 'register default',
    'register-undici': 'register + undici span',
    'register-detect': 'register + online detectors',
    'plan-nomatch': 'register + plan (no match)',
    guards: 'register + guards',
    'otel-openai': 'instrumentation-openai',
    traceloop: 'traceloop',
    openinference: 'openinference',
    'register-base': 'register (base build)',
  };
  const subjects = ['register', 'plan-nomatch', 'guards'];
  const pairs = [
    ...subjects.flatMap((a) => [...genai, 'bare'].map((b) => [a, b])),
    ['register-undici', 'register'],
    ['register-detect', 'register'],
    ['faultline', 'bare'],
    ['bare-again', 'bare'],
    ...['floor-span', ...genai].map((n) => [n, 'bare']),
    ...(BASE_DIST ? [['register', 'register-base']] : []),
  ];
  for (const [a, b] of pairs) {
    const label = `${short[a]} − ${short[b]}`;
    const cells = ['jsonCpu', 'jsonWall', 'streamCpu', 'streamWall', 'ttfc'].map((m) => call(vs(a, b, m)));
    lines.push(`| ${label} | ${cells.join(' | ')} |`);
  }
  const goal = (subject, m) => {
    const ds = genai.map((n) => vs(subject, n, m));
    if (ds.every((d) => d.hi < 0)) return 'met (below every one)';
    if (ds.some((d) => d.lo > 0)) return 'NOT met (above at least one)';
    return 'not settled by this run (not distinguishable from at least one, above none)';
  };
  const delay = (subject, m) => {
    const d = vs(subject, 'bare', m);
    return `${d.lo > 0 ? 'measurably delayed' : 'not measurably delayed'} (${signed(d.median)} µs, 95% ${signed(d.lo)} … ${signed(d.hi)})`;
  };
  for (const subject of subjects) {
    lines.push(
      '',
      `Goal, ${short[subject]}: CPU per JSON call ${goal(subject, 'jsonCpu')}; per streamed call ${goal(subject, 'streamCpu')}; ` +
        `against bare, first chunk ${delay(subject, 'ttfc')}, full JSON answer ${delay(subject, 'jsonWall')}, full stream ${delay(subject, 'streamWall')}.`,
    );
  }
  lines.push(
    '',
    // The floor rows are what any instrumentation at the HTTP level pays before it records anything, without and with
    // the one span it exists to emit.
    `Floor (CPU added per call): reading both bodies at the HTTP level, with no span, adds ${us(added('floor', 'jsonCpu'))} µs to a JSON call ` +
      `and ${us(added('floor', 'streamCpu'))} µs to a streamed one; with one span without attributes, ${us(added('floor-span', 'jsonCpu'))} ` +
      `and ${us(added('floor-span', 'streamCpu'))} µs (first chunk ${us(added('floor-span', 'ttfc'))} µs, wall). The lowest GenAI instrumentation ` +
      `adds ${us(lowest('jsonCpu'))} and ${us(lowest('streamCpu'))} µs.`,
  );
  lines.push(
    '',
    `Load average at the end: ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')} on ${os.cpus().length} CPUs.`,
  );
  lines.push('', `Run took ${((Date.now() - t0) / 1000).toFixed(1)} s on Node ${process.version}.`);
  process.stdout.write(lines.join('\n') + '\n');
}

if (process.argv[2] === '--child') await child(process.argv[3]);
else await parent();
