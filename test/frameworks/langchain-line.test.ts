/**
 * LangChain loaded before faultline started (so the bridge never saw it load, as with `start()` called late or a
 * bundled app): no run is seen until the one documented line registers the handler, and then runs are.
 */
import * as lcContext from '@langchain/core/context';
import { RunnableLambda } from '@langchain/core/runnables';
import { ChatOpenAI } from '@langchain/openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { enableFrameworks, registerLangChain, type Frameworks } from '../../instrumentation/frameworks';
import type { LlmServer } from '../support/llm-server';
import { parentId, setupOtel, type TestOtel } from '../support/otel';
import { startScriptedServer } from './support';

let otel: TestOtel;
let inst: FaultlineInstrumentation;
let frameworks: Frameworks;
let server: LlmServer;
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

it('registerLangChain(await import("@langchain/core/context")) is the one line that turns the runs into spans', async () => {
  const double = RunnableLambda.from(async (x: number) => x * 2);
  expect(await double.withConfig({ runName: 'before' }).invoke(21)).toBe(42);
  expect(otel.spans().filter((s) => s.name.startsWith('invoke_workflow'))).toEqual([]);

  expect(registerLangChain(lcContext)).toBe(true);
  expect(await double.withConfig({ runName: 'after' }).invoke(21)).toBe(42);
  const spans = await otel.waitForSpans((s) => s.some((x) => x.name === 'invoke_workflow after'));
  expect(spans.find((s) => s.name === 'invoke_workflow after')?.attributes['faultline.task.id']).toMatch(
    /^[0-9a-f-]{36}$/,
  );
});

it('a runnable without a graph: its root run is the workflow span, with the LLM call it makes under it', async () => {
  // The registration holds in the async context it was made in (an app's top level); each test has its own.
  registerLangChain(lcContext);
  const model = new ChatOpenAI({ model: 'gpt-4o', apiKey: 'sk-test', configuration: { baseURL: `${server.url}/v1` } });
  const chain = RunnableLambda.from((q: string) => model.invoke(`Answer briefly: ${q}`)).withConfig({ runName: 'ask' });
  const reply = await chain.invoke('What is the weather in Paris?');
  expect(typeof reply.content).toBe('string');
  const spans = await otel.waitForSpans((s) => s.some((x) => x.name === 'invoke_workflow ask'));
  const root = spans.find((s) => s.name === 'invoke_workflow ask')!;
  const chat = spans.find((s) => s.name === 'chat gpt-4o')!;
  expect(parentId(chat)).toBe(root.spanContext().spanId);
});
