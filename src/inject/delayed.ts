/**
 * The fault step's waits: a fault action that runs after a delay (a slow first byte, a delayed or dropped message, a
 * held answer) unless the application aborted meanwhile, on the span layer's one controller proxy
 * (instrumentation/forwarding-controller.ts).
 */
import type { Dispatcher } from 'undici';
import type { ForwardingController } from '../../instrumentation/forwarding-controller';
import { logger } from '../diag';

const log = logger('inject');

type Handler = Dispatcher.DispatchHandler;

/** The error undici reports for a request aborted by its dispatcher (what a cut stream ends its real request with). */
export function abortError(): Error {
  return Object.assign(new Error('This operation was aborted'), { name: 'AbortError', code: 'UND_ERR_ABORTED' });
}

/**
 * Run `fn` after `ms` unless the application aborted meanwhile. Whatever it throws is reported to the application's
 * handler as the call's error (never an uncaught exception or unhandled rejection).
 */
export function after(ms: number, ctl: ForwardingController, handler: Handler, fn: () => unknown): void {
  void sleep(ms, ctl).then((ok) => {
    if (!ok) return;
    try {
      fn();
    } catch (err) {
      log.error('internal error in a delayed fault action (reported to the application as the call error):', err);
      handler.onResponseError?.(ctl, err as Error);
    }
  });
}

const sleep = (ms: number, ctl: ForwardingController): Promise<boolean> =>
  new Promise((resolve) => {
    if (ms <= 0) return resolve(!ctl.aborted);
    const t = setTimeout(() => resolve(!ctl.aborted), ms);
    const prev = ctl.onAbort;
    ctl.onAbort = (r) => {
      clearTimeout(t);
      prev?.(r);
      resolve(false);
    };
  });
