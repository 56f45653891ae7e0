/**
 * `start()` builds faultline's runtime: the OTel SDK from the environment (src/sdk.ts), faultline's instrumentation
 * (the GenAI span layer on the global undici dispatcher, the message channels), instrumentation-undici for HTTP
 * detail, and flushing at exit. It wires the fault plan (src/inject), the guards and the online detectors
 * (detectors/) into the instrumentation's hooks: `instrumentation/` itself imports none of them.
 *
 *   app fetch → GenAI span layer → guard step → fault step → network        (HTTP)
 *   channel.send → handoff span → guard step → fault step → receiver          (in-process messages)
 */
import type { Attributes } from '@opentelemetry/api';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import type { Sampler, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { FaultlineInstrumentation } from '../instrumentation/instrumentation';
import type { DeliverStep, FaultlineInstrumentationConfig, Interceptor } from '../instrumentation/types';
import { createOnlineDetection, type OnlineDetectionOptions } from '../detectors/online';
import { createGuards, type Guards } from '../detectors/guards';
import { guardConfigFromEnv, loadGuardConfig, parseGuardConfig, type GuardConfigInput } from '../detectors/guards/config';
import { captureContentFromEnv } from '../instrumentation/instrumentation';
import { envBool, logger } from './diag';
import { createInjector, injectorFromEnv, type Injector } from './inject';
import { checkProduction, injectionDisabled, loadPlan, parsePlan } from './plan/load';
import type { FaultPlan, FaultPlanInput } from './plan/schema';
import { setupSdk, type SdkHandle } from './sdk';

const log = logger('start');

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  /** A fault plan, or the path of a JSON/YAML plan file. Default: FAULTLINE_PLAN. No plan, no injection;
   * FAULTLINE_DISABLE=1 turns injection off whatever is given. */
  plan?: FaultPlan | FaultPlanInput | string;
  /** Runtime guards, or the path of a JSON/YAML guard file. Default: FAULTLINE_GUARDS. */
  guards?: GuardConfigInput | string;
  /** Online detectors recording `faultline.detection` span events. Default on; FAULTLINE_DETECT=false turns them off. */
  detect?: boolean | OnlineDetectionOptions;
  /** Span processors added FIRST (the fault plan's FaultInjectionSpanProcessor). */
  spanProcessors?: SpanProcessor[];
  /** Wraps the sampler built from OTEL_TRACES_SAMPLER. */
  sampler?: (base: Sampler) => Sampler;
  resourceAttributes?: Attributes;
  /** undici interceptors inside the GenAI span layer, outermost first (guard step, then fault step). */
  steps?: Interceptor[];
  /** In-process channel steps, outermost first. */
  channelSteps?: DeliverStep[];
  onExchangeEnd?: FaultlineInstrumentationConfig['onExchangeEnd'];
  onDelivery?: FaultlineInstrumentationConfig['onDelivery'];
  captureMessageContent?: boolean;
  ignoreHosts?: string[];
  /** HTTP client spans from @opentelemetry/instrumentation-undici. Default on, unless
   * OTEL_NODE_DISABLED_INSTRUMENTATIONS lists `undici` (or OTEL_NODE_ENABLED_INSTRUMENTATIONS omits it). */
  httpSpans?: boolean;
  /** Flush at beforeExit / SIGTERM / SIGINT. Default true. */
  exitHooks?: boolean;
}

export interface FaultlineRuntime {
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

function instrumentationListed(env: NodeJS.ProcessEnv, name: string): boolean {
  const names = (v: string | undefined) => (v ?? '').split(',').map((s) => s.trim().replace(/^@opentelemetry\/instrumentation-/, '')).filter(Boolean);
  const enabled = names(env.OTEL_NODE_ENABLED_INSTRUMENTATIONS);
  if (enabled.length > 0 && !enabled.includes(name)) return false;
  return !names(env.OTEL_NODE_DISABLED_INSTRUMENTATIONS).includes(name);
}

/** Synchronous start (what `register` calls before the app's first line). Idempotent: returns the running one. */
export function startRuntime(options: StartOptions = {}): FaultlineRuntime {
  const slot = globalThis as Slot;
  const running = slot[RUNTIME];
  if (running) return running;
  const env = options.env ?? process.env;
  const wired = wire(options, env);

  const sdk = setupSdk({
    env,
    spanProcessors: [...wired.spanProcessors, ...(options.spanProcessors ?? [])],
    ...(options.sampler ? { sampler: options.sampler } : {}),
    ...(options.resourceAttributes ? { resourceAttributes: options.resourceAttributes } : {}),
  });

  let undici: UndiciInstrumentation | undefined;
  if (options.httpSpans ?? instrumentationListed(env, 'undici')) {
    undici = new UndiciInstrumentation(); // enables itself
  }
  const instrumentation = new FaultlineInstrumentation({
    steps: [...wired.steps, ...(options.steps ?? [])],
    channelSteps: [...wired.channelSteps, ...(options.channelSteps ?? [])],
    ignoreHosts: options.ignoreHosts ?? [],
    ...(options.captureMessageContent !== undefined ? { captureMessageContent: options.captureMessageContent } : {}),
    ...both('onExchangeEnd', wired.onExchangeEnd, options.onExchangeEnd),
    ...both('onDelivery', wired.onDelivery, options.onDelivery),
    ...(wired.onWorkflowEvent ? { onWorkflowEvent: wired.onWorkflowEvent } : {}),
  });
  instrumentation.enable();

  const removeHooks = options.exitHooks === false ? () => {} : installExitHooks(() => sdk.forceFlush());
  let stopped = false;
  const runtime: FaultlineRuntime = {
    instrumentation,
    ...(wired.injector ? { injector: wired.injector } : {}),
    ...(wired.guards ? { guards: wired.guards } : {}),
    sdk,
    ...(sdk.tracesFile !== undefined ? { tracesFile: sdk.tracesFile } : {}),
    forceFlush: () => sdk.forceFlush(),
    async shutdown() {
      if (stopped) return;
      stopped = true;
      removeHooks();
      instrumentation.disable();
      undici?.disable();
      if (slot[RUNTIME] === runtime) delete slot[RUNTIME];
      await sdk.shutdown();
    },
  };
  slot[RUNTIME] = runtime;
  return runtime;
}

/** Start faultline (SDK from OTEL_* env + instrumentation). Idempotent. */
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

/**
 * The fault plan, the guards and the online detectors, from the options or else the environment. A bad plan or
 * guard file throws a FaultlineInputError naming the file, the rule and the problem (register turns it into an exit
 * before the app starts: a chaos experiment must not silently run without its faults).
 */
function wire(options: StartOptions, env: NodeJS.ProcessEnv): Wired {
  const capture = options.captureMessageContent ?? captureContentFromEnv(env) ?? false;
  const injector = planInjector(options.plan, env, capture);
  const guardConfig =
    options.guards === undefined
      ? guardConfigFromEnv(env)
      : typeof options.guards === 'string'
        ? loadGuardConfig(options.guards)
        : parseGuardConfig(options.guards, 'start({ guards })');
  const guards = guardConfig ? createGuards(guardConfig) : undefined;
  const detectOption = options.detect ?? envBool('FAULTLINE_DETECT', env) ?? true;
  const online = detectOption === false ? undefined : createOnlineDetection(detectOption === true ? {} : detectOption);
  // Guards are outermost: they see (and recover from) what the fault step did, as they would a real failure.
  return {
    ...(injector ? { injector } : {}),
    ...(guards ? { guards } : {}),
    spanProcessors: injector ? [injector.spanProcessor] : [],
    steps: [...(guards ? [guards.httpStep] : []), ...(injector ? [injector.httpStep] : [])],
    channelSteps: [...(guards ? [guards.channelStep] : []), ...(injector ? [injector.channelStep] : [])],
    ...(online ? { onExchangeEnd: online.onExchangeEnd, onDelivery: online.onDelivery, onWorkflowEvent: online.onWorkflowEvent } : {}),
  };
}

function planInjector(plan: StartOptions['plan'], env: NodeJS.ProcessEnv, capture: boolean): Injector | undefined {
  if (plan === undefined) return injectorFromEnv(env, { captureMessageContent: capture });
  if (injectionDisabled(env)) {
    log.info('FAULTLINE_DISABLE is set: fault injection is off');
    return undefined;
  }
  const parsed = typeof plan === 'string' ? loadPlan(plan) : parsePlan(plan, 'start({ plan })');
  checkProduction(parsed, typeof plan === 'string' ? plan : 'start({ plan })', env);
  return createInjector(parsed, { captureMessageContent: capture });
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

const FLUSH_TIMEOUT_MS = 5000;

/**
 * Flush spans when the process is about to exit, without changing how it exits: on beforeExit we flush (the loop
 * then drains and the process exits as it would have); on SIGTERM/SIGINT, when the app has its own listeners we
 * only flush, and when it has none (the default is to die by the signal) we flush and re-raise the signal.
 */
function installExitHooks(flush: () => Promise<void>): () => void {
  // beforeExit fires again when our flush made the loop alive (an export); spans ended in between are flushed on the
  // next round. A flush with nothing to send does no I/O, so the loop ends; the cap guards exporters that always send.
  let rounds = 0;
  const onBeforeExit = (): void => {
    if (++rounds > 3) return;
    flush().catch((err: unknown) => log.warn('flush at exit failed:', err));
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    const appHandles = process.listenerCount(signal) > 1;
    const done = (): void => {
      if (appHandles) return;
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    const timer = setTimeout(done, FLUSH_TIMEOUT_MS);
    timer.unref();
    flush()
      .catch((err: unknown) => log.warn(`flush on ${signal} failed:`, err))
      .finally(() => {
        clearTimeout(timer);
        done();
      });
  };
  process.on('beforeExit', onBeforeExit);
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return () => {
    process.removeListener('beforeExit', onBeforeExit);
    process.removeListener('SIGTERM', onSignal);
    process.removeListener('SIGINT', onSignal);
  };
}
