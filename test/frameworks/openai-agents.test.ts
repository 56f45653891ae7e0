/**
 * The OpenAI Agents SDK's agent structure under `register` (issue 14): the real `@openai/agents` 0.14 app in
 * ./apps (a planner with a tool, a guardrail and a handoff to a worker; one run and one streamed run) against a
 * loopback server speaking recorded OpenAI traffic — chat completions, and the Responses API (the SDK's default) —
 * in child processes with `--import` (ES module app) and `--require` (CommonJS app), and without faultline: the same
 * output byte for byte, and the SDK's agents, tools, handoff and guardrail as OTel spans with faultline's LLM spans
 * under the agent that made each call.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { monitorTrace } from '../../detectors/monitors/offline';
import { sortSpans, type SpanRecord, type TraceRecord } from '../../src/traces/model';
import type { LlmServer } from '../support/llm-server';
import {
  RESPONSES_STREAM_TEXT,
  STREAM_TEXT,
  childrenOf,
  named,
  outline,
  parentOf,
  runApp,
  startScriptedServer,
  type AppRun,
} from './support';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

let server: LlmServer;
let plain: AppRun;
beforeAll(async () => {
  server = await startScriptedServer();
  plain = await runApp('agents.mjs', server);
});
afterAll(() => server?.close());

const tracesOf = (spans: SpanRecord[]): TraceRecord[] =>
  [...new Set(spans.map((s) => s.traceId))].map((traceId) => ({
    traceId,
    spans: sortSpans(spans.filter((s) => s.traceId === traceId)),
  }));
const workflows = (spans: SpanRecord[]) => named(spans, 'invoke_workflow Agent workflow');

describe('OpenAI Agents SDK (chat-completions mode)', () => {
  it('the app runs as without faultline: the run and the streamed run answer, through the planner and the worker', () => {
    const out = plain.out as { json: { agent: string; output: string }; stream: { agent: string; text: string } };
    expect(out.json.agent).toBe('worker');
    expect(out.json.output.length).toBeGreaterThan(100);
    expect(out.stream.agent).toBe('worker');
    expect(out.stream.text).toBe(STREAM_TEXT);
  });

  describe('--import faultline/register (ES module app)', () => {
    let r: AppRun;
    beforeAll(async () => {
      r = await runApp('agents.mjs', server, { register: 'import' });
    });

    it('the app’s output is byte-identical to the run without faultline', () => {
      expect(r.stdout).toBe(plain.stdout);
    });

    it('each run is a workflow span and a task: agents, tool, handoff and guardrail spans, LLM calls under the agent that made them', () => {
      const [json, streamed] = workflows(r.spans);
      expect(workflows(r.spans)).toHaveLength(2);
      expect(outline(r.spans, json)).toEqual([
        'invoke_workflow Agent workflow',
        '  invoke_agent planner',
        '    guardrail on_topic',
        '    chat gpt-4.1-mini',
        '    execute_tool get_weather',
        '    chat gpt-4.1-mini',
        '    handoff worker',
        '  invoke_agent worker',
        '    chat gpt-4o',
      ]);
      // Streamed: the same agents and calls (the SDK starts the guardrail before the agent span when streaming).
      const streamedNames = outline(r.spans, streamed)
        .map((l) => l.trim())
        .sort();
      expect(streamedNames).toEqual(
        outline(r.spans, json)
          .map((l) => l.trim())
          .sort(),
      );
      for (const w of [json, streamed]) {
        expect(w.kind).toBe('INTERNAL');
        expect(w.parentSpanId).toBeUndefined();
        expect(w.attributes['gen_ai.operation.name']).toBe('invoke_workflow');
        expect(w.attributes['faultline.task.id']).toMatch(/^trace_[0-9a-f]{32}$/);
        expect(new Set(r.spans.filter((s) => s.traceId === w.traceId).map((s) => s.traceId)).size).toBe(1);
      }
      expect(json.attributes['faultline.task.id']).not.toBe(streamed.attributes['faultline.task.id']);
    });

    it('span kinds and attributes follow the GenAI conventions', () => {
      const planner = named(r.spans, 'invoke_agent planner')[0];
      expect(planner).toMatchObject({
        kind: 'INTERNAL',
        attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'planner' },
      });
      const tool = named(r.spans, 'execute_tool get_weather')[0];
      expect(tool).toMatchObject({
        kind: 'INTERNAL',
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': 'get_weather',
          'gen_ai.tool.type': 'function',
        },
      });
      expect(tool.attributes['gen_ai.tool.call.arguments']).toBeUndefined(); // content capture is off
      const handoff = named(r.spans, 'handoff worker')[0];
      expect(handoff).toMatchObject({
        kind: 'INTERNAL',
        attributes: { 'faultline.message.source': 'planner', 'faultline.message.target': 'worker' },
      });
      expect(named(r.spans, 'guardrail on_topic')[0].attributes['faultline.guardrail.triggered']).toBe(false);
      const chats = r.spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
      expect(chats).toHaveLength(6);
      for (const c of chats) {
        expect(c.kind).toBe('CLIENT');
        expect(c.attributes['gen_ai.provider.name']).toMatch(/^openai/); // a loopback host is OpenAI-compatible
        expect(parentOf(r.spans, c)?.attributes['gen_ai.operation.name']).toBe('invoke_agent');
      }
      const streamedChats = chats.filter((c) => c.attributes['gen_ai.request.stream'] === true);
      expect(streamedChats).toHaveLength(3);
      expect(streamedChats.every((c) => typeof c.attributes['gen_ai.response.time_to_first_chunk'] === 'number')).toBe(
        true,
      );
      const worker = named(r.spans, 'invoke_agent worker')[0];
      expect(childrenOf(r.spans, worker).map((c) => c.attributes['gen_ai.request.model'])).toEqual(['gpt-4o']);
    });

    it("the SDK agents' tools and handoffs are their declarations; the workflow monitors find no role violation", () => {
      const planner = named(r.spans, 'invoke_agent planner')[0]!;
      expect(planner.attributes['faultline.agent.tools']).toEqual(['get_weather']);
      expect(planner.attributes['faultline.agent.targets']).toEqual(['worker']);
      expect(named(r.spans, 'invoke_agent worker')[0]!.attributes['faultline.agent.tools']).toEqual([]);
      const findings = tracesOf(r.spans).flatMap((t) => monitorTrace(t).flatMap((w) => w.findings));
      expect(findings.filter((f) => f.failure === 'role_violation')).toEqual([]);
    });
  });

  describe('--require faultline/register (CommonJS app), with content capture', () => {
    let r: AppRun;
    beforeAll(async () => {
      r = await runApp('agents.cjs', server, {
        register: 'require',
        env: { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' },
      });
    });

    it('the same output and the same structure', () => {
      expect(r.stdout).toBe(plain.stdout);
      const [json] = workflows(r.spans);
      expect(outline(r.spans, json)).toContain('    execute_tool get_weather');
      expect(named(r.spans, 'invoke_agent worker')).toHaveLength(2);
    });

    it('tool arguments and results are recorded only with capture on', () => {
      const tool = named(r.spans, 'execute_tool get_weather')[0];
      expect(tool.attributes['gen_ai.tool.call.arguments']).toBe('{"location":"Paris"}');
      expect(tool.attributes['gen_ai.tool.call.result']).toBe('sunny, 21°C in Paris');
    });
  });

  describe('Responses API mode (the SDK’s default)', () => {
    let plainResponses: AppRun;
    let r: AppRun;
    beforeAll(async () => {
      const env = { AGENTS_API: 'responses' };
      [plainResponses, r] = await Promise.all([
        runApp('agents.mjs', server, { env }),
        runApp('agents.mjs', server, { register: 'import', env }),
      ]);
    });

    it('the app’s output is byte-identical to the run without faultline', () => {
      expect(plainResponses.out).toMatchObject({
        json: { agent: 'worker' },
        stream: { agent: 'worker', text: RESPONSES_STREAM_TEXT },
      });
      expect(r.stdout).toBe(plainResponses.stdout);
    });

    it('the same agent structure, with faultline’s Responses API spans under the agents', () => {
      const [json, streamed] = workflows(r.spans);
      expect(outline(r.spans, json)).toEqual([
        'invoke_workflow Agent workflow',
        '  invoke_agent planner',
        '    guardrail on_topic',
        '    chat gpt-4.1-mini',
        '    execute_tool get_weather',
        '    chat gpt-4.1-mini',
        '    handoff worker',
        '  invoke_agent worker',
        '    chat gpt-4o',
      ]);
      expect(
        outline(r.spans, streamed)
          .map((l) => l.trim())
          .sort(),
      ).toEqual(
        outline(r.spans, json)
          .map((l) => l.trim())
          .sort(),
      );
      const calls = r.spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
      expect(calls).toHaveLength(6);
      for (const c of calls) {
        expect(c.attributes['openai.api.type']).toBe('responses');
        expect(parentOf(r.spans, c)?.attributes['gen_ai.operation.name']).toBe('invoke_agent');
      }
    });
  });
});
