#!/usr/bin/env node
// Register's per-call overhead on an Amazon Bedrock call (the AWS SDK's NodeHttpHandler: node:http, seen by
// instrumentation/node-http.ts) next to its overhead on a fetch call (the openai v6 client, seen by the undici layer),
// measured in the same processes and rounds. Workload per round: Converse JSON calls and ConverseStream calls (a
// loopback server answering in Bedrock's wire format: one JSON answer, 7 event-stream frames one per turn of the event
// loop), then the openai JSON and SSE calls of llm-loopback.mjs. Configurations: no instrumentation, register's
// default, register + a fault plan whose rule matches no call; each in BENCH_PROCS child processes of its own (the
// interception points are process-wide), rounds interleaved; per round the client CPU per call (process.cpuUsage),
// reported as the median over rounds of the difference to bare in the same round, with its 95% sign-test interval.
// Needs `npm run build` (dist/). Smaller than interceptor.bench.mjs on purpose: the machines here are shared.
import { spanSink } from './span-sink.mjs';
import { fork, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { setImmediate } from 'node:timers';
import { fileURLToPath } from 'node:url';
import { median, pairedMedian } from './stats.mjs';
import { distinct, records, startServer } from './llm-loopback.mjs';
import { DIST, require } from './paths.mjs';
import { pinning } from './pin.mjs';

const PROCS = Math.max(1, Number(process.env.BENCH_PROCS ?? 2));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 40 + PROCS); // the first round of each process is not counted
const JSON_CALLS = Number(process.env.BENCH_JSON_CALLS ?? 20);
const STREAM_CALLS = Number(process.env.BENCH_STREAM_CALLS ?? 10);
const WARM_CALLS = Number(process.env.BENCH_WARM_CALLS ?? 600);

const CONFIGS = {
  bare: 'no instrumentation (SDKs only)',
  register: "faultline register default (startRuntime with the environment's defaults)",
  'plan-nomatch': 'register default + a fault plan whose rule matches no call',
};
const RUNTIME = {
  register: {},
  'plan-nomatch': { plan: { rules: [{ fault: 'http_429', match: { model: 'no-such-model' } }] } },
};
const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const WORKLOADS = [
  ['bedrockJson', 'Bedrock Converse (NodeHttpHandler, node:http)'],
  ['bedrockStream', 'Bedrock ConverseStream (NodeHttpHandler, node:http)'],
  ['openaiJson', 'openai v6 chat completion (fetch)'],
  ['openaiStream', 'openai v6 chat completion stream (fetch)'],
];

// ------------------------------------------------------------------------------------------------ server

/** Bedrock's answers: a Converse JSON body, and a ConverseStream of event-stream frames (faultline's encoder). */
function startBedrock() {
  const { encodeMessage } = require(join(DIST, 'instrumentation', 'providers', 'eventstream'));
  const frame = (type, payload) =>
    encodeMessage(
      { ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' },
      Buffer.from(JSON.stringify(payload)),
    );
  const json = JSON.stringify({
    output: { message: { role: 'assistant', content: [{ text: 'The capital of France is Paris.' }] } },
    stopReason: 'end_turn',
    usage: { inputTokens: 21, outputTokens: 9, totalTokens: 30 },
    metrics: { latencyMs: 412 },
  });
  const frames = [
    frame('messageStart', { role: 'assistant' }),
    ...['The capital', ' of France', ' is Paris.'].map((text) =>
      frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text } }),
    ),
    frame('contentBlockStop', { contentBlockIndex: 0 }),
    frame('messageStop', { stopReason: 'end_turn' }),
    frame('metadata', { usage: { inputTokens: 17, outputTokens: 6, totalTokens: 23 }, metrics: { latencyMs: 388 } }),
  ];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      if (req.url.endsWith('/converse-stream')) {
        res.writeHead(200, {
          'content-type': 'application/vnd.amazon.eventstream',
          'x-amzn-requestid': '3d0c6a9e-5b1f-4f7a-8e2d-9c4b7a1e6f20',
        });
        for (const f of frames) {
          res.write(f);
          await new Promise((r) => setImmediate(r));
        }
        res.end();
      } else {
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(json),
          'x-amzn-requestid': '7c3b1a52-6f0e-4a7e-9a3e-0d2f5b1e9c11',
        });
        res.end(json);
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// ------------------------------------------------------------------------------------------------ child

async function child(config) {
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
  const sink = spanSink();
  const spanProcessors = sink.spanProcessors;
  let provider;
  if (RUNTIME[config]) {
    const { startRuntime } = require(join(DIST, 'src', 'start'));
    const runtime = startRuntime({
      ...RUNTIME[config],
      spanProcessors,
      exitHooks: false,
      env: { ...process.env, OTEL_TRACES_EXPORTER: 'none' },
    });
    provider = { forceFlush: () => runtime.forceFlush(), shutdown: () => runtime.shutdown() };
  } else {
    provider = new NodeTracerProvider({ spanProcessors });
    provider.register();
  }
  const { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } = require('@aws-sdk/client-bedrock-runtime');
  const { NodeHttpHandler } = require('@smithy/node-http-handler');
  const http = require('node:http');
  const bedrock = new BedrockRuntimeClient({
    region: 'us-east-1',
    endpoint: process.env.BENCH_BEDROCK_URL,
    credentials: { accessKeyId: 'AKIAFAULTLINEBENCH00', secretAccessKey: 'fake/secret/key/for/the/loopback/bench00' },
    requestHandler: new NodeHttpHandler({ httpAgent: new http.Agent({ keepAlive: true }) }),
    maxAttempts: 1,
  });
  const openaiModule = require('openai');
  const OpenAI = openaiModule.OpenAI ?? openaiModule.default ?? openaiModule;
  const openai = new OpenAI({ apiKey: 'sk-bench', baseURL: `${process.env.BENCH_URL}/v1`, maxRetries: 0 });
  const { json, stream } = records();
  let n = 0;
  const ask = () => ({
    modelId: MODEL,
    messages: [{ role: 'user', content: [{ text: `What is the capital of France? (${++n})` }] }],
  });

  const calls = {
    async bedrockJson() {
      const r = await bedrock.send(new ConverseCommand(ask()));
      if (!r.output) throw new Error('bad Converse answer');
    },
    async bedrockStream() {
      const r = await bedrock.send(new ConverseStreamCommand(ask()));
      let events = 0;
      for await (const _e of r.stream) events++;
      if (events !== 7) throw new Error(`ConverseStream: ${events} events`);
    },
    async openaiJson() {
      const r = await openai.chat.completions.create(distinct(json.request));
      if (!r.choices) throw new Error('bad JSON answer');
    },
    async openaiStream() {
      for await (const _c of await openai.chat.completions.create(distinct(stream.request)));
    },
  };
  const count = {
    bedrockJson: JSON_CALLS,
    bedrockStream: STREAM_CALLS,
    openaiJson: JSON_CALLS,
    openaiStream: STREAM_CALLS,
  };

  async function round() {
    const out = {};
    for (const [w] of WORKLOADS) {
      const c0 = process.cpuUsage();
      for (let i = 0; i < count[w]; i++) await calls[w]();
      const u = process.cpuUsage(c0);
      out[w] = (u.user + u.system) / count[w]; // µs per call
    }
    await provider.forceFlush();
    out.spans = sink.count();
    return out;
  }

  process.on('message', async (msg) => {
    if (msg === 'warm') {
      for (let i = 0; i < WARM_CALLS; i++) await calls[WORKLOADS[i % WORKLOADS.length][0]]();
      await provider.forceFlush();
      process.send('warm');
    }
    if (msg === 'round') process.send(await round());
    if (msg === 'exit') {
      await provider.shutdown();
      process.exit(0);
    }
  });
  process.send('ready');
}

// ------------------------------------------------------------------------------------------------ parent

async function parent() {
  const pin = pinning();
  const [openaiServer, bedrockServer] = await Promise.all([startServer(), startBedrock()]);
  const env = {
    ...process.env,
    BENCH_URL: `http://127.0.0.1:${openaiServer.address().port}`,
    BENCH_BEDROCK_URL: `http://127.0.0.1:${bedrockServer.address().port}`,
  };
  const names = Object.keys(CONFIGS);
  const children = Object.fromEntries(names.map((n) => [n, []]));
  for (let k = 0; k < PROCS; k++) {
    for (const name of names) {
      const args = [fileURLToPath(import.meta.url), '--child', name];
      const options = { env, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] };
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
  const ask = (c, what) =>
    new Promise((resolve, reject) => {
      const onExit = (code) => reject(new Error(`bench child exited with ${code}`));
      c.once('exit', onExit);
      c.once('message', (m) => {
        c.removeListener('exit', onExit);
        resolve(m);
      });
      c.send(what);
    });
  for (const name of names) for (const c of children[name]) await ask(c, 'warm');
  const rounds = Object.fromEntries(names.map((n) => [n, Object.fromEntries(WORKLOADS.map(([w]) => [w, []]))]));
  const spans = Object.fromEntries(names.map((n) => [n, 0]));
  for (let r = 0; r < ROUNDS; r++) {
    const k = r % PROCS;
    // Rotating order: no configuration always runs first in a round.
    const order = names.map((_, i) => names[(i + r) % names.length]);
    const got = {};
    for (const name of order) got[name] = await ask(children[name][k], 'round');
    if (r < PROCS) continue; // each process's first round warms what the warm-up did not
    for (const name of names) {
      for (const [w] of WORKLOADS) rounds[name][w].push(got[name][w]);
      spans[name] = got[name].spans;
    }
  }
  for (const name of names) for (const c of children[name]) c.send('exit');
  openaiServer.close();
  bedrockServer.close();

  const counted = ROUNDS - PROCS;
  const lines = [
    '## Register on a Bedrock call next to a fetch call (bedrock.bench.mjs)',
    '',
    `The AWS SDK's BedrockRuntimeClient with NodeHttpHandler (node:http: the second interception point) and the openai v6`,
    `client (fetch: the undici layer), in the same processes, against loopback servers (Bedrock: one Converse JSON answer,`,
    `a ConverseStream of 7 event-stream frames; openai: llm-loopback.mjs's corpus bodies). ${counted} counted rounds × ${JSON_CALLS} JSON + ${STREAM_CALLS}`,
    `streamed calls of each client per configuration, ${PROCS} processes per configuration used in turn, rounds interleaved in`,
    `rotating order, ${WARM_CALLS} warm-up calls per process${pin ? ', clients pinned to one CPU, servers to another (taskset)' : ''}. Client CPU per call`,
    '(process.cpuUsage ÷ calls); "added" is the median over rounds of the difference to bare in the same round, [95% sign-test',
    'interval]; "vs bare" the median per-round ratio.',
    '',
    '| configuration | call | CPU per call (µs) | added (µs) | vs bare |',
    '|---|---|---:|---:|---:|',
  ];
  for (const name of names) {
    for (const [w, label] of WORKLOADS) {
      const xs = rounds[name][w];
      const base = rounds.bare[w];
      const d = pairedMedian(xs.map((x, i) => x - base[i]));
      const ratio = median(xs.map((x, i) => x / base[i] - 1));
      const added = name === 'bare' ? '0' : `${d.median.toFixed(0)} [${d.lo.toFixed(0)}, ${d.hi.toFixed(0)}]`;
      lines.push(
        `| ${CONFIGS[name]} | ${label} | ${median(xs).toFixed(0)} | ${added} | ${ratio >= 0 ? '+' : ''}${(ratio * 100).toFixed(1)}% |`,
      );
    }
  }
  lines.push(
    '',
    `Spans ended per process by the last round: ${names.map((n) => `${n} ${spans[n]}`).join(', ')}. Load average at the end: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')}.`,
  );
  process.stdout.write(lines.join('\n') + '\n');
}

if (process.argv[2] === '--child') await child(process.argv[3]);
else await parent();
