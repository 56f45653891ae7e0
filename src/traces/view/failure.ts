/**
 * How a span says it failed, whichever producer wrote it (status ERROR, `error.type`, an HTTP status ≥ 400, an
 * `exception` event), and whether that names a timeout; with the finite-number attribute reader the view's readers
 * share. The bottom of the view: llm.ts and message.ts both read failures through it.
 */
import { num as modelNum, str, type Attributes, type SpanRecord } from '../model';

/** How a span says it failed. */
export interface SpanFailure {
  /** `error.type`, the exception type, or the HTTP status as text. */
  errorType?: string;
  httpStatus?: number;
  /** Status message or exception message. */
  message?: string;
  /** The exception message as well, when the status message is another text (an SDK's generic status over the
   * provider's own message in the exception). */
  detail?: string;
  /** The failure names a timeout or an exceeded deadline. */
  timeout: boolean;
}

/** A finite number attribute (a number, or a numeric string): the trace model's `num`, without NaN or ±Infinity. */
export function num(a: Attributes, key: string): number | undefined {
  const n = modelNum(a, key);
  return n !== undefined && Number.isFinite(n) ? n : undefined;
}

// "timed out": openai-node's APIConnectionTimeoutError says "Request timed out."
const TIMEOUT_RE =
  /time[_ -]?out|timed[_ -]?out|etimedout|deadline|headers_timeout|body_timeout|connect_timeout|\b408\b|\b504\b/i;

/** Whether an error type / status message names a timeout or an exceeded deadline. */
export function looksLikeTimeout(...texts: (string | undefined)[]): boolean {
  return texts.some((t) => t !== undefined && TIMEOUT_RE.test(t));
}

/** How a span says it failed: status ERROR, `error.type`, an HTTP status ≥ 400, an `exception` event. */
export function spanFailure(span: SpanRecord): SpanFailure | undefined {
  const a = span.attributes;
  const http = num(a, 'http.response.status_code') ?? num(a, 'http.status_code');
  const rawType = a['error.type'];
  let errorType = typeof rawType === 'string' ? rawType : typeof rawType === 'number' ? String(rawType) : undefined;
  // Some producers set error.type to the status code of a successful call.
  if (errorType !== undefined && http !== undefined && http < 400 && errorType === String(http)) errorType = undefined;
  const exception = span.events.find((e) => e.name === 'exception');
  const exType = exception ? str(exception.attributes, 'exception.type') : undefined;
  const exMessage = exception ? str(exception.attributes, 'exception.message') : undefined;
  const failed = span.status.code === 'ERROR' || errorType !== undefined || (http !== undefined && http >= 400);
  if (!failed) return undefined;
  const f: SpanFailure = { timeout: false };
  const type = errorType ?? exType;
  if (type !== undefined) f.errorType = type;
  if (http !== undefined && http >= 400) f.httpStatus = http;
  const message = span.status.message || exMessage;
  if (message) f.message = message;
  if (exMessage && message && exMessage !== message) f.detail = exMessage;
  f.timeout = looksLikeTimeout(type, exType, message, f.httpStatus !== undefined ? String(f.httpStatus) : undefined);
  return f;
}
