/**
 * The real production stack for diagnosis tests: a global NodeTracerProvider whose first processor is the injector's
 * FaultInjectionSpanProcessor, faultline's instrumentation with the injector's steps and, as `register` wires it, the
 * online detectors (`faultline.detection` events). `captureMessageContent` chooses between the two ways traces reach
 * a diagnoser: content-free spans + online detection events, or captured content read by the offline detectors.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { FaultlineInstrumentation } from '../../../instrumentation';
import { createOnlineDetection } from '../../../detectors/online';
import { createInjector } from '../../../src/inject/index';
import type { FaultPlanInput } from '../../../src/plan/schema';
import { pollSpans } from '../../support/otel';

export interface Stack {
  plan: FaultPlanInput | undefined;
  exporter: InMemorySpanExporter;
  waitForSpans(pred: (spans: ReadableSpan[]) => boolean, timeoutMs?: number): Promise<ReadableSpan[]>;
  shutdown(): Promise<void>;
}

export function setupStack(options: { captureMessageContent: boolean; onlineDetection: boolean }): Stack {
  const exporter = new InMemorySpanExporter();
  const stack = { plan: undefined } as Stack;
  const injector = createInjector(() => stack.plan, { captureMessageContent: options.captureMessageContent });
  const provider = new NodeTracerProvider({
    spanProcessors: [injector.spanProcessor, new SimpleSpanProcessor(exporter)],
  });
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  const online = options.onlineDetection ? createOnlineDetection() : undefined;
  const inst = new FaultlineInstrumentation({
    steps: [injector.httpStep],
    channelSteps: [injector.channelStep],
    captureMessageContent: options.captureMessageContent,
    ...(online ? { onExchangeEnd: online.onExchangeEnd, onDelivery: online.onDelivery } : {}),
  });
  inst.enable();
  return Object.assign(stack, {
    exporter,
    waitForSpans: (pred: (spans: ReadableSpan[]) => boolean, timeoutMs?: number) =>
      pollSpans(exporter, pred, timeoutMs),
    async shutdown() {
      inst.disable();
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  });
}
