/**
 * A prebuilt LangGraph agent under `register` (issue 26): `createReactAgent` from `@langchain/langgraph/prebuilt`
 * with one tool (the loopback model calls it, then answers), in child processes with `--import` (ES module app) and
 * `--require` (CommonJS app). That entry point never sets up LangChain's async-local storage, which the hand-built
 * graph of langgraph.test.ts gets from the package's main entry: the run must still be one trace, with the agent's
 * nodes as agent spans, the tool run, and the chat calls under the node that made them — with no line of the app
 * mentioning faultline, and the app's output byte-identical to its run without faultline.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LlmServer } from '../support/llm-server';
import { named, outline, parentOf, runApp, startScriptedServer, type AppRun } from './support';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

let server: LlmServer;
let plain: AppRun;
beforeAll(async () => {
  server = await startScriptedServer();
  plain = await runApp('react-agent.mjs', server);
});
afterAll(() => server?.close());

const SHAPE = [
  'invoke_workflow LangGraph',
  '  invoke_agent agent',
  '    chat gpt-4o',
  '  invoke_agent tools',
  '    execute_tool get_weather',
  '  invoke_agent agent',
  '    chat gpt-4o',
];

describe.each([
  ['--import (ES module app)', 'react-agent.mjs', 'import'],
  ['--require (CommonJS app)', 'react-agent.cjs', 'require'],
] as const)('createReactAgent with a tool, %s', (_title, app, register) => {
  let r: AppRun;
  beforeAll(async () => {
    r = await runApp(app, server, { register });
  });

  it('the app runs as without faultline: the tool is called, then the model answers', () => {
    expect(plain.out.messages).toEqual(['human', 'ai', 'tool', 'ai']);
    expect(r.stdout).toBe(plain.stdout);
  });

  it('one trace: the agent run as a workflow, its nodes as agent spans, the tool span, the chat spans under the agent', () => {
    expect(new Set(r.spans.map((s) => s.traceId)).size).toBe(1);
    const [workflow] = named(r.spans, 'invoke_workflow LangGraph');
    expect(workflow.parentSpanId).toBeUndefined();
    expect(outline(r.spans, workflow)).toEqual(SHAPE);
    const chats = r.spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
    expect(chats).toHaveLength(2);
    for (const c of chats)
      expect(parentOf(r.spans, c)?.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'agent',
      });
    expect(named(r.spans, 'execute_tool get_weather')[0].attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'get_weather',
    });
    expect(r.stderr).not.toMatch(/registerLangChain|internal error/);
  });
});
