/**
 * The hand-wired SDK honours the OpenTelemetry variables NodeSDK honours, for what it supports (issue 16 Build 3),
 * in child processes under register: the sampler and span limits (read by the tracer provider), the resource
 * (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_NODE_RESOURCE_DETECTORS), OTEL_PROPAGATORS, OTEL_LOG_LEVEL, and
 * an unsupported exporter said on stderr instead of spans dropped without a word.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { runNode } from '../support/child';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { DIST } from '../support/dist';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { otlpJsonSpans } from '../support/otlp-receiver';

vi.setConfig({ testTimeout: 120_000 });

const rec = CHAT_TEXT;
const APP = `
fetch(process.env.LLM_URL + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', 'x-run': process.env.RUN }, body: process.env.REQ })
  .then((r) => r.text()).then(() => process.stdout.write('ok'));
`;

let server: LlmServer;
let dir: string;

beforeAll(async () => {
  server = await startLlmServer(() => corpusReply(rec));
  dir = mkdtempSync(join(tmpdir(), 'faultline-sdkenv-'));
  writeFileSync(join(dir, 'app.cjs'), APP);
});
afterAll(async () => {
  await server?.close();
});

interface Run {
  code: number | null;
  stderr: string;
  stdout: string;
  file: string;
  resource: Record<string, unknown>;
  spans: ReturnType<typeof otlpJsonSpans>;
  headers: Record<string, unknown>;
}

async function run(name: string, env: Record<string, string>): Promise<Run> {
  const file = join(dir, `${name}.jsonl`);
  const r = await runNode(['--require', join(DIST, 'src/register.js'), join(dir, 'app.cjs')], {
    env: { LLM_URL: server.url, REQ: JSON.stringify(rec.request), FAULTLINE_TRACES_FILE: file, RUN: name, ...env },
    timeoutMs: 60_000,
  });
  const docs = existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map(
          (l) =>
            JSON.parse(l) as {
              resourceSpans: Array<{
                resource: { attributes: Array<{ key: string; value: Record<string, unknown> }> };
              }>;
            },
        )
    : [];
  const resource: Record<string, unknown> = {};
  for (const kv of docs[0]?.resourceSpans[0]?.resource.attributes ?? []) resource[kv.key] = Object.values(kv.value)[0];
  return {
    ...r,
    file,
    resource,
    spans: docs.flatMap((d) => otlpJsonSpans(d)),
    headers: server.requests.find((q) => q.headers['x-run'] === name)?.headers ?? {},
  };
}

it('honours the sampler, span limits, resource, propagator and log-level variables; says what it cannot export', async () => {
  const [off, limited, named, host, none, debug, zipkin, dflt] = await Promise.all([
    run('off', { OTEL_TRACES_SAMPLER: 'always_off' }),
    run('limited', { OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: '4' }),
    run('named', { OTEL_SERVICE_NAME: 'checkout', OTEL_RESOURCE_ATTRIBUTES: 'team=payments' }),
    run('host', { OTEL_NODE_RESOURCE_DETECTORS: 'host,process' }),
    run('none', { OTEL_PROPAGATORS: 'none' }),
    run('debug', { OTEL_LOG_LEVEL: 'debug' }),
    run('zipkin', { OTEL_TRACES_EXPORTER: 'zipkin' }),
    run('default', {}),
  ]);
  for (const r of [off, limited, named, host, none, debug, zipkin, dflt]) {
    expect(r.code, r.stderr).toBe(0);
    if (r !== debug) expect(r.stdout).toBe('ok');
  }
  // Sampler: nothing recorded, but the context still propagates.
  expect(off.spans).toEqual([]);
  expect(String(off.headers.traceparent)).toMatch(/-00$/);
  // Span limits, applied by the tracer provider.
  expect(limited.spans.length).toBeGreaterThan(0);
  for (const s of limited.spans) expect(Object.keys(s.attributes).length).toBeLessThanOrEqual(4);
  expect(Math.max(...dflt.spans.map((s) => Object.keys(s.attributes).length))).toBeGreaterThan(4);
  // Resource.
  expect(named.resource['service.name']).toBe('checkout');
  expect(named.resource.team).toBe('payments');
  expect(host.resource['host.name']).toBeDefined();
  expect(host.resource['process.pid']).toBeDefined();
  expect(dflt.resource['host.name']).toBeUndefined();
  expect(dflt.resource['process.command_args']).toBeUndefined(); // the default keeps the command line off the resource
  // Propagators: W3C trace context by default, none when asked.
  expect(String(dflt.headers.traceparent), String(dflt.headers.traceparent)).toMatch(
    /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/,
  );
  expect(none.headers.traceparent).toBeUndefined();
  // OTEL_LOG_LEVEL: a console diag logger (as NodeSDK sets; debug goes to console.debug), faultline's messages in it.
  expect(debug.stdout).toContain('installed the GenAI span layer');
  expect(debug.stdout.endsWith('ok')).toBe(true);
  // An exporter we do not have: one line, and the trace file named by FAULTLINE_TRACES_FILE still gets the spans.
  expect(zipkin.stderr).toContain(
    'faultline: trace exporter "zipkin" is not supported (otlp, console, file, none): ignored',
  );
  expect(zipkin.spans.length).toBeGreaterThan(0);
});
