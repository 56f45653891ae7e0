/**
 * The controller a step inside the GenAI span layer hands to the application's handler (undici 7's handler API) when
 * the real one is not the application's to hold: before there is a real request (a synthetic or delayed answer), across
 * attempts (a guard's retry: each attempt has its own controller), or after the real request is over (a held or
 * stalled answer). It forwards abort, pause and resume to the real controller of the moment, replays them onto one
 * attached later, and tells the step of an abort at once, so a call the application cancels settles even when no real
 * request is in flight to report it.
 */
import type { Dispatcher } from 'undici';

type Controller = Dispatcher.DispatchController;

export class ForwardingController implements Controller {
  /** The controller of the real request in flight, if any. */
  real?: Controller;
  rawHeaders?: Controller['rawHeaders'];
  rawTrailers?: Controller['rawTrailers'];
  /** Called once, synchronously, when the application aborts. */
  onAbort?: (reason: Error) => void;
  #aborted = false;
  #reason: Error | null = null;
  #paused = false;
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

  /** The real request now in flight (a new attempt replaces the last): an abort or pause already asked for applies. */
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
    this.real?.abort(this.#reason);
    // Also tell the step ourselves: the real request may be over already, or not started yet (a back-off).
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
