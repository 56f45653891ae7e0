#!/usr/bin/env node
// Diagnosis throughput (spans per second) and peak memory over a generated trace file (default 1 GB of OTLP/JSON
// lines, the collector file-exporter shape). FAULTLINE_BENCH_DIAG_MB sets the size; the file is cached in the OS
// temp dir between runs. Prints a Markdown section (bench/run.mjs collects it into BENCHMARKS.md).
import { createWriteStream, existsSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const dist = join(here, '..', 'dist', 'src');
const { readTraces } = require(join(dist, 'traces', 'read.js'));
const { createDiagnoser, diagnoseTrace } = require(join(dist, 'diagnosers', 'index.js'));

const targetMb = Number(process.env.FAULTLINE_BENCH_DIAG_MB ?? 1024);
const file = join(tmpdir(), `faultline-bench-diagnosis-v2-${targetMb}mb.otlp.jsonl`);

/** Our own generator: multi-agent traces with GenAI + faultline attributes, 1 in 5 with a fault. */
async function generate(path, bytes) {
  const out = createWriteStream(path);
  let written = 0;
  let t = 0;
  const hex = (n, w) => n.toString(16).padStart(w, '0').slice(-w);
  const kv = (key, v) => ({ key, value: typeof v === 'string' ? { stringValue: v } : Number.isInteger(v) ? { intValue: String(v) } : typeof v === 'boolean' ? { boolValue: v } : Array.isArray(v) ? { arrayValue: { values: v.map((x) => ({ stringValue: x })) } } : { doubleValue: v } });
  const text = 'The function parses the input, validates each field against the schema and returns the normalised record. '.repeat(3);
  while (written < bytes) {
    const spans = [];
    const traceId = hex(t, 32);
    let sid = 1;
    const start = 1_790_000_000_000_000_000n + BigInt(t) * 10_000_000_000n;
    const span = (name, parent, offMs, durMs, attrs, extra = {}) => {
      const spanId = hex(t * 64 + sid++, 16);
      spans.push({ traceId, spanId, ...(parent ? { parentSpanId: parent } : {}), name, kind: 3, startTimeUnixNano: String(start + BigInt(offMs) * 1_000_000n), endTimeUnixNano: String(start + BigInt(offMs + durMs) * 1_000_000n), attributes: Object.entries(attrs).map(([k, v]) => kv(k, v)), status: {}, ...extra });
      return spanId;
    };
    const root = span('invoke_workflow', undefined, 0, 9000, { 'gen_ai.operation.name': 'invoke_workflow', 'faultline.task.id': `task-${t}` });
    const faulty = t % 5 === 0 ? 1 + (t % 7) : -1;
    let call = 0;
    for (let a = 0; a < 4; a++) {
      const agent = span(`invoke_agent agent${a}`, root, a * 2000, 1900, { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': `agent${a}` });
      for (let c = 0; c < 2; c++) {
        call++;
        const truncated = call === faulty;
        const answer = `Answer ${call} for task ${t}: ${text}`;
        span('chat gpt-4o-mini', agent, a * 2000 + c * 900 + 10, 850, {
          'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o-mini', 'gen_ai.response.model': 'gpt-4o-mini',
          'gen_ai.response.finish_reasons': [truncated ? 'length' : 'stop'], 'gen_ai.usage.input_tokens': 812, 'gen_ai.usage.output_tokens': 96,
          'faultline.response.output_chars': truncated ? 40 : answer.length, 'faultline.response.tool_call_count': 0, 'faultline.response.content_hash': hex(t * 8 + call, 16),
          'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: `Step ${call}: ${text}` }] }]),
          'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: truncated ? answer.slice(0, 40) : answer }], finish_reason: truncated ? 'length' : 'stop' }]),
        });
      }
      if (a < 3) span(`handoff agent${a} -> agent${a + 1}`, root, a * 2000 + 1950, 3, { 'faultline.message.id': `m${t}-${a}`, 'faultline.message.source': `agent${a}`, 'faultline.message.target': `agent${a + 1}`, 'faultline.message.delivered_count': 1, 'faultline.message.payload_hash': 'p', 'faultline.message.delivered_hashes': ['p'] });
    }
    const line = JSON.stringify({ resourceSpans: [{ resource: { attributes: [kv('service.name', 'bench')] }, scopeSpans: [{ scope: { name: 'faultline', version: '0.1.0' }, spans }] }] }) + '\n';
    written += Buffer.byteLength(line);
    t++;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return t;
}

async function main() {
  const bytes = targetMb * 1024 * 1024;
  if (!existsSync(file) || statSync(file).size < bytes) {
    const genPath = join(here, 'trace-gen.mjs');
    process.stderr.write(`generating ${targetMb} MB trace file at ${file} …\n`);
    // Prefer the shared generator when it exists and exports one we understand.
    let done = false;
    if (existsSync(genPath)) {
      const gen = await import(pathToFileURL(genPath).href);
      if (typeof gen.generateTraceFile === 'function') {
        await gen.generateTraceFile(file, { bytes });
        done = true;
      }
    }
    if (!done) await generate(file, bytes);
  }
  const size = statSync(file).size;
  globalThis.gc?.();
  const rule = createDiagnoser('rule');
  let traces = 0;
  let spans = 0;
  let faulty = 0;
  let peakHeap = 0;
  const t0 = performance.now();
  for await (const trace of readTraces([file])) {
    const d = await diagnoseTrace(rule, trace);
    traces++;
    spans += trace.spans.length;
    if (d.faultType !== 'none') faulty++;
    if ((traces & 1023) === 0) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  }
  const secs = (performance.now() - t0) / 1000;
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  const rssMb = process.resourceUsage().maxRSS / 1024;
  const mb = (n) => (n / 1024 / 1024).toFixed(0);
  process.stdout.write(
    [
      '## Diagnosis throughput (`bench/diagnosis.bench.mjs`)',
      '',
      `Rule-based diagnosis (read + normalise + strip + offline detectors + rules) over a generated ${mb(size)} MB OTLP/JSON-lines file:`,
      `${traces} traces, ${spans} spans (${faulty} traces diagnosed faulty).`,
      '',
      '| measure | value |',
      '|---|---|',
      `| wall time | ${secs.toFixed(1)} s |`,
      `| spans / s | ${Math.round(spans / secs)} |`,
      `| traces / s | ${Math.round(traces / secs)} |`,
      `| MB / s | ${(size / 1024 / 1024 / secs).toFixed(1)} |`,
      `| peak RSS | ${rssMb.toFixed(0)} MB |`,
      `| peak heap used (sampled) | ${mb(peakHeap)} MB |`,
      '',
    ].join('\n') + '\n',
  );
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exitCode = 1;
});
