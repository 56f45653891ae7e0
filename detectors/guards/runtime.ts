/**
 * The state the guard steps share: the configuration (fixed, or resolved per task for campaigns that run protection
 * arms side by side), route health, circuit breakers, the action ledger, a bounded per-task history for the
 * detectors, and the judgement "do these findings count as a failure on this route".
 */
import type { Span } from '@opentelemetry/api';
import type { DetectionContext, Finding, MessageContract, Observation, Severity } from '../types';
import { runDetectors } from '../registry';
import { logger } from '../../src/diag';
import { Circuits, type CircuitTransition } from './circuit';
import { parseGuardConfig, type GuardConfig, type GuardConfigInput, type GuardRoute } from './config';
import { RouteHealth } from './health';
import { ActionLedger } from './ledger';
import type { Reacquire } from './reacquire';
import { recordGuard } from './record';

export const log = logger('guards');

export type GuardConfigSource =
  GuardConfigInput | GuardConfig | ((taskId: string | undefined) => GuardConfigInput | GuardConfig | undefined);

export interface GuardOptions {
  /** The guarded readback of evidence routes (channel): a fresh message for the one that failed its contract. */
  reacquire?: Reacquire;
  /** Message contracts with zod / Standard Schema schemas (added to the config's JSON Schema contracts). */
  contracts?: readonly MessageContract[];
  /** Clock, random source and sleep, for tests and simulations. */
  now?: () => number;
  random?: () => number;
  /** Resolves after `ms`, or at once when `signal` aborts (its timer cleared: a call given up on holds no timer). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Export route health as the `faultline.route.health` gauge (default true). */
  exportHealth?: boolean;
}

const SEVERITY_RANK: Record<Severity, number> = { info: 0, warning: 1, error: 2, critical: 3 };

export class GuardRuntime {
  readonly health = new RouteHealth();
  readonly circuits: Circuits;
  readonly ledger = new ActionLedger();
  readonly now: () => number;
  readonly random: () => number;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #source: GuardConfigSource;
  readonly #parsed = new WeakMap<object, GuardConfig>();
  readonly #history = new Map<string, Observation[]>();

  constructor(
    source: GuardConfigSource,
    readonly options: GuardOptions = {},
  ) {
    this.#source = source;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? sleep;
    this.circuits = new Circuits(this.now);
    if (typeof source !== 'function') this.config(undefined); // validate a fixed config at once: bad input fails at start-up
    if (options.exportHealth !== false) this.health.exportMetric();
  }

  /** The config for a task (resolver called on each exchange / delivery; parsed once per returned object). */
  config(taskId: string | undefined): GuardConfig | undefined {
    const raw = typeof this.#source === 'function' ? this.#source(taskId) : this.#source;
    if (raw === undefined || raw === null) return undefined;
    let parsed = this.#parsed.get(raw);
    if (!parsed) {
      parsed = parseGuardConfig(raw);
      this.#parsed.set(raw, parsed);
    }
    return parsed;
  }

  contracts(config: GuardConfig): MessageContract[] {
    return [...((config.contracts ?? []) as MessageContract[]), ...(this.options.contracts ?? [])];
  }

  /** Run the route's detectors over an observation with the task's history; returns the findings that count. */
  judge(
    route: GuardRoute,
    config: GuardConfig,
    obs: Observation,
    taskId: string,
    extra: Partial<DetectionContext> = {},
  ): { all: Finding[]; failing: Finding[] } {
    const earlier = this.#earlier(taskId);
    const ctx: DetectionContext = { earlier, now: this.now(), contracts: this.contracts(config), ...extra };
    if (config.ttlMs !== undefined) ctx.ttlMs = config.ttlMs;
    const all = runDetectors(obs, ctx, route.detectors);
    earlier.push(obs);
    if (earlier.length > 32) earlier.shift();
    return { all, failing: all.filter((f) => counts(route, f)) };
  }

  /** Remember an observation as task context without judging it (messages on unguarded routes: the pre-action
   * observation an identity pin refers to). */
  remember(taskId: string, obs: Observation): void {
    const earlier = this.#earlier(taskId);
    earlier.push(obs);
    if (earlier.length > 32) earlier.shift();
  }

  /** The highest version accepted so far per task and target (the receiver contract's minimum version). */
  readonly acceptedVersion = new Map<string, number>();

  /** Record one outcome of a route: health, circuit transitions (as guard events). */
  outcome(route: string, ok: boolean, span: Span | undefined, policy: GuardRoute['circuit']): void {
    this.health.record(route, ok);
    if (policy === false) return;
    const c = this.circuits.get(route, policy);
    const t: CircuitTransition = ok
      ? c.onSuccess()
      : c.onFailure(this.health.score(route), policy?.minHealth, this.health.count(route));
    if (t)
      recordGuard(
        span,
        t.to === 'open' ? 'circuit_open' : t.to === 'closed' ? 'circuit_closed' : 'circuit_half_open',
        route,
        `${t.from} → ${t.to}`,
      );
  }

  #earlier(taskId: string): Observation[] {
    let h = this.#history.get(taskId);
    if (!h) {
      this.#history.set(taskId, (h = []));
      if (this.#history.size > 1000) this.#history.delete(this.#history.keys().next().value as string);
    }
    return h;
  }
}

/** Does a finding count as a failure on this route? */
export function counts(route: GuardRoute, f: Finding): boolean {
  if (route.on && !route.on.includes(f.faultType)) return false;
  if (SEVERITY_RANK[f.severity] < SEVERITY_RANK[route.minSeverity ?? 'error']) return false;
  return f.confidence >= (route.minConfidence ?? 0.6);
}

export function describe(findings: readonly Finding[]): string {
  return findings
    .slice(0, 3)
    .map((f) => `${f.faultType} (${f.detector}: ${f.evidence})`)
    .join('; ');
}

/** A back-off wait that an abort ends at once, clearing its timer (it would otherwise hold the process at exit). */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
