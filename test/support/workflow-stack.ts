/**
 * The real stack for workflow tests (monitors, checkpoints, verification): the OTel SDK with the fault plan's span
 * processor first and an in-memory exporter, faultline's instrumentation with the guard step outside the fault step,
 * and online detection on exchange end, delivery and workflow events — as `faultline/register` wires them.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { FaultlineInstrumentation } from '../../instrumentation';
import { createOnlineDetection } from '../../detectors/online';
import { createGuards, type GuardConfigSource, type GuardOptions } from '../../detectors/guards/index';
import { createInjector } from '../../src/inject/index';
import type { FaultPlanInput } from '../../src/plan/schema';
import type { TraceRecord } from '../../src/traces/model';
import { pollSpans } from './otel';
import { toTraces } from './to-traces';

export interface WorkflowStack {
  plan: FaultPlanInput | undefined;
  guards: GuardConfigSource | undefined;
  exporter: InMemorySpanExporter;
  /** Wait until a span matching `pred` has ended, then return the finished spans. */
  waitFor(pred: (s: ReadableSpan) => boolean, timeoutMs?: number): Promise<ReadableSpan[]>;
  /** The finished spans of one trace as the offline readers see them. */
  trace(traceId: string): TraceRecord;
  reset(): void;
  shutdown(): Promise<void>;
}

export function setupWorkflowStack(options: { capture?: boolean; guardOptions?: GuardOptions } = {}): WorkflowStack {
  const exporter = new InMemorySpanExporter();
  const stack = { plan: undefined, guards: undefined } as unknown as WorkflowStack;
  const injector = createInjector(() => stack.plan, { captureMessageContent: options.capture ?? true });
  const provider = new NodeTracerProvider({
    spanProcessors: [injector.spanProcessor, new SimpleSpanProcessor(exporter)],
  });
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  const guards = createGuards((taskId) => (typeof stack.guards === 'function' ? stack.guards(taskId) : stack.guards), {
    exportHealth: false,
    ...options.guardOptions,
  });
  const online = createOnlineDetection();
  const inst = new FaultlineInstrumentation({
    steps: [guards.httpStep, injector.httpStep],
    channelSteps: [guards.channelStep, injector.channelStep],
    onExchangeEnd: online.onExchangeEnd,
    onDelivery: online.onDelivery,
    onWorkflowEvent: online.onWorkflowEvent,
    captureMessageContent: options.capture ?? true,
  });
  inst.enable();
  Object.assign(stack, {
    exporter,
    waitFor: (pred: (s: ReadableSpan) => boolean, timeoutMs?: number) =>
      pollSpans(exporter, (spans) => spans.some(pred), timeoutMs),
    trace: (traceId: string) =>
      toTraces(exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId))[0] ?? {
        traceId,
        spans: [],
      },
    reset: () => exporter.reset(),
    async shutdown() {
      inst.disable();
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  });
  return stack;
}

/** A `faultline.detection` event's attributes, for assertions. */
export function detections(span: ReadableSpan): Array<Record<string, unknown>> {
  return span.events.filter((e) => e.name === 'faultline.detection').map((e) => ({ ...e.attributes }));
}

export function checkpointActions(span: ReadableSpan): string[] {
  return span.events
    .filter((e) => e.name === 'faultline.checkpoint')
    .map(
      (e) =>
        `${String(e.attributes?.['faultline.checkpoint.action'])}:${String(e.attributes?.['faultline.checkpoint.name'])}`,
    );
}
