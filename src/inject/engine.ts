/**
 * The per-task fault engine. Selection (which rules match a call, and its position) happens once per call, before it
 * is sent; firing (the strategy's count and probability draw) happens when the step knows the call is eligible, in
 * AgentChaos's `_try_fire` order, so counts and RNG draws apply to eligible calls only. State is kept per task (an
 * explicit task scope, else what the plan's `taskScope` says: see `resolveTaskId`), resets with each task, and is
 * bounded (least recently used tasks dropped).
 *
 * A retry is not a new call: the same request (method, URL, body) sent again in the task after it failed — an SDK's
 * retry of a 429, a reset or a timeout — keeps the position it had, is not counted again, and gets what the rule's
 * strategy gives a further attempt of the same call (a `single` fault that fired leaves it alone, a `persistent` one
 * fires again).
 */
import type { Attributes, Context } from '@opentelemetry/api';
import type { AgentMessage } from '../../instrumentation/types';
import { resolveTaskId, type TaskScope } from '../../instrumentation/agents/task';
import { logger } from '../diag';
import { specsActive, tryFire, type SpecState } from '../catalog/agentchaos/spec';
import { PyRandom } from '../plan/rng';
import { checkProduction } from '../plan/load';
import type { FaultPlan } from '../plan/schema';
import { compilePlan, type CompiledPlan, type CompiledRule } from '../plan/select';
import { Ledger } from './verify';

const log = logger('inject');

/** A plan for every task, or one per task (campaigns): resolved once, at the task's first span. */
export type PlanSource = FaultPlan | ((taskId: string) => FaultPlan | undefined);

export interface RuleState {
  /** Calls this rule's selector matched so far in the task. */
  matched: number;
  specs: SpecState;
}

export interface TaskState {
  readonly id: string;
  readonly compiled: CompiledPlan | undefined;
  readonly rng: PyRandom;
  readonly rules: RuleState[];
  /** The last LLM body delivered to the application in this task (AgentChaos `_last_response`, for stale cache). */
  lastResponse?: unknown;
  /** Messages delivered per target in this task, oldest first (stale replay, reordering). */
  readonly history: Map<string, AgentMessage[]>;
  /** Recent calls not known to have succeeded, newest last: a failed one sent again is a retry. */
  readonly attempts: Attempt[];
}

/** A request as sent: a retry sends the same one again. */
export interface CallRequest {
  readonly method: string;
  readonly url: string;
  readonly body: Buffer;
}

/** The method and URL of a request, as an attempt keeps them. */
function requestKey(request: CallRequest): string {
  return `${request.method} ${request.url}`;
}

/** Whether `attempt` sent the request of this key and body: a retry sends the same one again. */
function sent(attempt: Attempt, key: string, body: Buffer): boolean {
  return attempt.key === key && attempt.body.equals(body);
}

/** One call of a task: its request and the position it took for each rule that matched it. */
interface Attempt {
  readonly task: TaskState;
  readonly key: string;
  readonly body: Buffer;
  readonly indexes: Map<number, number>;
  failed: boolean;
}

/** One rule selected for one call. */
export interface Hit {
  readonly rule: CompiledRule;
  /** 1-based index among the calls this rule matched in the task (a retry has its call's). */
  readonly callIndex: number;
}

export interface Decision {
  readonly task: TaskState;
  readonly hits: readonly Hit[];
}

export interface EngineOptions {
  /** Tasks whose state is kept (least recently used dropped). Default 1000. */
  maxTasks?: number;
}

const DONORS_PER_BOUNDARY = 32;
/** Calls per task remembered for retry recognition (an SDK retries one call at a time; a few are in flight at once). */
const ATTEMPTS_PER_TASK = 16;
/** Request bytes the remembered calls of all tasks may keep alive (the oldest are forgotten first). */
const ATTEMPT_BYTES = 16 * 1024 * 1024;

export class FaultEngine {
  readonly ledger = new Ledger();
  private readonly tasks = new Map<string, TaskState>();
  private readonly maxTasks: number;
  private readonly fixed?: CompiledPlan;
  /** Recent messages per boundary across tasks: donors for replay and corruption. */
  private readonly donors = new Map<string, AgentMessage[]>();
  /** The attempt a call (keyed by its span) made, until it settles. */
  private readonly attemptOf = new WeakMap<object, Attempt>();
  /** Every remembered attempt, oldest first, and the request bytes they hold. */
  private readonly remembered = new Set<Attempt>();
  private rememberedBytes = 0;
  /** How tasks are found when the app declares none (a plan per task cannot change it: it is read before the task). */
  readonly taskScope: TaskScope;

  constructor(
    private readonly source: PlanSource,
    options: EngineOptions = {},
  ) {
    this.maxTasks = options.maxTasks ?? 1000;
    if (typeof source !== 'function') this.fixed = compilePlan(source);
    this.taskScope = this.fixed?.plan.taskScope ?? 'auto';
  }

  /** The task of a call whose parent context (or own context) is `ctx`; `ownTraceId` is the call's trace id. */
  taskIdOf(ctx: Context, ownTraceId?: string): string {
    return resolveTaskId(ctx, this.taskScope, ownTraceId);
  }

  task(id: string): TaskState {
    let t = this.tasks.get(id);
    if (t) {
      // Refresh LRU order.
      this.tasks.delete(id);
      this.tasks.set(id, t);
      return t;
    }
    const compiled = this.fixed ?? this.resolve(id);
    const seed = compiled?.plan.seed ?? 42;
    let rng: PyRandom | undefined;
    t = {
      id,
      compiled,
      // Seeded on the first draw (a fault's strategy): seeding costs more than selecting a call, and most tasks of a
      // service (one per trace) never draw. The sequence is the same: nothing draws from it before.
      get rng() {
        return (rng ??= new PyRandom(seed));
      },
      rules: (compiled?.rules ?? []).map(() => ({ matched: 0, specs: { counts: [] } })),
      history: new Map(),
      attempts: [],
    };
    this.tasks.set(id, t);
    if (this.tasks.size > this.maxTasks) this.tasks.delete(this.tasks.keys().next().value as string);
    return t;
  }

  private resolve(id: string): CompiledPlan | undefined {
    const plan = (this.source as (taskId: string) => FaultPlan | undefined)(id);
    if (!plan) return undefined;
    try {
      checkProduction(plan, `the plan for task ${id}`);
    } catch (err) {
      log.error((err as Error).message);
      return undefined;
    }
    return compilePlan(plan);
  }

  /**
   * Select the rules matching a call with these start attributes; counts the call for each matching rule. With the
   * call's `request` and a `key` object for it (its span), a retry of a failed call is recognised and keeps its
   * call's positions; `settle(key, ok)` then says how the call ended.
   */
  select(attrs: Attributes, taskId: string, call?: { key: object; request: CallRequest }): Decision | undefined {
    const task = this.task(taskId);
    if (!task.compiled) return undefined;
    const retryOf = call ? this.retryOf(task, call.request) : undefined;
    if (!retryOf) this.ledger.saw(attrs);
    const attempt = call ? (retryOf ?? this.newAttempt(task, call.request)) : undefined;
    if (call && attempt) this.attemptOf.set(call.key, attempt);
    const hits: Hit[] = [];
    for (const rule of task.compiled.rules) {
      const state = task.rules[rule.index];
      let callIndex: number;
      if (retryOf) {
        const known = retryOf.indexes.get(rule.index);
        if (known === undefined) continue;
        callIndex = known;
      } else {
        if (!rule.matches(attrs)) continue;
        callIndex = ++state.matched;
        this.ledger.matched(task.id, rule);
        attempt?.indexes.set(rule.index, callIndex);
      }
      if (rule.positions && !rule.positions.has(callIndex)) continue;
      // A rule whose strategy is used up (a single fault that fired) leaves the call alone: no buffering, no state.
      if (!specsActive(rule.specs, state.specs)) continue;
      hits.push({ rule, callIndex });
    }
    return hits.length > 0 ? { task, hits } : undefined;
  }

  /**
   * Whether a call of the task with this same request has not settled yet (in flight, or ended with its span still
   * open): the request may be its retry, which only its settling can tell.
   */
  unsettled(taskId: string, request: CallRequest): boolean {
    const attempts = this.tasks.get(taskId)?.attempts;
    if (attempts === undefined) return false;
    const key = requestKey(request);
    return attempts.some((a) => !a.failed && sent(a, key, request.body));
  }

  /** How the call selected with `key` ended: a success is forgotten, a failure may be retried. */
  settle(key: object, ok: boolean): void {
    const attempt = this.attemptOf.get(key);
    if (attempt === undefined) return;
    this.attemptOf.delete(key);
    if (!ok) {
      attempt.failed = true;
      return;
    }
    this.forget(attempt);
  }

  private retryOf(task: TaskState, request: CallRequest): Attempt | undefined {
    const key = requestKey(request);
    for (let i = task.attempts.length - 1; i >= 0; i--) {
      const a = task.attempts[i];
      if (a.failed && sent(a, key, request.body)) {
        // In flight again: it fails or succeeds anew.
        a.failed = false;
        return a;
      }
    }
    return undefined;
  }

  private newAttempt(task: TaskState, request: CallRequest): Attempt {
    const attempt: Attempt = { task, key: requestKey(request), body: request.body, indexes: new Map(), failed: false };
    task.attempts.push(attempt);
    this.remembered.add(attempt);
    this.rememberedBytes += attempt.body.length;
    if (task.attempts.length > ATTEMPTS_PER_TASK) this.forget(task.attempts[0]);
    while (this.rememberedBytes > ATTEMPT_BYTES && this.remembered.size > 1)
      this.forget(this.remembered.values().next().value as Attempt);
    return attempt;
  }

  private forget(attempt: Attempt): void {
    if (!this.remembered.delete(attempt)) return;
    this.rememberedBytes -= attempt.body.length;
    const list = attempt.task.attempts;
    const i = list.indexOf(attempt);
    if (i >= 0) list.splice(i, 1);
  }

  /** The strategy draw for a non-content fault on an eligible call (max → probability → count++ → min). */
  fire(task: TaskState, rule: CompiledRule): boolean {
    return tryFire(rule.specs[0], task.rules[rule.index].specs, 0, task.rng);
  }

  /** Remember a delivered message: per task for the same target, per boundary across tasks for donors. */
  remember(task: TaskState, message: AgentMessage): void {
    const list = task.history.get(message.target) ?? [];
    list.push(message);
    if (list.length > DONORS_PER_BOUNDARY) list.shift();
    task.history.set(message.target, list);
    const key = message.boundary ?? '';
    const donors = this.donors.get(key) ?? [];
    donors.push({ ...message, taskId: message.taskId ?? task.id });
    if (donors.length > DONORS_PER_BOUNDARY) donors.shift();
    this.donors.set(key, donors);
  }

  /** The most recent message at the same boundary from another task (and another payload). */
  donorFor(task: TaskState, message: AgentMessage): AgentMessage | undefined {
    const donors = this.donors.get(message.boundary ?? '') ?? [];
    const own = message.taskId ?? task.id;
    for (let i = donors.length - 1; i >= 0; i--) {
      const d = donors[i];
      if ((d.taskId ?? '') !== own && JSON.stringify(d.payload) !== JSON.stringify(message.payload)) return d;
    }
    return undefined;
  }
}
