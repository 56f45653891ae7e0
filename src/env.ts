/**
 * The environment, read in one place: besides src/config.ts (which resolves the whole configuration from it), this
 * is the only module that reaches for `process.env` (eslint's no-restricted-properties rule keeps it so). Every other
 * module takes an `env` from its caller, defaulting to `processEnv()`, and reads a variable that several places need
 * through the one reader below that names it. Variables are read as users write them (switches, lists, numbers).
 * At the base of the layers (docs/architecture.md): anything may import it.
 */
import { diag } from '@opentelemetry/api';
import { FaultlineInputError } from './errors';

const TRUE = new Set(['1', 'true', 'yes', 'y', 'on', 'enable', 'enabled']);
const FALSE = new Set(['0', 'false', 'no', 'n', 'off', 'disable', 'disabled']);

/**
 * A faultline switch as users write it (`1`, `true`, `Yes`, ` on `… or `0`, `false`, `no`, `off`…); unset or empty is
 * undefined. Anything else is refused: a switch that guards fault injection must not be guessed.
 */
export function readSwitch(name: string, raw: string | undefined): boolean | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const v = raw.trim().toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw new FaultlineInputError(
    'FAULTLINE_CONFIG_INVALID',
    `${name}=${JSON.stringify(raw)} is not a switch: use 1, true, yes or on (or 0, false, no, off)`,
  );
}

/** The process environment: the default of every `env` parameter. */
export function processEnv(): NodeJS.ProcessEnv {
  return process.env;
}

/** FAULTLINE_PLAN: the fault plan file the environment names (trimmed); undefined when unset or blank. */
export function planFileFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.FAULTLINE_PLAN?.trim() || undefined;
}

/** FAULTLINE_GUARDS: the guard configuration file the environment names (trimmed); undefined when unset or blank. */
export function guardsFileFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.FAULTLINE_GUARDS?.trim() || undefined;
}

/** The metric export interval when OTEL_METRIC_EXPORT_INTERVAL gives none: the OTel specification's default. */
export const METRIC_EXPORT_INTERVAL_MS = 60_000;

/** OTEL_METRIC_EXPORT_INTERVAL, ms: a positive number, else the default (unset, blank or not a positive number). */
export function metricExportIntervalFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.OTEL_METRIC_EXPORT_INTERVAL?.trim() || NaN);
  return Number.isFinite(v) && v > 0 ? v : METRIC_EXPORT_INTERVAL_MS;
}

/** FAULTLINE_DEBUG: the CLI prints stacks (`1` or `true`). */
export function debugFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.FAULTLINE_DEBUG === '1' || env.FAULTLINE_DEBUG === 'true';
}

/** NODE_ENV says production, as people write it (`production`, `Production`, `"production "`). */
export function isProduction(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.NODE_ENV?.trim().toLowerCase() === 'production';
}

/** A comma-separated OTel list variable, trimmed and lower-cased; undefined when unset or blank. */
export function readList(raw: string | undefined): string[] | undefined {
  const items = (raw ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');
  return items.length > 0 ? items : undefined;
}

/**
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, read the way both the JS contrib (boolean) and Python
 * (`SPAN_ONLY`, `SPAN_AND_EVENT`, `EVENT_ONLY`, `NO_CONTENT`) instrumentations read it. We only record on spans, so
 * `EVENT_ONLY` means no content here. Undefined (with a diag warning) for anything else: off, the safe side.
 */
export function captureContentFromEnv(env: NodeJS.ProcessEnv = process.env): boolean | undefined {
  const raw = env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.trim();
  if (!raw) return undefined;
  const v = raw.toLowerCase();
  if (v === 'true' || v === '1' || v === 'span_only' || v === 'span_and_event') return true;
  if (v === 'false' || v === '0' || v === 'no_content' || v === 'event_only') return false;
  diag.warn(
    `faultline: ignoring OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=${JSON.stringify(raw)}: expected true, false, SPAN_ONLY or NO_CONTENT`,
  );
  return undefined;
}
