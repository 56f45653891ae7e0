/**
 * Preloaded (after faultline/register) into every run of `faultline campaign --cmd`: the context the campaign passes
 * in the environment — `TRACEPARENT` / `TRACESTATE`, as the OpenTelemetry specification's environment-variable
 * carriers (context/env-carriers.md) define them — becomes the parent of every span the program starts without one.
 * A whole run is then one trace: one task for the fault plan (whose state is per task, else per trace), and one
 * trace for the diagnosers, whatever the program does (a plain SDK script has no span of its own around its calls).
 *
 * The context manager the SDK registered is replaced by the same AsyncLocalStorage manager with that fallback; the
 * program has not run yet, so no context is lost. Spans the program starts with `root: true` keep their own trace;
 * the campaign runner joins them to the run when it labels the trace.
 */
import { ROOT_CONTEXT, context, defaultTextMapGetter, trace, type Context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { processEnv } from '../env';

function install(): void {
  const carrier: Record<string, string> = {};
  const env = processEnv();
  if (env.TRACEPARENT) carrier.traceparent = env.TRACEPARENT;
  if (env.TRACESTATE) carrier.tracestate = env.TRACESTATE;
  const parent = new W3CTraceContextPropagator().extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  if (trace.getSpanContext(parent) === undefined) return;
  class RunContextManager extends AsyncLocalStorageContextManager {
    override active(): Context {
      const ctx = super.active();
      return ctx === ROOT_CONTEXT ? parent : ctx;
    }
  }
  context.disable();
  context.setGlobalContextManager(new RunContextManager().enable());
}

try {
  install();
} catch (err) {
  // Never into the program: without the run context its spans are still joined to the run afterwards.
  process.stderr.write(
    `faultline campaign: run context not set (${err instanceof Error ? err.message : String(err)})\n`,
  );
}

export {};
