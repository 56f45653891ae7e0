/**
 * OpenTelemetry SDK setup from the standard OTEL_* environment, for `register` and `start()`.
 *
 *  - OTEL_SDK_DISABLED=true: no SDK (our instrumentation still runs and emits through the no-op API).
 *  - An app that already registered a tracer provider keeps it: we add only our instrumentation. SDK 2.x providers
 *    take their processors at construction (no `addSpanProcessor`), so extra span processors cannot be attached
 *    then; we say so through diag and the fault layer must select calls through its own hook.
 *  - Traces go to OTEL_TRACES_EXPORTER (otlp | console | none | file, comma-separated). With no exporter and no
 *    OTLP endpoint configured they go to ./faultline-traces.jsonl (FAULTLINE_TRACES_FILE) as OTLP/JSON lines.
 *  - OTLP protocol: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL, http/protobuf (default) or
 *    http/json; the exporters read their endpoint and headers variables themselves. Export goes through node:http,
 *    so it never passes our undici layer.
 *  - Metrics: when OTEL_METRICS_EXPORTER is otlp or console and no meter provider is registered yet.
 */
import { diag, metrics, trace, type Attributes, type TracerProvider } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter as OTLPJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { ConsoleMetricExporter, MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { envBool, logger } from './diag';
import { DEFAULT_TRACES_FILE, FileSpanExporter } from './exporters/file-exporter';

const log = logger('sdk');

export interface SdkOptions {
  env?: NodeJS.ProcessEnv;
  /** Span processors put FIRST, before the exporters' (the fault plan's processor marks spans at start). */
  spanProcessors?: SpanProcessor[];
  /** Wrap the sampler built from OTEL_TRACES_SAMPLER (a wrapper sees every span, sampled or not). */
  sampler?: (base: Sampler) => Sampler;
  /** Extra resource attributes (lowest precedence after the SDK defaults; the env wins). */
  resourceAttributes?: Attributes;
}

export interface SdkHandle {
  /** The provider we registered, when we registered one. */
  tracerProvider?: NodeTracerProvider;
  meterProvider?: MeterProvider;
  /** True when the app had already registered a tracer provider (we left it alone). */
  external: boolean;
  /** Absolute path of the trace file, when spans go to one. */
  tracesFile?: string;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** The delegate of the global ProxyTracerProvider, when an SDK (not the no-op) is registered. */
export function registeredTracerProvider(): TracerProvider | undefined {
  const global = trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
  const delegate = typeof global.getDelegate === 'function' ? global.getDelegate() : global;
  return delegate.constructor?.name === 'NoopTracerProvider' ? undefined : delegate;
}

function list(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
}

export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on';
  const arg = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1');
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    default:
      diag.warn(`faultline: unknown OTEL_TRACES_SAMPLER=${JSON.stringify(name)}, using parentbased_always_on`);
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function otlpTraceExporter(env: NodeJS.ProcessEnv): SpanExporter {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf').trim().toLowerCase();
  if (protocol === 'http/json') return new OTLPJsonTraceExporter();
  if (protocol !== 'http/protobuf') {
    diag.warn(`faultline: OTLP protocol ${JSON.stringify(protocol)} is not supported, using http/protobuf`);
  }
  return new OTLPProtoTraceExporter();
}

function traceProcessors(env: NodeJS.ProcessEnv): { processors: SpanProcessor[]; tracesFile?: string } {
  const configured = list(env.OTEL_TRACES_EXPORTER);
  const hasEndpoint = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
  const fileEnv = env.FAULTLINE_TRACES_FILE?.trim();
  const names = configured.length > 0 ? configured : hasEndpoint ? ['otlp'] : ['file'];
  if (fileEnv && !names.includes('file')) names.push('file');
  const processors: SpanProcessor[] = [];
  let tracesFile: string | undefined;
  for (const name of names) {
    if (name === 'none') continue;
    if (name === 'otlp') processors.push(new BatchSpanProcessor(otlpTraceExporter(env)));
    else if (name === 'console') processors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
    else if (name === 'file') {
      const exporter = new FileSpanExporter({ path: fileEnv || DEFAULT_TRACES_FILE });
      tracesFile = exporter.path;
      processors.push(new BatchSpanProcessor(exporter));
    } else diag.warn(`faultline: unknown OTEL_TRACES_EXPORTER value ${JSON.stringify(name)} ignored`);
  }
  return tracesFile !== undefined ? { processors, tracesFile } : { processors };
}

function meterProviderFromEnv(env: NodeJS.ProcessEnv, resource: ReturnType<typeof defaultResource>): MeterProvider | undefined {
  const names = list(env.OTEL_METRICS_EXPORTER).filter((n) => n !== 'none');
  if (names.length === 0) return undefined;
  if ((metrics.getMeterProvider() as { constructor?: { name?: string } }).constructor?.name !== 'NoopMeterProvider') return undefined;
  const readers = [];
  for (const name of names) {
    let exporter: PushMetricExporter | undefined;
    if (name === 'otlp') exporter = new OTLPMetricExporter();
    else if (name === 'console') exporter = new ConsoleMetricExporter();
    else diag.warn(`faultline: unsupported OTEL_METRICS_EXPORTER value ${JSON.stringify(name)} ignored`);
    if (exporter) {
      const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL ?? '60000');
      readers.push(new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: Number.isFinite(interval) && interval > 0 ? interval : 60000 }));
    }
  }
  if (readers.length === 0) return undefined;
  const provider = new MeterProvider({ resource, readers });
  metrics.setGlobalMeterProvider(provider);
  return provider;
}

/** Set up (or adopt) the SDK. Never throws for configuration problems: they are reported through diag. */
export function setupSdk(options: SdkOptions = {}): SdkHandle {
  const env = options.env ?? process.env;
  const noop: SdkHandle = { external: false, forceFlush: async () => {}, shutdown: async () => {} };
  if (envBool('OTEL_SDK_DISABLED', env) === true) return noop;

  const resource = defaultResource()
    .merge(resourceFromAttributes(options.resourceAttributes ?? {}))
    .merge(detectResources({ detectors: [envDetector] }));
  const meterProvider = meterProviderFromEnv(env, resource);
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

  const existing = registeredTracerProvider();
  if (existing) {
    if (options.spanProcessors?.length) {
      log.warn('a tracer provider was already registered by the application; faultline span processors were not attached to it');
    }
    const flushable = existing as TracerProvider & { forceFlush?: () => Promise<void> };
    return withMeters({ external: true, forceFlush: () => flushable.forceFlush?.() ?? Promise.resolve(), shutdown: async () => {} });
  }

  const { processors, tracesFile } = traceProcessors(env);
  const base = samplerFromEnv(env);
  const provider = new NodeTracerProvider({
    resource,
    sampler: options.sampler ? options.sampler(base) : base,
    spanProcessors: [...(options.spanProcessors ?? []), ...processors],
  });
  provider.register();
  const handle: SdkHandle = {
    tracerProvider: provider,
    external: false,
    forceFlush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
  if (tracesFile !== undefined) handle.tracesFile = tracesFile;
  return withMeters(handle);
}
