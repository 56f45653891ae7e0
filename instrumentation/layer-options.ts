/** What the GenAI span layer is created with (instrumentation/interceptor.ts `createGenAiLayer`). */
import type { Tracer } from '@opentelemetry/api';
import type { GenAiMetrics } from './metrics';
import type { Exchange, ExchangeOutcome, Interceptor } from './types';
import type { ProtocolModule } from './internal-types';

export interface GenAiInterceptorOptions {
  /** The tracer to use, resolved per call so `setTracerProvider` takes effect at once. */
  tracer: () => Tracer;
  /** Record message content (gen_ai.input/output.messages, …). */
  captureContent: () => boolean;
  /** Protocol modules, first match wins. Default: the built-in list. */
  protocols?: readonly ProtocolModule[];
  /** undici interceptors run inside the span layer, outermost first. */
  steps?: readonly Interceptor[];
  onExchangeEnd?: (exchange: Exchange, outcome: ExchangeOutcome) => void;
  /** `host` or `host:port` entries never intercepted. */
  ignoreHosts?: Iterable<string>;
  /**
   * OTLP export requests, as `host:port/path` (see install.ts `otlpExports`): never intercepted. Only these paths on
   * those hosts: an LLM gateway on the OTLP endpoint's host:port is instrumented like any other.
   */
  otlpExports?: Iterable<string>;
  metrics?: GenAiMetrics;
  /** When it returns false every call passes through untouched (instrumentation disabled). */
  enabled?: () => boolean;
  /**
   * Put the call's trace context (the propagators of OTEL_PROPAGATORS: `traceparent`, …) on the requests the layer
   * recognises, unless the application put its own there: so that an agent in another process continues the trace.
   * Off when an HTTP instrumentation below the layer propagates already (instrumentation-undici does).
   */
  propagate?: () => boolean;
}
