#!/usr/bin/env node
'use strict';
/**
 * One set of the independent evaluation: labelled traces that faultline's producer, injector, catalog and examples
 * did not make, for one producer, content capture on or off, and one wording of the fault model.
 *
 *   node test/independent/generate.cjs --producer contrib|traceloop-0.22|traceloop|openinference --out DIR
 *        [--content on|off] [--variant base|reworded] [--tasks N] [--seed S] [--scale X] [--suite set|cases]
 *
 * One producer per process (each instrumentation patches the openai module). The workflows (workflows.cjs) call the
 * real openai client against a loopback model server (model-server.cjs) that makes the faults (faults.cjs). Writes
 * DIR/traces.jsonl (and DIR/logs.jsonl for `contrib`) as the batch processors export them, one export per line, and
 * DIR/labels.json: per task its trace id, fault, label type, the faulty call's step (1-based, LLM calls in start
 * order, the failed call counted even where the producer exports no span for it) and whether the fault is observable
 * from this trace (see `observable`). The faulted call's span also carries `faultline.fault.*` ground truth (written
 * by a span processor from the call's context), which `faultline diagnose` strips before diagnosis.
 * `--suite cases`: one task per fault and per near-miss, for the fast test. Deterministic for a seed.
 */
const { mkdirSync, rmSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { parseArgs } = require('node:util');
const { context, createContextKey, trace } = require('@opentelemetry/api');
const { PRODUCERS, setup } = require('./producers.cjs');
const { startModelServer } = require('./model-server.cjs');
const { FAULTS, WORDINGS, NEAR_MISSES } = require('./faults.cjs');
const { WORKFLOWS } = require('./workflows.cjs');

const { values: argv } = parseArgs({
  options: {
    producer: { type: 'string' },
    out: { type: 'string' },
    content: { type: 'string', default: 'on' },
    variant: { type: 'string', default: 'base' },
    tasks: { type: 'string', default: '90' },
    seed: { type: 'string', default: '2027' },
    scale: { type: 'string', default: '0.25' },
    concurrency: { type: 'string', default: '6' },
    suite: { type: 'string', default: 'set' },
  },
});
const bad = (what) => {
  process.stderr.write(
    `generate.cjs: ${what}\nusage: generate.cjs --producer ${PRODUCERS.join('|')} --out DIR [--content on|off] [--variant base|reworded] [--tasks N] [--seed S] [--scale X] [--suite set|cases]\n`,
  );
  process.exit(2);
};
if (!PRODUCERS.includes(argv.producer))
  bad(`--producer must be one of ${PRODUCERS.join(', ')}; got ${JSON.stringify(argv.producer)}`);
if (!argv.out) bad('--out DIR is required');
if (!['on', 'off'].includes(argv.content)) bad(`--content must be on or off; got ${JSON.stringify(argv.content)}`);
if (!(argv.variant in WORDINGS))
  bad(`--variant must be one of ${Object.keys(WORDINGS).join(', ')}; got ${JSON.stringify(argv.variant)}`);
const producer = argv.producer;
const content = argv.content === 'on';
const w = WORDINGS[argv.variant];
const scale = Number(argv.scale);
const seed = Number(argv.seed);

function mulberry32(s) {
  let a = s >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
/** A stable 24-hex id of a string (FNV-1a, then mixed). */
function idOf(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  let out = '';
  for (let i = 0; i < 3; i++) {
    h = Math.imul(h ^ (h >>> 13), 0x5bd1e995) >>> 0;
    out += h.toString(16).padStart(8, '0');
  }
  return out;
}

/** The workflows a fault can fire in (the others lack the call it needs). */
const WHERE = {
  args_wrong_type: ['orders'],
  handoff_missing_field: ['helpdesk'],
  double_delivery: ['helpdesk', 'changelog', 'critic'],
  reset_mid_stream: ['helpdesk', 'changelog', 'critic'],
  mojibake: ['helpdesk', 'changelog', 'orders'],
};
const names = Object.keys(WORKFLOWS);

/**
 * Whether the trace can show the fault. With content on, always. With content off, a fault only in message content
 * (faults.cjs `content: true`) is observable only through a consequence the app's own spans record (a tool that
 * rejected the faulted arguments) or, for an empty answer, a recorded output token count of zero; every other fault
 * leaves a status, an exception, a finish reason or a duration on the producer's spans — but for a finish reason
 * where the producer records it only with content.
 */
function observable(fault, seen) {
  if (content) return true;
  // OpenLLMetry 0.22 writes the finish reason only among the completion's content attributes.
  if (fault.finish && producer === 'traceloop-0.22') return seen.zeroTokens === true;
  if (!fault.content) return true;
  if (seen.toolRejected) return true;
  return fault.name === 'empty_answer' && seen.zeroTokens === true;
}

/** The same plan in both wordings, but the reworded variant's workflows draw other arguments (customers, items,
 * amounts, repositories) from another per-task seed. */
const taskSeed = (s) => (argv.variant === 'base' ? s : (s ^ 0x2f6b3d) >>> 0);

function caseTasks() {
  const tasks = [];
  const add = (workflow, fault, nearMiss) =>
    tasks.push({
      id: `case-${String(tasks.length + 1).padStart(3, '0')}`,
      workflow,
      fault,
      nearMiss,
      skip: 0,
      seed: taskSeed(4000 + tasks.length),
    });
  for (const f of FAULTS) add((WHERE[f.name] ?? [f.name.startsWith('args_') ? 'orders' : 'critic'])[0], f);
  add(
    'orders',
    FAULTS.find((f) => f.name === 'args_missing_required'),
  ); // an agent that gives up after a validation error
  for (const n of new Set(NEAR_MISSES))
    add(
      n === 'prefix_argument'
        ? 'changelog'
        : n === 'repeated_poll' || n === 'tool_retried'
          ? 'orders'
          : n === 'own_max_tokens'
            ? 'helpdesk'
            : 'critic',
      undefined,
      n,
    );
  return tasks;
}

function planTasks(n) {
  if (argv.suite === 'cases') return caseTasks();
  const r = mulberry32(seed);
  const tasks = [];
  // Faults dealt from a deck reshuffled each pass, so that every fault of the model gets its share of the set.
  let deck = [];
  const deal = () => {
    if (deck.length === 0) deck = [...FAULTS].sort(() => r() - 0.5);
    return deck.pop();
  };
  for (let i = 0; i < n; i++) {
    const clean = r() < 0.3;
    const fault = clean ? undefined : deal();
    const nearMiss = NEAR_MISSES[Math.floor(r() * NEAR_MISSES.length)];
    const allowed = fault
      ? (WHERE[fault.name] ?? names)
      : nearMiss === 'prefix_argument'
        ? ['changelog']
        : nearMiss === 'repeated_poll' || nearMiss === 'tool_retried'
          ? ['orders']
          : nearMiss === 'own_max_tokens'
            ? ['helpdesk', 'critic']
            : names;
    tasks.push({
      id: `task-${String(i + 1).padStart(4, '0')}`,
      workflow: allowed[Math.floor(r() * allowed.length)],
      fault,
      nearMiss: clean ? nearMiss : undefined,
      skip: r() < 0.4 && !(fault && WHERE[fault.name]) ? 1 : 0,
      seed: taskSeed(Math.floor(r() * 2 ** 31)),
    });
  }
  return tasks;
}

const CALL = createContextKey('indep-call');

/** Writes the ground truth on the LLM span started inside a faulted call's context (the instrumentation's span). */
const labeller = {
  onStart(span, parentContext) {
    const call = parentContext.getValue(CALL);
    if (!call?.fault || span.instrumentationScope?.name?.startsWith('indep-')) return;
    span.setAttribute('faultline.fault.type', call.fault.type);
    span.setAttribute('faultline.fault.name', `indep:${call.fault.name}`);
    span.addEvent('faultline.fault.injected', {
      'faultline.fault.type': call.fault.type,
      'faultline.fault.name': `indep:${call.fault.name}`,
    });
  },
  onEnd() {},
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

// OpenInference reads a stream through a copy of its own; a reset connection then also rejects that copy, unhandled,
// (ECONNRESET, or undici's "other side closed" when the FIN is read first) and would end the process. The app's own read of the stream sees the same error and handles it (ctx.llm).
let copiesReset = 0;
process.on('uncaughtException', (err) => {
  if (err?.message === 'terminated' && ['ECONNRESET', 'UND_ERR_SOCKET'].includes(err.cause?.code)) copiesReset++;
  else throw err;
});

async function main() {
  mkdirSync(argv.out, { recursive: true });
  const tracesFile = join(argv.out, 'traces.jsonl');
  const logsFile = join(argv.out, 'logs.jsonl');
  rmSync(tracesFile, { force: true });
  rmSync(logsFile, { force: true });
  const openaiModule = () => require('openai').OpenAI;
  const tel = setup(producer, {
    rng: mulberry32(
      seed * 31 + PRODUCERS.indexOf(producer) * 7 + (content ? 1 : 0) + (argv.variant === 'base' ? 0 : 3),
    ),
    label: labeller,
    serviceName: `indep-${producer}`,
    content,
    tracesFile,
    logsFile,
    openai: openaiModule,
  });
  const OpenAI = openaiModule();
  const jitterRng = mulberry32(seed + 17);
  // Log-normal jitter (sigma 0.35): the spread of a provider's normal latency.
  const jitter = () => Math.exp(0.35 * Math.sqrt(-2 * Math.log(1 - jitterRng())) * Math.cos(2 * Math.PI * jitterRng()));
  const server = await startModelServer({ scale, jitter, idOf, variant: argv.variant });
  const medianMs = 600 * scale;
  // As applications configure it: the SDK's default two retries, a timeout well above the slowest stall (and, on a
  // fast clock, above what a loaded machine adds to a normal call).
  const client = new OpenAI({
    apiKey: 'sk-indep-placeholder',
    baseURL: server.url,
    maxRetries: 2,
    timeout: Math.max(2500, Math.round(w.stall[1] * medianMs * 1.4 + 2000 * scale)),
  });
  {
    const { suppressTracing } = require('@opentelemetry/core');
    await context.with(suppressTracing(context.active()), async () => {
      for (let i = 0; i < 3; i++) {
        server.script(`warmup:${i}`, { text: 'ok' });
        await client.chat.completions.create(
          { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }] },
          { headers: { 'x-indep-call': `warmup:${i}` } },
        );
      }
    });
  }
  const tasks = planTasks(Number(argv.tasks));
  const labels = [];

  const runTask = async (task) => {
    const r = mulberry32(task.seed);
    let k = 0;
    let eligibleSeen = 0;
    let fired;
    let callSeq = 0;
    const seen = {};
    const faultedToolCalls = new Set();
    const answers = [];
    const ctx = {
      rng: r,
      nearMiss: task.nearMiss,
      pick: (xs) => xs[Math.floor(r() * xs.length)],
      int: (a, b) => a + Math.floor(r() * (b - a + 1)),
      sleep: (ms) => new Promise((res) => setTimeout(res, ms)),
      callId: () => `call_${idOf(`${task.id}/${++callSeq}`).slice(0, 22)}`,
      agent: (name, fn) => tel.conventions.agent(name, fn),
      async tool(name, callId, argsText, impl, opts = {}) {
        const attempt = (n) =>
          tel.conventions.tool(name, callId, argsText, async () => {
            await ctx.sleep(Math.round((20 + r() * 60) * scale));
            if (opts.flaky && n === 1) throw new Error(`${name}: warehouse backend unavailable, try again`);
            return impl(JSON.parse(argsText));
          });
        try {
          return await attempt(1);
        } catch (err) {
          if (opts.flaky && /try again/.test(err.message)) return attempt(2); // the agent runs the tool again
          if (faultedToolCalls.has(callId)) seen.toolRejected = true;
          throw err;
        }
      },
      async llm(req, reply) {
        k++;
        const key = `${task.id}:${k}`;
        const body = {
          model: 'gpt-4o-mini',
          messages: [...(req.system ? [{ role: 'system', content: req.system }] : []), ...req.messages],
        };
        if (req.tools) body.tools = req.tools;
        if (req.responseFormat) body.response_format = req.responseFormat;
        if (req.maxTokens) body.max_tokens = req.maxTokens;
        if (req.stream) {
          body.stream = true;
          body.stream_options = { include_usage: true };
        }
        let fault;
        const f = task.fault;
        if (f && !fired && f.on({ reply, body, k })) {
          eligibleSeen++;
          if (eligibleSeen > task.skip) {
            fault = f.make(w, r, { reply, body, k }, { scale, medianMs, answers, reply });
            if (fault) {
              fired = { fault: f, step: k };
              if (reply.toolCalls && (fault.kind === 'args' || fault.kind === 'recode'))
                faultedToolCalls.add(reply.toolCalls[0].id);
              if (fault.kind === 'filtered' || (fault.kind === 'text' && fault.text === '')) seen.zeroTokens = true; // usage reports 0 output tokens
            }
          }
        }
        const transient = !fault && task.nearMiss === 'retry_recovered' && k === 2;
        server.script(key, reply, fault, transient);
        if (reply.text && !fault) answers.push({ text: reply.text, key: `${key}#id` });
        const callCtx = context.active().setValue(CALL, { fault: fault ? f : undefined });
        return context.with(callCtx, async () => {
          const res = await client.chat.completions.create(body, { headers: { 'x-indep-call': key } });
          if (!req.stream) {
            const m = res.choices[0]?.message ?? {};
            return {
              text: m.content ?? '',
              toolCalls: (m.tool_calls ?? []).map((t) => ({
                id: t.id,
                name: t.function.name,
                arguments: t.function.arguments,
              })),
            };
          }
          let text = '';
          try {
            for await (const chunk of res) text += chunk.choices[0]?.delta?.content ?? '';
          } catch (err) {
            // The connection dropped mid-answer: the app keeps what arrived, as chat UIs do, and notes it.
            trace.getActiveSpan()?.addEvent('stream interrupted', { 'exception.message': String(err.message) });
          }
          return { text, toolCalls: [] };
        });
      },
    };
    let traceId;
    await tel.conventions
      .workflow(task.workflow, `task ${task.id}`, async () => {
        const root = trace.getActiveSpan();
        traceId = root.spanContext().traceId;
        root.setAttribute('faultline.fault.condition', task.fault ? `indep:${task.fault.name}` : 'clean');
        return WORKFLOWS[task.workflow](ctx);
      })
      .catch(() => undefined);
    labels.push({
      task: task.id,
      traceId,
      workflow: task.workflow,
      fault: fired ? fired.fault.name : task.fault ? `untriggered:${task.fault.name}` : 'clean',
      nearMiss: task.nearMiss ?? null,
      type: fired ? fired.fault.type : 'none',
      step: fired ? fired.step : null,
      observable: fired ? observable(fired.fault, seen) : true,
    });
  };

  const limit = Number(argv.concurrency);
  let next = 0;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async (_, i) => {
      await new Promise((res) => setTimeout(res, i * 30));
      while (next < tasks.length) await runTask(tasks[next++]);
    }),
  );
  await tel.provider.forceFlush();
  if (tel.loggerProvider) await tel.loggerProvider.forceFlush();
  writeFileSync(
    join(argv.out, 'labels.json'),
    JSON.stringify(
      {
        producer,
        content: argv.content,
        variant: argv.variant,
        seed,
        scale,
        tasks: labels.sort((a, b) => a.task.localeCompare(b.task)),
      },
      null,
      2,
    ) + '\n',
  );
  const faulty = labels.filter((l) => l.type !== 'none').length;
  process.stderr.write(
    `${producer} content ${argv.content} ${argv.variant}: ${labels.length} tasks (${faulty} faulty, ${labels.filter((l) => l.fault === 'clean').length} clean${copiesReset ? `, ${copiesReset} instrumentation stream copies reset` : ''}) in ${((Date.now() - t0) / 1000).toFixed(1)} s → ${argv.out}\n`,
  );
  await server.close();
  await tel.provider.shutdown();
  if (tel.loggerProvider) await tel.loggerProvider.shutdown();
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
