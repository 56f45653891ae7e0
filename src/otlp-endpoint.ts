/**
 * OTLP endpoints, one rule each wherever they are given or followed:
 *  - what an endpoint must look like: `export.otlp.endpoint` in the configuration file (config-schema.ts) and the
 *    OTEL_EXPORTER_OTLP_*ENDPOINT variables (config.ts) refuse the same values with the same words;
 *  - a signal's URL from a base endpoint, as the OTel exporters build it (a slash, then `v1/traces`…): the runtime's
 *    exporters (config.ts), `faultline diagnose --export otlp` (report/diagnosis-spans.ts) and the OTLP requests the
 *    instrumentation must never intercept (instrumentation/install.ts).
 * Plain functions at the base of the layers (docs/architecture.md); kept apart from the schema so reading the
 * environment does not load zod.
 */
export const OTLP_ENDPOINT = /^https?:\/\/[^\s/?#]+(\/\S*)?$/;
export const OTLP_ENDPOINT_EXPECTED = 'an http(s) URL like http://localhost:4318';

/** Where OTLP/HTTP goes when nothing names an endpoint (the OTel specification's default). */
export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';

export type OtlpSignal = 'traces' | 'metrics' | 'logs';

const SIGNAL_PATH: Record<OtlpSignal, string> = { traces: 'v1/traces', metrics: 'v1/metrics', logs: 'v1/logs' };
const SIGNAL_VAR: Record<OtlpSignal, string> = {
  traces: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  metrics: 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT',
  logs: 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT',
};

/** A signal's URL for a base endpoint, as the OTel exporters turn OTEL_EXPORTER_OTLP_ENDPOINT into one. */
export function signalUrl(base: string, signal: OtlpSignal): string {
  return base.endsWith('/') ? `${base}${SIGNAL_PATH[signal]}` : `${base}/${SIGNAL_PATH[signal]}`;
}

/** The URL the environment sends a signal to: its own variable as it is, else the base endpoint's; else undefined. */
export function signalUrlFromEnv(env: NodeJS.ProcessEnv, signal: OtlpSignal): string | undefined {
  const own = env[SIGNAL_VAR[signal]]?.trim();
  if (own) return own;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? signalUrl(base, signal) : undefined;
}

/** Every OTLP URL the environment names: each signal's own variable and the base endpoint's URL of each signal. */
export function otlpUrlsFromEnv(env: NodeJS.ProcessEnv): string[] {
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const signals = Object.keys(SIGNAL_PATH) as OtlpSignal[];
  return [
    ...(base ? signals.map((s) => signalUrl(base, s)) : []),
    ...signals.map((s) => env[SIGNAL_VAR[s]]?.trim()).filter((u): u is string => !!u),
  ];
}
