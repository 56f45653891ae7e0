/**
 * What a task is when the app declares none (issue 14), through the real openai client and the real OTel SDK with
 * one fixed plan: a plain script is one task (per process), calls under a parent span share their trace's task, an
 * explicit scope wins, `taskScope` chooses otherwise; and a retry of a failed call — the SDK's or the app's own — is
 * the same call again, not a new position.
 */
import { SpanStatusCode, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { processTaskId, withTask } from '../../instrumentation/agents/task';
import { ATTR_FL_FAULT_CALL_INDEX } from '../../instrumentation/semconv';
import { ATTR_FL_FAULT_TASK_ID } from '../../src/inject/record';
import { FaultEngine } from '../../src/inject/engine';
import { createInjector, type Injector } from '../../src/inject/index';
import { parsePlan } from '../../src/plan/load';
import type { FaultPlanInput } from '../../src/plan/schema';
import { loadCorpus } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer, type Reply } from '../support/llm-server';
import { pollSpans } from '../support/otel';
import { callSpans, faultName, injectedEvents } from './harness';

const TEXT = loadCorpus('openai-chat.jsonl').find((r) => r.id === '55dae6f503a5')!;
const ORIGINAL = (TEXT.response as { choices: [{ message: { content: string } }] }).choices[0].message.content;
const CUT = ORIGINAL.slice(0, Math.max(1, Math.floor(ORIGINAL.length * 0.3)));
const OTHER = { ...(TEXT.request as object), messages: [{ role: 'user', content: 'something else' }] };

let server: LlmServer;
let reply: () => Reply = () => corpusReply(TEXT);
beforeAll(async () => {
  server = await startLlmServer(() => reply());
});
afterAll(() => server.close());
beforeEach(() => {
  server.requests.length = 0;
  reply = () => corpusReply(TEXT);
});

interface Stack {
  injector: Injector;
  exporter: InMemorySpanExporter;
}

/** The real stack with one fixed plan (so its taskScope applies), for the duration of `fn`. */
async function withPlan<T>(plan: FaultPlanInput, fn: (s: Stack) => Promise<T>): Promise<T> {
  const exporter = new InMemorySpanExporter();
  const injector = createInjector(plan);
  const provider = new NodeTracerProvider({
    spanProcessors: [injector.spanProcessor, new SimpleSpanProcessor(exporter)],
  });
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  const inst = new FaultlineInstrumentation({ steps: [injector.httpStep], channelSteps: [injector.channelStep] });
  inst.enable();
  try {
    return await fn({ injector, exporter });
  } finally {
    inst.disable();
    await provider.shutdown();
    trace.disable();
    context.disable();
  }
}

const client = (maxRetries = 0) => new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries });
const ask = async (c: OpenAI, body: object = TEXT.request as object) =>
  ((await c.chat.completions.create(body as never)) as unknown as { choices: [{ message: { content: string } }] })
    .choices[0].message.content;
const truncate: FaultPlanInput = { rules: [{ fault: 'llm_truncate_single', match: { operation: 'chat' } }] };
const spansOf = async (s: Stack, n: number) => callSpans(await pollSpans(s.exporter, (x) => callSpans(x).length >= n));

describe('the task of a call when the app declares none', () => {
  it('auto: a plain script (no task scope, no parent span) is one task — llm_truncate_single truncates the first of three calls only', async () => {
    await withPlan(truncate, async (s) => {
      const c = client();
      expect([await ask(c), await ask(c), await ask(c)]).toEqual([CUT, ORIGINAL, ORIGINAL]);
      const spans = await spansOf(s, 3);
      expect(spans.map(faultName)).toEqual(['llm_truncate_single', undefined, undefined]);
      expect(new Set(spans.map((x) => x.spanContext().traceId)).size).toBe(3); // three traces, one task
      expect(injectedEvents(spans[0])[0].attributes?.[ATTR_FL_FAULT_TASK_ID]).toBe(processTaskId());
      expect(s.injector.triggerReport().tasks.map((t) => t.taskId)).toEqual([processTaskId()]);
    });
  });

  it('auto: calls under a parent span belong to its trace — the single fault fires once per trace', async () => {
    await withPlan(truncate, async () => {
      const c = client();
      const tracer = trace.getTracer('app');
      const request = () =>
        tracer.startActiveSpan('handle request', async (span) => {
          try {
            return [await ask(c), await ask(c)];
          } finally {
            span.end();
          }
        });
      expect(await request()).toEqual([CUT, ORIGINAL]);
      expect(await request()).toEqual([CUT, ORIGINAL]);
    });
  });

  it('an explicit task scope wins, whatever the plan says', async () => {
    await withPlan({ ...truncate, taskScope: 'process' }, async () => {
      const c = client();
      expect(await withTask('a', async () => [await ask(c), await ask(c)])).toEqual([CUT, ORIGINAL]);
      expect(await withTask('b', async () => [await ask(c)])).toEqual([CUT]);
      expect(await ask(c)).toBe(CUT); // the process's own task
      expect(await ask(c)).toBe(ORIGINAL);
    });
  });

  it('taskScope "trace": a call without a parent span is its own task (each of three is truncated)', async () => {
    await withPlan({ ...truncate, taskScope: 'trace' }, async (s) => {
      const c = client();
      expect([await ask(c), await ask(c), await ask(c)]).toEqual([CUT, CUT, CUT]);
      expect(s.injector.triggerReport().totalTasks).toBe(3);
    });
  });

  it('taskScope "process": calls under different parent spans are still one task', async () => {
    await withPlan({ ...truncate, taskScope: 'process' }, async () => {
      const c = client();
      const tracer = trace.getTracer('app');
      const inSpan = () =>
        tracer.startActiveSpan('job', async (span) => {
          try {
            return await ask(c);
          } finally {
            span.end();
          }
        });
      expect([await inSpan(), await inSpan()]).toEqual([CUT, ORIGINAL]);
    });
  });
});

describe('a retry of a failed call is the same call, not a new position', () => {
  it('the openai SDK retries a 429 at position 1: the retry keeps position 1, the single fault does not fire again, and the next call is position 2', async () => {
    const plan: FaultPlanInput = {
      rules: [{ fault: 'http_429', params: { retryAfterS: 0 }, match: { operation: 'chat', position: 1 } }],
    };
    await withPlan(plan, async (s) => {
      const c = client(2);
      expect(await ask(c)).toBe(ORIGINAL); // the SDK's retry recovered
      expect(await ask(c)).toBe(ORIGINAL); // a new call (the same request, after a success): position 2
      const spans = await spansOf(s, 3);
      expect(spans.map(faultName)).toEqual(['http_429', undefined, undefined]);
      expect(spans.map((x) => x.attributes['faultline.request.retry_count'])).toEqual([0, 1, 0]);
      expect(s.injector.triggerReport().tasks[0].rules[0]).toMatchObject({ matched: 2, fires: 1 });
    });
  });

  it('a persistent fault at position 1 fails every attempt of that call (the SDK gives up with the error), and leaves the next call alone', async () => {
    const plan: FaultPlanInput = {
      rules: [{ fault: 'http_500', strategy: 'persistent', match: { operation: 'chat', position: 1 } }],
    };
    await withPlan(plan, async (s) => {
      const c = client(2);
      const err = await ask(c).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.InternalServerError);
      expect(await ask(c, OTHER)).toBe(ORIGINAL);
      const spans = await spansOf(s, 4);
      expect(spans.map(faultName)).toEqual(['http_500', 'http_500', 'http_500', undefined]);
      expect(spans.slice(0, 3).map((x) => x.attributes[ATTR_FL_FAULT_CALL_INDEX])).toEqual([1, 1, 1]);
      expect(spans.slice(0, 3).every((x) => x.status.code === SpanStatusCode.ERROR)).toBe(true);
      expect(server.requests).toHaveLength(1); // only the last call reached the server
    });
  });

  it('a client that retries on its own (no retry header: LangChain, the AI SDK) is recognised by the request sent again after a failure', async () => {
    // A real server error the first time, then success: position 2 is the next distinct call, not the retry.
    let n = 0;
    reply = () =>
      n++ === 0
        ? {
            status: 503,
            headers: { 'content-type': 'application/json' },
            body: '{"error":{"message":"overloaded","type":"server_error"}}',
          }
        : corpusReply(TEXT);
    const plan: FaultPlanInput = {
      rules: [{ fault: 'llm_truncate_single', match: { operation: 'chat', position: 2 } }],
    };
    await withPlan(plan, async () => {
      const post = (body: object) =>
        fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      expect((await post(TEXT.request)).status).toBe(503);
      const retried = (await (await post(TEXT.request)).json()) as { choices: [{ message: { content: string } }] };
      expect(retried.choices[0].message.content).toBe(ORIGINAL); // the retry is call 1 again
      const second = (await (await post(OTHER)).json()) as { choices: [{ message: { content: string } }] };
      expect(second.choices[0].message.content).toBe(CUT); // call 2
    });
  });

  it('what is remembered for retries is bounded: past 16 MiB of failed requests the oldest is forgotten (its retry is then a new call)', () => {
    const engine = new FaultEngine(
      parsePlan({ rules: [{ fault: 'http_500', strategy: 'persistent', match: { operation: 'chat' } }] }),
    );
    const attrs = { 'gen_ai.operation.name': 'chat' };
    const call = (task: string, fill: number) => {
      const key = {};
      const request = {
        method: 'POST',
        url: 'http://127.0.0.1/v1/chat/completions',
        body: Buffer.alloc(1024 * 1024, fill),
      };
      const hit = engine.select(attrs, task, { key, request })!.hits[0];
      engine.settle(key, false);
      return hit.callIndex;
    };
    expect(call('a', 1)).toBe(1);
    expect(call('a', 1)).toBe(1); // a retry
    for (let i = 0; i < 17; i++) call(`other-${i}`, 2); // 17 MiB of other tasks' failed calls
    expect(call('a', 1)).toBe(2); // forgotten: a new call
  });
});
