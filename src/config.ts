/**
 * faultline's configuration, resolved once at the edge (`register`, `start()`) into one typed object that the runtime
 * passes on: below `start()` nothing reads `process.env` for these settings.
 *
 * Sources, highest precedence first: the options given to `start()`, the environment variables, the configuration
 * file (`FAULTLINE_CONFIG`, else `faultline.config.json`, `.yaml` or `.yml` in the working directory), the defaults.
 * Every variable is listed in docs/configuration.md; the file's JSON Schema is `faultline/config.schema.json`.
 * Bad input is a FaultlineInputError naming the variable, or the file and the field (`register` exits 2 with it
 * before the application runs: a chaos experiment must not silently run without its faults).
 *
 * Only what is used is loaded: zod and yaml come in with a configuration file, a plan or a guard file, so a process
 * with none of them starts without them.
 *
 * The OpenTelemetry SDK's own variables (sampler, span limits, batch processor, the OTLP exporter's endpoint,
 * headers, timeout, compression and certificates) are read by the SDK parts themselves, as they are under the
 * OpenTelemetry Node SDK; only the ones that decide what faultline sets up are resolved here.
 */
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { diag } from '@opentelemetry/api';
import type { GuardConfig, GuardConfigInput } from '../detectors/guards/config';
import type { OnlineDetectionOptions } from '../detectors/online';
import {
  captureContentFromEnv,
  guardsFileFromEnv,
  isProduction,
  METRIC_EXPORT_INTERVAL_MS,
  metricExportIntervalFromEnv,
  planFileFromEnv,
  readList as list,
  readSwitch,
} from './env';
import { FaultlineInputError } from './errors';
import { parts } from './parts';
import type { FaultPlan, FaultPlanInput } from './plan/schema';
import type { ConfigFile } from './config-schema';
import { redactUrl } from '../instrumentation/redact-url';
import { OTLP_ENDPOINT, OTLP_ENDPOINT_EXPECTED, signalUrl } from './otlp-endpoint';

export type TraceExporterName = 'otlp' | 'console' | 'file';
export type MetricExporterName = 'otlp' | 'console';
export type OtlpProtocol = 'http/protobuf' | 'http/json';
/** The resource detectors of @opentelemetry/resources, named as OTEL_NODE_RESOURCE_DETECTORS names them. */
export type ResourceDetectorName = 'env' | 'host' | 'os' | 'process' | 'serviceinstance';
export type PropagatorName = 'tracecontext' | 'baggage';

export interface OtlpConfig {
  readonly protocol: OtlpProtocol;
  /** Traces URL from the configuration file. Undefined: the exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT. */
  readonly tracesUrl?: string;
  /** Metrics URL from the configuration file. Undefined: the exporter reads OTEL_EXPORTER_OTLP_(METRICS_)ENDPOINT. */
  readonly metricsUrl?: string;
  /** Headers from the configuration file (OTEL_EXPORTER_OTLP_HEADERS still applies, read by the exporter). */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface ExportConfig {
  /** OTEL_SDK_DISABLED=true: no SDK is set up (the instrumentation still runs, through the no-op API). */
  readonly sdkDisabled: boolean;
  /** Trace exporters (OTEL_TRACES_EXPORTER; default `file`, or `otlp` when an OTLP endpoint is configured). */
  readonly traces: readonly TraceExporterName[];
  /** Absolute path of the OTLP/JSON-lines trace file (FAULTLINE_TRACES_FILE; default ./faultline-traces.jsonl). */
  readonly file: string;
  readonly otlp: OtlpConfig;
  /** Metric exporters (OTEL_METRICS_EXPORTER; default none). */
  readonly metrics: readonly MetricExporterName[];
  /** OTEL_METRIC_EXPORT_INTERVAL, ms (default 60000). */
  readonly metricIntervalMs: number;
  /** OTEL_NODE_RESOURCE_DETECTORS (default `env`). */
  readonly resourceDetectors: readonly ResourceDetectorName[];
  /** OTEL_PROPAGATORS; undefined: the SDK default (tracecontext, baggage); empty: none. */
  readonly propagators?: readonly PropagatorName[];
  /** OTEL_LOG_LEVEL: when set, a console diag logger at that level, as the OpenTelemetry Node SDK does. */
  readonly logLevel?: string;
}

export interface FaultlineConfig {
  /** The configuration file that was read, when there was one (absolute path). */
  readonly file?: string;
  /** The fault plan to arm, validated; `where` names it in messages (`fault plan plan.yaml`, `start({ plan })`).
   * Absent when injection is disabled. */
  readonly plan?: { readonly plan: FaultPlan; readonly where: string };
  /** FAULTLINE_DISABLE (or `disable: true`): no fault is injected, whatever plan is given. */
  readonly injectionDisabled: boolean;
  /** The plan that FAULTLINE_DISABLE kept from being armed, for the start-up line. */
  readonly disabledPlan?: string;
  /** NODE_ENV is `production` (trimmed, any case): a plan must say `allowProduction: true`. */
  readonly production: boolean;
  /** Runtime guards, validated. */
  readonly guards?: { readonly config: GuardConfig; readonly where: string };
  /**
   * Online detectors (FAULTLINE_DETECT; default off: they cost about as much per call as a GenAI instrumentation, and
   * `faultline diagnose` runs the same detectors over the spans afterwards, from the content-free facts every span
   * carries). On, they also find what only the content shows when content capture is off (mojibake, in-band errors,
   * tool arguments against their schema), and the guards use them.
   */
  readonly detect: boolean | OnlineDetectionOptions;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (default off). */
  readonly captureContent: boolean;
  /**
   * HTTP client spans of @opentelemetry/instrumentation-undici, as children of the GenAI spans: default off (a second
   * span per call, costing about as much as a GenAI instrumentation, for what the GenAI span mostly has already);
   * on when OTEL_NODE_ENABLED_INSTRUMENTATIONS lists `undici`.
   */
  readonly httpSpans: boolean;
  readonly export: ExportConfig;
}

/** What `start()` options may set over the environment and the file. */
export interface ConfigOverrides {
  plan?: FaultPlan | FaultPlanInput | string;
  guards?: GuardConfigInput | string;
  detect?: boolean | OnlineDetectionOptions;
  captureMessageContent?: boolean;
  httpSpans?: boolean;
}

export interface ResolveOptions {
  /** Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /** Where `faultline.config.*` is looked for and relative paths start. Default: process.cwd(). */
  cwd?: string;
  overrides?: ConfigOverrides;
}

/** What register turns on when nothing says otherwise. */
export const DEFAULTS = {
  detect: false,
  httpSpans: false,
  tracesFile: 'faultline-traces.jsonl',
  metricIntervalMs: METRIC_EXPORT_INTERVAL_MS,
  resourceDetectors: ['env'] as readonly ResourceDetectorName[],
} as const;

export const CONFIG_FILE_NAMES = ['faultline.config.json', 'faultline.config.yaml', 'faultline.config.yml'] as const;

/** One line on stderr for a setting that would otherwise lose spans or faults without a word. */
function notice(message: string): void {
  process.stderr.write(`faultline: ${message}\n`);
}

// ------------------------------------------------------------------------------------------------ the file

function findConfigFile(env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  const named = env.FAULTLINE_CONFIG?.trim();
  if (named) {
    const path = resolve(cwd, named);
    if (!existsSync(path))
      throw new FaultlineInputError(
        'FAULTLINE_FILE_NOT_FOUND',
        `FAULTLINE_CONFIG names ${named}, which does not exist`,
      );
    return path;
  }
  const found = CONFIG_FILE_NAMES.map((n) => join(cwd, n)).filter((p) => existsSync(p));
  if (found.length > 1) {
    throw new FaultlineInputError(
      'FAULTLINE_CONFIG_INVALID',
      `two configuration files in ${cwd}: ${found.map((p) => p.slice(cwd.length + 1)).join(' and ')}; keep one`,
    );
  }
  return found[0];
}

// ------------------------------------------------------------------------------------------------ resolution

/** Resolve the configuration once. Throws a FaultlineInputError for bad input; never reads a variable twice. */
export function resolveConfig(options: ResolveOptions = {}): FaultlineConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const o = options.overrides ?? {};
  const filePath = findConfigFile(env, cwd);
  const file: ConfigFile = filePath ? parts.configFile().loadConfigFile(filePath) : {};
  const fileDir = filePath ? dirname(filePath) : cwd;
  const fromFile = (p: string): string => (isAbsolute(p) ? p : resolve(fileDir, p));
  const fileName = filePath ?? 'the configuration file';

  const production = isProduction(env);
  const injectionDisabled = readSwitch('FAULTLINE_DISABLE', env.FAULTLINE_DISABLE) ?? file.disable ?? false;

  // The plan: start({ plan }) > FAULTLINE_PLAN > the file's `plan`.
  const envPlan = planFileFromEnv(env);
  let plan: FaultlineConfig['plan'];
  let disabledPlan: string | undefined;
  const planGiven = o.plan ?? envPlan ?? file.plan;
  if (planGiven !== undefined && injectionDisabled) {
    disabledPlan =
      typeof planGiven === 'string'
        ? `fault plan ${planGiven}`
        : o.plan !== undefined
          ? 'start({ plan })'
          : `the plan in ${fileName}`;
  } else if (planGiven !== undefined) {
    const load = parts.plans();
    if (o.plan !== undefined) {
      plan =
        typeof o.plan === 'string'
          ? { plan: load.loadPlan(o.plan), where: `fault plan ${o.plan}` }
          : { plan: load.parsePlan(o.plan, 'start({ plan })'), where: 'start({ plan })' };
    } else if (envPlan !== undefined) {
      plan = { plan: load.loadPlan(envPlan), where: `fault plan ${envPlan}` };
    } else if (typeof file.plan === 'string') {
      plan = { plan: load.loadPlan(fromFile(file.plan)), where: `fault plan ${file.plan}` };
    } else if (file.plan !== undefined) {
      plan = { plan: file.plan, where: `the plan in ${fileName}` };
    }
    if (plan) load.checkProduction(plan.plan, plan.where, production);
  }

  // Guards: start({ guards }) > FAULTLINE_GUARDS > the file's `guards`.
  const envGuards = guardsFileFromEnv(env);
  let guards: FaultlineConfig['guards'];
  if (o.guards !== undefined || envGuards !== undefined || file.guards !== undefined) {
    const g = parts.guardConfig();
    if (o.guards !== undefined) {
      guards =
        typeof o.guards === 'string'
          ? { config: g.loadGuardConfig(o.guards), where: o.guards }
          : { config: g.parseGuardConfig(o.guards, 'start({ guards })'), where: 'start({ guards })' };
    } else if (envGuards !== undefined) {
      guards = { config: g.loadGuardConfig(envGuards), where: envGuards };
    } else if (typeof file.guards === 'string') {
      guards = { config: g.loadGuardConfig(fromFile(file.guards)), where: file.guards };
    } else if (file.guards !== undefined) {
      guards = { config: g.parseGuardConfig(file.guards, `${fileName} guards`), where: `${fileName} (guards)` };
    }
  }

  const detect = o.detect ?? readSwitch('FAULTLINE_DETECT', env.FAULTLINE_DETECT) ?? file.detect ?? DEFAULTS.detect;
  const captureContent = o.captureMessageContent ?? captureContentFromEnv(env) ?? file.captureContent ?? false;
  const httpSpans = o.httpSpans ?? instrumentationSwitch(env, 'undici') ?? file.httpSpans ?? DEFAULTS.httpSpans;

  return {
    ...(filePath ? { file: filePath } : {}),
    ...(plan ? { plan } : {}),
    injectionDisabled,
    ...(disabledPlan ? { disabledPlan } : {}),
    production,
    ...(guards ? { guards } : {}),
    detect,
    captureContent,
    httpSpans,
    export: resolveExport(env, cwd, file, fromFile),
  };
}

/**
 * OTEL_NODE_ENABLED_INSTRUMENTATIONS / OTEL_NODE_DISABLED_INSTRUMENTATIONS for one instrumentation (short name, or the
 * `@opentelemetry/instrumentation-` package name): undefined when neither variable says anything about it.
 */
function instrumentationSwitch(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const names = (v: string | undefined) =>
    (list(v) ?? []).map((s) => s.replace(/^@opentelemetry\/instrumentation-/, ''));
  const enabled = names(env.OTEL_NODE_ENABLED_INSTRUMENTATIONS);
  if (names(env.OTEL_NODE_DISABLED_INSTRUMENTATIONS).includes(name)) return false;
  if (enabled.length > 0) return enabled.includes(name);
  return undefined;
}

const TRACE_EXPORTERS = new Set(['otlp', 'console', 'file', 'none']);
const METRIC_EXPORTERS = new Set(['otlp', 'console', 'none']);
const DETECTORS = new Set<string>(['env', 'host', 'os', 'process', 'serviceinstance']);

function resolveExport(
  env: NodeJS.ProcessEnv,
  cwd: string,
  file: ConfigFile,
  fromFile: (p: string) => string,
): ExportConfig {
  const f = file.export ?? {};
  const sdkDisabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';

  // OTLP: the variables win over the file, and the exporter reads them itself; the file's endpoint is passed only
  // when no variable names one.
  // An invalid one is refused as the file's is, but the app still runs: OTLP export is off (the exporter would read
  // the variable itself and lose every span silently) and the spans go to the trace file instead.
  const refused: string[] = [];
  const endpointVar = (name: string): string | undefined => {
    const v = env[name]?.trim() || undefined;
    if (v === undefined || OTLP_ENDPOINT.test(v)) return v;
    refused.push(name);
    notice(`✖ ${name}: expected ${OTLP_ENDPOINT_EXPECTED}; got ${JSON.stringify(redactUrl(v))}: OTLP export is off`);
    return undefined;
  };
  const envTraces = endpointVar('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const envMetrics = endpointVar('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT');
  const envBase = endpointVar('OTEL_EXPORTER_OTLP_ENDPOINT');
  const fileBase = f.otlp?.endpoint;
  const tracesUrl = !envTraces && !envBase && fileBase ? signalUrl(fileBase, 'traces') : undefined;
  const metricsUrl = !envMetrics && !envBase && fileBase ? signalUrl(fileBase, 'metrics') : undefined;
  const rawProtocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() ||
    f.otlp?.protocol ||
    'http/protobuf'
  ).toLowerCase();
  let protocol: OtlpProtocol = 'http/protobuf';
  if (rawProtocol === 'http/json') protocol = 'http/json';
  else if (rawProtocol !== 'http/protobuf')
    notice(
      `OTLP protocol ${JSON.stringify(rawProtocol)} is not supported (http/protobuf, http/json): using http/protobuf`,
    );
  const otlp: OtlpConfig = {
    protocol,
    ...(tracesUrl ? { tracesUrl } : {}),
    ...(metricsUrl ? { metricsUrl } : {}),
    ...(f.otlp?.headers ? { headers: f.otlp.headers } : {}),
  };

  const tracesFileEnv = env.FAULTLINE_TRACES_FILE?.trim() || undefined;
  const tracesFile = tracesFileEnv
    ? resolve(cwd, tracesFileEnv)
    : f.file
      ? fromFile(f.file)
      : resolve(cwd, DEFAULTS.tracesFile);
  const hasEndpoint = Boolean(envTraces || envBase || tracesUrl);
  let traceNames = list(env.OTEL_TRACES_EXPORTER) ??
    f.traces?.map((n) => n.toLowerCase()) ?? [hasEndpoint ? 'otlp' : 'file'];
  for (const n of traceNames)
    if (!TRACE_EXPORTERS.has(n))
      notice(`trace exporter ${JSON.stringify(n)} is not supported (otlp, console, file, none): ignored`);
  traceNames = traceNames.filter((n) => TRACE_EXPORTERS.has(n) && n !== 'none');
  if (refused.some((n) => n !== 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT') && traceNames.includes('otlp')) {
    traceNames = traceNames.filter((n) => n !== 'otlp');
    if (!traceNames.includes('file')) traceNames.push('file');
  }
  // Naming a trace file asks for one, whatever else exports.
  if ((tracesFileEnv || f.file) && !traceNames.includes('file')) traceNames.push('file');

  const metricNames = list(env.OTEL_METRICS_EXPORTER) ?? f.metrics?.map((n) => n.toLowerCase()) ?? [];
  for (const n of metricNames)
    if (!METRIC_EXPORTERS.has(n))
      notice(`metric exporter ${JSON.stringify(n)} is not supported (otlp, console, none): ignored`);

  let resourceDetectors: ResourceDetectorName[] = [...DEFAULTS.resourceDetectors];
  const detectorNames = list(env.OTEL_NODE_RESOURCE_DETECTORS);
  if (detectorNames) {
    if (detectorNames.includes('all')) resourceDetectors = [...DETECTORS] as ResourceDetectorName[];
    else if (detectorNames.includes('none')) resourceDetectors = [];
    else {
      for (const n of detectorNames)
        if (!DETECTORS.has(n))
          diag.warn(
            `faultline: unknown resource detector ${JSON.stringify(n)} in OTEL_NODE_RESOURCE_DETECTORS ignored`,
          );
      resourceDetectors = detectorNames.filter((n) => DETECTORS.has(n)) as ResourceDetectorName[];
    }
  }

  let propagators: PropagatorName[] | undefined;
  const propagatorNames = list(env.OTEL_PROPAGATORS);
  if (propagatorNames) {
    propagators = [];
    if (!propagatorNames.includes('none')) {
      for (const n of new Set(propagatorNames)) {
        if (n === 'tracecontext' || n === 'baggage') propagators.push(n);
        else
          notice(
            `propagator ${JSON.stringify(n)} in OTEL_PROPAGATORS is not supported (tracecontext, baggage, none): ignored`,
          );
      }
    }
  }

  const logLevel = env.OTEL_LOG_LEVEL?.trim() || undefined;
  return {
    sdkDisabled,
    traces: [...new Set(traceNames)] as TraceExporterName[],
    file: tracesFile,
    otlp,
    metrics: [...new Set(metricNames.filter((n) => METRIC_EXPORTERS.has(n) && n !== 'none'))] as MetricExporterName[],
    metricIntervalMs: metricExportIntervalFromEnv(env),
    resourceDetectors,
    ...(propagators ? { propagators } : {}),
    ...(logLevel ? { logLevel } : {}),
  };
}
