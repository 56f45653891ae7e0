#!/usr/bin/env node
// Cost of the detectors per response, against the interceptor's own per-call cost, in one process.
//  - detectors: every registered detector over a typical ~4 KB recorded chat completion (corpus), the observation
//    built beforehand as the interceptor builds it; each timed call gets its own copy of the observation so the
//    per-request caches start cold, as they do for real calls. Goal: median ≤ 20 µs.
//  - interceptor: a bare pass of the GenAI span layer (createGenAiInterceptor) over the same request/response with a
//    downstream that answers synchronously (no network), minus the same dispatch without the layer. The layer reads a
//    call's bodies after the application had its answer, at a quiet moment: each pass runs that reading at once
//    (flushExchanges), so it is counted.
// Prints a Markdown section (bench/run.mjs collects it into BENCHMARKS.md). Needs `npm run build` (dist/).
/* global structuredClone */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '..', 'package.json'));
const dist = join(here, '..', 'dist');
const { runDetectors, defaultDetectors } = require(join(dist, 'detectors', 'index.js'));
const { llmObservationFromWire } = require(join(dist, 'detectors', 'wire.js'));
const { createOnlineDetection } = require(join(dist, 'detectors', 'online.js'));
const { createGenAiInterceptor, flushExchanges } = require(join(dist, 'instrumentation', 'interceptor.js'));
const { BasicTracerProvider, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');

const CORPUS = process.env.FAULTLINE_CORPUS_DIR ?? fileURLToPath(new URL('../../shared/corpus', import.meta.url));
const TARGET = 4096;

// The recorded non-streaming text answer whose body is closest to 4 KB.
const records = readFileSync(join(CORPUS, 'openai-chat.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l));
const rec = records
  .filter((r) => r.status === 200 && r.response?.choices?.[0]?.message?.content)
  .sort(
    (a, b) =>
      Math.abs(JSON.stringify(a.response).length - TARGET) - Math.abs(JSON.stringify(b.response).length - TARGET),
  )[0];
const responseBody = Buffer.from(JSON.stringify({ ...rec.response, created: Math.floor(Date.now() / 1000) }));
const requestBody = Buffer.from(JSON.stringify(rec.request));

/** Median per-call µs of `fn(i)` over `batches` batches of `size` calls (after a warm-up). */
function measure(fn, { size = 200, batches = 60, warm = 2000 } = {}) {
  for (let i = 0; i < warm; i++) fn(i);
  const per = [];
  let k = 0;
  for (let b = 0; b < batches; b++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < size; i++) fn(k++);
    per.push(Number(process.hrtime.bigint() - t0) / 1000 / size);
  }
  return median(per);
}

// ---------------------------------------------------------------- detectors
const base = llmObservationFromWire(
  'openai.chat',
  rec.request,
  { status: 200, chunks: [responseBody], durationMs: 800 },
  'bench',
  Date.now(),
);
const POOL = 512;
// Distinct calls have distinct response ids (a shared id is the replay the staleness detector looks for).
const copies = Array.from({ length: POOL }, (_, i) => {
  const c = structuredClone(base);
  c.response.id = `chatcmpl-bench-${i}`;
  return c;
});
const ctx = { earlier: [], now: Date.now() };
const sanity = runDetectors(base, ctx);
const detectUs = measure((i) => runDetectors(copies[i % POOL], ctx));
// With a realistic task history (8 earlier calls of the same task as context).
const earlier = Array.from({ length: 8 }, (_, i) => ({
  ...structuredClone(base),
  response: { ...base.response, id: `chatcmpl-${i}`, text: `${base.response.text} ${i}` },
}));
const withHistoryUs = measure((i) => runDetectors(copies[i % POOL], { earlier, now: ctx.now }));
// Each detector alone.
const perDetector = defaultDetectors.map((d) => ({
  name: d.name,
  us: measure((i) => runDetectors(copies[i % POOL], ctx, [d]), { batches: 20, size: 200, warm: 500 }),
}));

// ---------------------------------------------------------------- interceptor pass
const provider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor({ export: (_s, cb) => cb({ code: 0 }), shutdown: async () => {} })],
});
const tracer = provider.getTracer('faultline');
const controller = { aborted: false, paused: false, reason: null, abort() {}, pause() {}, resume() {} };
const headers = { 'content-type': 'application/json', 'content-length': String(responseBody.length) };
function downstream(_opts, handler) {
  handler.onRequestStart?.(controller, {});
  handler.onResponseStart?.(controller, 200, headers, 'OK');
  handler.onResponseData?.(controller, responseBody);
  handler.onResponseEnd?.(controller, {});
  return true;
}
const app = {
  onRequestStart() {},
  onResponseStart() {},
  onResponseData() {},
  onResponseEnd() {},
  onResponseError(_c, e) {
    throw e;
  },
};
const opts = () => ({
  origin: 'http://127.0.0.1:9',
  path: '/v1/chat/completions',
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: requestBody,
});
const layered = createGenAiInterceptor({ tracer: () => tracer, captureContent: () => false })(downstream);
const online = createOnlineDetection();
const layeredOnline = createGenAiInterceptor({
  tracer: () => tracer,
  captureContent: () => false,
  onExchangeEnd: online.onExchangeEnd,
})(downstream);

// Interleave configurations so machine noise hits all of them alike.
const rounds = { bare: [], layer: [], online: [] };
const pass = (dispatch) => () => {
  dispatch(opts(), app);
  flushExchanges();
};
for (let r = 0; r < 5; r++) {
  rounds.bare.push(measure(pass(downstream), { batches: 20 }));
  rounds.layer.push(measure(pass(layered), { batches: 20 }));
  rounds.online.push(measure(pass(layeredOnline), { batches: 20 }));
}
// onExchangeEnd alone, on exchanges of distinct traces (one task each, as for independent calls).
const { context } = require('@opentelemetry/api');
const exchanges = copies.map((c) => {
  const span = tracer.startSpan('chat');
  span.end();
  return [
    { llmRequest: c.request, span, context: context.active(), provider: 'openai' },
    { response: c.response, durationMs: 800 },
  ];
});
const onlineOnly = createOnlineDetection();
const onlineUs = measure((i) => onlineOnly.onExchangeEnd(...exchanges[i % POOL]));
const bare = median(rounds.bare);
const layer = median(rounds.layer) - bare;
const withOnline = median(rounds.online) - bare;

const f = (x) => x.toFixed(1);
const lines = [
  '## Detectors',
  '',
  `All ${defaultDetectors.length} detectors over a recorded chat completion of ${(responseBody.length / 1024).toFixed(1)} KB (corpus record \`${rec.id}\`, ${sanity.length} findings), Node ${process.version}. Medians of batch means; each call gets its own copy of the observation (cold per-request caches).`,
  '',
  '| measure | median µs per call | goal |',
  '|---|---:|---:|',
  `| all detectors, no task history | ${f(detectUs)} | ≤ 20 |`,
  `| all detectors, 8 earlier calls as context | ${f(withHistoryUs)} | |`,
  `| GenAI span layer alone (bare interceptor pass, no network, span + request parse + response reader) | ${f(layer)} | |`,
  `| online detection alone (onExchangeEnd: observation, detectors, task history, latency baseline) | ${f(onlineUs)} | |`,
  `| span layer + online detection, measured together | ${f(withOnline)} | |`,
  '',
  `Detectors cost **${(detectUs / layer).toFixed(3)}×** (${f((detectUs / layer) * 100)} %) of the interceptor's own per-call cost; online detection alone ${f((onlineUs / layer) * 100)} %. The layer-with-online row is the noisiest (two interleaved configurations on a shared machine); trust the isolated rows.`,
  '',
  '| detector | µs per call (alone) |',
  '|---|---:|',
  ...perDetector.map((d) => `| ${d.name} | ${f(d.us)} |`),
];
process.stdout.write(lines.join('\n') + '\n');
