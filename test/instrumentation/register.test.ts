/**
 * The --require and --import entry points, each in a child process, exporting to the default OTLP/JSON-lines file
 * and to an OTLP/HTTP receiver (http/json and http/protobuf).
 */
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runNode } from '../support/child';
import { CHAT_STREAM, CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { otlpJsonSpans, startOtlpReceiver } from '../support/otlp-receiver';

const ROOT = resolve(__dirname, '../..');
// Child processes load the whole SDK; on a loaded machine that takes a while.
vi.setConfig({ testTimeout: 120_000 });
const REGISTER_CJS = join(ROOT, 'dist/src/register.js');
const REGISTER_MJS = join(ROOT, 'dist/src/register.mjs');

let server: LlmServer;
let dir: string;
const rec = CHAT_TEXT;
const streamRec = CHAT_STREAM;

// The app: one JSON call and one streamed call with raw fetch; prints what it received.
const APP = `
const base = process.env.LLM_URL;
async function main() {
  const a = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-secret' }, body: process.env.REQ_JSON });
  const b = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: process.env.REQ_STREAM });
  process.stdout.write(JSON.stringify({ a: await a.text(), b: await b.text() }));
}
main();
`;

beforeAll(async () => {
  const { existsSync: exists } = await import('node:fs');
  if (!exists(REGISTER_CJS) || !exists(REGISTER_MJS))
    throw new Error('run `npm run build` first: dist/src/register.* missing');
  server = await startLlmServer((req) =>
    JSON.parse(req.body.toString()).stream ? corpusReply(streamRec) : corpusReply(rec),
  );
  dir = mkdtempSync(join(tmpdir(), 'faultline-register-'));
  writeFileSync(join(dir, 'app.cjs'), APP);
  writeFileSync(join(dir, 'app.mjs'), APP);
});

afterAll(async () => {
  await server.close();
});

function appEnv(extra: Record<string, string>): Record<string, string> {
  // instrumentation-undici's HTTP spans are off by default: turned on here to check they nest under the GenAI spans.
  return {
    LLM_URL: server.url,
    REQ_JSON: JSON.stringify(rec.request),
    REQ_STREAM: JSON.stringify(streamRec.request),
    OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'undici',
    ...extra,
  };
}

function checkSpans(spans: ReturnType<typeof otlpJsonSpans>): void {
  const chats = spans.filter((s) => s.scope === 'faultline');
  expect(chats.map((s) => s.name).sort()).toEqual(
    [`chat ${rec.request.model as string}`, `chat ${streamRec.request.model as string}`].sort(),
  );
  for (const chat of chats) {
    expect(chat.kind).toBe(3); // CLIENT
    const http = spans.find((s) => s.parentSpanId === chat.spanId);
    expect(http?.name, 'HTTP span nested under the chat span').toBe('POST');
  }
  const streamed = chats.find((s) => s.attributes['gen_ai.request.stream'] === true);
  expect(streamed?.attributes['faultline.response.done']).toBe(true);
  expect(JSON.stringify(spans)).not.toContain('sk-secret');
}

function checkOutput(stdout: string): void {
  const out = JSON.parse(stdout) as { a: string; b: string };
  expect(out.a).toBe(JSON.stringify(rec.response));
  expect(out.b).toBe(streamRec.sse);
}

describe.each([
  ['--require', ['--require', REGISTER_CJS, 'app.cjs']],
  ['--import', ['--import', REGISTER_MJS, 'app.mjs']],
])('%s faultline/register', (_label, args) => {
  it('writes OTLP/JSON lines to ./faultline-traces.jsonl by default and announces it once', async () => {
    const cwd = mkdtempSync(join(dir, 'file-'));
    for (const f of ['app.cjs', 'app.mjs']) writeFileSync(join(cwd, f), readFileSync(join(dir, f)));
    const res = await runNode(args, { cwd, env: appEnv({}) });
    expect(res.code, res.stderr).toBe(0);
    checkOutput(res.stdout);
    const file = join(cwd, 'faultline-traces.jsonl');
    expect(res.stderr.match(/faultline: writing traces to (.*)/g)).toEqual([`faultline: writing traces to ${file}`]);
    expect(existsSync(file)).toBe(true);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    checkSpans(lines.flatMap((l) => otlpJsonSpans(JSON.parse(l))));
  });

  it('exports to an OTLP/HTTP receiver (http/json)', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const res = await runNode(args, {
        cwd: dir,
        env: appEnv({
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_SERVICE_NAME: 'register-test',
        }),
      });
      expect(res.code, res.stderr).toBe(0);
      checkOutput(res.stdout);
      const bodies = receiver.requests.filter((r) => r.path === '/v1/traces');
      expect(bodies.length).toBeGreaterThan(0);
      const docs = bodies.map((b) => JSON.parse(b.body.toString()));
      expect(JSON.stringify(docs)).toContain('register-test');
      checkSpans(docs.flatMap((d) => otlpJsonSpans(d)));
    } finally {
      await receiver.close();
    }
  });

  it('exports http/protobuf by default when an endpoint is set', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const res = await runNode(args, { cwd: dir, env: appEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }) });
      expect(res.code, res.stderr).toBe(0);
      const bodies = receiver.requests.filter((r) => r.path === '/v1/traces');
      expect(bodies.length).toBeGreaterThan(0);
      expect(bodies[0]?.contentType).toBe('application/x-protobuf');
      expect(Buffer.concat(bodies.map((b) => b.body)).includes(`chat ${rec.request.model as string}`)).toBe(true);
    } finally {
      await receiver.close();
    }
  });
});

describe('register is harmless', () => {
  it('OTEL_SDK_DISABLED=true: app output unchanged, no trace file', async () => {
    const cwd = mkdtempSync(join(dir, 'off-'));
    writeFileSync(join(cwd, 'app.cjs'), APP);
    const res = await runNode(['--require', REGISTER_CJS, 'app.cjs'], {
      cwd,
      env: appEnv({ OTEL_SDK_DISABLED: 'true' }),
    });
    expect(res.code, res.stderr).toBe(0);
    checkOutput(res.stdout);
    expect(existsSync(join(cwd, 'faultline-traces.jsonl'))).toBe(false);
  });

  it('SIGTERM with no app handler still terminates by the signal, after flushing', async () => {
    const cwd = mkdtempSync(join(dir, 'sig-'));
    writeFileSync(
      join(cwd, 'app.cjs'),
      `fetch(process.env.LLM_URL + '/v1/chat/completions', { method: 'POST', body: process.env.REQ_JSON }).then(r => r.text()).then(() => { process.kill(process.pid, 'SIGTERM'); setInterval(() => {}, 1000); });`,
    );
    const res = await runNode(['--require', REGISTER_CJS, 'app.cjs'], { cwd, env: appEnv({}) });
    expect(res.signal).toBe('SIGTERM');
    const lines = readFileSync(join(cwd, 'faultline-traces.jsonl'), 'utf8').trim().split('\n');
    expect(lines.flatMap((l) => otlpJsonSpans(JSON.parse(l))).some((s) => s.scope === 'faultline')).toBe(true);
  });
});
