/**
 * A redirect is a hop of the call, not a call: the hop whose answer is a redirect parks its tap here until the client
 * sends the follow-up request (fetch's rules decide its method and URL), which then continues the same span. A hop
 * whose follow-up never comes gives up after FOLLOW_UP_MS.
 */
import type { Dispatcher } from 'undici';
import { callContext } from './frameworks/scope';

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** How long a redirect hop waits for its follow-up request (fetch sends it within milliseconds). */
const FOLLOW_UP_MS = 200;

/** The method and URL a client following a redirect sends next (fetch's rules), as a lookup key. */
export function followUpKey(
  method: string,
  url: URL,
  status: number,
  location: string | undefined,
): string | undefined {
  if (location === undefined || !REDIRECT_STATUSES.has(status)) return undefined;
  let target: URL;
  try {
    target = new URL(location, url);
  } catch {
    return undefined;
  }
  const next =
    (status === 303 && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST') ? 'GET' : method;
  return `${next} ${target.origin}${target.pathname}${target.search}`;
}

function requestKey(opts: Dispatcher.DispatchOptions): string | undefined {
  const origin = opts.origin;
  if (origin === undefined || opts.path === undefined) return undefined;
  const o = typeof origin === 'string' ? origin.replace(/\/+$/, '') : origin.origin;
  return `${(opts.method ?? 'GET').toUpperCase()} ${o}${opts.path}`;
}

/**
 * Calls whose last hop answered with a redirect, waiting for the client's follow-up request. Two calls redirected to
 * the same URL are told apart by the context they were made in, then by order (each client follows its own redirect as
 * soon as it has it).
 */
export class FollowUps<Tap extends { readonly exchange: { readonly parent: unknown } }> {
  readonly #parked = new Map<string, { tap: Tap; timer: NodeJS.Timeout }[]>();

  get size(): number {
    return this.#parked.size;
  }

  park(key: string, tap: Tap, giveUp: () => void): void {
    const entry = {
      tap,
      timer: setTimeout(() => {
        this.#remove(key, entry);
        giveUp();
      }, FOLLOW_UP_MS),
    };
    // Waiting never keeps the process alive: the span's end time is already fixed.
    entry.timer.unref();
    const list = this.#parked.get(key);
    if (list) list.push(entry);
    else this.#parked.set(key, [entry]);
  }

  take(opts: Dispatcher.DispatchOptions): Tap | undefined {
    const key = requestKey(opts);
    const list = key === undefined ? undefined : this.#parked.get(key);
    if (key === undefined || list === undefined) return undefined;
    const active = callContext();
    const entry = list.find((e) => e.tap.exchange.parent === active) ?? list[0];
    if (entry === undefined) return undefined;
    clearTimeout(entry.timer);
    this.#remove(key, entry);
    return entry.tap;
  }

  #remove(key: string, entry: { tap: Tap; timer: NodeJS.Timeout }): void {
    const list = this.#parked.get(key);
    if (!list) return;
    const i = list.indexOf(entry);
    if (i !== -1) list.splice(i, 1);
    if (list.length === 0) this.#parked.delete(key);
  }
}
