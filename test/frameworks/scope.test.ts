/**
 * Framework scopes in process, with the real frameworks loaded after the bridges (as `register` has them): work the
 * app does inside a framework's tool — a `runAgent` turn, a message over faultline's channel — nests under the tool,
 * an LLM call under an app span of its own stays under that span; and a bridge never throws into the framework.
 */
import { trace } from '@opentelemetry/api';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { MessageChannel } from '../../instrumentation/agents/channel';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { resolveTaskId, runWorkflow } from '../../instrumentation/agents/task';
import { enableFrameworks, frameworkContext, type Frameworks } from '../../instrumentation/frameworks';
import { AgentsTraceProcessor } from '../../instrumentation/frameworks/openai-agents';
import { FaultlineCallbackHandler } from '../../instrumentation/frameworks/langchain';
import type { LlmServer } from '../support/llm-server';
import { ours, parentId, setupOtel, type TestOtel } from '../support/otel';
import { startScriptedServer } from './support';

let server: LlmServer;
let otel: TestOtel;
let inst: FaultlineInstrumentation;
let frameworks: Frameworks;
beforeAll(async () => {
  server = await startScriptedServer();
  otel = setupOtel();
  inst = new FaultlineInstrumentation();
  inst.enable();
  frameworks = enableFrameworks({ captureContent: () => false });
});
afterAll(async () => {
  frameworks.disable();
  inst.disable();
  await otel.shutdown();
  await server.close();
});

const byName = (name: string) => otel.spans().filter((s) => s.name === name);
const parentName = (s: ReturnType<TestOtel['spans']>[number]) =>
  otel.spans().find((p) => p.spanContext().spanId === parentId(s))?.name;

describe('inside an OpenAI Agents SDK tool', () => {
  it('a runAgent turn and its LLM call, and a channel message, nest under the tool span; an app span keeps its own calls', async () => {
    const agents = await import('@openai/agents');
    agents.setOpenAIAPI('chat_completions');
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
    agents.setDefaultOpenAIClient(client);
    agents.setTraceProcessors([]); // no OpenAI export (faultline's processor comes back by itself)
    agents.setTracingDisabled(false); // the SDK turns its tracing off when NODE_ENV=test, as under vitest
    const channel = new MessageChannel();
    const getWeather = agents.tool({
      name: 'get_weather',
      description: 'Get the current weather in a given location',
      parameters: {
        type: 'object',
        properties: { location: { type: 'string' } },
        required: ['location'],
        additionalProperties: false,
      },
      strict: true,
      execute: async (input: unknown) => {
        const { location } = input as { location: string };
        await runAgent('forecaster', () =>
          client.chat.completions.create({
            model: 'gpt-4o-mini',
            messages: [{ role: 'user', content: `forecast for ${location}` }],
          }),
        );
        await channel.send({ source: 'planner', target: 'archive', payload: { location } });
        await trace.getTracer('app').startActiveSpan('app lookup', async (span) => {
          await client.chat.completions.create({
            model: 'gpt-4o-nano',
            messages: [{ role: 'user', content: 'lookup' }],
          });
          span.end();
        });
        return `sunny in ${location}`;
      },
    });
    const planner = new agents.Agent({
      name: 'planner',
      instructions: 'Look up the weather.',
      model: 'gpt-4.1-mini',
      tools: [getWeather],
    });
    const result = await agents.run(planner, 'What is the weather in Paris?');
    expect(typeof result.finalOutput).toBe('string');

    await otel.waitForSpans((s) => s.some((x) => x.name === 'invoke_workflow Agent workflow'));
    expect(parentName(byName('invoke_agent forecaster')[0])).toBe('execute_tool get_weather');
    expect(parentName(byName('chat gpt-4o-mini')[0])).toBe('invoke_agent forecaster');
    expect(parentName(byName('handoff archive')[0])).toBe('execute_tool get_weather');
    expect(byName('handoff archive')[0].attributes['faultline.message.source']).toBe('planner');
    // The app's own span is the OTel SDK's to place (OpenTelemetry's context does not know the SDK's current span:
    // docs/frameworks.md), and an LLM call under it stays under it.
    expect(parentName(byName('app lookup')[0])).toBeUndefined();
    expect(parentName(byName('chat gpt-4o-nano')[0])).toBe('app lookup');
    expect(
      ours(otel.spans())
        .filter((s) => s.name === 'chat gpt-4.1-mini')
        .map(parentName),
    ).toEqual(['invoke_agent planner', 'invoke_agent planner']);
  });

  it('a tool that throws (the SDK reports the error to the model) is an execute_tool span with error.type tool_error', async () => {
    const agents = await import('@openai/agents');
    const failing = agents.tool({
      name: 'get_weather',
      description: 'Get the current weather in a given location',
      parameters: {
        type: 'object',
        properties: { location: { type: 'string' } },
        required: ['location'],
        additionalProperties: false,
      },
      strict: true,
      execute: async () => {
        throw new Error('weather service down');
      },
    });
    const result = await agents.run(
      new agents.Agent({ name: 'unlucky', instructions: 'Look up the weather.', model: 'gpt-4o', tools: [failing] }),
      'Paris?',
    );
    expect(typeof result.finalOutput).toBe('string');
    const spans = await otel.waitForSpans((s) => s.some((x) => x.name === 'invoke_agent unlucky'));
    const tool = spans.filter(
      (s) => s.name === 'execute_tool get_weather' && parentName(s) === 'invoke_agent unlucky',
    )[0];
    expect(tool.attributes['error.type']).toBe('tool_error');
    expect(tool.status.code).toBe(2);
  });

  it('a run is its own task, unless started inside a declared one: then it is part of it', async () => {
    const agents = await import('@openai/agents');
    const seen: string[] = [];
    const probe = agents.tool({
      name: 'get_weather',
      description: 'Get the current weather in a given location',
      parameters: {
        type: 'object',
        properties: { location: { type: 'string' } },
        required: ['location'],
        additionalProperties: false,
      },
      strict: true,
      execute: async () => {
        seen.push(resolveTaskId(frameworkContext()));
        return 'sunny';
      },
    });
    const agent = new agents.Agent({
      name: 'prober',
      instructions: 'Look up the weather.',
      model: 'gpt-4o',
      tools: [probe],
    });
    await agents.run(agent, 'Paris?');
    await runWorkflow('outer', () => agents.run(agent, 'Paris?'), { taskId: 'outer-task' });
    expect(seen[0]).toMatch(/^trace_[0-9a-f]{32}$/);
    expect(seen[1]).toBe('outer-task');
    const spans = await otel.waitForSpans((s) => s.some((x) => x.name === 'invoke_workflow outer'));
    const inner = spans.filter(
      (s) => s.name === 'invoke_workflow Agent workflow' && parentName(s) === 'invoke_workflow outer',
    );
    expect(inner).toHaveLength(1);
    expect(inner[0].attributes['faultline.task.id']).toBeUndefined(); // the task is the declared one, on the outer span
  });

  it('a processor call with data the bridge cannot read is logged, never thrown into the SDK', async () => {
    const processor = new AgentsTraceProcessor({ captureContent: () => false });
    await expect(processor.onSpanStart(null as never)).resolves.toBeUndefined();
    await expect(processor.onSpanEnd({ spanId: 'x' } as never)).resolves.toBeUndefined();
    await expect(processor.onTraceStart(undefined as never)).resolves.toBeUndefined();
    const handler = new FaultlineCallbackHandler({ captureContent: () => false });
    await expect(handler.handleChainStart(undefined, {}, undefined as never)).resolves.toBeUndefined();
    await expect(handler.handleToolError(new Error('x'), 'unknown-run')).resolves.toBeUndefined();
  });
});
