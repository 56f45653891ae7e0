/**
 * What a task family gives the shared agents: the Worker's tools (real functions over a fresh environment per task),
 * which of them are actions executed by the environment's Executor (the I2 action request / I3 observation edges),
 * how an accepted decision is committed, a fresh re-observation for the evidence guard, and an evaluator that reads
 * the environment — never what the agents claim.
 */
import type { ChatCompletionTool } from 'openai/resources/chat/completions';

export type Json = Record<string, unknown>;

export interface TaskDef {
  id: string;
  /** The task as the user states it; the Planner reads only this. */
  text: string;
}

export interface Outcome {
  success: boolean;
  reason: string;
}

export interface TaskFamily<T extends TaskDef = TaskDef, Env = unknown> {
  readonly name: string;
  readonly tasks: readonly T[];
  /** Tool definitions the Worker offers the model. */
  readonly tools: ChatCompletionTool[];
  /** Tools that change the environment: sent as action requests to the Executor, not run by the Worker itself. */
  readonly actions: ReadonlySet<string>;
  createEnv(task: T): Env;
  /** Run one tool for real. Bad arguments give `{ error: 'invalid arguments: …' }`, never a throw. */
  runTool(env: Env, task: T, name: string, args: Json): Json;
  /** Carry out an accepted decision (place the order, submit the code). Returns what the environment said. */
  commit(env: Env, decision: Json): Json;
  /** Fresh evidence straight from the environment (the evidence guard's guarded reacquisition). */
  reobserve(env: Env, task: T): Json;
  /** The environment's state as data, and putting it back: what a workflow checkpoint saves beside its own state, so
   * a rollback also undoes what the steps after the checkpoint did to the environment. */
  snapshot(env: Env): Json;
  restore(env: Env, snapshot: Json): void;
  /** Fields of the evidence payload a receiver contract requires, with their types. */
  readonly evidenceFields: Record<string, 'string' | 'integer' | 'boolean'>;
  /** The independent evaluator. */
  evaluate(env: Env, task: T): Outcome;
}
