#!/usr/bin/env node
// The span layer's own work per call, and how long it holds a request before it leaves, with nothing else measured:
// no network, no fetch, no SDK. Requests shaped as Node's fetch hands them to its dispatcher (an object of headers, the
// body an async iterator of one chunk, as the openai v6 client sends them) go straight into the process-wide dispatcher,
// and a dispatcher below the layer answers each from the corpus records of llm-loopback.mjs (the JSON answer whole, the
// stream one event per microtask). The layer is enabled and disabled batch by batch in one process (rounds alternate
// which goes first), so the difference is what the layer does; each configuration (register's default, a plan that
// matches no call, guards) runs in a process of its own, since a process runs one runtime. "Until it leaves" is the time
// from the dispatch call to the dispatcher below: the part of the time to the first chunk the layer adds before the
// request is on its way. The per-process and one-process benches measure what a real client sees; this one says where
// the layer's share of it goes. Needs `npm run build` (dist/).
import { fork, spawn } from 'node:child_process';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, pairedMedian } from './stats.mjs';
import { distinct, records } from './llm-loopback.mjs';
import { DIST, require } from './paths.mjs';
import { pinning } from './pin.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);
const WARM_ROUNDS = Number(process.env.BENCH_WARM_ROUNDS ?? 20);
const JSON_CALLS = Number(process.env.BENCH_JSON_CALLS ?? 50);
const STREAM_CALLS = Number(process.env.BENCH_STREAM_CALLS ?? 10);
// A process keeps its luck (what V8 compiled, where the heap landed) for its whole run: each configuration runs in
// several, in turn, and their rounds are pooled.
const PROCS = Number(process.env.BENCH_PROCS ?? 3);

const CONFIGS = {
  register: { label: "register's default (startRuntime with the environment's defaults)", options: {} },
  plan: {
    label: 'register + a fault plan whose rule matches no call',
    options: { plan: { rules: [{ fault: 'http_429', match: { model: 'no-such-model' } }] } },
  },
  guards: {
    label: 'register + guards (a route on every call: retry, detectors judging each JSON answer)',
    options: { guards: { routes: [{ name: 'chat', match: { provider: 'openai*' }, retry: { maxRetries: 1 } }] } },
  },
};

/** What a run records per mode: each counted round's CPU per call and median time until the request left; spans. */
const tally = () => {
  const mode = () => ({ jsonCpu: [], streamCpu: [], left: [], spans: 0 });
  return { off: mode(), on: mode() };
};

// ------------------------------------------------------------------------------------------------ child

async function child(name) {
  const { json, stream } = records();
  const jsonBody = Buffer.from(JSON.stringify(json.response));
  const events = stream.sse.split(/(?<=\n\n)/).map((e) => Buffer.from(e));
  const SLOT = Symbol.for('undici.globalDispatcher.1');
  void globalThis.Headers; // Node's fetch makes its own dispatcher first
  let sentAt = 0;
  const leftAfter = [];
  // Below the layer: answers in the legacy handler API, as Node 20/22's fetch dispatcher speaks it.
  globalThis[SLOT] = {
    dispatch(opts, handler) {
      leftAfter.push(performance.now() - sentAt);
      void (async () => {
        // A streamed body is pulled to its end, as a dispatcher does (the layer hands on one it read whole as bytes).
        if (typeof opts.body?.[Symbol.asyncIterator] === 'function') for await (const _chunk of opts.body);
        const sse = opts.path.endsWith('?stream');
        handler.onConnect?.(() => {});
        const headers = sse
          ? [Buffer.from('content-type'), Buffer.from('text/event-stream')]
          : [
              Buffer.from('content-type'),
              Buffer.from('application/json'),
              Buffer.from('content-length'),
              Buffer.from(String(jsonBody.length)),
            ];
        handler.onHeaders?.(200, headers, () => {}, 'OK');
        if (sse) {
          for (const e of events) {
            handler.onData(e);
            await null;
          }
        } else handler.onData(jsonBody);
        handler.onComplete?.([]);
      })();
      return true;
    },
    close() {},
    destroy() {},
  };
  const { InMemorySpanExporter, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
  const drop = new InMemorySpanExporter();
  drop.export = (spans, cb) => cb({ code: 0 });
  let spanCount = 0;
  const counter = {
    onStart() {},
    onEnd() {
      spanCount++;
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const { startRuntime } = require(join(DIST, 'src', 'start'));
  const runtime = startRuntime({
    ...CONFIGS[name].options,
    announce: false,
    spanProcessors: [counter, new BatchSpanProcessor(drop)],
    exitHooks: false,
    env: { ...process.env, OTEL_TRACES_EXPORTER: 'none' },
  });
  const { settleExchanges } = require(join(DIST, 'instrumentation'));

  const headersFor = (length) => ({
    accept: 'application/json',
    'content-type': 'application/json',
    'user-agent': 'OpenAI/JS 6.9.1',
    'x-stainless-arch': 'x64',
    'x-stainless-lang': 'js',
    'x-stainless-os': 'Linux',
    'x-stainless-package-version': '6.9.1',
    'x-stainless-retry-count': '0',
    'x-stainless-runtime': 'node',
    'x-stainless-runtime-version': process.version,
    'x-stainless-timeout': '600',
    authorization: 'Bearer sk-bench',
    'accept-language': '*',
    'content-length': String(length),
    'sec-fetch-mode': 'cors',
    'accept-encoding': 'br, gzip, deflate',
  });
  // The stream's answer is told apart by its path's query, which no module reads.
  const call = (request, sse) =>
    new Promise((resolve, reject) => {
      const bytes = Buffer.from(JSON.stringify(distinct(request)));
      const body = (async function* () {
        yield new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
      })();
      const handler = {
        onConnect() {},
        onHeaders: () => true,
        onData: () => true,
        onComplete: resolve,
        onError: reject,
      };
      sentAt = performance.now();
      const opts = {
        path: `/v1/chat/completions${sse ? '?stream' : ''}`,
        origin: 'https://api.openai.com',
        method: 'POST',
        body,
        headers: headersFor(bytes.length),
        maxRedirections: 0,
        upgrade: undefined,
      };
      globalThis[SLOT].dispatch(opts, handler);
    });
  const cpu = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  async function batch() {
    leftAfter.length = 0;
    let c0 = cpu();
    for (let k = 0; k < JSON_CALLS; k++) await call(json.request, false);
    await settleExchanges();
    const jsonCpu = (cpu() - c0) / JSON_CALLS;
    c0 = cpu();
    for (let k = 0; k < STREAM_CALLS; k++) await call(stream.request, true);
    await settleExchanges();
    return { jsonCpu, streamCpu: (cpu() - c0) / STREAM_CALLS, left: median(leftAfter) * 1000 };
  }
  const modes = ['off', 'on'];
  const result = tally();
  for (let round = 0; round < WARM_ROUNDS + ROUNDS; round++) {
    for (let i = 0; i < 2; i++) {
      const mode = modes[(i + round) % 2];
      if (mode === 'on') runtime.instrumentation.enable();
      else runtime.instrumentation.disable();
      const spans0 = spanCount;
      const r = await batch();
      if (round < WARM_ROUNDS) continue;
      for (const k of ['jsonCpu', 'streamCpu', 'left']) result[mode][k].push(r[k]);
      result[mode].spans += spanCount - spans0;
    }
  }
  runtime.instrumentation.disable();
  await runtime.shutdown();
  process.send({ result }, () => process.exit(0));
}

// ------------------------------------------------------------------------------------------------ parent

async function parent() {
  const pin = pinning()?.client;
  const t0 = Date.now();
  const pooled = Object.fromEntries(Object.keys(CONFIGS).map((name) => [name, tally()]));
  for (let proc = 0; proc < PROCS; proc++) {
    for (const name of Object.keys(CONFIGS)) {
      const args = [fileURLToPath(import.meta.url), '--child', name];
      const options = { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] };
      const c = pin
        ? spawn('taskset', ['-c', pin, process.execPath, ...args], options)
        : fork(args[0], args.slice(1), options);
      const result = await new Promise((resolve, reject) => {
        c.on('message', (m) => m.result && resolve(m.result));
        c.once('exit', (code) => reject(new Error(`bench child ${name} exited with ${code}`)));
      });
      for (const mode of ['off', 'on']) {
        for (const k of ['jsonCpu', 'streamCpu', 'left']) pooled[name][mode][k].push(...result[mode][k]);
        pooled[name][mode].spans += result[mode].spans;
      }
    }
    process.stderr.write(`bench layer: processes ${proc + 1}/${PROCS} done\n`);
  }
  const rows = Object.entries(pooled);
  const us = (x) => x.toFixed(0);
  const signed = (x) => `${x > 0 ? '+' : x < 0 ? '−' : ''}${us(Math.abs(x))}`;
  const interval = (d) => `${signed(d.median)} (${signed(d.lo)} … ${signed(d.hi)})`;
  const added = (r, k) => interval(pairedMedian(r.on[k].map((v, i) => v - r.off[k][i])));
  const calls = PROCS * ROUNDS * (JSON_CALLS + STREAM_CALLS);
  const lines = [
    '## The span layer alone (layer.bench.mjs)',
    '',
    "The layer's own work per call and how long it holds a request before it leaves, with no network, fetch or SDK in the",
    "measure: requests shaped as Node's fetch hands them to its dispatcher (headers as an object, the body an async iterator",
    'of one chunk; each request differs from the last in its final message) go straight into the process-wide dispatcher,',
    'and a dispatcher below the layer answers from the corpus records of llm-loopback.mjs (the JSON answer whole, the stream',
    'one event per microtask). The layer is enabled and disabled batch by batch in one process (alternating which goes',
    `first), ${ROUNDS} counted rounds after ${WARM_ROUNDS} warm-up rounds of ${JSON_CALLS} JSON and ${STREAM_CALLS} streamed calls each; each configuration in`,
    `${PROCS} processes of its own, in turn, their rounds pooled (${pin ? `pinned to CPU ${pin}` : 'not pinned'}). "Added" is the median over rounds of on minus off, with its 95% interval (sign`,
    'test). "Until it leaves" is the median time from the dispatch call to the dispatcher below it: what the layer adds to',
    'the time to the first chunk before the request is on its way (the reading of the request and of the answer is done',
    'after the application has its answer, when no plan or guard must decide first).',
    '',
    '| configuration | JSON call CPU added (µs, 95%) | streamed call CPU added (µs, 95%) | until the request leaves, layer on (µs) | added (µs, 95%) | spans per call |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const [name, r] of rows) {
    lines.push(
      `| ${CONFIGS[name].label} | ${added(r, 'jsonCpu')} | ${added(r, 'streamCpu')} | ${us(median(r.on.left))} | ${added(r, 'left')} | ${(r.on.spans / calls).toFixed(2)} |`,
    );
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

if (process.argv[2] === '--child') await child(process.argv[3]);
else await parent();
