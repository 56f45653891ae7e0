/**
 * Being told when a framework loads, without loading it, patching it or hooking the module loader: the frameworks we
 * bridge publish a process-wide singleton on `globalThis` under a `Symbol.for` key (so that every copy of the package
 * shares it) the first time they are imported or used. An accessor on that key hears the assignment, in CommonJS and
 * ES module apps alike, and otherwise behaves as the plain property the framework expects.
 */
import { logger } from '../../src/diag';

const log = logger('frameworks');

/**
 * Call `onSet` with the value the framework publishes at `key` (now, if it already has). `onMissing`, if given, is
 * called when the key is read while nothing is published (a framework whose entry point never publishes it, reading it
 * at its first use): what it returns, if not undefined, is the value read (it may publish it itself). Returns the
 * removal of the trap, which leaves the published value in place as a plain property.
 */
export function whenGlobalSet(key: symbol, onSet: (value: unknown) => void, onMissing?: () => unknown): () => void {
  const call = (value: unknown): void => {
    try {
      onSet(value);
    } catch (err) {
      log.error(`internal error bridging ${String(key)} (ignored, the application is unaffected):`, err);
    }
  };
  const existing = Object.getOwnPropertyDescriptor(globalThis, key);
  // Someone else's accessor, or a property we may not redefine: leave it alone.
  if (
    existing !== undefined &&
    (!('value' in existing) || (existing.value === undefined && existing.configurable !== true))
  )
    return () => {};
  if (existing?.value !== undefined) {
    call(existing.value);
    return () => {};
  }
  let value: unknown;
  let asking = false;
  const get = (): unknown => {
    if (value !== undefined || onMissing === undefined || asking) return value;
    asking = true;
    try {
      value ??= onMissing();
    } catch (err) {
      log.error(`internal error bridging ${String(key)} (ignored, the application is unaffected):`, err);
    } finally {
      asking = false;
    }
    return value;
  };
  Object.defineProperty(globalThis, key, {
    configurable: true,
    enumerable: false,
    get,
    set(v: unknown) {
      value = v;
      if (v !== undefined) call(v);
    },
  });
  return () => {
    if (Object.getOwnPropertyDescriptor(globalThis, key)?.get !== get) return;
    Object.defineProperty(globalThis, key, { configurable: true, enumerable: false, writable: true, value });
  };
}
