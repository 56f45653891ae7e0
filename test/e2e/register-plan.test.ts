/**
 * The one-line entry point with a fault plan, end to end in child processes: `--import faultline/register` with
 * FAULTLINE_PLAN injects the planned fault into a real call, records it on the span with an online detection, and
 * exports it to the trace file; a bad plan stops start-up with a clear message; FAULTLINE_DISABLE turns it off.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readTraces } from '../../src/traces/read';
import type { SpanRecord } from '../../src/traces/model';
import { runNode } from '../support/child';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';

vi.setConfig({ testTimeout: 120_000 });
const ROOT = resolve(__dirname, '../..');
const REGISTER_MJS = join(ROOT, 'dist/src/register.mjs');

// A plain-text answer long enough for a visible cut.
const rec = CHAT_TEXT;
const original = (rec.response as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;

const APP = `
const res = await fetch(process.env.LLM_URL + '/v1/chat/completions', {
  method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' }, body: process.env.REQ,
});
const body = await res.json();
process.stdout.write(JSON.stringify({ status: res.status, content: body.choices[0].message.content, finish: body.choices[0].finish_reason }));
`;

// An app with a client timeout (AbortSignal.timeout: an unref'd timer) that forces a garbage collection while it waits.
const TIMEOUT_APP = `
const t0 = Date.now();
setTimeout(() => globalThis.gc(), 100);
try {
  await fetch(process.env.LLM_URL + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: process.env.REQ, signal: AbortSignal.timeout(300),
  });
  process.stdout.write(JSON.stringify({ resolved: true }));
} catch (err) {
  process.stdout.write(JSON.stringify({ error: err.name, ms: Date.now() - t0 }));
}
`;

let server: LlmServer;
let dir: string;

beforeAll(async () => {
  if (!existsSync(REGISTER_MJS)) throw new Error('run `npm run build` first: dist/src/register.mjs missing');
  server = await startLlmServer(() => corpusReply(rec));
  dir = mkdtempSync(join(tmpdir(), 'faultline-plan-'));
  writeFileSync(join(dir, 'app.mjs'), APP);
  writeFileSync(join(dir, 'timeout-app.mjs'), TIMEOUT_APP);
  writeFileSync(
    join(dir, 'hang.json'),
    JSON.stringify({ rules: [{ fault: 'timeout_hang', match: { operation: 'chat' } }] }),
  );
  writeFileSync(
    join(dir, 'plan.json'),
    JSON.stringify({ seed: 42, rules: [{ fault: 'llm_truncate_single', match: { operation: 'chat' } }] }),
  );
  writeFileSync(
    join(dir, 'bad.yaml'),
    'seed: 42\nrules:\n  - fault: llm_truncate_singel\n    match: { operation: chat }\n',
  );
});

afterAll(async () => {
  await server?.close();
});

function env(extra: Record<string, string>): Record<string, string> {
  return {
    LLM_URL: server.url,
    REQ: JSON.stringify(rec.request),
    OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'undici',
    ...extra,
  };
}

async function spansOf(file: string): Promise<SpanRecord[]> {
  const spans: SpanRecord[] = [];
  for await (const t of readTraces([file])) spans.push(...t.spans);
  return spans;
}

describe('register with a fault plan', () => {
  it('injects the planned fault, records it as ground truth and detects it online', async () => {
    const traces = join(dir, 'planned.jsonl');
    const r = await runNode(['--import', REGISTER_MJS, join(dir, 'app.mjs')], {
      env: env({ FAULTLINE_PLAN: join(dir, 'plan.json'), FAULTLINE_TRACES_FILE: traces, FAULTLINE_DETECT: 'true' }),
    });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { status: number; content: string; finish: string };
    // AgentChaos llm_truncate: the first max(1, floor(0.3·len)) characters, finish_reason "length", still a 200.
    expect(out.status).toBe(200);
    expect(out.content).toBe(original.slice(0, Math.max(1, Math.floor(original.length * 0.3))));
    expect(out.finish).toBe('length');

    const chat = (await spansOf(traces)).find((s) => s.attributes['gen_ai.operation.name'] === 'chat')!;
    expect(chat.attributes['faultline.fault.name']).toBe('llm_truncate_single');
    expect(chat.attributes['faultline.fault.type']).toBe('truncate');
    expect(chat.events.some((e) => e.name === 'faultline.fault.injected')).toBe(true);
    const detections = chat.events.filter((e) => e.name === 'faultline.detection');
    expect(detections.map((e) => e.attributes['faultline.detection.fault_type'])).toContain('truncate');
    expect(JSON.stringify(chat)).not.toContain('sk-test');
  });

  it('timeout_hang holds the call like a server that never answers: through a garbage collection, until the app times out; then the process exits', async () => {
    const r = await runNode(['--expose-gc', '--import', REGISTER_MJS, join(dir, 'timeout-app.mjs')], {
      env: env({ FAULTLINE_PLAN: join(dir, 'hang.json'), FAULTLINE_TRACES_FILE: join(dir, 'hang.jsonl') }),
      timeoutMs: 20_000, // a call held past the app's timeout (or a hold kept after it) never lets the process exit
    });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { error: string; ms: number };
    expect(out.error).toBe('TimeoutError');
    expect(out.ms).toBeGreaterThanOrEqual(290);
  });

  it('stops start-up on a bad plan, naming the rule and the nearest fault name, before the app runs', async () => {
    const r = await runNode(['--import', REGISTER_MJS, join(dir, 'app.mjs')], {
      env: env({ FAULTLINE_PLAN: join(dir, 'bad.yaml') }),
    });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('bad.yaml');
    expect(r.stderr).toContain('rules[0]');
    expect(r.stderr).toContain('llm_truncate_single');
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('injects nothing with FAULTLINE_DISABLE=1, and nothing without a plan', async () => {
    const runs: Record<string, string>[] = [{ FAULTLINE_PLAN: join(dir, 'plan.json'), FAULTLINE_DISABLE: '1' }, {}];
    for (const extra of runs) {
      const traces = join(dir, `clean-${Object.keys(extra).length}.jsonl`);
      const r = await runNode(['--import', REGISTER_MJS, join(dir, 'app.mjs')], {
        env: env({ ...extra, FAULTLINE_TRACES_FILE: traces }),
      });
      expect(r.code, r.stderr).toBe(0);
      expect((JSON.parse(r.stdout) as { content: string }).content).toBe(original);
      const chat = (await spansOf(traces)).find((s) => s.attributes['gen_ai.operation.name'] === 'chat')!;
      expect(Object.keys(chat.attributes).some((k) => k.startsWith('faultline.fault.'))).toBe(false);
      expect(readFileSync(traces, 'utf8')).not.toContain('faultline.fault.injected');
    }
  });
});
