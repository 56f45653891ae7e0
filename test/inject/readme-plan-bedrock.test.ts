/**
 * The README's fault plan (`FAULTLINE_PLAN=plan.yaml node --import faultline/register app.mjs`) on an app that talks
 * to Amazon Bedrock through the AWS SDK — its default NodeHttpHandler (node:http) and its NodeHttp2Handler — against
 * a loopback server answering in Bedrock's wire format (test/support/bedrock.ts). The plan is the README's block as a
 * user copies it, with one change a Bedrock user makes: the stream rule's model glob names the worker's Bedrock model
 * instead of `gpt-4o*`. Each rule fires where it says: the first answer truncated (stopReason max_tokens), the
 * planner's 2nd call a 429 the SDK retries past (ThrottlingException is retryable), the worker's ConverseStream cut
 * after 3 events; `faultline verify` and `faultline diagnose` on the traces file name the rules, the type and the step.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readTraces } from '../../src/traces/read';
import type { SpanRecord } from '../../src/traces/model';
import { isLlmSpan } from '../../src/traces/steps';
import {
  CONVERSE_TEXT,
  FAKE_CREDENTIALS,
  jsonReply,
  startBedrockH2Server,
  streamReply,
  textStream,
  type BedrockH2Server,
} from '../support/bedrock';
import { runNode } from '../support/child';
import { startLlmServer, type LlmServer, type Reply } from '../support/llm-server';
import { REGISTER_MJS, ROOT } from '../frameworks/support';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const README_PLAN = /```yaml\n(# plan\.yaml\n[\s\S]*?)```/.exec(readFileSync(join(ROOT, 'README.md'), 'utf8'))![1]!;
const PLAN = README_PLAN.replace('model: "gpt-4o*"', 'model: "us.amazon.nova*"');
const DELTAS = ['4200', ' + 42', ' equals', ' 4242.'];
const TEXT = CONVERSE_TEXT.output.message.content[0]!.text;
const reply = (path: string): Reply =>
  path.endsWith('/converse-stream') ? streamReply(textStream(DELTAS)) : jsonReply(CONVERSE_TEXT);

let server: LlmServer;
let h2: BedrockH2Server;
let dir: string;
let plan: string;
beforeAll(async () => {
  server = await startLlmServer((req) => reply(req.url));
  h2 = await startBedrockH2Server(reply);
  dir = mkdtempSync(join(tmpdir(), 'faultline-bedrock-plan-'));
  plan = join(dir, 'plan.yaml');
  writeFileSync(plan, PLAN);
});
afterAll(async () => {
  await server?.close();
  await h2?.close();
});

interface Run {
  out: Record<string, unknown>;
  spans: SpanRecord[];
  stderr: string;
  traces: string;
}

let runs = 0;
async function run(withPlan: boolean, http2 = true): Promise<Run> {
  const traces = join(dir, `traces-${++runs}.jsonl`);
  const r = await runNode(['--import', REGISTER_MJS, join(__dirname, 'apps', 'bedrock-plan.mjs')], {
    cwd: ROOT,
    env: {
      LLM_URL: http2 ? h2.url : server.url,
      FAULTLINE_TRACES_FILE: traces,
      ...(http2 ? {} : { BEDROCK_HTTP1: '1' }),
      ...(withPlan ? { FAULTLINE_PLAN: plan } : {}),
    },
    timeoutMs: 60_000,
  });
  if (r.code !== 0) throw new Error(`bedrock-plan.mjs exited with ${r.code}:\n${r.stderr}`);
  const spans: SpanRecord[] = [];
  for await (const t of readTraces([traces])) spans.push(...t.spans);
  return { out: JSON.parse(r.stdout) as Record<string, unknown>, spans, stderr: r.stderr, traces };
}

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

const cli = (args: string[]) => runNode([join(ROOT, 'bin', 'faultline.js'), ...args], { cwd: ROOT, timeoutMs: 60_000 });

const FULL = { text: TEXT, stop: 'end_turn' };

/** What a run under the plan must show: each rule fired on the call it names, as the SDK parses real answers. */
async function expectPlanFired(r: Run): Promise<void> {
  expect(r.out).toEqual({
    first: { text: TEXT.slice(0, Math.max(1, Math.floor(TEXT.length * 0.3))), stop: 'max_tokens' },
    second: FULL,
    stream: { events: ['messageStart', 'contentBlockDelta', 'contentBlockDelta'], text: DELTAS.slice(0, 2).join('') },
  });
  expect(fired(r.spans)).toEqual(['planner:llm_truncate_single', 'planner:http_429', 'planner:-', 'worker:stream_cut']);
  const llm = r.spans.filter(isLlmSpan).sort((a, b) => a.start - b.start);
  expect(llm.map((s) => s.attributes['gen_ai.provider.name'])).toEqual([
    'aws.bedrock',
    'aws.bedrock',
    'aws.bedrock',
    'aws.bedrock',
  ]);
  expect(llm[0]!.attributes['gen_ai.response.finish_reasons']).toEqual(['length']);
  expect(llm[1]!.attributes['http.response.status_code']).toBe(429);
  expect(llm[3]!.attributes['faultline.response.done']).toBe(false);
  const text = JSON.stringify(r.spans);
  for (const secret of Object.values(FAKE_CREDENTIALS)) expect(text).not.toContain(secret);
  expect(text).not.toMatch(/Signature=|AWS4-HMAC-SHA256/);
  expect(r.stderr).toContain(
    '3 of 4 rules fired (llm_truncate_single ×1, http_429 ×1, stream_cut ×1); never matched: valid_partial',
  );

  const verify = await cli(['verify', r.traces]);
  for (const rule of ['llm_truncate_single', 'http_429', 'stream_cut']) expect(verify.stdout).toContain(rule);
  const diagnose = await cli(['diagnose', r.traces, '-f', 'jsonl']);
  const rows = diagnose.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  // The first fault on the trace is the first call's truncation: type truncate at step 1.
  expect(rows[0]).toMatchObject({ faultType: 'truncate', step: 1 });
}

describe('the README plan on Amazon Bedrock through the AWS SDK', () => {
  it('default handler (NodeHttp2Handler): truncated Converse answer, a 429 retried past, a ConverseStream cut after 3 events', async () => {
    const [clean, r] = await Promise.all([run(false), run(true)]);
    expect(clean.out).toEqual({
      first: FULL,
      second: FULL,
      stream: {
        events: [
          'messageStart',
          'contentBlockDelta',
          'contentBlockDelta',
          'contentBlockDelta',
          'contentBlockDelta',
          'contentBlockStop',
          'messageStop',
          'metadata',
        ],
        text: DELTAS.join(''),
      },
    });
    expect(fired(clean.spans)).toEqual(['planner:-', 'planner:-', 'worker:-']);
    await expectPlanFired(r);
  });

  it('NodeHttpHandler (node:http): the same rules fire', async () => {
    await expectPlanFired(await run(true, false));
  });
});
