/**
 * The Vercel AI SDK with `experimental_telemetry` on, under `register` (issue 14): the real `ai` 6 app in ./apps
 * (a tool loop with generateText, then with streamText, both under one function id) with `@ai-sdk/openai`'s chat
 * model against a loopback server speaking recorded chat-completions traffic. The output is the same byte for byte
 * as without faultline, faultline's LLM spans nest under the SDK's `ai.*.doGenerate` / `ai.*.doStream` spans, and a
 * plan's per-task state follows the function id: both calls are one task.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { triggerReportFromSpans } from '../../src/inject/verify';
import type { LlmServer } from '../support/llm-server';
import { named, parentOf, runApp, startScriptedServer, type AppRun } from './support';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

let server: LlmServer;
let plain: AppRun;
beforeAll(async () => {
  server = await startScriptedServer();
  plain = await runApp('ai-sdk.mjs', server);
});
afterAll(() => server?.close());

describe('Vercel AI SDK with experimental_telemetry', () => {
  it('the app runs as without faultline: two tool-loop steps each, text and streamed text', () => {
    expect(plain.out).toMatchObject({ json: { steps: 2 }, stream: { text: 'The capital of Mexico is Mexico City.', steps: 2 } });
  });

  describe('--import faultline/register', () => {
    let r: AppRun;
    beforeAll(async () => {
      r = await runApp('ai-sdk.mjs', server, { register: 'import' });
    });

    it('the app’s output is byte-identical to the run without faultline', () => {
      expect(r.stdout).toBe(plain.stdout);
    });

    it('faultline’s LLM spans nest under the SDK’s per-step spans, inside its ai.generateText / ai.streamText span', () => {
      const chats = r.spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat').sort((a, b) => a.start - b.start);
      expect(chats).toHaveLength(4);
      expect(chats.map((c) => parentOf(r.spans, c)?.name)).toEqual(['ai.generateText.doGenerate', 'ai.generateText.doGenerate', 'ai.streamText.doStream', 'ai.streamText.doStream']);
      expect(chats.map((c) => parentOf(r.spans, parentOf(r.spans, c)!)?.name)).toEqual(['ai.generateText', 'ai.generateText', 'ai.streamText', 'ai.streamText']);
      expect(chats.map((c) => c.kind)).toEqual(['CLIENT', 'CLIENT', 'CLIENT', 'CLIENT']);
      expect(chats.map((c) => c.attributes['gen_ai.request.stream'] === true)).toEqual([false, false, true, true]);
      expect(named(r.spans, 'ai.toolCall')).toHaveLength(2);
      expect(named(r.spans, 'ai.generateText')[0].attributes['ai.telemetry.functionId']).toBe('weather-agent');
    });
  });

  it('the task follows the function id: a plan’s positions count the calls of generateText and streamText together', async () => {
    // Position 4 exists only if the two calls are one task: it is streamText's second model call (the text answer).
    const dir = mkdtempSync(join(tmpdir(), 'faultline-ai-sdk-'));
    const plan = join(dir, 'plan.json');
    writeFileSync(plan, JSON.stringify({ rules: [{ fault: 'stream_cut', match: { operation: 'chat', position: 4 }, params: { afterEvents: 3 } }] }));
    const r = await runApp('ai-sdk.mjs', server, { register: 'import', env: { FAULTLINE_PLAN: plan } });
    expect(r.out).toMatchObject({ json: plain.out.json, stream: { text: 'The capital' } });
    const cut = r.spans.filter((s) => s.attributes['faultline.fault.name'] === 'stream_cut');
    expect(cut).toHaveLength(1);
    expect(parentOf(r.spans, cut[0])?.name).toBe('ai.streamText.doStream');
    expect(cut[0].attributes['faultline.fault.call_index']).toBe(4);
    const report = triggerReportFromSpans(r.spans);
    expect(report.tasks.map((t) => t.taskId)).toEqual(['weather-agent']);
    expect(readFileSync(r.tracesFile, 'utf8')).toContain('"faultline.fault.task_id","value":{"stringValue":"weather-agent"}');
  });
});
