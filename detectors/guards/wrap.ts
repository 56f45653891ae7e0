/**
 * The explicit wrapper API: guard any async call that returns an LLM response (an OpenAI ChatCompletion, an Anthropic
 * Message) or an agent message, without the one-line registration.
 *
 *     const ask = guard((q) => openai.chat.completions.create(q), { route: 'planner', retry: { maxRetries: 2 } });
 *
 * The result is judged by the detectors; a failing one is retried (ARCF back-off), then handed to the fallbacks, then
 * rejected with a typed GuardRejectedError (or returned as is with `onFailure: 'record'`). Thrown errors are retried
 * the same way. A circuit per route fails fast while open. With `ledger`, a call runs once per key and repeats get
 * the stored receipt. Guard actions are events on the active span.
 */
import { trace, context as otelContext } from '@opentelemetry/api';
import type { AgentMessage } from '../../instrumentation/types';
import type { Detector, Finding, Observation } from '../types';
import { summarizeLlmRequest, summarizeLlmResponse, type LlmProtocol } from '../wire';
import type { GuardRoute } from './config';
import { recordGuard } from './record';
import { CircuitOpenError, GuardRejectedError } from './reject';
import { nextDelay } from './retry';
import { describe, GuardRuntime, type GuardOptions } from './runtime';
import { verdictFindings, type Verifier } from './verify';

export interface WrapOptions<A extends unknown[], T> extends Omit<
  GuardRoute,
  'match' | 'detectors' | 'fallback' | 'name' | 'ledger' | 'reacquire' | 'resubmit' | 'onUnrecovered'
> {
  /** Route label (health, circuit and events are per route). Default `wrapped`. */
  route?: string;
  detectors?: readonly (string | Detector)[];
  /** Alternative calls, tried in order once retries are exhausted (ARCF's fallback agents). */
  fallback?: ReadonlyArray<(...args: A) => Promise<T>>;
  /** How to read the result; default: OpenAI / Anthropic response objects and agent messages are recognised. */
  observe?: (result: T, args: A) => Observation | undefined;
  /** The request body (for the detectors that compare against it: schema contract, grounding, staleness). */
  request?: (...args: A) => unknown;
  /** Execute once per key; repeats return the stored receipt. */
  ledger?: { key: (...args: A) => string; binding?: (...args: A) => string };
  /** Shared runtime (health, circuits, ledger). Default: one per process. */
  runtime?: GuardRuntime;
  /** ARCF's verification pipeline (verify.ts) on a result the detectors passed: a failed tier is retried and
   * falls back like a bad result. */
  verify?: Verifier;
}

let shared: GuardRuntime | undefined;
function defaultRuntime(options?: GuardOptions): GuardRuntime {
  return (shared ??= new GuardRuntime({ routes: [] }, options));
}

function isAgentMessage(v: unknown): v is AgentMessage {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as AgentMessage).id === 'string' &&
    typeof (v as AgentMessage).target === 'string' &&
    'payload' in v
  );
}

function protocolOf(v: unknown): LlmProtocol | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  if (Array.isArray((v as { choices?: unknown }).choices)) return 'openai.chat';
  if ((v as { type?: unknown }).type === 'message' && Array.isArray((v as { content?: unknown }).content))
    return 'anthropic.messages';
  return undefined;
}

/** The observation of a wrapped call's result, recognising provider response objects and agent messages. */
export function observeResult(result: unknown, requestBody?: unknown): Observation | undefined {
  if (isAgentMessage(result)) return { kind: 'message', delivered: [result], hasContent: true };
  const protocol = protocolOf(result);
  if (!protocol) return undefined;
  const response = summarizeLlmResponse(protocol, { status: 200, chunks: [JSON.stringify(result)] });
  const request = requestBody !== undefined ? summarizeLlmRequest(protocol, requestBody) : undefined;
  return request ? { kind: 'llm', request, response, hasContent: true } : { kind: 'llm', response, hasContent: true };
}

export function guard<A extends unknown[], T>(
  fn: (...args: A) => Promise<T>,
  options: WrapOptions<A, T> = {},
): (...args: A) => Promise<T> {
  const rt = options.runtime ?? defaultRuntime();
  const label = options.route ?? 'wrapped';
  const route: GuardRoute = {
    ...options,
    name: label,
    detectors: undefined,
    fallback: undefined,
    verify: undefined,
  } as GuardRoute;
  const detectors = options.detectors;
  const config = { routes: [route] };

  const judge = (result: T, args: A): Finding[] => {
    const obs = options.observe ? options.observe(result, args) : observeResult(result, options.request?.(...args));
    if (!obs) return [];
    const r = detectors ? ({ ...route, detectors: detectors as string[] } as GuardRoute) : route;
    return rt.judge(r, config, obs, label).failing;
  };

  const run = async (...args: A): Promise<T> => {
    const span = trace.getSpan(otelContext.active());
    if (options.circuit !== false) {
      const c = rt.circuits.get(label, options.circuit);
      const { allowed, transition } = c.admit();
      if (transition) recordGuard(span, 'circuit_half_open', label, `${transition.from} → ${transition.to}: probing`);
      if (!allowed) {
        recordGuard(span, 'fail_fast', label, 'circuit open');
        throw new CircuitOpenError(label, c.retryInMs());
      }
    }
    const attempts: Array<(...a: A) => Promise<T>> = [fn, ...(options.fallback ?? [])];
    let lastFindings: Finding[] = [];
    let lastResult: { value: T } | undefined;
    let lastError: unknown;
    for (let k = 0; k < attempts.length; k++) {
      const call = attempts[k]!;
      if (k > 0)
        recordGuard(span, 'fallback', label, lastError !== undefined ? String(lastError) : describe(lastFindings), k);
      for (let retry = 0; ; retry++) {
        lastError = undefined;
        try {
          const value = await call(...args);
          let findings = judge(value, args);
          if (findings.length === 0 && options.verify)
            findings = verdictFindings(await options.verify.verify(value, { label }));
          if (findings.length === 0) {
            rt.outcome(label, true, span, options.circuit);
            return value;
          }
          lastFindings = findings;
          lastResult = { value };
        } catch (err) {
          if (err instanceof GuardRejectedError || err instanceof CircuitOpenError) throw err;
          lastError = err;
        }
        rt.outcome(label, false, span, options.circuit);
        const ra = (lastError as { headers?: Record<string, string> } | undefined)?.headers;
        const delay =
          k > 0 || options.retry === false
            ? undefined
            : nextDelay(retry, options.retry ?? {}, rt.health.score(label), retryAfter(ra), rt.random);
        if (delay === undefined) break;
        recordGuard(
          span,
          'retry',
          label,
          `${lastError !== undefined ? String(lastError) : describe(lastFindings)}; waiting ${Math.round(delay)} ms`,
          retry + 1,
        );
        await rt.sleep(delay);
      }
    }
    if (options.onFailure === 'record' && lastResult) {
      recordGuard(span, 'record', label, describe(lastFindings));
      return lastResult.value;
    }
    if (lastError !== undefined && lastResult === undefined && options.onFailure === 'record') throw lastError;
    recordGuard(span, 'reject', label, lastError !== undefined ? String(lastError) : describe(lastFindings));
    throw new GuardRejectedError(
      label,
      lastFindings,
      lastError !== undefined && lastFindings.length === 0
        ? `faultline guard gave up on route ${label}: ${String(lastError)}`
        : undefined,
    );
  };

  if (!options.ledger) return run;
  const ledger = options.ledger;
  return async (...args: A): Promise<T> => {
    const key = ledger.key(...args);
    const { receipt, replayed } = await rt.ledger.executeOnce(key, ledger.binding?.(...args) ?? '', () => run(...args));
    if (replayed)
      recordGuard(trace.getSpan(otelContext.active()), 'receipt_replayed', label, `action ${key} already executed`);
    return receipt;
  };
}

function retryAfter(
  headers: Record<string, string> | { get?: (k: string) => string | null } | undefined,
): number | undefined {
  if (!headers) return undefined;
  const get = (k: string): string | undefined => {
    const h = headers as { get?: (k: string) => string | null };
    if (typeof h.get === 'function') return h.get(k) ?? undefined;
    return (headers as Record<string, string>)[k];
  };
  const ms = get('retry-after-ms');
  if (ms !== undefined && Number.isFinite(Number(ms))) return Number(ms);
  const s = get('retry-after');
  return s !== undefined && Number.isFinite(Number(s)) ? Number(s) * 1000 : undefined;
}
