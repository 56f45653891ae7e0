// Generates a big OTLP JSON-lines trace file of realistic multi-agent GenAI traces, streamed to disk (memory stays
// flat whatever the size). Reused by the diagnosis benchmark: import { generateTraceFile } from './trace-gen.mjs'.
//
// Each trace is an agent run: invoke_agent root (SERVER) → 3 chat calls (CLIENT, gen_ai.* request/response/usage
// attributes, output messages taken from the recorded OpenAI corpus when it is present) → an execute_tool span and
// an A2A message span. About 1 trace in 8 carries a planted fault (faultline.fault.* ground truth on one step, the
// wire symptom on the span: finish_reasons=length, an error status, or a 5 s delay). Like a batch exporter's output,
// a trace's spans are split over two lines, each shared with the neighbouring trace, so readers must regroup them.
import { createWriteStream, readFileSync, existsSync } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const CORPUS = process.env.FAULTLINE_CORPUS_DIR
  ? process.env.FAULTLINE_CORPUS_DIR + '/openai-chat.jsonl'
  : fileURLToPath(new URL('../../shared/corpus/openai-chat.jsonl', import.meta.url));

/** Assistant texts from the recorded corpus (fallback: synthetic sentences). */
function loadTexts() {
  const texts = [];
  if (existsSync(CORPUS)) {
    for (const line of readFileSync(CORPUS, 'utf8').split('\n')) {
      if (!line) continue;
      try {
        const rec = JSON.parse(line);
        const c = rec.response?.choices?.[0]?.message?.content;
        if (typeof c === 'string' && c.length > 20) texts.push(c.slice(0, 1500));
      } catch {
        /* skip */
      }
    }
  }
  if (texts.length === 0)
    for (let i = 0; i < 50; i++)
      texts.push(`Step ${i}: the planner asks the coder to ${'refactor the module '.repeat(1 + (i % 7))}`);
  return texts;
}

/** A small deterministic PRNG (mulberry32), so two runs generate the same file. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const hex = (rand, n) => {
  let s = '';
  while (s.length < n)
    s += Math.floor(rand() * 0x100000000)
      .toString(16)
      .padStart(8, '0');
  return s.slice(0, n);
};
const str = (key, v) => ({ key, value: { stringValue: v } });
const int = (key, v) => ({ key, value: { intValue: String(v) } });
const dbl = (key, v) => ({ key, value: { doubleValue: v } });
const arr = (key, vs) => ({ key, value: { arrayValue: { values: vs.map((v) => ({ stringValue: v })) } } });
const ns = (ms) => `${Math.round(ms * 1000)}000`;

function makeTrace(rand, texts, startMs) {
  const traceId = hex(rand, 32);
  const rootId = hex(rand, 16);
  const faulty = rand() < 0.125;
  const faultStep = 1 + Math.floor(rand() * 3);
  const faultKind = ['truncate', 'error', 'delay'][Math.floor(rand() * 3)];
  const spans = [];
  let t = startMs + 1;
  for (let step = 1; step <= 3; step++) {
    const text = texts[Math.floor(rand() * texts.length)];
    const inTok = 200 + Math.floor(rand() * 3000);
    const outTok = Math.max(1, Math.round(text.length / 4));
    const hit = faulty && step === faultStep;
    const dur = 300 + rand() * 2500 + (hit && faultKind === 'delay' ? 5000 : 0);
    const attrs = [
      str('gen_ai.operation.name', 'chat'),
      str('gen_ai.provider.name', 'openai'),
      str('gen_ai.request.model', 'gpt-4o-mini'),
      str('gen_ai.response.model', 'gpt-4o-mini-2024-07-18'),
      str('gen_ai.response.id', `chatcmpl-${hex(rand, 24)}`),
      dbl('gen_ai.request.temperature', 0.2),
      int('gen_ai.usage.input_tokens', inTok),
      int('gen_ai.usage.output_tokens', hit && faultKind === 'truncate' ? Math.round(outTok / 3) : outTok),
      arr('gen_ai.response.finish_reasons', [hit && faultKind === 'truncate' ? 'length' : 'stop']),
      str('gen_ai.agent.name', ['planner', 'coder', 'reviewer'][step - 1]),
      str('server.address', '127.0.0.1'),
      str(
        'gen_ai.output.messages',
        JSON.stringify([
          {
            role: 'assistant',
            parts: [
              {
                type: 'text',
                content: hit && faultKind === 'truncate' ? text.slice(0, Math.ceil(text.length / 3)) : text,
              },
            ],
            finish_reason: 'stop',
          },
        ]),
      ),
    ];
    if (hit) {
      attrs.push(
        str('faultline.fault.type', faultKind),
        str('faultline.fault.name', `llm_${faultKind}_single`),
        str('faultline.fault.strategy', 'single'),
      );
    }
    spans.push({
      traceId,
      spanId: hex(rand, 16),
      parentSpanId: rootId,
      name: 'chat gpt-4o-mini',
      kind: 3,
      startTimeUnixNano: ns(t),
      endTimeUnixNano: ns(t + dur),
      attributes: attrs,
      events: hit
        ? [
            {
              timeUnixNano: ns(t + 1),
              name: 'faultline.fault.injected',
              attributes: [str('faultline.fault.type', faultKind)],
            },
          ]
        : [],
      status: hit && faultKind === 'error' ? { code: 2, message: '503 Service Unavailable' } : { code: 0 },
      links: [],
      flags: 257,
    });
    t += dur + 5;
  }
  spans.push({
    traceId,
    spanId: hex(rand, 16),
    parentSpanId: rootId,
    name: 'execute_tool run_tests',
    kind: 1,
    startTimeUnixNano: ns(t),
    endTimeUnixNano: ns(t + 120),
    attributes: [
      str('gen_ai.operation.name', 'execute_tool'),
      str('gen_ai.tool.name', 'run_tests'),
      str('gen_ai.tool.call.id', `call_${hex(rand, 20)}`),
    ],
    status: { code: 0 },
  });
  t += 125;
  spans.push({
    traceId,
    spanId: hex(rand, 16),
    parentSpanId: rootId,
    name: 'SendMessage reviewer',
    kind: 3,
    startTimeUnixNano: ns(t),
    endTimeUnixNano: ns(t + 40),
    attributes: [
      str('a2a.method.name', 'message/send'),
      str('faultline.message.id', hex(rand, 16)),
      str('server.address', '127.0.0.1'),
    ],
    status: { code: 0 },
  });
  t += 45;
  spans.unshift({
    traceId,
    spanId: rootId,
    name: 'invoke_agent planner',
    kind: 2,
    startTimeUnixNano: ns(startMs),
    endTimeUnixNano: ns(t),
    attributes: [str('gen_ai.operation.name', 'invoke_agent'), str('gen_ai.agent.name', 'planner')],
    status: faulty && faultKind === 'error' ? { code: 2, message: 'agent failed' } : { code: 0 },
  });
  return spans;
}

const line = (spans) =>
  JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [str('service.name', 'bench-agents'), str('telemetry.sdk.language', 'nodejs')] },
        scopeSpans: [{ scope: { name: 'faultline', version: '0.1.0' }, spans }],
      },
    ],
  }) + '\n';

/**
 * Write about `targetBytes` (alias `bytes`) of OTLP JSON lines to `path`.
 * @param {string} path
 * @param {{ targetBytes?: number, bytes?: number, seed?: number }} [options]
 * @returns {Promise<{ bytes: number, spans: number, traces: number, faultyTraces: number }>}
 */
export async function generateTraceFile(path, { targetBytes, bytes: bytesOption, seed = 42 } = {}) {
  targetBytes ??= bytesOption ?? 1024 * 1024 * 1024;
  const rand = rng(seed);
  const texts = loadTexts();
  const out = createWriteStream(path);
  let bytes = 0;
  let spans = 0;
  let traces = 0;
  let faultyTraces = 0;
  let carry = [];
  let buffer = '';
  let startMs = Date.UTC(2026, 10, 1);
  while (bytes + buffer.length < targetBytes) {
    const tr = makeTrace(rand, texts, startMs);
    startMs += 10_000;
    traces++;
    spans += tr.length;
    if (tr.some((s) => s.attributes?.some((a) => a.key === 'faultline.fault.type'))) faultyTraces++;
    const half = Math.ceil(tr.length / 2);
    buffer += line([...carry, ...tr.slice(0, half)]);
    carry = tr.slice(half);
    if (buffer.length > 1 << 20) {
      bytes += Buffer.byteLength(buffer);
      if (!out.write(buffer)) await once(out, 'drain');
      buffer = '';
    }
  }
  buffer += line(carry);
  bytes += Buffer.byteLength(buffer);
  out.write(buffer);
  out.end();
  await once(out, 'finish');
  return { bytes, spans, traces, faultyTraces };
}
