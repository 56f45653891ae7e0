/**
 * The action ledger ("When Messages Go Wrong" §2.10): idempotent execution keyed by action id and bound to the
 * task, session and canonical parameters. `executeOnce` runs an action once and replays the stored receipt for any
 * repeat (duplicate suppression); concurrent repeats share the in-flight execution; an action that failed is left
 * `unknown` and never re-executed automatically. `delivered` / `markDelivered` track requests for resubmission.
 */
export type LedgerState = 'pending' | 'executing' | 'confirmed' | 'unknown';

export interface LedgerEntry<R = unknown> {
  state: LedgerState;
  binding: string;
  executionCount: number;
  receipt?: R;
  error?: unknown;
  inFlight?: Promise<R>;
}

export class LedgerBindingError extends Error {
  constructor(key: string) {
    super(`action ${key} was already recorded with a different binding (task, session or parameters)`);
    this.name = 'LedgerBindingError';
  }
}

export class ActionLedger {
  readonly #entries = new Map<string, LedgerEntry>();
  readonly #max: number;

  constructor(maxEntries = 10_000) {
    this.#max = maxEntries;
  }

  get(key: string): LedgerEntry | undefined {
    return this.#entries.get(key);
  }

  /** Register an action request (state pending) if unknown. */
  register(key: string, binding = ''): LedgerEntry {
    let e = this.#entries.get(key);
    if (!e) {
      e = { state: 'pending', binding, executionCount: 0 };
      this.#entries.set(key, e);
      if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value as string);
    }
    return e;
  }

  /**
   * Execute `fn` once for `key`. A repeat gets the stored receipt (`replayed: true`); a repeat with a different
   * binding is refused (same id, different action).
   */
  async executeOnce<R>(
    key: string,
    binding: string,
    fn: () => R | Promise<R>,
  ): Promise<{ receipt: R; replayed: boolean }> {
    const e = this.register(key, binding) as LedgerEntry<R>;
    if (e.binding !== binding) throw new LedgerBindingError(key);
    if (e.state === 'confirmed') return { receipt: e.receipt as R, replayed: true };
    if (e.inFlight) return { receipt: await e.inFlight, replayed: true };
    if (e.state === 'unknown')
      throw e.error instanceof Error ? e.error : new Error(`action ${key} ended in an unknown state`);
    e.state = 'executing';
    e.executionCount++;
    e.inFlight = Promise.resolve().then(fn);
    try {
      e.receipt = await e.inFlight;
      e.state = 'confirmed';
      return { receipt: e.receipt, replayed: false };
    } catch (err) {
      e.state = 'unknown';
      e.error = err;
      throw err;
    } finally {
      delete e.inFlight;
    }
  }

  /** Whether a message with this key was already delivered (duplicate suppression on a channel). */
  delivered(key: string): boolean {
    const e = this.#entries.get(key);
    return e !== undefined && e.state !== 'pending';
  }

  markDelivered(key: string, binding = ''): void {
    const e = this.register(key, binding);
    if (e.state === 'pending') e.state = 'confirmed';
  }
}

/** The ledger key of a message: an explicit `action_id` / `actionId` in the payload, else the message id. */
export function actionKey(message: { id: string; payload: unknown }): string {
  const p = message.payload;
  if (typeof p === 'object' && p !== null) {
    const a = (p as Record<string, unknown>).action_id ?? (p as Record<string, unknown>).actionId;
    if (typeof a === 'string' && a !== '') return a;
  }
  return message.id;
}
