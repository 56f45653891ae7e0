/**
 * The OpenTelemetry trace (and metrics) SDK for `register` and `start()`, from the resolved configuration's export
 * section (src/config.ts).
 *
 * Wired by hand rather than through `@opentelemetry/sdk-node`'s NodeSDK: NodeSDK loads every exporter it could use
 * (gRPC, Zipkin, Prometheus, logs: about 1,570 modules and 1.5–2 s before the app's first line, bench/startup), where
 * this loads only the exporters the configuration names. It honours the same variables for what it supports:
 *
 *  - The SDK parts read their own variables, as under NodeSDK: OTEL_TRACES_SAMPLER(_ARG) and the span limits
 *    (the tracer provider), OTEL_BSP_* (the batch span processor), OTEL_EXPORTER_OTLP_* endpoint, headers, timeout,
 *    compression and certificates (the OTLP exporter).
 *  - Resolved in src/config.ts: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER (otlp, console, none, and faultline's file),
 *    OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL (http/protobuf, http/json), OTEL_METRICS_EXPORTER (otlp, console),
 *    OTEL_METRIC_EXPORT_INTERVAL, OTEL_NODE_RESOURCE_DETECTORS (env, host, os, process, serviceinstance, all, none),
 *    OTEL_PROPAGATORS (tracecontext, baggage, none), OTEL_LOG_LEVEL (a console diag logger, as NodeSDK sets).
 *  - Not supported (no exporter package is a dependency): gRPC, Zipkin, Prometheus, the b3 and jaeger propagators;
 *    asking for one gets a line on stderr. The default resource detector is `env` alone, where NodeSDK also runs
 *    `process` and `host`: the process detector records the command line, which can carry credentials.
 *
 * An app that already registered a tracer provider keeps it: we add only our instrumentation. SDK 2.x providers take
 * their processors at construction, so extra span processors cannot be attached then; we say so through diag.
 * Export goes through node:http, so it never passes our undici layer.
 *
 * Lose no data: every span still open can be ended as interrupted (`endOpenSpans`), and `flushSync()` hands every
 * buffered span to the exporters synchronously (the batch processor exports at once when the exporter is
 * synchronous, as the file exporter is), then sends what the OTLP exporter still holds from a child process. That is
 * what the `exit` path can do (src/exit-hooks.ts).
 */
import { diag, DiagConsoleLogger, metrics, trace, type Attributes, type TracerProvider } from '@opentelemetry/api';
import {
  CompositePropagator,
  diagLogLevelFromString,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  osDetector,
  processDetector,
  resourceFromAttributes,
  serviceInstanceIdDetector,
  type Resource,
  type ResourceDetector,
} from '@opentelemetry/resources';
import type { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { ExportConfig, ResourceDetectorName } from './config';
import { logger } from './diag';
import { ExitSafeExporter, type ExitSendResult, type Undelivered } from './exporters/exit-safe';
import { FileSpanExporter } from './exporters/file-exporter';
import { OpenSpansProcessor } from './exporters/open-spans';

const log = logger('sdk');

export interface SdkOptions {
  /** Span processors put FIRST, before the exporters' (the fault plan's processor marks spans at start). */
  spanProcessors?: SpanProcessor[];
  /** Wrap the sampler built from OTEL_TRACES_SAMPLER (a wrapper sees every span, sampled or not). */
  sampler?: (base: Sampler) => Sampler;
  /** Extra resource attributes (lowest precedence after the SDK defaults; the env wins). */
  resourceAttributes?: Attributes;
}

export interface SyncFlushResult {
  /** Spans ended as interrupted. */
  interrupted: number;
  /** What the OTLP exporter sent from the child process, when it held anything. */
  otlp?: ExitSendResult;
  /** Spans OTLP still held at exit that did not reach the endpoint (not sent, or the exit-time send failed). */
  unsent: number;
}

export interface SdkHandle {
  /** The provider we registered, when we registered one. */
  tracerProvider?: NodeTracerProvider;
  meterProvider?: MeterProvider;
  /** True when the app had already registered a tracer provider (we left it alone). */
  external: boolean;
  /** Absolute path of the trace file, when spans go to one. */
  tracesFile?: string;
  /** End the spans still open as interrupted by `reason` (our provider's only). */
  endOpenSpans(reason: string): number;
  /**
   * Hand every buffered span to the exporters and send what OTLP still holds, synchronously (the exit path); with
   * `send` false (the deadline passed), what OTLP holds goes straight to the trace-file fallback.
   */
  flushSync(timeoutMs: number, send?: boolean): SyncFlushResult;
  /**
   * OTLP spans not delivered: `pending` still unanswered, `failed` refused or timed out; `lost` in all, `kept` of them
   * in the fallback `file` (undefined when the file exporter runs too: the trace file has every span).
   */
  undelivered(): { pending: number; failed: number } & Undelivered;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** The delegate of the global ProxyTracerProvider, when an SDK (not the no-op) is registered. */
export function registeredTracerProvider(): TracerProvider | undefined {
  const global = trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
  const delegate = typeof global.getDelegate === 'function' ? global.getDelegate() : global;
  return delegate.constructor?.name === 'NoopTracerProvider' ? undefined : delegate;
}

const DETECTORS: Record<ResourceDetectorName, ResourceDetector> = {
  env: envDetector,
  host: hostDetector,
  os: osDetector,
  process: processDetector,
  serviceinstance: serviceInstanceIdDetector,
};

function otlpTraceExporter(config: ExportConfig): SpanExporter {
  const options = {
    ...(config.otlp.tracesUrl ? { url: config.otlp.tracesUrl } : {}),
    ...(config.otlp.headers ? { headers: { ...config.otlp.headers } } : {}),
  };
  // Loaded only when OTLP is configured: each exporter package is about 200 modules.
  if (config.otlp.protocol === 'http/json') {
    const { OTLPTraceExporter } =
      require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter(options);
  }
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter(options);
}

interface Exporting {
  processors: SpanProcessor[];
  batches: BatchSpanProcessor[];
  otlp: ExitSafeExporter[];
  tracesFile?: string;
}

function exporting(config: ExportConfig): Exporting {
  const out: Exporting = { processors: [], batches: [], otlp: [] };
  // What the OTLP endpoint does not take goes to the trace file, unless the file exporter writes every span there.
  const fallback = config.traces.includes('file')
    ? undefined
    : new FileSpanExporter({ path: config.file, announce: false });
  for (const name of config.traces) {
    if (name === 'console') {
      out.processors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
      continue;
    }
    let exporter: SpanExporter;
    if (name === 'otlp') {
      const safe = new ExitSafeExporter(otlpTraceExporter(config), {
        protocol: config.otlp.protocol,
        ...(config.otlp.tracesUrl ? { url: config.otlp.tracesUrl } : {}),
        ...(config.otlp.headers ? { headers: config.otlp.headers } : {}),
        ...(fallback ? { fallback } : {}),
      });
      out.otlp.push(safe);
      exporter = safe;
    } else {
      const file = new FileSpanExporter({ path: config.file });
      out.tracesFile = file.path;
      exporter = file;
    }
    const batch = new BatchSpanProcessor(exporter);
    out.batches.push(batch);
    out.processors.push(batch);
  }
  return out;
}

function meterProviderFor(config: ExportConfig, resource: Resource): MeterProvider | undefined {
  if (config.metrics.length === 0) return undefined;
  if ((metrics.getMeterProvider() as { constructor?: { name?: string } }).constructor?.name !== 'NoopMeterProvider')
    return undefined;
  const sdk = require('@opentelemetry/sdk-metrics') as typeof import('@opentelemetry/sdk-metrics');
  const readers = config.metrics.map((name) => {
    let exporter: import('@opentelemetry/sdk-metrics').PushMetricExporter;
    if (name === 'otlp') {
      const { OTLPMetricExporter } =
        require('@opentelemetry/exporter-metrics-otlp-http') as typeof import('@opentelemetry/exporter-metrics-otlp-http');
      exporter = new OTLPMetricExporter({
        ...(config.otlp.metricsUrl ? { url: config.otlp.metricsUrl } : {}),
        ...(config.otlp.headers ? { headers: { ...config.otlp.headers } } : {}),
      });
    } else exporter = new sdk.ConsoleMetricExporter();
    return new sdk.PeriodicExportingMetricReader({ exporter, exportIntervalMillis: config.metricIntervalMs });
  });
  const provider = new sdk.MeterProvider({ resource, readers });
  metrics.setGlobalMeterProvider(provider);
  return provider;
}

/** OTEL_PROPAGATORS as NodeSDK reads it; nothing set keeps the SDK default (tracecontext and baggage). */
function propagator(config: ExportConfig): NonNullable<Parameters<NodeTracerProvider['register']>[0]> {
  if (config.propagators === undefined) return {};
  const made = config.propagators.map((n) =>
    n === 'tracecontext' ? new W3CTraceContextPropagator() : new W3CBaggagePropagator(),
  );
  if (made.length === 0) return { propagator: null };
  return { propagator: made.length === 1 ? made[0]! : new CompositePropagator({ propagators: made }) };
}

const NOOP: SdkHandle = {
  external: false,
  endOpenSpans: () => 0,
  flushSync: () => ({ interrupted: 0, unsent: 0 }),
  undelivered: () => ({ pending: 0, failed: 0, lost: 0, kept: 0 }),
  forceFlush: async () => {},
  shutdown: async () => {},
};

/** Set up (or adopt) the SDK. Never throws for configuration problems: they are reported. */
export function setupSdk(config: ExportConfig, options: SdkOptions = {}): SdkHandle {
  if (config.sdkDisabled) return NOOP;

  const existing = registeredTracerProvider();
  if (!existing && config.logLevel) {
    const level = diagLogLevelFromString(config.logLevel);
    if (level !== undefined) diag.setLogger(new DiagConsoleLogger(), { logLevel: level });
  }

  const resource = defaultResource()
    .merge(resourceFromAttributes(options.resourceAttributes ?? {}))
    .merge(detectResources({ detectors: config.resourceDetectors.map((n) => DETECTORS[n]) }));
  const meterProvider = meterProviderFor(config, resource);
  const withMeters = (h: SdkHandle): SdkHandle =>
    meterProvider
      ? {
          ...h,
          meterProvider,
          forceFlush: async () => {
            await Promise.all([h.forceFlush(), meterProvider.forceFlush()]);
          },
          shutdown: async () => {
            await Promise.all([h.shutdown(), meterProvider.shutdown()]);
          },
        }
      : h;

  if (existing) {
    if (options.spanProcessors?.length) {
      log.warn(
        'a tracer provider was already registered by the application; faultline span processors were not attached to it',
      );
    }
    const flushable = existing as TracerProvider & { forceFlush?: () => Promise<void> };
    return withMeters({
      ...NOOP,
      external: true,
      // The app's own processors get their buffers handed over too (synchronous exporters write at once).
      flushSync: () => {
        void flushable.forceFlush?.().catch(() => {});
        return { interrupted: 0, unsent: 0 };
      },
      forceFlush: () => flushable.forceFlush?.() ?? Promise.resolve(),
    });
  }

  const out = exporting(config);
  const open = new OpenSpansProcessor();
  const sampler = options.sampler
    ? // The sampler the provider would build from OTEL_TRACES_SAMPLER, built by the same SDK function.
      options.sampler(
        (
          require('@opentelemetry/sdk-trace-base/build/src/config') as { buildSamplerFromEnv(): Sampler }
        ).buildSamplerFromEnv(),
      )
    : undefined;
  const provider = new NodeTracerProvider({
    resource,
    ...(sampler ? { sampler } : {}),
    spanProcessors: [open, ...(options.spanProcessors ?? []), ...out.processors],
  });
  provider.register(propagator(config));
  const handle: SdkHandle = {
    tracerProvider: provider,
    external: false,
    endOpenSpans: (reason) => open.endAll(reason),
    flushSync(timeoutMs, send = true) {
      // A batch processor's forceFlush hands its buffer to the exporter before it returns (it schedules nothing when
      // the resource has no pending attributes); the promise only reports the export's end.
      for (const o of out.otlp) o.holdForExit();
      for (const b of out.batches) b.forceFlush().catch(() => {});
      const result: SyncFlushResult = { interrupted: 0, unsent: 0 };
      for (const o of out.otlp) {
        if (!send) {
          result.unsent += o.keepPendingSync();
          continue;
        }
        const sent = o.sendPendingSync(timeoutMs);
        if (sent.spans > 0) result.otlp = sent;
        if (!sent.ok) result.unsent += sent.spans;
      }
      return result;
    },
    undelivered() {
      const total: { pending: number; failed: number } & Undelivered = { pending: 0, failed: 0, lost: 0, kept: 0 };
      for (const o of out.otlp) {
        const u = o.undelivered;
        total.pending += o.pendingSpans;
        total.failed += o.failedSpans;
        total.lost += u.lost;
        total.kept += u.kept;
        if (u.file) total.file = u.file;
      }
      return total;
    },
    forceFlush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
  if (out.tracesFile !== undefined) handle.tracesFile = out.tracesFile;
  return withMeters(handle);
}
