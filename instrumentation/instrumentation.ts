/**
 * FaultlineInstrumentation: the contrib-shaped handle on faultline's instrumentation. `enable()` installs the GenAI
 * span layer on the global undici dispatcher and configures the in-process message channels; `disable()` undoes
 * both. Both are idempotent.
 */
import { diag, trace, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { PACKAGE_NAME, VERSION } from '../src/version';
import { configureChannels } from './agents/channel';
import { configureWorkflows } from './agents/declarations';
import { installInstrumentation, type InstalledInstrumentation } from './install';
import { GenAiMetrics } from './metrics';
import type { FaultlineInstrumentationConfig } from './types';

/**
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, read the way both the JS contrib (boolean) and Python
 * (`SPAN_ONLY`, `SPAN_AND_EVENT`, `EVENT_ONLY`, `NO_CONTENT`) instrumentations read it. We only record on spans, so
 * `EVENT_ONLY` means no content here.
 */
export function captureContentFromEnv(env: NodeJS.ProcessEnv = process.env): boolean | undefined {
  const raw = env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.trim();
  if (!raw) return undefined;
  const v = raw.toLowerCase();
  if (v === 'true' || v === '1' || v === 'span_only' || v === 'span_and_event') return true;
  if (v === 'false' || v === '0' || v === 'no_content' || v === 'event_only') return false;
  diag.warn(`faultline: ignoring OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=${JSON.stringify(raw)}: expected true, false, SPAN_ONLY or NO_CONTENT`);
  return undefined;
}

export class FaultlineInstrumentation {
  readonly instrumentationName = PACKAGE_NAME;
  readonly instrumentationVersion = VERSION;
  #config: FaultlineInstrumentationConfig;
  #provider: TracerProvider | undefined;
  #tracer: Tracer | undefined;
  #installed: InstalledInstrumentation | undefined;
  #enabled = false;
  readonly #metrics = new GenAiMetrics();
  readonly #envCapture = captureContentFromEnv();

  constructor(config: FaultlineInstrumentationConfig = {}) {
    this.#config = { ...config };
  }

  getConfig(): FaultlineInstrumentationConfig {
    return { ...this.#config };
  }

  /** Replace the config; takes effect for calls that start afterwards (steps and channels are re-installed). */
  setConfig(config: FaultlineInstrumentationConfig = {}): void {
    this.#config = { ...config };
    if (this.#enabled) {
      this.disable();
      this.enable();
    }
  }

  /** Use this provider instead of the global one. */
  setTracerProvider(provider: TracerProvider): void {
    this.#provider = provider;
    this.#tracer = undefined;
  }

  get captureContent(): boolean {
    return this.#config.captureMessageContent ?? this.#envCapture ?? false;
  }

  enable(): void {
    if (this.#enabled) return;
    this.#enabled = true;
    const config = this.#config;
    this.#installed = installInstrumentation({
      tracer: () => (this.#tracer ??= (this.#provider ?? trace.getTracerProvider()).getTracer(PACKAGE_NAME, VERSION)),
      captureContent: () => this.captureContent,
      steps: config.steps ?? [],
      ...(config.onExchangeEnd ? { onExchangeEnd: config.onExchangeEnd } : {}),
      ignoreHosts: config.ignoreHosts ?? [],
      metrics: this.#metrics,
      enabled: () => this.#enabled,
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
