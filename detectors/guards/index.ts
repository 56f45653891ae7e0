/**
 * Runtime guards: configured per route (provider, model, agent, tool, boundary) through the one-line registration
 * (`createGuards(config)` → `httpStep` for the interceptor, `channelStep` for in-process channels) or as an explicit
 * wrapper (`guard(fn, options)`). The config may be a function of the task id, so one process can run tasks with
 * different protection arms side by side.
 */
import type { DeliverStep, Interceptor } from '../../instrumentation/types';
import { createChannelGuardStep } from './channel-step';
import { createGuardStep } from './http-step';
import { GuardRuntime, type GuardConfigSource, type GuardOptions } from './runtime';

export interface Guards {
  /** undici interceptor for `installInstrumentation({ steps: [httpStep, faultStep] })` (guard outermost). */
  httpStep: Interceptor;
  /** Delivery step for message channels (`channelSteps: [channelStep, faultStep]`). */
  channelStep: DeliverStep;
  /** Shared state: route health (also the `faultline.route.health` gauge), circuits, the action ledger. */
  runtime: GuardRuntime;
}

/**
 * Build the guard steps from a config (validated at once; bad input throws a coded FaultlineInputError naming the
 * field), or from a per-task resolver `(taskId) => config | undefined` called on each exchange and delivery.
 */
export function createGuards(config: GuardConfigSource, options: GuardOptions = {}): Guards {
  const runtime = new GuardRuntime(config, options);
  return { httpStep: createGuardStep(runtime), channelStep: createChannelGuardStep(runtime), runtime };
}

/** Just the channel step (for `new MessageChannel({ steps: [guardedChannelStep(...)] })`). */
export function guardedChannelStep(config: GuardConfigSource, options: GuardOptions = {}): DeliverStep {
  return createGuards(config, options).channelStep;
}

export { guard, observeResult, type WrapOptions } from './wrap';
export {
  GuardConfigSchema,
  GuardRouteSchema,
  parseGuardConfig,
  loadGuardConfig,
  guardConfigFromEnv,
  guardPreset,
  type GuardConfig,
  type GuardConfigInput,
  type GuardRoute,
  type GuardPresetName,
  type FallbackRoute,
} from './config';
export { GuardRejectedError, CircuitOpenError, isGuardRejection } from './reject';
export { ActionLedger, actionKey } from './ledger';
export { CircuitBreaker, type CircuitPolicy, type CircuitState } from './circuit';
export { RouteHealth } from './health';
export { adaptFactor, backoffDelay, retryAfterMs, type RetryPolicy } from './retry';
export { routeMatches, type RouteMatch } from './routes';
export type { GuardConfigSource, GuardOptions } from './runtime';
export type { Reacquire } from './reacquire';
export { GuardRuntime } from './runtime';
export {
  checkpoints,
  memoryStore,
  fileStore,
  RollbackRequest,
  type CheckpointPolicy,
  type CheckpointStore,
  type CheckpointRecord,
  type Checkpoints,
  type RollbackCost,
} from './checkpoint';
export {
  verificationPipeline,
  llmJudge,
  verdictFindings,
  DEFAULT_SAFETY_RULES,
  DEFAULT_PRINCIPLES,
  JUDGE_SCHEMA,
  type Verifier,
  type Verdict,
  type VerificationOptions,
  type SafetyRule,
  type Judge,
  type LlmJudgeOptions,
} from './verify';
export { scoreFallbacks, ARCF_WEIGHTS, type FallbackWeights, type ScoredFallback } from './hierarchical-fallback';
