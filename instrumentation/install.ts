/**
 * Install the GenAI span layer on the process-wide undici dispatcher that Node's fetch uses, chaining to whatever
 * dispatcher was installed before (a proxy agent, a test's mock agent, …) and restoring it on uninstall.
 *
 * Node's fetch reads `globalThis[Symbol.for('undici.globalDispatcher.1')]`; npm undici's `setGlobalDispatcher`
 * writes that slot and `.2`. Node 20/22's bundled undici 6 talks to it with legacy handlers, which reach the layer as
 * they are (see `withLayer`). When nothing was installed before, the dispatcher below us is Node's own
 * (see fetch-dispatcher.ts), not a fresh npm undici Agent. OTLP export goes through node:http, so it never reaches
 * this layer; the OTLP export requests of the configured endpoints (their signal paths, not their whole host:port,
 * which an LLM gateway may share) are skipped here anyway.
 */
import './fetch-dispatcher';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import Module from 'node:module';
import { Dispatcher, getGlobalDispatcher, setGlobalDispatcher } from './undici-global';
import { logger } from '../src/diag';
import { processEnv } from '../src/env';
import { otlpUrlsFromEnv } from '../src/otlp-endpoint';
import { toLegacyHandler } from './handler-api';
import { createGenAiInterceptor, createGenAiLayer, type GenAiInterceptorOptions } from './interceptor';
import { clientRequestSteps, installNodeHttp } from './node-http';
import { installNodeHttp2 } from './node-http2';
import type { Interceptor } from './types';

const log = logger('install');

const INSTALLED = Symbol.for('faultline.instrumentation.installed');

interface Installed {
  /** The global dispatcher we installed: the layer in front of `previous`. */
  dispatcher: Dispatcher;
  /** What is below the layer: what was there before, or what the application installed since. */
  previous: Dispatcher;
  layer: Interceptor;
  /** A replacement we could only notice late was reported. */
  reported: boolean;
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

/** Every dispatcher that has the layer in it: ours, and what was composed from ours. */
const LAYERED = new WeakSet<object>();

/** undici's request API on Dispatcher.prototype: each sends through `this.dispatch`. */
const API_METHODS = new Set<PropertyKey>(['request', 'stream', 'pipeline', 'connect', 'upgrade']);

const prototype = Dispatcher.prototype as unknown as Record<PropertyKey, unknown>;

/** undici's compose, remembering that what it returns has the layer in it when `this` has. */
function compose(this: Dispatcher, ...args: unknown[]): Dispatcher {
  const composed = (prototype.compose as (...a: unknown[]) => Dispatcher).apply(this, args);
  if (LAYERED.has(this)) LAYERED.add(composed);
  return composed;
}

/**
 * `base` with the GenAI layer in front: like undici's `Dispatcher#compose` (a view of the base whose `dispatch` goes
 * through the layer first), except that the caller's handler reaches the layer as it is. `compose` would adapt the
 * legacy handlers of Node 20/22's fetch to undici 7's API, and the base would adapt them back, parsing and rebuilding
 * the response headers on the way; the layer speaks both APIs itself.
 *
 * Everything else is the base's. undici's request API (`request`, `stream`, `pipeline`, …) and `compose` stay unbound,
 * as on undici's own composed dispatchers: they send through `this.dispatch`, so called on the view (or on what was
 * composed from it) they go through the layer. The base's own methods are bound to it (they may use private fields).
 */
function withLayer(base: Dispatcher, layer: Interceptor): Dispatcher {
  const dispatch = layer(base.dispatch.bind(base));
  const view = new Proxy(base, {
    get(target, key) {
      if (key === 'dispatch') return dispatch;
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      if (value === prototype.compose) return compose;
      if (API_METHODS.has(key) && value === prototype[key]) return value;
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  LAYERED.add(view);
  return view;
}

/**
 * The OTLP export requests, as `host:port/path`, of the endpoints in the environment and of `urls` (per-signal URLs,
 * e.g. from the configuration file): never intercepted. OTEL_EXPORTER_OTLP_ENDPOINT is a base (each signal's path is
 * appended, as the exporters do); a per-signal variable or URL is used as it is.
 */
export function otlpExports(env: NodeJS.ProcessEnv = processEnv(), urls: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const v of [...otlpUrlsFromEnv(env), ...urls]) {
    try {
      const url = new URL(v);
      out.push(`${url.host.toLowerCase()}${url.pathname}`);
    } catch {
      // a bad endpoint is the exporter's to report
    }
  }
  return out;
}

/** Where undici keeps the process-wide dispatcher (what Node's fetch reads). */
const GLOBAL_SLOT = Symbol.for('undici.globalDispatcher.1');
/** On a copy of undici's setGlobalDispatcher that we replaced: the original. */
const ORIGINAL = Symbol.for('faultline.undici.setGlobalDispatcher');
/** On node:module, once the load hook below is in place (another copy of faultline may have put it there). */
const WATCHING = Symbol.for('faultline.undici.watchingLoads');

type SetGlobal = ((dispatcher: Dispatcher) => void) & { [ORIGINAL]?: (dispatcher: Dispatcher) => void };
type Loader = (request: string, ...rest: unknown[]) => unknown;
type Loading = typeof Module & { _load: Loader; [WATCHING]?: true };

function baseOf(dispatcher: Dispatcher): Dispatcher {
  return dispatcher instanceof Dispatcher ? dispatcher : new ForeignDispatcher(dispatcher);
}

/**
 * The layer stays in front of whatever the application installs after it. A dispatcher set through this copy of
 * undici's `setGlobalDispatcher` (a ProxyAgent, a MockAgent, a `compose` of interceptors) is wrapped before any request
 * uses it: the application chose a transport, not to lose its spans, faults and guards. One installed any other way
 * (another copy of undici, a direct write to the global slot) is noticed on the first request that goes around the
 * layer — undici announces every request on its `undici:request:create` channel — wrapped from then on, and reported
 * once, since that request was not instrumented.
 */
function adopt(installed: Installed, dispatcher: Dispatcher): void {
  installed.previous = dispatcher;
  installed.dispatcher = withLayer(baseOf(dispatcher), installed.layer);
  setGlobalDispatcher(installed.dispatcher);
}

/** One copy's `setGlobalDispatcher`, replaced: what it installs while the layer is installed gets the layer in front. */
function layeredSet(original: (dispatcher: Dispatcher) => void): SetGlobal {
  return Object.assign(
    function setGlobalDispatcher(dispatcher: Dispatcher): void {
      const installed = (globalThis as Slot)[INSTALLED];
      // undici validates the argument (its own error); ours and what was composed from ours are installed as they are.
      if (!installed || dispatcher == null || typeof dispatcher.dispatch !== 'function' || LAYERED.has(dispatcher))
        return original(dispatcher);
      adopt(installed, dispatcher);
    },
    { [ORIGINAL]: original },
  );
}

/** Replace the setter of a module that exports undici's pair (its lib/global.js, or its index), once. */
function takeSetter(exports: unknown): void {
  const module = exports as { setGlobalDispatcher?: SetGlobal; getGlobalDispatcher?: unknown } | null;
  const set = module?.setGlobalDispatcher;
  if (typeof set !== 'function' || set[ORIGINAL] || typeof module?.getGlobalDispatcher !== 'function') return;
  module!.setGlobalDispatcher = layeredSet(set);
}

/**
 * Replace `setGlobalDispatcher` in every copy of npm undici the process loads, without loading one: requiring undici
 * costs a start-up of ~120 ms and ~20 MB that a process using only fetch never pays. undici's index destructures the
 * setter from its lib/global.js, which it loads through `require` even when the application imports undici as ESM, so
 * taking the setter there, as the module loads, reaches both. Copies already loaded are taken at once.
 */
function watchUndiciLoads(): void {
  const loading = Module as Loading;
  if (loading[WATCHING]) return;
  loading[WATCHING] = true;
  for (const [file, loaded] of Object.entries(require.cache)) {
    if (/[\\/]undici[\\/](lib[\\/]global|index)\.js$/.test(file)) takeSetter(loaded?.exports);
  }
  const load = loading._load;
  loading._load = function (this: unknown, ...args: Parameters<Loader>): unknown {
    const exports = load.apply(this, args);
    const request = args[0];
    if (typeof request === 'string' && (request.endsWith('global') || request === 'undici')) {
      try {
        takeSetter(exports);
      } catch (err) {
        log.error("internal error taking undici's setGlobalDispatcher (ignored, the application is unaffected):", err);
      }
    }
    return exports;
  };
}

function noticeReplacement(): void {
  try {
    const installed = (globalThis as Slot)[INSTALLED];
    const current = (globalThis as Record<symbol, unknown>)[GLOBAL_SLOT] as Dispatcher | undefined;
    if (!installed || current === undefined || current === installed.dispatcher || LAYERED.has(current)) return;
    adopt(installed, current);
    if (!installed.reported) {
      installed.reported = true;
      log.warn(
        'the global undici dispatcher was replaced after faultline installed, not through its setGlobalDispatcher: ' +
          'the GenAI span layer is now in front of the new one; the request that revealed it was not instrumented',
      );
    }
  } catch (err) {
    log.error('internal error noticing a replaced global dispatcher (ignored, the application is unaffected):', err);
  }
}

const REQUEST_CREATE = 'undici:request:create';

/** `otlpEndpoints`: OTLP per-signal export URLs besides those in the environment (see `otlpExports`). */
export function installInstrumentation(
  options: GenAiInterceptorOptions & { otlpEndpoints?: readonly string[] },
): InstalledInstrumentation {
  const slot = globalThis as Slot;
  const current = getGlobalDispatcher() as Dispatcher;
  // Installing again replaces our layer instead of stacking a second one.
  const mine = slot[INSTALLED];
  const previous = mine && current === mine.dispatcher ? mine.previous : current;
  const { otlpEndpoints, ...layerOptions } = options;
  const exports = otlpExports(processEnv(), otlpEndpoints);
  const layer = createGenAiInterceptor({ ...layerOptions, otlpExports: exports });
  const installed: Installed = { dispatcher: withLayer(baseOf(previous), layer), previous, layer, reported: false };
  setGlobalDispatcher(installed.dispatcher);
  slot[INSTALLED] = installed;
  watchUndiciLoads();
  if (!mine) subscribe(REQUEST_CREATE, noticeReplacement);
  log.debug('installed the GenAI span layer on the global undici dispatcher');
  // The same layer in front of node:http / node:https client requests (the AWS SDK, node-fetch): spans and the fault
  // step (node-http.ts: a step that sends a call again, a guard's retry, cannot act on a request already on its way).
  const clientLayer = createGenAiLayer({
    ...layerOptions,
    steps: clientRequestSteps(layerOptions.steps),
    otlpExports: exports,
  });
  const uninstallNodeHttp = installNodeHttp(clientLayer);
  // And in front of node:http2 client sessions (the AWS SDK's NodeHttp2Handler).
  const uninstallNodeHttp2 = installNodeHttp2(clientLayer);

  let done = false;
  return {
    uninstall(): void {
      if (done) return;
      done = true;
      uninstallNodeHttp();
      uninstallNodeHttp2();
      if (getGlobalDispatcher() === installed.dispatcher) {
        setGlobalDispatcher(installed.previous);
      } else {
        log.warn('the global undici dispatcher was replaced after faultline installed; leaving it in place');
      }
      if (slot[INSTALLED] !== installed) return;
      delete slot[INSTALLED];
      unsubscribe(REQUEST_CREATE, noticeReplacement);
    },
  };
}
