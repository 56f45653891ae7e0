import { diag, type DiagLogger } from '@opentelemetry/api';

/** A component logger under the OTel diag API (OTEL_LOG_LEVEL), namespaced `faultline/<component>`. */
export function logger(component: string): DiagLogger {
  return diag.createComponentLogger({ namespace: `faultline/${component}` });
}

/**
 * Run `fn`; on an internal error, report it through diag and return `fallback`. Nothing of ours is ever thrown
 * into the application (the `safeExecuteInTheMiddle` way).
 */
export function safely<T>(log: DiagLogger, what: string, fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch (err) {
    log.error(`internal error in ${what} (ignored, the application is unaffected):`, err);
    return fallback;
  }
}
