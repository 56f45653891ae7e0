/**
 * What a workflow declares about itself, for the workflow monitors and the recovery guards: an agent's role, the
 * tools it may call and the agents it may hand off to (`runAgent(name, fn, { role, tools, targets })`), and a
 * workflow's required steps and deadline (`runWorkflow(name, fn, { requiredSteps, deadlineMs })`).
 *
 * Declarations go two ways. On the spans, as content-free attributes (`faultline.agent.*`, `faultline.workflow.*`),
 * so offline monitors read them from any exported trace. In the OTel context, as the live state of the running
 * workflow (which agents were declared, which steps completed, when progress was last made), so online monitors see
 * them with each call and message, and checkpoints find their workflow.
 *
 * Nothing here judges: the monitors (detectors/monitors) do, through the workflow events this module emits
 * (`configureWorkflows({ onWorkflowEvent })`, wired like the channels' `onDelivery`). With nothing declared, nothing
 * is recorded on the workflow span and nothing changes for the application.
 */
import { context, createContextKey, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { now } from '../../src/clock';
import { logger, safely } from '../../src/diag';
import { FaultlineError, FaultlineInputError } from '../../src/errors';

const log = logger('workflow');

// ------------------------------------------------------------------------------------------------ attributes

export const ATTR_FL_AGENT_ROLE = 'faultline.agent.role' as const;
export const ATTR_FL_AGENT_TOOLS = 'faultline.agent.tools' as const;
export const ATTR_FL_AGENT_TARGETS = 'faultline.agent.targets' as const;
export const ATTR_FL_WORKFLOW_REQUIRED_STEPS = 'faultline.workflow.required_steps' as const;
export const ATTR_FL_WORKFLOW_DEADLINE_MS = 'faultline.workflow.deadline_ms' as const;
/** Set when the workflow ends: the steps it completed, in order, and whether its result was empty. */
export const ATTR_FL_WORKFLOW_COMPLETED_STEPS = 'faultline.workflow.completed_steps' as const;
export const ATTR_FL_WORKFLOW_OUTPUT = 'faultline.workflow.output' as const; // present | empty | error
/** One event per completed step on the workflow span (a checkpoint, or an agent turn that ended well). */
export const EVENT_FL_WORKFLOW_STEP = 'faultline.workflow.step' as const;
export const ATTR_FL_STEP_NAME = 'faultline.step.name' as const;
export const ATTR_FL_STEP_KIND = 'faultline.step.kind' as const; // agent | checkpoint
export const ATTR_FL_STEP_DURATION_MS = 'faultline.step.duration_ms' as const;
/** Checkpoint actions on the workflow span: saved, restored, rollback, no_rollback, resumed, verify_failed. */
export const EVENT_FL_CHECKPOINT = 'faultline.checkpoint' as const;
export const ATTR_FL_CHECKPOINT_NAME = 'faultline.checkpoint.name' as const;
export const ATTR_FL_CHECKPOINT_ACTION = 'faultline.checkpoint.action' as const;
export const ATTR_FL_CHECKPOINT_REASON = 'faultline.checkpoint.reason' as const;
export const ATTR_FL_CHECKPOINT_ATTEMPT = 'faultline.checkpoint.attempt' as const;

// ------------------------------------------------------------------------------------------------ declarations

export interface AgentDeclaration {
  /** What the agent is for (`planner`, `verifier`, …): a label for reports and for verification steps. */
  role?: string;
  /** The tools it may call; a call to any other is a role violation. Omitted: not declared (anything goes). */
  tools?: readonly string[];
  /** The agents (or A2A / message targets) it may send to; any other is a role violation. */
  targets?: readonly string[];
}

export interface WorkflowDeclaration {
  /** Steps the workflow must complete (agent names whose turn ended well, or checkpoint names): ending without one
   * is premature termination. */
  requiredSteps?: readonly string[];
  /** Time budget in ms: past it the task is late (a monitor finding on the workflow span). */
  deadlineMs?: number;
  /** At the deadline: `record` the finding only (default: the application is left alone), or `abort` — the workflow
   * rejects with a WorkflowDeadlineError and `workflowSignal()` aborts, so a hung workflow ends. */
  onDeadline?: 'record' | 'abort';
}

/** Validate the declaration options of runAgent / runWorkflow; bad input names the option. */
export function checkAgentDeclaration(where: string, d: AgentDeclaration): void {
  if (d.role !== undefined && typeof d.role !== 'string')
    throw usage(`${where}: role must be a string, got ${typeof d.role}`);
  for (const key of ['tools', 'targets'] as const) {
    const v = d[key];
    if (v !== undefined && (!Array.isArray(v) || !v.every((x) => typeof x === 'string')))
      throw usage(`${where}: ${key} must be an array of strings`);
  }
}

export function checkWorkflowDeclaration(where: string, d: WorkflowDeclaration): void {
  const steps = d.requiredSteps;
  if (steps !== undefined && (!Array.isArray(steps) || !steps.every((x) => typeof x === 'string' && x !== ''))) {
    throw usage(`${where}: requiredSteps must be an array of non-empty strings`);
  }
  if (
    d.deadlineMs !== undefined &&
    !(typeof d.deadlineMs === 'number' && d.deadlineMs > 0 && Number.isFinite(d.deadlineMs))
  ) {
    throw usage(`${where}: deadlineMs must be a positive number of milliseconds, got ${String(d.deadlineMs)}`);
  }
  if (d.onDeadline !== undefined && d.onDeadline !== 'record' && d.onDeadline !== 'abort') {
    throw usage(`${where}: onDeadline must be "record" or "abort", got ${JSON.stringify(d.onDeadline)}`);
  }
}

const usage = (message: string) => new FaultlineInputError('FAULTLINE_USAGE', message);

/** The declaration as span attributes (only what was declared). */
export function agentDeclarationAttributes(d: AgentDeclaration): Attributes {
  const a: Attributes = {};
  if (d.role !== undefined && d.role !== '') a[ATTR_FL_AGENT_ROLE] = d.role;
  if (d.tools !== undefined) a[ATTR_FL_AGENT_TOOLS] = [...d.tools];
  if (d.targets !== undefined) a[ATTR_FL_AGENT_TARGETS] = [...d.targets];
  return a;
}

export function workflowDeclarationAttributes(d: WorkflowDeclaration): Attributes {
  const a: Attributes = {};
  if (d.requiredSteps !== undefined) a[ATTR_FL_WORKFLOW_REQUIRED_STEPS] = [...d.requiredSteps];
  if (d.deadlineMs !== undefined) a[ATTR_FL_WORKFLOW_DEADLINE_MS] = d.deadlineMs;
  return a;
}

const declared = (d: AgentDeclaration): boolean =>
  d.role !== undefined || d.tools !== undefined || d.targets !== undefined;

// ------------------------------------------------------------------------------------------------ live state

/** One agent turn in progress. */
export interface AgentTurn {
  readonly name: string;
  readonly spanId: string;
  readonly startedAt: number;
  readonly declaration?: AgentDeclaration;
  /** The turn this one runs inside (the agent waiting on it). */
  readonly parent?: string;
}

/** What a checkpoint session (the recovery guard, detectors/guards/checkpoint.ts) does for `checkpoint()`. */
export interface CheckpointSession {
  checkpoint<T>(name: string, state: T | (() => T | Promise<T>), options: CheckpointOptions<T>): Promise<T>;
}

/** How a workflow is run when a recovery guard is given (`runWorkflow(…, { checkpoints })`). */
export interface WorkflowRecovery {
  run<T>(workflow: WorkflowState, body: () => Promise<T>): Promise<T>;
}

export interface CheckpointOptions<T> {
  /** Check the step's state before it is saved: a failure retries the step (`retries` times), then fails the
   * workflow severely (the recovery guard then decides on a rollback). */
  verify?: (state: T) => Promise<{ ok: boolean; reason?: string }> | { ok: boolean; reason?: string };
  /** Re-runs of the step when verification fails (default 1). */
  retries?: number;
  /** When verification still fails: roll back to this earlier checkpoint (its state was the bad input), not to the
   * last one. */
  rollbackTo?: string;
  /** Called with the saved state when a resumed workflow restores this checkpoint instead of running the step:
   * put back what lives outside the workflow (an environment snapshot the state carries). */
  restore?: (state: T) => void;
}

/** The running workflow, as its monitors and checkpoints see it. */
export interface WorkflowState {
  readonly name: string;
  readonly taskId: string | undefined;
  readonly span: Span;
  readonly startedAt: number;
  readonly declaration: WorkflowDeclaration;
  /** The workflow declared required steps, a deadline or a recovery guard: its steps and end facts go on its span. */
  readonly declared: boolean;
  /** Agents declared in this workflow so far, by name. */
  readonly agents: Map<string, AgentDeclaration>;
  /** Completed steps in order (agent turns that ended well, checkpoints). */
  readonly completed: string[];
  /** Agent turns in progress, outermost first. */
  readonly open: AgentTurn[];
  lastProgressAt: number;
  /** Aborted at the deadline with `onDeadline: 'abort'`. */
  readonly signal: AbortSignal;
  /** The checkpoint session of the current attempt, when a recovery guard runs the workflow. */
  session?: CheckpointSession;
  ended?: { at: number; outcome: 'ok' | 'error'; output: 'present' | 'empty' | 'error'; errorType?: string };
}

export type WorkflowEvent =
  | { type: 'step'; workflow: WorkflowState; step: string; kind: 'agent' | 'checkpoint' }
  | { type: 'deadline'; workflow: WorkflowState }
  | { type: 'end'; workflow: WorkflowState };

export interface WorkflowConfig {
  /** Called for each step, at the deadline, and when the workflow ends (before its span ends). */
  onWorkflowEvent?: (event: WorkflowEvent) => void;
}

let config: WorkflowConfig = {};

/** Set the process-wide workflow listener (FaultlineInstrumentation does, like configureChannels). `{}` resets. */
export function configureWorkflows(c: WorkflowConfig): void {
  config = { ...c };
}

function emit(event: WorkflowEvent): void {
  const listener = config.onWorkflowEvent;
  if (listener) safely(log, `workflow ${event.type} listener`, () => listener(event), undefined);
}

const WORKFLOW_KEY = createContextKey('faultline.workflow');
const TURN_KEY = createContextKey('faultline.agent.turn');

export function getWorkflow(ctx: Context = context.active()): WorkflowState | undefined {
  return ctx.getValue(WORKFLOW_KEY) as WorkflowState | undefined;
}

/** The agent turn running in `ctx` (innermost runAgent), with its declaration. */
export function getAgentTurn(ctx: Context = context.active()): AgentTurn | undefined {
  return ctx.getValue(TURN_KEY) as AgentTurn | undefined;
}

/** The abort signal of the running workflow (aborted at its deadline with `onDeadline: 'abort'`), if any. */
export function workflowSignal(ctx: Context = context.active()): AbortSignal | undefined {
  return getWorkflow(ctx)?.signal;
}

/** Who made a call, and what the workflow declared: what online monitors read with each observation. */
export interface ObservationScope {
  agent?: string;
  /** Span id of the agent turn (one conversation per turn). */
  turn?: string;
  declaration?: AgentDeclaration;
  /** Every agent the workflow declared so far (a message's source is looked up here). */
  agents?: ReadonlyMap<string, AgentDeclaration>;
  workflow?: { name: string; startedAt: number; deadlineMs?: number; requiredSteps?: readonly string[] };
}

export function observationScope(ctx: Context): ObservationScope | undefined {
  const wf = getWorkflow(ctx);
  const turn = getAgentTurn(ctx);
  if (!wf && !turn) return undefined;
  const scope: ObservationScope = {};
  if (turn) {
    scope.agent = turn.name;
    scope.turn = turn.spanId;
    if (turn.declaration) scope.declaration = turn.declaration;
  }
  if (wf) {
    scope.agents = wf.agents;
    scope.workflow = { name: wf.name, startedAt: wf.startedAt };
    if (wf.declaration.deadlineMs !== undefined) scope.workflow.deadlineMs = wf.declaration.deadlineMs;
    if (wf.declaration.requiredSteps !== undefined) scope.workflow.requiredSteps = wf.declaration.requiredSteps;
  }
  return scope;
}

// ------------------------------------------------------------------------------------------------ agent turns

/** The context of an agent turn: the turn (and its declaration) rides in it; the workflow learns the declaration. */
export function enterAgent(ctx: Context, name: string, span: Span, d: AgentDeclaration): Context {
  const outer = getAgentTurn(ctx);
  const turn: AgentTurn = {
    name,
    spanId: span.spanContext().spanId,
    startedAt: Date.now(),
    ...(declared(d) ? { declaration: d } : {}),
    ...(outer !== undefined ? { parent: outer.name } : {}),
  };
  const wf = getWorkflow(ctx);
  if (wf && turn.declaration && name !== '') wf.agents.set(name, turn.declaration);
  return ctx.setValue(TURN_KEY, turn);
}

/** Wrap an agent turn's function so the workflow records it as an open turn and, when it ends well, a step. */
export function agentTurn<T>(ctx: Context, fn: (span: Span) => T): (span: Span) => T {
  const turn = getAgentTurn(ctx);
  const wf = getWorkflow(ctx);
  if (!turn || !wf) return fn;
  return (span) => {
    wf.open.push(turn);
    const done = (ok: boolean) => {
      const i = wf.open.lastIndexOf(turn);
      if (i >= 0) wf.open.splice(i, 1);
      if (ok && turn.name !== '') stepDone(wf, turn.name, 'agent', Date.now() - turn.startedAt);
    };
    let result: T;
    try {
      result = fn(span);
    } catch (err) {
      done(false);
      throw err;
    }
    if (isThenable(result)) {
      result.then(
        () => done(true),
        () => done(false),
      );
    } else done(true);
    return result;
  };
}

function stepDone(wf: WorkflowState, name: string, kind: 'agent' | 'checkpoint', durationMs: number): void {
  if (wf.ended) return;
  wf.completed.push(name);
  wf.lastProgressAt = Date.now();
  if (wf.declared && wf.span.isRecording()) {
    wf.span.addEvent(
      EVENT_FL_WORKFLOW_STEP,
      {
        [ATTR_FL_STEP_NAME]: name,
        [ATTR_FL_STEP_KIND]: kind,
        [ATTR_FL_STEP_DURATION_MS]: Math.max(0, durationMs),
      },
      now(),
    );
  }
  emit({ type: 'step', workflow: wf, step: name, kind });
}

// ------------------------------------------------------------------------------------------------ workflows

export class WorkflowDeadlineError extends FaultlineError {
  readonly workflow: string;
  readonly deadlineMs: number;
  constructor(workflow: string, deadlineMs: number) {
    super(
      'FAULTLINE_WORKFLOW_DEADLINE',
      `workflow "${workflow}" did not finish within its deadline of ${deadlineMs} ms`,
    );
    this.name = 'WorkflowDeadlineError';
    this.workflow = workflow;
    this.deadlineMs = deadlineMs;
  }
}

/** The live state of a workflow that starts now on `span`. */
export function createWorkflow(
  name: string,
  span: Span,
  taskId: string | undefined,
  d: WorkflowDeclaration,
  signal: AbortSignal,
  recovery?: WorkflowRecovery,
): WorkflowState {
  const now = Date.now();
  const declared = d.requiredSteps !== undefined || d.deadlineMs !== undefined || recovery !== undefined;
  return {
    name,
    taskId,
    span,
    startedAt: now,
    declaration: d,
    declared,
    agents: new Map(),
    completed: [],
    open: [],
    lastProgressAt: now,
    signal,
  };
}

export function withWorkflow(ctx: Context, wf: WorkflowState): Context {
  return ctx.setValue(WORKFLOW_KEY, wf);
}

/**
 * The body runWorkflow runs: `fn`, through the recovery guard when one is given, with the deadline watchdog; when it
 * settles, the workflow's end facts go on its span and the monitors hear of it — before the span ends. Without a
 * recovery guard or an aborting deadline, `fn`'s own result (the same promise) is returned.
 */
export function workflowBody<T>(
  wf: WorkflowState,
  fn: (span: Span) => T,
  recovery: WorkflowRecovery | undefined,
  abort: AbortController,
): (span: Span) => T {
  const d = wf.declaration;
  return (span) => {
    let timer: NodeJS.Timeout | undefined;
    let rejectDeadline: ((err: Error) => void) | undefined;
    const deadline =
      d.deadlineMs !== undefined && d.onDeadline === 'abort'
        ? new Promise<never>((_, reject) => (rejectDeadline = reject))
        : undefined;
    // The deadline promise only ever rejects through the race below; never unhandled.
    deadline?.catch(() => {});
    if (d.deadlineMs !== undefined) {
      timer = setTimeout(() => {
        if (wf.ended) return;
        emit({ type: 'deadline', workflow: wf });
        if (d.onDeadline === 'abort') {
          const err = new WorkflowDeadlineError(wf.name, d.deadlineMs as number);
          abort.abort(err);
          rejectDeadline?.(err);
        }
      }, d.deadlineMs);
      timer.unref();
    }
    const finish = (outcome: 'ok' | 'error', value: unknown, err?: unknown): void => {
      clearTimeout(timer);
      if (wf.ended) return;
      wf.ended = {
        at: Date.now(),
        outcome,
        output: outcome === 'error' ? 'error' : isEmpty(value) ? 'empty' : 'present',
      };
      if (err !== undefined) wf.ended.errorType = errorName(err);
      safely(
        log,
        'workflow end facts',
        () => {
          if (!wf.declared || !span.isRecording()) return;
          span.setAttribute(ATTR_FL_WORKFLOW_COMPLETED_STEPS, [...wf.completed]);
          span.setAttribute(ATTR_FL_WORKFLOW_OUTPUT, wf.ended!.output);
        },
        undefined,
      );
      emit({ type: 'end', workflow: wf });
    };

    if (recovery === undefined && deadline === undefined) {
      let result: T;
      try {
        result = fn(span);
      } catch (err) {
        finish('error', undefined, err);
        throw err;
      }
      // The application's own promise is returned unchanged; this handler was registered before runInSpan's, so
      // the end facts are on the span before it ends.
      if (isThenable(result)) {
        result.then(
          (v) => finish('ok', v),
          (err: unknown) => finish('error', undefined, err),
        );
      } else finish('ok', result);
      return result;
    }
    const run = async (): Promise<unknown> => (recovery ? recovery.run(wf, async () => fn(span)) : fn(span));
    const body = deadline ? Promise.race([run(), deadline]) : run();
    return body.then(
      (v) => {
        finish('ok', v);
        return v;
      },
      (err: unknown) => {
        finish('error', undefined, err);
        throw err;
      },
    ) as unknown as T;
  };
}

/** A result that carries nothing: undefined, null, '', an empty array or an object without keys. */
export function isEmpty(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (typeof v === 'string') return v.trim() === '';
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) return Object.keys(v).length === 0;
  return false;
}

function errorName(err: unknown): string {
  if (err !== null && typeof err === 'object') {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    const name = (err as { name?: unknown }).name;
    if (typeof name === 'string' && name !== '') return name;
  }
  return '_OTHER';
}

// ------------------------------------------------------------------------------------------------ checkpoints

/**
 * A checkpoint of the running workflow: the step's state under `name`. Give the state itself, or a function that
 * computes it: with a recovery guard (`runWorkflow(…, { checkpoints: checkpoints({ store }) })`) the state is saved,
 * and when the workflow is rolled back and resumed, a checkpoint already saved returns its state without calling the
 * function — the work before it is not redone. Without a guard it runs the function and records the step.
 *
 * @example
 *   const plan = await checkpoint('plan', () => planner(task));
 *   const found = await checkpoint('work', () => worker(plan), { verify: (s) => ({ ok: s !== undefined }) });
 */
export async function checkpoint<T>(
  name: string,
  state: T | (() => T | Promise<T>),
  options: CheckpointOptions<T> = {},
): Promise<T> {
  if (typeof name !== 'string' || name === '') throw usage('checkpoint(name, state): name must be a non-empty string');
  const wf = getWorkflow();
  if (wf?.session) return wf.session.checkpoint(name, state, options);
  const started = Date.now();
  const value = await runStep(state, options, wf, name);
  if (wf) stepDone(wf, name, 'checkpoint', Date.now() - started);
  return value;
}

export class VerificationFailedError extends FaultlineError {
  readonly step: string;
  constructor(step: string, reason: string) {
    super('FAULTLINE_VERIFICATION_FAILED', `step "${step}" failed verification: ${reason}`);
    this.name = 'VerificationFailedError';
    this.step = step;
  }
}

/** Compute a step's state and verify it, re-running the step when verification fails (then a severe failure). */
export async function runStep<T>(
  state: T | (() => T | Promise<T>),
  options: CheckpointOptions<T>,
  wf: WorkflowState | undefined,
  name: string,
): Promise<T> {
  const retries = options.retries ?? 1;
  for (let attempt = 0; ; attempt++) {
    const value = typeof state === 'function' ? await (state as () => T | Promise<T>)() : state;
    if (!options.verify) return value;
    const verdict = await options.verify(value);
    if (verdict.ok) return value;
    const reason = verdict.reason ?? 'rejected';
    if (wf?.span.isRecording()) {
      wf.span.addEvent(
        EVENT_FL_CHECKPOINT,
        {
          [ATTR_FL_CHECKPOINT_NAME]: name,
          [ATTR_FL_CHECKPOINT_ACTION]: 'verify_failed',
          [ATTR_FL_CHECKPOINT_REASON]: reason,
          [ATTR_FL_CHECKPOINT_ATTEMPT]: attempt + 1,
        },
        now(),
      );
    }
    if (attempt >= retries || typeof state !== 'function') throw new VerificationFailedError(name, reason);
  }
}

/** Record a checkpoint action on the workflow span. */
export function checkpointEvent(
  wf: WorkflowState,
  name: string,
  action: string,
  reason?: string,
  attempt?: number,
): void {
  if (!wf.span.isRecording()) return;
  const a: Attributes = { [ATTR_FL_CHECKPOINT_NAME]: name, [ATTR_FL_CHECKPOINT_ACTION]: action };
  if (reason !== undefined) a[ATTR_FL_CHECKPOINT_REASON] = reason;
  if (attempt !== undefined) a[ATTR_FL_CHECKPOINT_ATTEMPT] = attempt;
  wf.span.addEvent(EVENT_FL_CHECKPOINT, a, now());
}

/** A step the checkpoint session completed (saved or restored): progress for the monitors. */
export function checkpointDone(wf: WorkflowState, name: string, durationMs: number): void {
  stepDone(wf, name, 'checkpoint', durationMs);
}

function isThenable<T>(value: T): value is T & PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
