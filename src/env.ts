/**
 * Reading environment variables as users write them. Only the configuration's edge calls these (src/config.ts, and
 * the env helpers of the public API in src/plan/load.ts): nothing below `start()` reads the environment.
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
  throw new FaultlineInputError('FAULTLINE_CONFIG_INVALID', `${name}=${JSON.stringify(raw)} is not a switch: use 1, true, yes or on (or 0, false, no, off)`);
}

/** NODE_ENV says production, as people write it (`production`, `Production`, `"production "`). */
export function isProduction(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.NODE_ENV?.trim().toLowerCase() === 'production';
}

/** A comma-separated OTel list variable, trimmed and lower-cased; undefined when unset or blank. */
export function readList(raw: string | undefined): string[] | undefined {
  const items = (raw ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
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
  diag.warn(`faultline: ignoring OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=${JSON.stringify(raw)}: expected true, false, SPAN_ONLY or NO_CONTENT`);
  return undefined;
}
