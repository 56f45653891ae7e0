/**
 * A value remembered per object for as long as the object lives: what a WeakMap is for, kept instead on the object
 * itself, under a private symbol. The property is non-enumerable, so spread, `Object.assign`, `Object.keys`, JSON and
 * structured clone do not see it, and a copy of the object does not inherit the value.
 *
 * Why not a WeakMap: V8 keeps the values of an old WeakMap alive through young-generation collections (scavenges)
 * after their keys died, so each value is copied and promoted to the old generation, to be found dead only by a full
 * collection. A trace's view cached in one took the view and the trace it reads along: every trace diagnosed was
 * promoted. Held on the key, a value dies with its key in the next scavenge. `node bench/memo-gc.cjs` shows the
 * mechanism (a WeakMap promotes three times the bytes and scavenges three times as long); on the diagnosis bench
 * (BENCHMARKS.md, "Per-trace caches on the object") the caches moved here cut the CPU of `faultline diagnose` by a
 * sixth. A key that cannot take a property (frozen, sealed) uses a WeakMap.
 *
 * For objects faultline reads: the spans and traces it read or was given to analyse, views, observations (docs/api.md
 * says so for the analysis functions). An application's own objects (a message it sends) are not written to.
 */
export class ObjectMemo<K extends object, V> {
  private readonly slot: symbol;
  private fallback: WeakMap<K, V> | undefined;

  /** @param name what is remembered (the symbol's description, seen in a debugger). */
  constructor(name: string) {
    this.slot = Symbol(name);
  }

  get(key: K): V | undefined {
    const own = (key as Record<symbol, V | undefined>)[this.slot];
    return own !== undefined ? own : this.fallback?.get(key);
  }

  set(key: K, value: V): void {
    if (Object.isExtensible(key))
      Object.defineProperty(key, this.slot, { value, writable: true, configurable: true, enumerable: false });
    else (this.fallback ??= new WeakMap()).set(key, value);
  }
}
