/**
 * What an OTLP endpoint must look like, wherever it is given: `export.otlp.endpoint` in the configuration file
 * (config-schema.ts) and the OTEL_EXPORTER_OTLP_*ENDPOINT variables (config.ts). One rule, so both refuse the same
 * values with the same words. Kept apart from the schema so reading the environment does not load zod.
 */
export const OTLP_ENDPOINT = /^https?:\/\/[^\s/?#]+(\/\S*)?$/;
export const OTLP_ENDPOINT_EXPECTED = 'an http(s) URL like http://localhost:4318';
