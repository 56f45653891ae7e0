/**
 * The README's fault plan (`FAULTLINE_PLAN=plan.yaml node --import faultline/register app.mjs`) on apps that talk
 * the OpenAI Responses API: the openai SDK's `responses.create` (JSON and stream) and the Vercel AI SDK's default
 * `openai('model')`, against a loopback server answering with recorded Responses bodies. Each rule fires where it
 * says: the first text answer truncated (status incomplete, max_output_tokens), the planner's 2nd call a 429 the
 * client's retry gets past, the gpt-4o stream cut after 3 events; the boundary rule never meets an LLM call.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { triggerReportFromSpans } from '../../src/inject/verify';
import { readTraces } from '../../src/traces/read';
import type { SpanRecord } from '../../src/traces/model';
import { isLlmSpan } from '../../src/traces/steps';
import { runNode } from '../support/child';
import type { LlmServer } from '../support/llm-server';
import { REGISTER_MJS, RESPONSES_STREAM_TEXT, RESPONSES_TEXT, ROOT, startScriptedServer } from '../frameworks/support';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/** The plan block of README.md's "Inject: fault plans", as a user would copy it. */
const README_PLAN = /```yaml\n(# plan\.yaml\n[\s\S]*?)```/.exec(readFileSync(join(ROOT, 'README.md'), 'utf8'))![1]!;

const TEXT = RESPONSES_TEXT;
const CUT = TEXT.slice(0, Math.max(1, Math.floor(TEXT.length * 0.3)));

let server: LlmServer;
let dir: string;
let plan: string;
beforeAll(async () => {
  server = await startScriptedServer();
  dir = mkdtempSync(join(tmpdir(), 'faultline-responses-plan-'));
  plan = join(dir, 'plan.yaml');
  writeFileSync(plan, README_PLAN);
});
afterAll(() => server?.close());

interface Run {
  out: Record<string, unknown>;
  spans: SpanRecord[];
  stderr: string;
}

let runs = 0;
async function run(app: string, withPlan: boolean): Promise<Run> {
  const traces = join(dir, `traces-${++runs}.jsonl`);
  const r = await runNode(['--import', REGISTER_MJS, join(__dirname, 'apps', app)], {
    cwd: ROOT,
    env: { LLM_URL: server.url, FAULTLINE_TRACES_FILE: traces, ...(withPlan ? { FAULTLINE_PLAN: plan } : {}) },
    timeoutMs: 60_000,
  });
  if (r.code !== 0) throw new Error(`${app} exited with ${r.code}:\n${r.stderr}`);
  const spans: SpanRecord[] = [];
  for await (const t of readTraces([traces])) spans.push(...t.spans);
  return { out: JSON.parse(r.stdout) as Record<string, unknown>, spans, stderr: r.stderr };
}

/** The LLM calls in start order, as `agent:rule` (`-` when none fired) with ` (retry)` for a client's retry. */
function fired(spans: SpanRecord[]): string[] {
  return spans
    .filter(isLlmSpan)
    .sort((a, b) => a.start - b.start)
    .map((s) => {
      const agent = spans.find((p) => p.spanId === s.parentSpanId)?.attributes['gen_ai.agent.name'];
      const rule = s.attributes['faultline.fault.rule'];
      return `${String(agent)}:${typeof rule === 'string' ? rule : '-'}`;
    });
}

/** What every run must show: the rules fired on the calls they name, once each, in one task. */
function expectPlanFired(r: Run): void {
  expect(fired(r.spans)).toEqual(['planner:llm_truncate_single', 'planner:http_429', 'planner:-', 'worker:stream_cut']);
  const llm = r.spans.filter(isLlmSpan).sort((a, b) => a.start - b.start);
  expect(llm.map((s) => s.attributes['openai.api.type'])).toEqual(['responses', 'responses', 'responses', 'responses']);
  expect(llm[0]!.attributes['gen_ai.response.finish_reasons']).toEqual(['length']);
  expect(llm[1]!.attributes['http.response.status_code']).toBe(429);
  expect(llm[3]!.attributes['faultline.response.done']).toBe(false);
  const report = triggerReportFromSpans(r.spans);
  expect(report.tasks).toHaveLength(1);
  expect(report.tasks[0]!.rules.map((x) => [x.rule, x.fires, x.triggered])).toEqual([
    ['llm_truncate_single', 1, true],
    ['http_429', 1, true],
    ['stream_cut', 1, true],
  ]);
  expect(r.stderr).toContain(
    '3 of 4 rules fired (llm_truncate_single ×1, http_429 ×1, stream_cut ×1); never matched: valid_partial',
  );
}

describe('the README plan on the Responses API', () => {
  it('openai responses.create: truncated JSON answer, a 429 the SDK retries past, a stream cut after 3 events', async () => {
    const [clean, r] = await Promise.all([run('responses-plan.mjs', false), run('responses-plan.mjs', true)]);
    const full = { text: TEXT, status: 'completed', reason: null };
    expect(clean.out).toMatchObject({ first: full, second: full, stream: { text: RESPONSES_STREAM_TEXT } });
    expect((clean.out.stream as { types: string[] }).types.at(-1)).toBe('response.completed');
    expect(r.out).toEqual({
      first: { text: CUT, status: 'incomplete', reason: 'max_output_tokens' },
      second: full,
      stream: { types: (clean.out.stream as { types: string[] }).types.slice(0, 3), text: '' },
    });
    expectPlanFired(r);
    // The SDK's retry of the 429 is the same call (its position kept), marked by its retry header.
    const llm = r.spans.filter(isLlmSpan).sort((a, b) => a.start - b.start);
    expect(llm[2]!.attributes['faultline.request.retry_count']).toBe(1);
  });

  it('ai + @ai-sdk/openai default openai(model): the same rules fire', async () => {
    const [clean, r] = await Promise.all([
      run('ai-sdk-responses-plan.mjs', false),
      run('ai-sdk-responses-plan.mjs', true),
    ]);
    expect(clean.out).toEqual({
      first: { text: TEXT, finish: 'stop' },
      second: { text: TEXT, finish: 'stop' },
      stream: { text: RESPONSES_STREAM_TEXT, finish: 'stop', errors: [] },
    });
    // A Responses stream that ends before its terminal event: the AI SDK finishes it as `other`, with no text yet.
    expect(r.out).toEqual({
      first: { text: CUT, finish: 'length' },
      second: { text: TEXT, finish: 'stop' },
      stream: { text: '', finish: 'other', errors: [] },
    });
    expectPlanFired(r);
  });
});
