/**
 * Run application code inside one of our spans and end the span when the code is done, whether it returns a value,
 * a promise or throws. The application's own result and error pass through unchanged (the same promise object, the
 * same error object): we only observe them.
 */
import { SpanStatusCode, context, type Context, type Span } from '@opentelemetry/api';
import { now } from '../../src/clock';
import { ATTR_ERROR_TYPE, ERROR_TYPE_OTHER } from '../semconv';

export function runInSpan<T>(span: Span, ctx: Context, fn: (span: Span) => T): T {
  let result: T;
  try {
    result = context.with(ctx, fn, undefined, span);
  } catch (err) {
    endWithError(span, err);
    throw err;
  }
  if (isThenable(result)) {
    result.then(
      () => span.end(now()),
      (err: unknown) => endWithError(span, err),
    );
    return result;
  }
  span.end(now());
  return result;
}

/** A low-cardinality error.type for an application error: its code (ECONNRESET, …), else its class name. */
export function errorTypeOf(err: unknown): string {
  if (err !== null && typeof err === 'object') {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    const name = (err as { name?: unknown }).name;
    if (typeof name === 'string' && name !== '') return name;
  }
  return ERROR_TYPE_OTHER;
}

function endWithError(span: Span, err: unknown): void {
  span.setAttribute(ATTR_ERROR_TYPE, errorTypeOf(err));
  if (err instanceof Error) span.recordException(err, now());
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
  span.end(now());
}

function isThenable<T>(value: T): value is T & PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
