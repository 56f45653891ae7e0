/**
 * GenAI client metrics (gen_ai.client.operation.duration, gen_ai.client.token.usage) through the global
 * MeterProvider of @opentelemetry/api. With no provider registered this is a cheap no-op; a provider registered
 * later (the app's own SDK) is picked up on the next call, since the metrics API has no proxy provider.
 */
import { metrics, type Attributes, type Histogram, type MeterProvider } from '@opentelemetry/api';
import { VERSION } from '../src/version';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_TOKEN_TYPE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  METRIC_GEN_AI_CLIENT_OPERATION_DURATION,
  METRIC_GEN_AI_CLIENT_TOKEN_USAGE,
} from './semconv';
import type { LlmRequestSummary, LlmResponseSummary } from './types';

// Bucket boundaries from the GenAI metrics conventions.
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

export class GenAiMetrics {
  #provider: MeterProvider | undefined;
  #given: MeterProvider | undefined;
  #duration: Histogram | undefined;
  #tokens: Histogram | undefined;

  /** Record into this provider instead of the global one (the instrumentation's `setMeterProvider`). */
  use(provider: MeterProvider | undefined): void {
    this.#given = provider;
  }

  /** Instruments of the given or current global provider, or undefined when only a no-op provider is there. */
  #instruments(): { duration: Histogram; tokens: Histogram } | undefined {
    const provider = this.#given ?? metrics.getMeterProvider();
    if (provider !== this.#provider) {
      this.#provider = provider;
      this.#duration = this.#tokens = undefined;
      // The API's fallback is a NoopMeterProvider; recording into it would only cost time.
      if (provider.constructor?.name === 'NoopMeterProvider') return undefined;
      const meter = provider.getMeter('faultline', VERSION);
      this.#duration = meter.createHistogram(METRIC_GEN_AI_CLIENT_OPERATION_DURATION, {
        description: 'GenAI operation duration.',
        unit: 's',
        advice: { explicitBucketBoundaries: DURATION_BUCKETS },
      });
      this.#tokens = meter.createHistogram(METRIC_GEN_AI_CLIENT_TOKEN_USAGE, {
        description: 'Number of input and output tokens used.',
        unit: '{token}',
        advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
      });
    }
    return this.#duration && this.#tokens ? { duration: this.#duration, tokens: this.#tokens } : undefined;
  }

  record(
    url: URL,
    port: number,
    request: Pick<LlmRequestSummary, 'operation' | 'provider' | 'model'>,
    response: LlmResponseSummary | undefined,
  ): void {
    const inst = this.#instruments();
    if (!inst) return;
    const attrs: Attributes = {
      [ATTR_GEN_AI_OPERATION_NAME]: request.operation,
      [ATTR_GEN_AI_PROVIDER_NAME]: request.provider,
      [ATTR_SERVER_ADDRESS]: url.hostname,
      [ATTR_SERVER_PORT]: port,
    };
    if (request.model !== undefined) attrs[ATTR_GEN_AI_REQUEST_MODEL] = request.model;
    if (response?.model !== undefined) attrs[ATTR_GEN_AI_RESPONSE_MODEL] = response.model;
    if (response?.errorType !== undefined) attrs[ATTR_ERROR_TYPE] = response.errorType;
    inst.duration.record((response?.durationMs ?? 0) / 1000, attrs);
    const usage = response?.usage;
    if (usage?.inputTokens !== undefined)
      inst.tokens.record(usage.inputTokens, { ...attrs, [ATTR_GEN_AI_TOKEN_TYPE]: 'input' });
    if (usage?.outputTokens !== undefined)
      inst.tokens.record(usage.outputTokens, { ...attrs, [ATTR_GEN_AI_TOKEN_TYPE]: 'output' });
  }
}
