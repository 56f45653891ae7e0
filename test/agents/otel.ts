/**
 * The real OTel SDK for the agents tests: an in-memory exporter behind a simple processor, the async-hooks context
 * manager and the W3C propagator, registered globally (each test file runs in its own process).
 */
import { context, propagation, trace, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { readingExporter } from '../support/otel';

export interface Otel {
  exporter: InMemorySpanExporter;
  provider: BasicTracerProvider;
  spans(): ReadableSpan[];
  /** Poll until `predicate` holds for the finished spans, or fail at the deadline. */
  waitForSpans(predicate: (spans: ReadableSpan[]) => boolean, timeoutMs?: number): Promise<ReadableSpan[]>;
  shutdown(): Promise<void>;
}

export function setupOtel(): Otel {
  const exporter = readingExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return {
    exporter,
    provider,
    spans: () => exporter.getFinishedSpans(),
    async waitForSpans(predicate, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const spans = exporter.getFinishedSpans();
        if (predicate(spans)) return spans;
        if (Date.now() > deadline) {
          throw new Error(
            `spans not as expected after ${timeoutMs} ms; got: ${spans.map((s) => s.name).join(', ') || 'none'}`,
          );
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

export function byName(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1)
    throw new Error(`expected one span "${name}", found ${found.length}: ${spans.map((s) => s.name).join(', ')}`);
  return found[0];
}

export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** Attributes as a plain object (for toMatchObject). */
export function attrs(span: ReadableSpan): Attributes {
  return { ...span.attributes };
}
