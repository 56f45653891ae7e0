/**
 * One GenAI span per call with @anthropic-ai/sdk ≥ 0.134, which emits its own call span whenever a tracer provider
 * exists. Under `faultline/register` (faultline's provider) the SDK's spans are off by default: one chat span per
 * call, usage once, and `faultline diagnose` finds a clean trace clean (it used to add a false "weak truncate" at
 * the SDK's span, which has no finish reason). An app that sets ANTHROPIC_OPEN_TELEMETRY, or registers its own
 * provider, keeps the SDK's spans as it has them without faultline. Real SDK, child processes, JSON and streamed.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runNode } from '../support/child';
import { ANTHROPIC_TEXT, ANTHROPIC_TEXT_SSE } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { otlpJsonSpans } from '../support/otlp-receiver';

const ROOT = resolve(__dirname, '../..');
vi.setConfig({ testTimeout: 120_000 });

const JSON_REC = ANTHROPIC_TEXT;
const SSE_REC = ANTHROPIC_TEXT_SSE;

// The app: one JSON and one streamed call through the real SDK; prints what it received.
const APP = `
const Anthropic = require(${JSON.stringify(join(ROOT, 'node_modules/@anthropic-ai/sdk'))}).default;
(async () => {
  if (process.env.OWN_PROVIDER) {
    // The application's own tracing, registered before faultline starts.
    const { NodeTracerProvider } = require(${JSON.stringify(join(ROOT, 'node_modules/@opentelemetry/sdk-trace-node'))});
    const { InMemorySpanExporter, SimpleSpanProcessor } = require(${JSON.stringify(join(ROOT, 'node_modules/@opentelemetry/sdk-trace-base'))});
    const exporter = new InMemorySpanExporter();
    new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).register();
    await require(${JSON.stringify(join(ROOT, 'dist/src/start.js'))}).start();
    globalThis.exporter = exporter;
  }
  const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: process.env.LLM_URL, maxRetries: 0 });
  const a = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: 'hi' }] });
  let text = '';
  for await (const e of await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'hi' }] })) {
    if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
  }
  const out = { a: a.content, text };
  if (globalThis.exporter) {
    await new Promise((r) => setTimeout(r, 50));
    out.scopes = globalThis.exporter.getFinishedSpans().map((s) => s.instrumentationScope.name + ' ' + s.name);
  }
  process.stdout.write(JSON.stringify(out));
})();
`;

let server: LlmServer;
let dir: string;

beforeAll(async () => {
  server = await startLlmServer((req) =>
    JSON.parse(req.body.toString()).stream ? corpusReply(SSE_REC) : corpusReply(JSON_REC),
  );
  dir = mkdtempSync(join(tmpdir(), 'faultline-anthropic-'));
  writeFileSync(join(dir, 'app.cjs'), APP);
});

afterAll(async () => {
  await server.close();
});

async function run(env: Record<string, string>, register = true) {
  const file = join(dir, `traces-${Math.random().toString(36).slice(2)}.jsonl`);
  const args = register
    ? ['--require', join(ROOT, 'dist/src/register.js'), join(dir, 'app.cjs')]
    : [join(dir, 'app.cjs')];
  const res = await runNode(args, { cwd: dir, env: { LLM_URL: server.url, FAULTLINE_TRACES_FILE: file, ...env } });
  expect(res.code, res.stderr).toBe(0);
  const spans = register
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .flatMap((l) => otlpJsonSpans(JSON.parse(l)))
    : [];
  return { out: JSON.parse(res.stdout) as { a: unknown; text: string; scopes?: string[] }, spans, file };
}

const chatSpans = (spans: ReturnType<typeof otlpJsonSpans>) =>
  spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');

describe('@anthropic-ai/sdk under faultline/register', () => {
  it('by default: one chat span per call, usage once, the same output, and a clean diagnosis', async () => {
    const plain = await run({}, false);
    const { out, spans, file } = await run({});
    expect(out).toEqual(plain.out);
    const chats = chatSpans(spans);
    expect(chats.map((s) => s.scope)).toEqual(['faultline', 'faultline']);
    expect(spans.some((s) => s.scope.startsWith('com.anthropic.sdk'))).toBe(false);
    const usage = (JSON_REC.response as { usage: { output_tokens: number } }).usage.output_tokens;
    expect(spans.filter((s) => s.attributes['gen_ai.usage.output_tokens'] === usage)).toHaveLength(1);
    const diagnosis = await runNode([join(ROOT, 'bin/faultline.js'), 'diagnose', file, '--format', 'json'], {
      cwd: dir,
    });
    expect(diagnosis.code, diagnosis.stderr).toBe(0);
    expect(diagnosis.stdout).not.toMatch(/weak|truncate/);
  });

  it('ANTHROPIC_OPEN_TELEMETRY=true (the app’s choice) keeps the SDK’s call span, with ours under it', async () => {
    const { spans } = await run({ ANTHROPIC_OPEN_TELEMETRY: 'true' });
    const sdk = spans.filter((s) => s.scope.startsWith('com.anthropic.sdk'));
    expect(sdk.map((s) => s.name)).toEqual(['anthropic.messages.create', 'anthropic.messages.create']);
    for (const ours of spans.filter((s) => s.scope === 'faultline'))
      expect(sdk.map((s) => s.spanId)).toContain(ours.parentSpanId);
  });

  it('an app with its own tracer provider keeps the SDK’s spans (it has them without faultline)', async () => {
    const { out } = await run({ OWN_PROVIDER: '1' }, false);
    expect(out.scopes?.filter((s) => s.startsWith('com.anthropic.sdk'))).toHaveLength(2);
    expect(out.scopes?.filter((s) => s.startsWith('faultline '))).toHaveLength(2);
  });
});
