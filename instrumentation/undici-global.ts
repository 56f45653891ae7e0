/**
 * The two things of npm undici the span layer's installation needs, without loading the rest of it: `Dispatcher`
 * (the base class, for `instanceof` and the adapter of foreign dispatchers) and the process-wide dispatcher slot.
 * `import … from 'undici'` loads the whole client (about 110 modules and 10 MB, bench/startup.bench.mjs), and its
 * lib/global.js creates an Agent of its own when the slot is empty. The slot is read and written exactly as undici's
 * lib/global.js does it: `.1` is the one Node's bundled fetch reads, `.2` the one undici 7 reads.
 */
import type * as undici from 'undici';

// The class, its instance type and its namespace of option types under one name, as undici exports them.
export const Dispatcher = require('undici/lib/dispatcher/dispatcher') as typeof undici.Dispatcher;
export type Dispatcher = undici.Dispatcher;
// eslint-disable-next-line @typescript-eslint/no-namespace -- type-only, merged with the class (undici declares it so)
export declare namespace Dispatcher {
  export type DispatchOptions = undici.Dispatcher.DispatchOptions;
  export type DispatchHandler = undici.Dispatcher.DispatchHandler;
}

const SLOT = Symbol.for('undici.globalDispatcher.2');
const LEGACY_SLOT = Symbol.for('undici.globalDispatcher.1');

type Slots = typeof globalThis & { [LEGACY_SLOT]?: Dispatcher };

export function getGlobalDispatcher(): Dispatcher {
  return (globalThis as Slots)[LEGACY_SLOT] as Dispatcher;
}

export function setGlobalDispatcher(dispatcher: Dispatcher): void {
  if (!dispatcher || typeof dispatcher.dispatch !== 'function')
    throw new TypeError('Argument agent must implement Agent');
  for (const slot of [SLOT, LEGACY_SLOT]) {
    Object.defineProperty(globalThis, slot, {
      value: dispatcher,
      writable: true,
      enumerable: false,
      configurable: false,
    });
  }
}
