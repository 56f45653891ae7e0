/**
 * A tracer provider's flush waits for faultline's spans, whoever set the provider up. faultline ends a call's span a
 * moment after the application had its answer (the reading is kept off the critical path: see the interceptor's
 * `settleExchanges`), so an application that flushes its own provider at once (a serverless handler, a test with an
 * in-memory exporter) would export without it. The SDK has no way to add a span processor to a provider already
 * built, so the first time faultline starts a span on a provider, that provider's `forceFlush` and `shutdown` are
 * wrapped, once, to settle faultline's pending exchanges first. A provider behind the API's global proxy is reached
 * through its delegate; one without those methods (the no-op) is left alone.
 */
import type { TracerProvider } from '@opentelemetry/api';
import { logger } from '../src/diag';
import { settleExchanges } from './interceptor';

const log = logger('provider-flush');

/** Providers whose forceFlush/shutdown already settle first (and those with nothing to wrap). */
const seen = new WeakSet<object>();

type Flushable = Record<'forceFlush' | 'shutdown', ((...args: unknown[]) => unknown) | undefined>;

async function settled(): Promise<void> {
  try {
    await settleExchanges();
  } catch (err) {
    log.error('internal error settling exchanges before a flush (ignored, the application is unaffected):', err);
  }
}

/** Make `provider`'s forceFlush and shutdown settle faultline's pending exchanges first (once per provider). */
export function settleBeforeFlush(provider: TracerProvider): void {
  const proxied = (provider as { getDelegate?: () => TracerProvider }).getDelegate;
  const target = (typeof proxied === 'function' ? proxied.call(provider) : provider) as unknown as Flushable;
  if (seen.has(target)) return;
  seen.add(target);
  for (const name of ['forceFlush', 'shutdown'] as const) {
    const original = target[name];
    if (typeof original !== 'function') continue;
    target[name] = function (this: unknown, ...args: unknown[]): Promise<unknown> {
      return settled().then(() => original.apply(this, args));
    };
  }
}
