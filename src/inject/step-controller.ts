/**
 * The controller the fault step hands to the application's handler (undici 7's handler API), and the timers its
 * faults wait on. It forwards pause / resume / abort to the real request's controller once there is one, and it can
 * hold a call open that has no socket (a hang, a stall) until the application gives up.
 */
import type { Dispatcher } from 'undici';
import { logger } from '../diag';

const log = logger('inject');

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;

export class StepController implements Controller {
  real?: Controller;
  #aborted = false;
  #reason: Error | null = null;
  #paused = false;
  rawHeaders?: Controller['rawHeaders'];
  onAbort?: (reason: Error) => void;
  #hold: NodeJS.Timeout | undefined;

  get aborted(): boolean {
    return this.#aborted || (this.real?.aborted ?? false);
  }
  get paused(): boolean {
    return this.real?.paused ?? this.#paused;
  }
  get reason(): Error | null {
    return this.#reason ?? this.real?.reason ?? null;
  }
  attach(real: Controller): void {
    this.real = real;
    if (this.#aborted) real.abort(this.#reason ?? new Error('aborted'));
    else if (this.#paused) real.pause();
  }
  /**
   * Hold the call open until the application aborts, as a server that never answers does. A real hung call is kept
   * alive by its socket; a held one has none, and no timer either: without this, a garbage collection could take the
   * whole call (and with it the application's abort wiring: fetch follows the caller's signal only weakly) and the
   * application's timeout would never fire. The timer keeps the call reachable and, like the socket, the process
   * waiting.
   */
  hold(): void {
    this.#hold ??= setInterval(() => this, 0x7fffffff);
  }

  /** The call settled (ended, failed or aborted): stop holding it. */
  release(): void {
    if (this.#hold !== undefined) clearInterval(this.#hold);
    this.#hold = undefined;
  }

  abort(reason: Error): void {
    this.release();
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason ?? new Error('aborted');
    if (this.real) this.real.abort(this.#reason);
    // Also tell the application ourselves: the real request may be over already (a stalled stream holds its end).
    this.onAbort?.(this.#reason);
  }
  pause(): void {
    this.#paused = true;
    this.real?.pause();
  }
  resume(): void {
    this.#paused = false;
    this.real?.resume();
  }
}

export function abortError(): Error {
  return Object.assign(new Error('This operation was aborted'), { name: 'AbortError', code: 'UND_ERR_ABORTED' });
}

/**
 * Run `fn` after `ms` unless the application aborted meanwhile. Whatever it throws is reported to the application's
 * handler as the call's error (never an uncaught exception or unhandled rejection).
 */
export function after(ms: number, ctl: StepController, handler: Handler, fn: () => unknown): void {
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

const sleep = (ms: number, ctl: StepController): Promise<boolean> =>
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

export function headerValue(headers: Record<string, unknown>, name: string): string | undefined {
  const v = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(v) ? String(v[0]) : v === undefined ? undefined : String(v);
}
