/**
 * LangGraph's agent structure under `register` (issue 14): the real `@langchain/langgraph` 1.7 app in ./apps (two
 * nodes, the planner calling a tool; one invoke and one streamed run) with `@langchain/openai` against a loopback
 * server speaking recorded chat-completions traffic, in child processes with `--import` (ES module app) and
 * `--require` (CommonJS app), and without faultline: the same output byte for byte, the graph run as a workflow span
 * and task, the nodes as agent spans with faultline's LLM spans under the node that made each call, and the tool run.
 * No line of the app mentions faultline: the handler comes in through LangChain's configure hooks.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SpanRecord } from '../../src/traces/model';
import type { LlmServer } from '../support/llm-server';
import { STREAM_TEXT, named, outline, parentOf, runApp, startScriptedServer, type AppRun } from './support';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

let server: LlmServer;
let plain: AppRun;
beforeAll(async () => {
  server = await startScriptedServer();
  plain = await runApp('langgraph.mjs', server);
});
afterAll(() => server?.close());

const SHAPE = [
  'invoke_workflow LangGraph',
  '  invoke_agent planner',
  '    chat gpt-4.1-mini',
  '    execute_tool get_weather',
  '    chat gpt-4.1-mini',
  '  invoke_agent worker',
  '    chat gpt-4o',
];
const workflows = (spans: SpanRecord[]) => named(spans, 'invoke_workflow LangGraph');

describe('LangGraph with @langchain/openai', () => {
  it('the app runs as without faultline: both nodes answer, the streamed run streams the tokens', () => {
    const out = plain.out as { json: { weather: string; answer: string }; stream: { tokens: string; answer: string } };
    expect(out.json.answer.length).toBeGreaterThan(100);
    expect(out.stream.tokens).toBe(STREAM_TEXT.repeat(2));
  });

  describe('--import faultline/register (ES module app)', () => {
    let r: AppRun;
    beforeAll(async () => {
      r = await runApp('langgraph.mjs', server, { register: 'import' });
    });

    it('the app’s output is byte-identical to the run without faultline', () => {
      expect(r.stdout).toBe(plain.stdout);
    });

    it('each graph run is a workflow span and a task; its nodes are agent spans with their LLM calls and tool runs under them', () => {
      const runs = workflows(r.spans);
      expect(runs).toHaveLength(2);
      for (const w of runs) {
        expect(outline(r.spans, w)).toEqual(SHAPE);
        expect(w).toMatchObject({ kind: 'INTERNAL', attributes: { 'gen_ai.operation.name': 'invoke_workflow' } });
        expect(w.parentSpanId).toBeUndefined();
        expect(w.attributes['faultline.task.id']).toMatch(/^[0-9a-f-]{36}$/); // the root run id
      }
      expect(runs[0].attributes['faultline.task.id']).not.toBe(runs[1].attributes['faultline.task.id']);
      expect(runs[1].attributes['gen_ai.conversation.id']).toBe('ny-thread'); // the streamed run's thread_id
      expect(runs[0].attributes['gen_ai.conversation.id']).toBeUndefined();
    });

    it('span kinds and attributes follow the GenAI conventions', () => {
      for (const node of ['planner', 'worker']) {
        expect(named(r.spans, `invoke_agent ${node}`)[0]).toMatchObject({
          kind: 'INTERNAL',
          attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': node },
        });
      }
      const tool = named(r.spans, 'execute_tool get_weather')[0];
      expect(tool).toMatchObject({
        kind: 'INTERNAL',
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': 'get_weather',
          'gen_ai.tool.type': 'function',
        },
      });
      expect(tool.attributes['gen_ai.tool.call.arguments']).toBeUndefined();
      const chats = r.spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
      expect(chats).toHaveLength(6);
      expect(
        chats.every(
          (c) => c.kind === 'CLIENT' && parentOf(r.spans, c)?.attributes['gen_ai.operation.name'] === 'invoke_agent',
        ),
      ).toBe(true);
      expect(chats.filter((c) => c.attributes['gen_ai.request.stream'] === true)).toHaveLength(3);
    });
  });

  describe('--require faultline/register (CommonJS app), with content capture', () => {
    let r: AppRun;
    beforeAll(async () => {
      r = await runApp('langgraph.cjs', server, {
        register: 'require',
        env: { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' },
      });
    });

    it('the same output and the same structure', () => {
      expect(r.stdout).toBe(plain.stdout);
      for (const w of workflows(r.spans)) expect(outline(r.spans, w)).toEqual(SHAPE);
    });

    it('tool arguments and results are recorded with capture on', () => {
      const tool = named(r.spans, 'execute_tool get_weather')[0];
      expect(JSON.parse(tool.attributes['gen_ai.tool.call.arguments'] as string)).toEqual({ location: 'Paris' });
      expect(tool.attributes['gen_ai.tool.call.result']).toBe('sunny, 21°C in Paris');
    });
  });
});
