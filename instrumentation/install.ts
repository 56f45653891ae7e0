/**
 * Install the GenAI span layer on the process-wide undici dispatcher that Node's fetch uses, chaining to whatever
 * dispatcher was installed before (a proxy agent, a test's mock agent, …) and restoring it on uninstall.
 *
 * Node's fetch reads `globalThis[Symbol.for('undici.globalDispatcher.1')]`; npm undici's `setGlobalDispatcher`
 * writes that slot and `.2`. Node 20/22's bundled undici 6 talks to it with legacy handlers, which reach the layer as
 * they are (see `withLayer`). When nothing was installed before, the dispatcher below us is Node's own
 * (see fetch-dispatcher.ts), not a fresh npm undici Agent. OTLP export goes through node:http, so it never reaches
 * this layer; the configured OTLP endpoints are ignored here anyway.
 */
import './fetch-dispatcher';
import { Dispatcher, getGlobalDispatcher, setGlobalDispatcher } from './undici-global';
import { logger } from '../src/diag';
import { toLegacyHandler } from './handler-api';
import { createGenAiInterceptor, type GenAiInterceptorOptions } from './interceptor';
import type { Interceptor } from './types';

const log = logger('install');

const INSTALLED = Symbol.for('faultline.instrumentation.installed');

interface Installed {
  dispatcher: Dispatcher;
  previous: Dispatcher;
}

type Slot = typeof globalThis & { [INSTALLED]?: Installed };

export interface InstalledInstrumentation {
  /** Restore the dispatcher that was there before (when ours is still the global one). Idempotent. */
  uninstall(): void;
}

/** A dispatcher from another copy of undici (e.g. Node's bundled one), adapted to undici 7's handler API. */
class ForeignDispatcher extends Dispatcher {
  readonly #target: Dispatcher;
  readonly #legacy: boolean;

  constructor(target: Dispatcher) {
    super();
    this.#target = target;
    // Node 20/22 bundle undici 6, which only understands legacy handlers.
    this.#legacy = Number((process.versions as Record<string, string | undefined>).undici?.split('.')[0] ?? 7) < 7;
  }

  override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return this.#target.dispatch(opts, this.#legacy ? toLegacyHandler(handler) : handler);
  }

  override close(...args: unknown[]): Promise<void> {
    return (this.#target.close as (...a: unknown[]) => Promise<void>)(...args);
  }

  override destroy(...args: unknown[]): Promise<void> {
    return (this.#target.destroy as (...a: unknown[]) => Promise<void>)(...args);
  }
}

/**
 * `base` with the GenAI layer in front: like undici's `Dispatcher#compose` (a view of the base whose `dispatch` goes
 * through the layer first), except that the caller's handler reaches the layer as it is. `compose` would adapt the
 * legacy handlers of Node 20/22's fetch to undici 7's API, and the base would adapt them back, parsing and rebuilding
 * the response headers on the way; the layer speaks both APIs itself.
 */
function withLayer(base: Dispatcher, layer: Interceptor): Dispatcher {
  const dispatch = layer(base.dispatch.bind(base));
  return new Proxy(base, {
    get(target, key) {
      if (key === 'dispatch') return dispatch;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** host:port of the OTLP endpoints in the environment: never intercepted. */
export function otlpHosts(env: NodeJS.ProcessEnv = process.env): string[] {
  const hosts: string[] = [];
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT']) {
    const v = env[name]?.trim();
    if (!v) continue;
    try {
      hosts.push(new URL(v).host);
    } catch {
      // a bad endpoint is the exporter's to report
    }
  }
  return hosts;
}

export function installInstrumentation(options: GenAiInterceptorOptions): InstalledInstrumentation {
  const slot = globalThis as Slot;
  const current = getGlobalDispatcher() as Dispatcher;
  // Installing again replaces our layer instead of stacking a second one.
  const mine = slot[INSTALLED];
  const previous = mine && current === mine.dispatcher ? mine.previous : current;
  const base = previous instanceof Dispatcher ? previous : new ForeignDispatcher(previous);
  const ignoreHosts = [...(options.ignoreHosts ?? []), ...otlpHosts()];
  const dispatcher = withLayer(base, createGenAiInterceptor({ ...options, ignoreHosts }));
  setGlobalDispatcher(dispatcher);
  const installed: Installed = { dispatcher, previous };
  slot[INSTALLED] = installed;
  log.debug('installed the GenAI span layer on the global undici dispatcher');

  let done = false;
  return {
    uninstall(): void {
      if (done) return;
      done = true;
      if (getGlobalDispatcher() === dispatcher) {
        setGlobalDispatcher(previous);
      } else {
        log.warn('the global undici dispatcher was replaced after faultline installed; leaving it in place');
      }
      if (slot[INSTALLED] === installed) delete slot[INSTALLED];
    },
  };
}
