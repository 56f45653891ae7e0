/**
 * The real stack for guard tests: the OTel SDK with the fault plan's span processor first, faultline's
 * instrumentation with the steps in the agreed order (guard outermost, then fault), online detection on exchange end
 * and delivery, and a plan and guard config per task.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { FaultlineInstrumentation } from '../../instrumentation';
import { withTask } from '../../instrumentation/agents/task';
import { createOnlineDetection } from '../../detectors/online';
import { createGuards, type GuardConfigSource, type GuardOptions, type Guards } from '../../detectors/guards/index';
import type { MessageContract } from '../../detectors/types';
import { createInjector } from '../../src/inject/index';
import type { FaultPlanInput } from '../../src/plan/schema';
import { pollSpans } from '../support/otel';
import { readingExporter } from '../support/otel';

export interface GuardHarness {
  guards: Guards;
  exporter: InMemorySpanExporter;
  plan: FaultPlanInput | undefined;
  config: GuardConfigSource | undefined;
  task<T>(plan: FaultPlanInput | undefined, fn: () => Promise<T>): Promise<{ result: T; taskId: string }>;
  waitForSpans(pred: (spans: ReadableSpan[]) => boolean, timeoutMs?: number): Promise<ReadableSpan[]>;
  shutdown(): Promise<void>;
}

let n = 0;

export function setupGuardHarness(options: GuardOptions & { contracts?: MessageContract[] } = {}): GuardHarness {
  const exporter = readingExporter();
  const h = { plan: undefined, config: undefined } as unknown as GuardHarness;
  const injector = createInjector(() => h.plan, { captureMessageContent: false });
  const provider = new NodeTracerProvider({
    spanProcessors: [injector.spanProcessor, new SimpleSpanProcessor(exporter)],
  });
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  // The guard config is resolved per task, as the campaign runner does.
  const guards = createGuards((taskId) => (typeof h.config === 'function' ? h.config(taskId) : h.config), options);
  const online = createOnlineDetection(options.contracts ? { contracts: options.contracts } : {});
  const inst = new FaultlineInstrumentation({
    steps: [guards.httpStep, injector.httpStep],
    channelSteps: [guards.channelStep, injector.channelStep],
    onExchangeEnd: online.onExchangeEnd,
    onDelivery: online.onDelivery,
    captureMessageContent: false,
  });
  inst.enable();
  Object.assign(h, {
    guards,
    exporter,
    async task<T>(plan: FaultPlanInput | undefined, fn: () => Promise<T>) {
      h.plan = plan;
      const taskId = `guard-task-${process.pid}-${++n}`;
      const result = await withTask(taskId, fn);
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

export function guardEvents(span: ReadableSpan): Array<{ action: string; reason: string }> {
  return span.events
    .filter((e) => e.name === 'faultline.guard')
    .map((e) => ({
      action: String(e.attributes?.['faultline.guard.action']),
      reason: String(e.attributes?.['faultline.guard.reason']),
    }));
}

export function chatSpans(spans: ReadableSpan[]): ReadableSpan[] {
  return spans.filter(
    (s) => s.instrumentationScope.name === 'faultline' && s.attributes['gen_ai.operation.name'] === 'chat',
  );
}

export { spanRecord as toRecord } from '../support/to-traces';

/** The error chain of a thrown value (SDK error → fetch TypeError → our coded error). */
export function causes(e: unknown): unknown[] {
  const out: unknown[] = [];
  for (let x: unknown = e, i = 0; x !== undefined && x !== null && i < 8; x = (x as { cause?: unknown }).cause, i++)
    out.push(x);
  return out;
}
