/**
 * FaultlineInstrumentation: faultline's instrumentation as an OpenTelemetry instrumentation like the others. It
 * implements the contract `registerInstrumentations` and the Node SDK drive (tracer and meter providers, config,
 * enable/disable) and, like the contrib instrumentations, enables itself when constructed unless the config says
 * `enabled: false`. It patches no module (there is nothing for require/import hooks to do), so it does not extend
 * `InstrumentationBase`: that would load the hook machinery for nothing. `enable()` installs the GenAI span layer on
 * the global undici dispatcher and configures the in-process message channels; `disable()` undoes both. Both are
 * idempotent. The provider a span is started on waits for faultline's spans at its flush (provider-flush.ts).
 */
import { trace, type MeterProvider, type Tracer, type TracerProvider } from '@opentelemetry/api';
import type { Instrumentation } from '@opentelemetry/instrumentation';
import { captureContentFromEnv } from '../src/env';
import { PACKAGE_NAME, VERSION } from '../src/version';
import { configureChannels } from './agents/channel';
import { configureWorkflows } from './agents/declarations';
import { installInstrumentation, type InstalledInstrumentation } from './install';
import { GenAiMetrics } from './metrics';
import { settleBeforeFlush } from './provider-flush';
import type { FaultlineInstrumentationConfig } from './types';

export { captureContentFromEnv };

export class FaultlineInstrumentation implements Instrumentation<FaultlineInstrumentationConfig> {
  readonly instrumentationName = PACKAGE_NAME;
  readonly instrumentationVersion = VERSION;
  #config: FaultlineInstrumentationConfig;
  #provider: TracerProvider | undefined;
  #tracer: Tracer | undefined;
  #installed: InstalledInstrumentation | undefined;
  #enabled = false;
  readonly #metrics = new GenAiMetrics();
  #envCapture: { value: boolean | undefined } | undefined;

  constructor(config: FaultlineInstrumentationConfig = {}) {
    this.#config = { enabled: true, ...config };
    if (this.#config.enabled !== false) this.enable();
  }

  getConfig(): FaultlineInstrumentationConfig {
    return { ...this.#config };
  }

  /** Replace the config; takes effect for calls that start afterwards (steps and channels are re-installed). */
  setConfig(config: FaultlineInstrumentationConfig = {}): void {
    this.#config = { enabled: true, ...config };
    if (this.#enabled) {
      this.disable();
      this.enable();
    }
  }

  /** Use this provider instead of the global one (for calls that start afterwards). */
  setTracerProvider(provider: TracerProvider): void {
    this.#provider = provider;
    this.#tracer = undefined;
  }

  /**
   * Record `gen_ai.client.*` metrics into this provider. The API's no-op provider (what `registerInstrumentations`
   * passes when none is registered) means "follow the global one", so a provider registered later is still found.
   */
  setMeterProvider(provider: MeterProvider): void {
    this.#metrics.use(provider.constructor?.name === 'NoopMeterProvider' ? undefined : provider);
  }

  get captureContent(): boolean {
    if (this.#config.captureMessageContent !== undefined) return this.#config.captureMessageContent;
    this.#envCapture ??= { value: captureContentFromEnv() };
    return this.#envCapture.value ?? false;
  }

  enable(): void {
    if (this.#enabled) return;
    this.#enabled = true;
    const config = this.#config;
    this.#installed = installInstrumentation({
      tracer: () => {
        const provider = this.#provider ?? trace.getTracerProvider();
        settleBeforeFlush(provider);
        return (this.#tracer ??= provider.getTracer(PACKAGE_NAME, VERSION));
      },
      captureContent: () => this.captureContent,
      steps: config.steps ?? [],
      ...(config.onExchangeEnd ? { onExchangeEnd: config.onExchangeEnd } : {}),
      ignoreHosts: config.ignoreHosts ?? [],
      otlpEndpoints: config.otlpEndpoints ?? [],
      metrics: this.#metrics,
      enabled: () => this.#enabled,
      propagate: () => config.propagateContext === true,
    });
    configureChannels({
      steps: config.channelSteps ?? [],
      ...(config.onDelivery ? { onDelivery: config.onDelivery } : {}),
      captureMessageContent: this.captureContent,
    });
    configureWorkflows(config.onWorkflowEvent ? { onWorkflowEvent: config.onWorkflowEvent } : {});
  }

  disable(): void {
    if (!this.#enabled) return;
    this.#enabled = false;
    this.#installed?.uninstall();
    this.#installed = undefined;
    configureChannels({});
    configureWorkflows({});
  }

  get isEnabled(): boolean {
    return this.#enabled;
  }
}
