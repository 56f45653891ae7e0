/**
 * The per-task fault engine. Selection (which rules match a call, and its position) happens once per call at span
 * start; firing (the strategy's count and probability draw) happens when the step knows the call is eligible, in
 * AgentChaos's `_try_fire` order, so counts and RNG draws apply to eligible calls only. State is kept per task (an
 * explicit task scope, else the trace id), resets with each task, and is bounded (least recently used tasks dropped).
 */
import { trace, type Attributes, type Context } from '@opentelemetry/api';
import type { AgentMessage } from '../../instrumentation/types';
import { getTaskId } from '../../instrumentation/agents/task';
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
}

/** One rule selected for one call. */
export interface Hit {
  readonly rule: CompiledRule;
  /** 1-based index among the calls this rule matched in the task. */
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

export class FaultEngine {
  readonly ledger = new Ledger();
  private readonly tasks = new Map<string, TaskState>();
  private readonly maxTasks: number;
  private readonly fixed?: CompiledPlan;
  /** Recent messages per boundary across tasks: donors for replay and corruption. */
  private readonly donors = new Map<string, AgentMessage[]>();

  constructor(
    private readonly source: PlanSource,
    options: EngineOptions = {},
  ) {
    this.maxTasks = options.maxTasks ?? 1000;
    if (typeof source !== 'function') this.fixed = compilePlan(source);
  }

  /** The task a call in `ctx` belongs to. */
  static taskIdOf(ctx: Context, traceId?: string): string | undefined {
    return getTaskId(ctx) ?? traceId ?? trace.getSpan(ctx)?.spanContext().traceId;
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
    t = {
      id,
      compiled,
      rng: new PyRandom(compiled?.plan.seed ?? 42),
      rules: (compiled?.rules ?? []).map(() => ({ matched: 0, specs: { counts: [] } })),
      history: new Map(),
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

  /** Select the rules matching a call with these start attributes; counts the call for each matching rule. */
  select(attrs: Attributes, taskId: string): Decision | undefined {
    const task = this.task(taskId);
    if (!task.compiled) return undefined;
    const hits: Hit[] = [];
    for (const rule of task.compiled.rules) {
      if (!rule.matches(attrs)) continue;
      const state = task.rules[rule.index];
      state.matched++;
      this.ledger.matched(task.id, rule);
      if (rule.positions && !rule.positions.has(state.matched)) continue;
      // A rule whose strategy is used up (a single fault that fired) leaves the call alone: no buffering, no state.
      if (!specsActive(rule.specs, state.specs)) continue;
      hits.push({ rule, callIndex: state.matched });
    }
    return hits.length > 0 ? { task, hits } : undefined;
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
