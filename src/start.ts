/**
 * `start()` builds faultline's runtime from one resolved configuration (src/config.ts): the OTel SDK (src/sdk.ts),
 * faultline's instrumentation (the GenAI span layer on the global undici dispatcher, the message channels),
 * instrumentation-undici for HTTP detail, and the exit hooks that lose no span (src/exit-hooks.ts). It wires the
 * fault plan (src/inject), the guards and the online detectors (detectors/) into the instrumentation's hooks:
 * `instrumentation/` itself imports none of them.
 *
 *   app fetch → GenAI span layer → guard step → fault step → network        (HTTP)
 *   channel.send → handoff span → guard step → fault step → receiver          (in-process messages)
 *
 * Only what the configuration turns on is loaded: the injector with a plan, the guards with a guard config, the
 * online detectors when detection is on, instrumentation-undici with HTTP spans, an exporter when it is named.
 */
import type { Attributes } from '@opentelemetry/api';
import type { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import type { Sampler, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Guards } from '../detectors/guards';
import { enableFrameworks } from '../instrumentation/frameworks';
import { FaultlineInstrumentation } from '../instrumentation/instrumentation';
import { flushExchanges, settleExchanges } from '../instrumentation/interceptor';
import { redactQuery } from '../instrumentation/redact-url';
import type { DeliverStep, FaultlineInstrumentationConfig, Interceptor } from '../instrumentation/types';
import { oneSpanPerAnthropicCall } from '../instrumentation/providers/anthropic-messages';
import { resolveConfig, type ConfigOverrides, type FaultlineConfig } from './config';
import { installExitHooks } from './exit-hooks';
import type { Injector } from './inject';
import { parts } from './parts';
import { setupSdk, type SdkHandle } from './sdk';
import { processEnv } from './env';

export interface StartOptions extends ConfigOverrides {
  /** Environment to resolve the configuration from. Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /** Where faultline.config.* is looked for. Default: process.cwd(). */
  cwd?: string;
  /** An already resolved configuration (`resolveConfig()`): used as it is, instead of env, file and the options
   * `plan`, `guards`, `detect`, `captureMessageContent`, `httpSpans`. */
  config?: FaultlineConfig;
  /** Span processors added FIRST (the fault plan's FaultInjectionSpanProcessor). */
  spanProcessors?: SpanProcessor[];
  /** Wraps the sampler built from OTEL_TRACES_SAMPLER. */
  sampler?: (base: Sampler) => Sampler;
  resourceAttributes?: Attributes;
  /** undici interceptors inside the GenAI span layer, outermost first (after the guard and fault steps). */
  steps?: Interceptor[];
  /** In-process channel steps, outermost first. */
  channelSteps?: DeliverStep[];
  onExchangeEnd?: FaultlineInstrumentationConfig['onExchangeEnd'];
  onDelivery?: FaultlineInstrumentationConfig['onDelivery'];
  ignoreHosts?: string[];
  /** Flush at beforeExit, exit, uncaught exceptions, unhandled rejections, SIGTERM and SIGINT. Default true. */
  exitHooks?: boolean;
  /** One line on stderr when a plan is armed, and its summary when the process ends. Default true. */
  announce?: boolean;
}

export interface FaultlineRuntime {
  /** The configuration it runs with. */
  readonly config: FaultlineConfig;
  readonly instrumentation: FaultlineInstrumentation;
  /** The fault injector, when a plan is active (its `triggerReport()` says which rules fired). */
  readonly injector?: Injector;
  readonly guards?: Guards;
  readonly sdk: SdkHandle;
  /** Absolute path of the OTLP/JSON-lines trace file, when spans go to one. */
  readonly tracesFile?: string;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

const RUNTIME = Symbol.for('faultline.runtime');
type Slot = typeof globalThis & { [RUNTIME]?: FaultlineRuntime };

/** Synchronous start (what `register` calls before the app's first line). Idempotent: returns the running one. */
export function startRuntime(options: StartOptions = {}): FaultlineRuntime {
  const slot = globalThis as Slot;
  const running = slot[RUNTIME];
  if (running) return running;
  const config =
    options.config ??
    resolveConfig({
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
      overrides: {
        ...(options.plan !== undefined ? { plan: options.plan } : {}),
        ...(options.guards !== undefined ? { guards: options.guards } : {}),
        ...(options.detect !== undefined ? { detect: options.detect } : {}),
        ...(options.captureMessageContent !== undefined
          ? { captureMessageContent: options.captureMessageContent }
          : {}),
        ...(options.httpSpans !== undefined ? { httpSpans: options.httpSpans } : {}),
      },
    });
  const wired = wire(config);

  const sdk = setupSdk(config.export, {
    spanProcessors: [...wired.spanProcessors, ...(options.spanProcessors ?? [])],
    ...(options.sampler ? { sampler: options.sampler } : {}),
    ...(options.resourceAttributes ? { resourceAttributes: options.resourceAttributes } : {}),
  });
  // One GenAI span per Anthropic call under our provider (the SDK's own spans are off unless the app set them).
  if (!sdk.external && (options.env?.ANTHROPIC_OPEN_TELEMETRY ?? processEnv().ANTHROPIC_OPEN_TELEMETRY) === undefined)
    oneSpanPerAnthropicCall(processEnv());

  // HTTP client spans under each GenAI span (the default; core may change it after measuring).
  const undici = config.httpSpans ? httpSpans() : undefined;
  const instrumentation = new FaultlineInstrumentation({
    steps: [...wired.steps, ...(options.steps ?? [])],
    channelSteps: [...wired.channelSteps, ...(options.channelSteps ?? [])],
    ignoreHosts: options.ignoreHosts ?? [],
    otlpEndpoints: [config.export.otlp.tracesUrl, config.export.otlp.metricsUrl].filter(
      (u): u is string => u !== undefined,
    ),
    captureMessageContent: config.captureContent,
    // Without instrumentation-undici below it, the layer carries the trace to the agents the process calls.
    propagateContext: !config.httpSpans,
    ...both('onExchangeEnd', wired.onExchangeEnd, options.onExchangeEnd),
    ...both('onDelivery', wired.onDelivery, options.onDelivery),
    ...(wired.onWorkflowEvent ? { onWorkflowEvent: wired.onWorkflowEvent } : {}),
  }); // enables itself
  // The agent structure of the frameworks the app loads, installed after the span layer it feeds.
  const frameworks = enableFrameworks({ captureContent: () => instrumentation.captureContent });

  const announce = options.announce !== false;
  if (announce) announceStart(config);
  // A call's span ends a moment after the app has its answer (the span layer reads it then): settle those first.
  const flush = (): Promise<void> => settleExchanges().then(() => sdk.forceFlush());
  const removeHooks =
    options.exitHooks === false
      ? () => {}
      : installExitHooks({
          sdk,
          pending: { flush: flushExchanges, settle: settleExchanges },
          ...(announce && config.plan && wired.injector ? { summary: summaryOf(config, wired.injector) } : {}),
        });

  let stopped = false;
  const runtime: FaultlineRuntime = {
    config,
    instrumentation,
    ...(wired.injector ? { injector: wired.injector } : {}),
    ...(wired.guards ? { guards: wired.guards } : {}),
    sdk,
    ...(sdk.tracesFile !== undefined ? { tracesFile: sdk.tracesFile } : {}),
    forceFlush: flush,
    async shutdown() {
      if (stopped) return;
      stopped = true;
      removeHooks();
      await settleExchanges();
      instrumentation.disable();
      frameworks.disable();
      undici?.disable();
      if (slot[RUNTIME] === runtime) delete slot[RUNTIME];
      await sdk.shutdown();
    },
  };
  slot[RUNTIME] = runtime;
  return runtime;
}

/** Start faultline (configuration from the options, the environment and faultline.config.*). Idempotent. */
export async function start(options: StartOptions = {}): Promise<FaultlineRuntime> {
  return startRuntime(options);
}

/** Flush and stop the running runtime, if any. */
export async function shutdown(): Promise<void> {
  await (globalThis as Slot)[RUNTIME]?.shutdown();
}

interface Wired {
  injector?: Injector;
  guards?: Guards;
  spanProcessors: SpanProcessor[];
  steps: Interceptor[];
  channelSteps: DeliverStep[];
  onExchangeEnd?: FaultlineInstrumentationConfig['onExchangeEnd'];
  onDelivery?: FaultlineInstrumentationConfig['onDelivery'];
  onWorkflowEvent?: FaultlineInstrumentationConfig['onWorkflowEvent'];
}

/** The fault plan, the guards and the online detectors the configuration asks for, each loaded only then. */
function wire(config: FaultlineConfig): Wired {
  let injector: Injector | undefined;
  if (config.plan) {
    const { createInjector } = parts.inject();
    injector = createInjector(config.plan.plan, {
      captureMessageContent: config.captureContent,
      disabled: false,
      production: config.production,
    });
  }
  let guards: Guards | undefined;
  if (config.guards) {
    const { createGuards } = parts.guards();
    guards = createGuards(config.guards.config);
  }
  let online: ReturnType<typeof import('../detectors/online').createOnlineDetection> | undefined;
  if (config.detect !== false) {
    const { createOnlineDetection } = parts.online();
    online = createOnlineDetection(config.detect === true ? {} : config.detect);
  }
  // Guards are outermost: they see (and recover from) what the fault step did, as they would a real failure.
  return {
    ...(injector ? { injector } : {}),
    ...(guards ? { guards } : {}),
    spanProcessors: injector ? [injector.spanProcessor] : [],
    steps: [...(guards ? [guards.httpStep] : []), ...(injector ? [injector.httpStep] : [])],
    channelSteps: [...(guards ? [guards.channelStep] : []), ...(injector ? [injector.channelStep] : [])],
    ...(online
      ? { onExchangeEnd: online.onExchangeEnd, onDelivery: online.onDelivery, onWorkflowEvent: online.onWorkflowEvent }
      : {}),
  };
}

/** instrumentation-undici, with credentials in URL queries redacted from `url.full` and `url.query`. */
function httpSpans(): UndiciInstrumentation {
  const { UndiciInstrumentation: Undici } =
    require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  return new Undici({
    // Runs before the span starts and overrides the attributes undici's instrumentation computed, so the
    // credential never reaches a span processor or an exporter.
    startSpanHook(request) {
      if (!request.path.includes('?')) return {};
      const url = new URL(request.path, request.origin);
      const search = redactQuery(url.search);
      if (search === url.search) return {};
      url.search = search;
      return { 'url.full': url.toString(), 'url.query': url.search };
    },
  }); // enables itself
}

function announceStart(config: FaultlineConfig): void {
  if (config.plan) {
    const { armedLine } = parts.announce();
    process.stderr.write(armedLine(config.plan.plan, config.plan.where) + '\n');
    // Rules that can meet a wire format where their fault has no meaning say so now, not by silently doing nothing.
    const gaps = parts.inject().planGapsMessage(config.plan.plan);
    if (gaps !== undefined) process.stderr.write(`faultline: ${gaps}\n`);
  } else if (config.disabledPlan) {
    process.stderr.write(
      `faultline: FAULTLINE_DISABLE is set: ${config.disabledPlan} is not armed, no fault is injected\n`,
    );
  }
}

function summaryOf(config: FaultlineConfig, injector: Injector): () => string | undefined {
  const plan = config.plan!;
  const { summaryLine } = parts.announce();
  return () => summaryLine(plan.plan, plan.where, injector.triggerReport());
}

/** Run our hook and the user's, ours first, each guarded by the instrumentation's own `safely`. */
function both<K extends 'onExchangeEnd' | 'onDelivery'>(
  key: K,
  ours: FaultlineInstrumentationConfig[K] | undefined,
  theirs: FaultlineInstrumentationConfig[K] | undefined,
): Partial<FaultlineInstrumentationConfig> {
  if (!ours) return theirs ? { [key]: theirs } : {};
  if (!theirs) return { [key]: ours };
  const a = ours as (...args: unknown[]) => void;
  const b = theirs as (...args: unknown[]) => void;
  return {
    [key]: (...args: unknown[]) => {
      try {
        a(...args);
      } finally {
        b(...args);
      }
    },
  };
}
