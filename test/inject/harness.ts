/**
 * The real stack for injection tests: a global NodeTracerProvider whose first processor is the injector's
 * FaultInjectionSpanProcessor, faultline's instrumentation with the injector's HTTP and channel steps, and a plan per
 * task (each test runs its calls in its own `withTask` scope, so per-task state starts fresh).
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { FaultlineInstrumentation } from '../../instrumentation';
import { withTask } from '../../instrumentation/agents/task';
import { ATTR_FL_FAULT_NAME, EVENT_FL_FAULT_INJECTED } from '../../instrumentation/semconv';
import { createInjector, type Injector } from '../../src/inject/index';
import type { FaultPlanInput } from '../../src/plan/schema';
import { pollSpans } from '../support/otel';
import { readingExporter } from '../support/otel';

export interface Harness {
  injector: Injector;
  exporter: InMemorySpanExporter;
  /** The plan every new task gets (set per test). */
  plan: FaultPlanInput | undefined;
  /** Run `fn` as a fresh task under `plan` (tasks may run concurrently, each under its own plan). */
  task<T>(plan: FaultPlanInput | undefined, fn: (taskId: string) => Promise<T>): Promise<{ result: T; taskId: string }>;
  waitForSpans(pred: (spans: ReadableSpan[]) => boolean, timeoutMs?: number): Promise<ReadableSpan[]>;
  shutdown(): Promise<void>;
}

let n = 0;

export function setupHarness(options: { sampler?: Sampler; captureMessageContent?: boolean } = {}): Harness {
  const exporter = readingExporter();
  const h = { plan: undefined as FaultPlanInput | undefined } as Harness;
  // Each task keeps the plan it was started with, so tasks with different plans may run at once.
  const plans = new Map<string, FaultPlanInput | undefined>();
  const injector = createInjector((taskId) => (plans.has(taskId) ? plans.get(taskId) : h.plan), {
    captureMessageContent: options.captureMessageContent ?? false,
  });
  const provider = new NodeTracerProvider({
    spanProcessors: [injector.spanProcessor, new SimpleSpanProcessor(exporter)],
    ...(options.sampler ? { sampler: options.sampler } : {}),
  });
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  const inst = new FaultlineInstrumentation({
    steps: [injector.httpStep],
    channelSteps: [injector.channelStep],
    captureMessageContent: false,
  });
  inst.enable();
  Object.assign(h, {
    injector,
    exporter,
    async task<T>(plan: FaultPlanInput | undefined, fn: (taskId: string) => Promise<T>) {
      h.plan = plan;
      const taskId = `task-${process.pid}-${++n}`;
      plans.set(taskId, plan);
      const result = await withTask(taskId, () => fn(taskId));
      return { result, taskId };
    },
    waitForSpans: (pred: (spans: ReadableSpan[]) => boolean, timeoutMs?: number) =>
      pollSpans(exporter, pred, timeoutMs),
    async shutdown() {
      inst.disable();
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  });
  return h;
}

/** Our call spans (scope faultline) with an operation, in start order. */
export function callSpans(spans: ReadableSpan[]): ReadableSpan[] {
  return spans
    .filter((s) => s.instrumentationScope.name === 'faultline' && s.attributes['gen_ai.operation.name'] !== undefined)
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
}

export function faultName(span: ReadableSpan): string | undefined {
  const v = span.attributes[ATTR_FL_FAULT_NAME];
  return typeof v === 'string' ? v : undefined;
}

export function injectedEvents(span: ReadableSpan) {
  return span.events.filter((e) => e.name === EVENT_FL_FAULT_INJECTED);
}
