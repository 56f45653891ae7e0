/**
 * The real OTel SDK for tests: a global NodeTracerProvider with an InMemorySpanExporter, and a deadline poll for
 * spans (never a fixed sleep).
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { flushExchanges } from '../../instrumentation/interceptor';

export interface TestOtel {
  exporter: InMemorySpanExporter;
  provider: NodeTracerProvider;
  spans(): ReadableSpan[];
  /** Poll until `pred(spans)` holds or the deadline passes; returns the spans (the caller asserts). */
  waitForSpans(pred: (spans: ReadableSpan[]) => boolean, timeoutMs?: number): Promise<ReadableSpan[]>;
  shutdown(): Promise<void>;
}

export function setupOtel(): TestOtel {
  const exporter = readingExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  return {
    exporter,
    provider,
    spans: () => exporter.getFinishedSpans(),
    waitForSpans: (pred, timeoutMs) => pollSpans(exporter, pred, timeoutMs),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}

/**
 * An in-memory exporter whose readers see what a flush would: the span layer ends a call's span once the application
 * has had its answer (the reading runs just after), and runtime.forceFlush() settles those before flushing. Reading
 * (or resetting) the exporter does the same first, so a test reads the spans of the calls it awaited.
 */
export function readingExporter(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  const finished = exporter.getFinishedSpans.bind(exporter);
  const reset = exporter.reset.bind(exporter);
  exporter.getFinishedSpans = () => {
    flushExchanges();
    return finished();
  };
  exporter.reset = () => {
    flushExchanges();
    reset();
  };
  return exporter;
}

/** Poll the exporter until `pred(spans)` holds or the deadline passes; returns the spans (the caller asserts). */
export async function pollSpans(
  exporter: InMemorySpanExporter,
  pred: (spans: ReadableSpan[]) => boolean,
  timeoutMs = 5000,
): Promise<ReadableSpan[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const spans = exporter.getFinishedSpans();
    if (pred(spans) || Date.now() > deadline) return spans;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Spans of our scope (`faultline`). */
export function ours(spans: ReadableSpan[]): ReadableSpan[] {
  return spans.filter((s) => s.instrumentationScope.name === 'faultline');
}

export function parentId(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
