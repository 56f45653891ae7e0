#!/usr/bin/env node
'use strict';
/**
 * The independent evaluation set: labelled traces that faultline's producer, injector and examples did not make.
 *
 *   node test/independent/generate.cjs --producer contrib|traceloop|openinference --out DIR [--tasks N] [--seed S] [--fast]
 *   node test/independent/generate.cjs --producer … --out DIR --suite cases --fast   (one task per fault + clean cases)
 *
 * One producer per process (each instrumentation patches the openai module). Small multi-agent workflows
 * (workflows.cjs) call the real openai client, instrumented by that producer's real package, against a loopback
 * model server (model-server.cjs) that makes the faults server-side. Writes DIR/traces.jsonl (one OTLP/JSON
 * ExportTraceServiceRequest per line, the real serializer), DIR/logs.jsonl for `contrib` (its content is in log
 * records) and DIR/labels.json. Score it with `faultline eval DIR/traces.jsonl [DIR/logs.jsonl]`.
 *
 * Ground truth: the span the server faulted carries a `faultline.fault.injected` event and `faultline.fault.type`
 * (written by a span processor from the call's context, the way faultline's injector records its own), and every
 * task root carries `faultline.fault.condition` (the planned fault, or `clean`). Both are stripped before any
 * diagnoser reads the trace. Deterministic for a seed: the same tasks, faults, content and labels every run.
 */
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { parseArgs } = require('node:util');
const { context, createContextKey } = require('@opentelemetry/api');
const { PRODUCERS, setup } = require('./producers.cjs');
const { startModelServer, tokensOf } = require('./model-server.cjs');
const { WORKFLOWS } = require('./workflows.cjs');

const { values: argv } = parseArgs({
  options: {
    producer: { type: 'string' },
    out: { type: 'string' },
    tasks: { type: 'string', default: '150' },
    seed: { type: 'string', default: '7' },
    fast: { type: 'boolean', default: false },
    // Tasks in flight at once. Few: many calls sharing one event loop stall each other, and a stalled call looks late.
    concurrency: { type: 'string', default: '6' },
    only: { type: 'string' },
    suite: { type: 'string', default: 'set' },
  },
});
if (!argv.producer || !PRODUCERS.includes(argv.producer) || !argv.out) {
  process.stderr.write(`usage: generate.cjs --producer ${PRODUCERS.join('|')} --out DIR [--tasks N] [--seed S] [--fast]\n`);
  process.exit(2);
}
const producer = argv.producer;
const FAST = argv.fast;

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const seed = Number(argv.seed);
const idRng = mulberry32(seed * 7919 + PRODUCERS.indexOf(producer));
const hexOf = (s) => {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  let out = '';
  let x = h;
  for (let i = 0; i < 3; i++) {
    x = Math.imul(x ^ (x >>> 13), 0x5bd1e995) >>> 0;
    out += x.toString(16).padStart(8, '0');
  }
  return out.slice(0, 24);
};

// ------------------------------------------------------------------------------------------------ faults

const nonAscii = (text) => [...text].some((c) => c.charCodeAt(0) > 0x7f);
const isText = (reply) => typeof reply.text === 'string' && reply.text.length > 0;
const isTool = (reply) => Array.isArray(reply.toolCalls) && reply.toolCalls.length > 0;
const requiredOf = (req, name) => req.tools?.find((t) => t.function.name === name)?.function.parameters.required ?? [];

/** Faults the server makes. `eligible(reply, req, meta, k)`; `make(rng, reply, req, meta)` → the server's fault. */
const FAULTS = [
  { name: 'http_5xx', type: 'error', producers: ['contrib'], eligible: () => true, make: (r) => ({ kind: 'http_error', status: [500, 502, 503][Math.floor(r() * 3)], message: 'The server had an error while processing your request.' }) },
  { name: 'client_timeout', type: 'timeout', producers: ['contrib'], eligible: () => true, make: () => ({ kind: 'hang' }) },
  {
    name: 'inband_error',
    type: 'error',
    eligible: isText,
    make: (r) => ({
      kind: 'inband',
      content: [
        '[API ERROR] HTTP 500: Internal Server Error. The server encountered an unexpected condition.',
        'Internal Server Error',
        '[SERVICE UNAVAILABLE] HTTP 503: The server is temporarily unable to handle the request.',
        '<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx/1.24.0</center></body></html>',
      ][Math.floor(r() * 4)],
    }),
  },
  { name: 'inband_timeout', type: 'timeout', eligible: isText, make: (r) => ({ kind: 'inband', content: ['[TIMEOUT] The request timed out. The server did not respond within the expected time.', 'upstream request timeout', 'Error: the operation timed out after 30000 ms'][Math.floor(r() * 3)] }) },
  { name: 'tool_timeout', rare: true, type: 'timeout', eligible: isTool, make: () => ({ kind: 'inband', content: '[TIMEOUT] Connection dropped. The server did not respond.' }) },
  { name: 'empty', type: 'empty', eligible: isText, make: () => ({ kind: 'empty' }) },
  { name: 'content_filter', type: 'empty', eligible: () => true, make: () => ({ kind: 'content_filter' }) },
  { name: 'tool_drop', rare: true, type: 'empty', eligible: isTool, make: () => ({ kind: 'tool_drop' }) },
  { name: 'truncate_length', type: 'truncate', eligible: (reply, req) => isText(reply) && reply.text.length >= 60 && !req.stream, make: (r) => ({ kind: 'truncate', ratio: 0.3 + r() * 0.3 }) },
  { name: 'stream_cut', rare: true, type: 'truncate', eligible: (reply, req) => isText(reply) && req.stream === true && reply.text.split(/\s+/).length >= 12, make: (r) => ({ kind: 'stream_cut', fraction: 0.3 + r() * 0.4 }) },
  {
    name: 'tool_truncate',
    rare: true,
    type: 'truncate',
    // Only arguments the model copied from the conversation: a cut elsewhere (a composed query) leaves no trace.
    eligible: (reply, req) => isTool(reply) && Object.values(JSON.parse(reply.toolCalls[0].arguments)).some((v) => typeof v === 'string' && v.length >= 6 && JSON.stringify(req.messages).includes(v)),
    make: (_r, reply) => {
      const args = JSON.parse(reply.toolCalls[0].arguments);
      for (const k of Object.keys(args)) if (typeof args[k] === 'string') args[k] = args[k].slice(0, Math.max(1, Math.floor(args[k].length * 0.3)));
      return { kind: 'tool_args', arguments: JSON.stringify(args) };
    },
  },
  { name: 'tool_empty_args', rare: true, type: 'error', eligible: (reply, req) => isTool(reply) && requiredOf(req, reply.toolCalls[0].name).length > 0, make: () => ({ kind: 'tool_args', arguments: '{}' }) },
  {
    name: 'tool_schema',
    rare: true,
    type: 'schema',
    eligible: isTool,
    make: (r, reply) => {
      const args = JSON.parse(reply.toolCalls[0].arguments);
      const keys = Object.keys(args);
      const variant = keys.length === 0 ? 0 : Math.floor(r() * 3);
      if (variant === 0) return { kind: 'tool_args', arguments: '{"wrong_param": "unexpected_value"}' };
      if (variant === 1) {
        const renamed = {};
        for (const k of keys) renamed[`${k}_value`] = args[k];
        return { kind: 'tool_args', arguments: JSON.stringify(renamed) };
      }
      const retyped = { ...args };
      const k = keys[0];
      retyped[k] = typeof args[k] === 'number' ? String(args[k]) : typeof args[k] === 'string' ? { value: args[k] } : String(args[k]);
      return { kind: 'tool_args', arguments: JSON.stringify(retyped) };
    },
  },
  { name: 'llm_schema', type: 'schema', eligible: isText, make: () => ({ kind: 'inband', content: '{"error": "content_policy_violation", "message": "This response has been filtered."}' }) },
  { name: 'mojibake', rare: true, workflows: ['trip'], type: 'corrupt', eligible: (reply) => isText(reply) && nonAscii(reply.text), make: () => ({ kind: 'mojibake' }) },
  {
    name: 'tool_corrupt',
    rare: true,
    type: 'corrupt',
    eligible: (reply) => isTool(reply) && Object.values(JSON.parse(reply.toolCalls[0].arguments)).some((v) => typeof v === 'string' && v.length >= 5),
    make: (r, reply) => {
      const args = JSON.parse(reply.toolCalls[0].arguments);
      for (const k of Object.keys(args)) {
        if (typeof args[k] !== 'string' || args[k].length === 0) continue;
        const chars = [...args[k]];
        for (let i = 0; i < Math.max(1, Math.floor(chars.length / 5)); i++) chars[Math.floor(r() * chars.length)] = String.fromCodePoint(0x2600 + Math.floor(r() * 0x100));
        args[k] = chars.join('');
      }
      return { kind: 'tool_args', arguments: JSON.stringify(args) };
    },
  },
  { name: 'delay', type: 'delay', eligible: () => true, make: (r) => ({ kind: 'delay', ms: FAST ? 3100 : 3500 + Math.floor(r() * 2500) }) },
  { name: 'stale_replay', type: 'stale', eligible: (_reply, _req, _meta, k) => k >= 2, make: () => ({ kind: 'stale' }) },
  {
    name: 'wrong_entity',
    rare: true,
    workflows: ['trip', 'support'],
    type: 'semantic',
    eligible: (reply, _req, meta) => isTool(reply) && meta?.entity !== undefined,
    make: (r, reply, _req, meta) => {
      const args = JSON.parse(reply.toolCalls[0].arguments);
      args[meta.entity.key] = meta.entity.key === 'city' ? ['Springfield', 'Pyongyang', 'Timbuktu', 'Reykjavík'][Math.floor(r() * 4)] : `A-${10000 + Math.floor(r() * 89999)}`;
      return { kind: 'tool_args', arguments: JSON.stringify(args) };
    },
  },
];

// ------------------------------------------------------------------------------------------------ tasks

const NO_FLAGS = { toolRetry: false, toolHandled: false, sdkRetry: false, derivedEntity: false, long: false, cjk: false, mentionsError: false, includeUsage: false };

/** The test suite: each fault this producer can show once (on the trip planner, where every fault can fire), then
 * clean runs with each tricky-but-valid variant. */
function caseTasks() {
  const tasks = [];
  let i = 0;
  const add = (workflow, fault, flags = {}) => tasks.push({ id: `case-${String(++i).padStart(3, '0')}`, workflow, fault, skip: 0, seed: 1000 + i, flags: { ...NO_FLAGS, ...flags } });
  for (const f of FAULTS) if (!f.producers || f.producers.includes(producer)) add(f.name === 'wrong_entity' || f.name === 'tool_truncate' ? 'support' : 'trip', f);
  add('trip', undefined);
  add('trip', undefined, { toolRetry: true, long: true });
  add('support', undefined, { toolHandled: true, mentionsError: true });
  add('support', undefined, { sdkRetry: true });
  add('research', undefined, { cjk: true, toolRetry: true });
  add('ops', undefined, { long: true, includeUsage: true });
  add('ops', undefined, { toolRetry: true, mentionsError: true });
  return tasks;
}

/** The task list for a seed: the same for every producer, except producer-specific faults drawn from the same slot. */
function planTasks(n) {
  if (argv.suite === 'cases') return caseTasks();
  const r = mulberry32(seed);
  const names = Object.keys(WORKFLOWS);
  const all = FAULTS.map((f) => f.name);
  const tasks = [];
  for (let i = 0; i < n; i++) {
    const clean = r() < 0.36;
    const slot = Math.floor(r() * all.length);
    let fault = clean ? undefined : FAULTS[slot];
    if (fault && fault.producers && !fault.producers.includes(producer)) fault = fault.type === 'timeout' ? FAULTS.find((f) => f.name === 'inband_timeout') : FAULTS.find((f) => f.name === 'inband_error');
    const pickWorkflow = Math.floor(r() * names.length);
    const allowed = fault?.workflows ?? names;
    tasks.push({
      id: `task-${String(i + 1).padStart(4, '0')}`,
      workflow: allowed.includes(names[pickWorkflow]) ? names[pickWorkflow] : allowed[pickWorkflow % allowed.length],
      fault,
      skip: r() < 0.4 ? 1 : 0,
      seed: Math.floor(r() * 2 ** 31),
      flags: {
        toolRetry: r() < 0.22,
        toolHandled: r() < 0.2,
        sdkRetry: r() < 0.2,
        derivedEntity: r() < 0.5,
        long: r() < 0.2,
        cjk: r() < 0.2,
        mentionsError: r() < 0.35,
        includeUsage: r() < 0.5,
      },
    });
  }
  return argv.only ? tasks.filter((t) => (t.fault?.name ?? 'clean') === argv.only || t.id === argv.only) : tasks;
}

const CALL = createContextKey('faultline-eval-call');

/** Writes the ground truth on the LLM span started inside a faulted call's context (the instrumentation's span). */
const labeller = {
  onStart(span, parentContext) {
    const call = parentContext.getValue(CALL);
    if (!call || !call.fault || span.instrumentationScope?.name?.startsWith('eval-')) return;
    span.setAttribute('faultline.fault.type', call.fault.type);
    span.setAttribute('faultline.fault.name', `server:${call.fault.name}`);
    span.addEvent('faultline.fault.injected', { 'faultline.fault.type': call.fault.type, 'faultline.fault.name': `server:${call.fault.name}` });
  },
  onEnd() {},
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

async function main() {
  const tel = setup(producer, { rng: idRng, label: labeller, serviceName: `eval-${producer}` });
  const OpenAI = require('openai').default ?? require('openai');
  const latency = FAST ? { base: 3, perToken: 0.03 } : { base: 180, perToken: 5 };
  const jitterRng = mulberry32(seed + 101);
  const server = await startModelServer({
    latency: {
      ...latency,
      // Log-normal: LLM latency varies several-fold naturally.
      jitter: () => Math.exp(0.4 * Math.sqrt(-2 * Math.log(1 - jitterRng())) * Math.cos(2 * Math.PI * jitterRng())),
    },
    idOf: hexOf,
  });
  const tasks = planTasks(Number(argv.tasks));
  const labels = [];
  // One client for the process, as applications have it; per request the SDK's default retries and a timeout above
  // the slowest answer (a held response is the only thing that reaches it).
  const client = new OpenAI({ apiKey: 'sk-eval', baseURL: server.url, maxRetries: FAST ? 1 : 2, timeout: FAST ? 3700 : 8000 });
  {
    // Warm the client and the instrumentation up outside any trace (a cold start is not what the set measures).
    const { suppressTracing } = require('@opentelemetry/core');
    await context.with(suppressTracing(context.active()), async () => {
      for (let i = 0; i < 3; i++) {
        server.script(`warmup:${i}`, { text: 'ok' });
        await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }] }, { headers: { 'x-eval-call': `warmup:${i}` } });
      }
    });
  }

  const runTask = async (task) => {
    const r = mulberry32(task.seed);
    let k = 0;
    let eligibleSeen = 0;
    let fired;
    let callSeq = 0;
    const ctx = {
      rng: r,
      pick: (xs) => xs[Math.floor(r() * xs.length)],
      int: (a, b) => a + Math.floor(r() * (b - a + 1)),
      flag: (name) => task.flags[name] === true,
      callId: () => `call_${hexOf(`${task.id}/${++callSeq}`).slice(0, 20)}`,
      agent: (name, fn) =>
        tel.conventions.agent(name, async () => {
          return fn();
        }),
      async tool(name, callId, argsText, impl, opts = {}) {
        const attempt = (n) =>
          tel.conventions.tool(name, callId, argsText, async () => {
            await new Promise((res) => setTimeout(res, FAST ? 1 : 20 + Math.floor(r() * 60)));
            const args = JSON.parse(argsText);
            if (opts.flaky && n === 1) throw new Error(`${name}: 503 upstream temporarily unavailable`);
            return impl(args);
          });
        try {
          return await attempt(1);
        } catch (err) {
          if (opts.flaky && /temporarily unavailable/.test(err.message)) return attempt(2); // the agent retries the tool
          throw err;
        }
      },
      async llm(req, reply, meta) {
        k++;
        const key = `${task.id}:${k}`;
        const body = { model: 'gpt-4o-mini', messages: [...(req.system ? [{ role: 'system', content: req.system }] : []), ...req.messages] };
        if (req.tools) body.tools = req.tools;
        if (req.responseFormat) body.response_format = req.responseFormat;
        if (req.maxTokens) body.max_tokens = req.maxTokens;
        if (req.stream) {
          body.stream = true;
          if (task.flags.includeUsage) body.stream_options = { include_usage: true };
        }
        let fault;
        const f = task.fault;
        if (f && !fired && f.eligible(reply, body, meta, k)) {
          eligibleSeen++;
          // Faults with many eligible calls land on the first or the second; rare ones on the first they can.
          if (eligibleSeen > (f.rare ? 0 : task.skip)) {
            fired = f;
            fault = f.make(r, reply, body, meta);
          }
        }
        const transient = !fault && task.flags.sdkRetry && k === 2 ? true : undefined;
        server.script(key, reply, fault, transient);
        const callCtx = context.active().setValue(CALL, fault ? { fault: f } : { fault: undefined });
        try {
          return await context.with(callCtx, async () => {
            const res = await client.chat.completions.create(body, { headers: { 'x-eval-call': key } });
            if (!req.stream) {
              const m = res.choices[0]?.message ?? {};
              return { text: m.content ?? '', toolCalls: (m.tool_calls ?? []).map((t) => ({ id: t.id, name: t.function.name, arguments: t.function.arguments })) };
            }
            let text = '';
            for await (const chunk of res) text += chunk.choices[0]?.delta?.content ?? '';
            return { text, toolCalls: [] };
          });
        } catch (err) {
          // The agent carries on without this answer (its span records the failure).
          const { trace } = require('@opentelemetry/api');
          const agentSpan = trace.getActiveSpan();
          if (agentSpan) {
            agentSpan.recordException(err);
            agentSpan.setStatus({ code: 2, message: String(err.message).slice(0, 200) });
          }
          return { text: '', toolCalls: [], failed: true };
        }
      },
    };
    let traceId;
    await tel.conventions.workflow(task.workflow, `task ${task.id}`, async () => {
      const { trace } = require('@opentelemetry/api');
      const root = trace.getActiveSpan();
      traceId = root.spanContext().traceId;
      root.setAttribute('faultline.fault.condition', task.fault ? `server:${task.fault.name}` : 'clean');
      try {
        return await WORKFLOWS[task.workflow](ctx);
      } catch (err) {
        process.stderr.write(`task ${task.id} (${task.workflow}) threw: ${err.stack}\n`);
        throw err;
      }
    }).catch(() => undefined);
    labels.push({ task: task.id, traceId, workflow: task.workflow, fault: fired ? fired.name : task.fault ? `untriggered:${task.fault.name}` : 'clean', type: fired ? fired.type : 'none', flags: Object.keys(task.flags).filter((f) => task.flags[f]) });
  };

  const limit = Number(argv.concurrency);
  let next = 0;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async (_, w) => {
      await new Promise((res) => setTimeout(res, w * 40)); // staggered, so first calls do not all start together
      while (next < tasks.length) await runTask(tasks[next++]);
    }),
  );
  await tel.provider.forceFlush();
  const { JsonTraceSerializer, JsonLogsSerializer } = require('@opentelemetry/otlp-transformer');
  const byTrace = new Map();
  for (const s of tel.exporter.getFinishedSpans()) {
    const id = s.spanContext().traceId;
    if (!byTrace.has(id)) byTrace.set(id, []);
    byTrace.get(id).push(s);
  }
  mkdirSync(argv.out, { recursive: true });
  const order = labels.map((l) => l.traceId).filter((id) => byTrace.has(id));
  writeFileSync(join(argv.out, 'traces.jsonl'), order.map((id) => Buffer.from(JsonTraceSerializer.serializeRequest(byTrace.get(id))).toString('utf8')).join('\n') + '\n');
  if (tel.logExporter) {
    const logs = new Map();
    for (const l of tel.logExporter.getFinishedLogRecords()) {
      const id = l.spanContext?.traceId;
      if (!id) continue;
      if (!logs.has(id)) logs.set(id, []);
      logs.get(id).push(l);
    }
    writeFileSync(join(argv.out, 'logs.jsonl'), order.filter((id) => logs.has(id)).map((id) => Buffer.from(JsonLogsSerializer.serializeRequest(logs.get(id))).toString('utf8')).join('\n') + '\n');
  }
  writeFileSync(join(argv.out, 'labels.json'), JSON.stringify({ producer, seed, fast: FAST, tasks: labels.sort((a, b) => a.task.localeCompare(b.task)) }, null, 2) + '\n');
  process.stderr.write(`${producer}: ${labels.length} tasks (${labels.filter((l) => l.type !== 'none').length} faulty, ${labels.filter((l) => l.fault === 'clean').length} clean, ${labels.filter((l) => l.fault.startsWith('untriggered')).length} untriggered) in ${((Date.now() - t0) / 1000).toFixed(1)} s → ${argv.out}\n`);
  await server.close();
  await tel.provider.shutdown();
  if (tel.loggerProvider) await tel.loggerProvider.shutdown();
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});

module.exports = { FAULTS, tokensOf };
