/**
 * The Vercel AI SDK with its telemetry on, under `register` (issue 14; ai 7 in issue 26): the real `ai` app in ./apps
 * (a tool loop with generateText, then with streamText, both under one function id) with `@ai-sdk/openai`'s chat
 * model against a loopback server speaking recorded chat-completions traffic. The output is the same byte for byte
 * as without faultline; faultline's LLM spans nest under the SDK's per-step model-call spans (ai 6:
 * `ai.*.doGenerate` / `ai.*.doStream` inside `ai.generateText` / `ai.streamText`; ai 7 with `@ai-sdk/otel`: its
 * `chat` span inside `step N` inside `invoke_agent`); and a plan's per-task state follows the function id: both calls
 * are one task (ai 7 gives the id on its `ai:telemetry` channel, not on a span). The lockfile has ai 6; `.ci/latest`
 * runs this file on the newest ai.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { triggerReportFromSpans } from '../../src/inject/verify';
import type { SpanRecord } from '../../src/traces/model';
import type { LlmServer } from '../support/llm-server';
import { STREAM_TEXT, named, parentOf, runApp, startScriptedServer, type AppRun } from './support';

// ai 7 is ES modules only and exports no package.json: read the version beside its resolved entry.
const aiEntry = createRequire(__filename).resolve('ai');
const aiMajor = Number(
  (JSON.parse(readFileSync(join(dirname(aiEntry), '../package.json'), 'utf8')) as { version: string }).version.split(
    '.',
  )[0],
);
const v7 = aiMajor >= 7;
/** The span names of the SDK's model call, and of the operation around it, per major. */
const STEP = v7
  ? { generate: 'chat gpt-4o', stream: 'chat gpt-4o' }
  : { generate: 'ai.generateText.doGenerate', stream: 'ai.streamText.doStream' };
const OPERATION = v7 ? { generate: 'step', stream: 'step' } : { generate: 'ai.generateText', stream: 'ai.streamText' };
const isFaultline = (s: SpanRecord) => s.scope.name === 'faultline';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

let server: LlmServer;
let plain: AppRun;
beforeAll(async () => {
  server = await startScriptedServer();
  plain = await runApp('ai-sdk.mjs', server);
});
afterAll(() => server?.close());

describe(`Vercel AI SDK ${aiMajor} with its telemetry on`, () => {
  it('the app runs as without faultline: two tool-loop steps each, text and streamed text', () => {
    expect(plain.out).toMatchObject({ json: { steps: 2 }, stream: { text: STREAM_TEXT, steps: 2 } });
  });

  describe('--import faultline/register', () => {
    let r: AppRun;
    beforeAll(async () => {
      r = await runApp('ai-sdk.mjs', server, { register: 'import' });
    });

    it('the app’s output is byte-identical to the run without faultline', () => {
      expect(r.stdout).toBe(plain.stdout);
    });

    it('faultline’s LLM spans nest under the SDK’s per-step model-call spans, inside its operation', () => {
      const chats = r.spans
        .filter((s) => isFaultline(s) && s.attributes['gen_ai.operation.name'] === 'chat')
        .sort((a, b) => a.start - b.start);
      expect(chats).toHaveLength(4);
      expect(chats.map((c) => parentOf(r.spans, c)?.name)).toEqual([
        STEP.generate,
        STEP.generate,
        STEP.stream,
        STEP.stream,
      ]);
      expect(chats.map((c) => parentOf(r.spans, parentOf(r.spans, c)!)?.name.replace(/ \d+$/, ''))).toEqual([
        OPERATION.generate,
        OPERATION.generate,
        OPERATION.stream,
        OPERATION.stream,
      ]);
      expect(chats.map((c) => c.kind)).toEqual(['CLIENT', 'CLIENT', 'CLIENT', 'CLIENT']);
      expect(chats.map((c) => c.attributes['gen_ai.request.stream'] === true)).toEqual([false, false, true, true]);
      if (v7) {
        expect(named(r.spans, 'execute_tool get_weather')).toHaveLength(2);
        const agents = r.spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'invoke_agent');
        expect(agents.map((a) => a.attributes['gen_ai.agent.name'])).toEqual(['weather-agent', 'weather-agent']);
      } else {
        expect(named(r.spans, 'ai.toolCall')).toHaveLength(2);
        expect(named(r.spans, 'ai.generateText')[0].attributes['ai.telemetry.functionId']).toBe('weather-agent');
      }
    });
  });

  it('the task follows the function id: a plan’s positions count the calls of generateText and streamText together', async () => {
    // Position 4 exists only if the two calls are one task: it is streamText's second model call (the text answer).
    const dir = mkdtempSync(join(tmpdir(), 'faultline-ai-sdk-'));
    const plan = join(dir, 'plan.json');
    writeFileSync(
      plan,
      JSON.stringify({
        rules: [{ fault: 'stream_cut', match: { operation: 'chat', position: 4 }, params: { afterEvents: 3 } }],
      }),
    );
    const r = await runApp('ai-sdk.mjs', server, { register: 'import', env: { FAULTLINE_PLAN: plan } });
    expect(r.out).toMatchObject({ json: plain.out.json, stream: { text: 'The capital' } });
    const cut = r.spans.filter((s) => s.attributes['faultline.fault.name'] === 'stream_cut');
    expect(cut).toHaveLength(1);
    expect(parentOf(r.spans, cut[0])?.name).toBe(STEP.stream);
    expect(cut[0].attributes['faultline.fault.call_index']).toBe(4);
    const report = triggerReportFromSpans(r.spans);
    expect(report.tasks.map((t) => t.taskId)).toEqual(['weather-agent']);
    expect(readFileSync(r.tracesFile, 'utf8')).toContain(
      '"faultline.fault.task_id","value":{"stringValue":"weather-agent"}',
    );
  });

  it.runIf(v7)(
    'ai 7 without a telemetry integration: no SDK spans, and the task still follows the function id (from the ai:telemetry channel)',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'faultline-ai-sdk-'));
      const plan = join(dir, 'plan.json');
      writeFileSync(
        plan,
        JSON.stringify({
          rules: [{ fault: 'stream_cut', match: { operation: 'chat', position: 4 }, params: { afterEvents: 3 } }],
        }),
      );
      const r = await runApp('ai-sdk.mjs', server, {
        register: 'import',
        env: { FAULTLINE_PLAN: plan, AI_OTEL: 'off' },
      });
      expect(r.out).toMatchObject({ json: plain.out.json, stream: { text: 'The capital' } });
      expect(r.spans.filter((s) => !isFaultline(s))).toEqual([]);
      const cut = r.spans.filter((s) => s.attributes['faultline.fault.name'] === 'stream_cut');
      expect(cut.map((s) => s.attributes['faultline.fault.call_index'])).toEqual([4]);
      expect(triggerReportFromSpans(r.spans).tasks.map((t) => t.taskId)).toEqual(['weather-agent']);
    },
  );
});
