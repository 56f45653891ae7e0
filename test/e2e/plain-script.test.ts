/**
 * Issue 14: the simplest app — three plain `chat.completions.create` calls in a script, no task scope, no agent
 * framework — under `--import faultline/register` with `llm_truncate_single` is one task, so the single fault
 * truncates the first call only (each call is its own trace: before, each was its own task and all three were cut).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { triggerReportFromSpans } from '../../src/inject/verify';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { runApp } from '../frameworks/support';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const rec = CHAT_TEXT;
const TEXT = (rec.response as { choices: [{ message: { content: string } }] }).choices[0].message.content;

let server: LlmServer;
let plan: string;
beforeAll(async () => {
  server = await startLlmServer(() => corpusReply(rec));
  plan = join(mkdtempSync(join(tmpdir(), 'faultline-plain-')), 'plan.json');
  writeFileSync(plan, JSON.stringify({ rules: [{ fault: 'llm_truncate_single', match: { operation: 'chat' } }] }));
});
afterAll(() => server?.close());

it('a plain three-call openai script with llm_truncate_single truncates the first call only', async () => {
  const r = await runApp('three-calls.mjs', server, {
    register: 'import',
    env: { REQ: JSON.stringify(rec.request), FAULTLINE_PLAN: plan },
  });
  expect(r.out).toEqual([
    { content: TEXT.slice(0, Math.floor(TEXT.length * 0.3)), finish: 'length' },
    { content: TEXT, finish: 'stop' },
    { content: TEXT, finish: 'stop' },
  ]);
  const chats = r.spans
    .filter((s) => s.attributes['gen_ai.operation.name'] === 'chat')
    .sort((a, b) => a.start - b.start);
  expect(chats.map((s) => s.attributes['faultline.fault.name'])).toEqual(['llm_truncate_single', undefined, undefined]);
  expect(new Set(chats.map((s) => s.traceId)).size).toBe(3);
  const report = triggerReportFromSpans(r.spans);
  expect(report.tasks).toHaveLength(1);
  expect(report.tasks[0].taskId).toMatch(/^process-\d+$/);
});
