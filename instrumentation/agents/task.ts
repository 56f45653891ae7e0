/**
 * Task scope. A task is one run of a multi-agent workflow (one campaign trial, one user request): the fault plan keeps
 * its per-task state (call counters, one-shot faults, seeded draws, replay caches) under the task id, so a new task
 * starts fresh. An explicit task rides in the OTel context (`withTask`, `runWorkflow`); when the app declares none,
 * `resolveTaskId` finds one: the framework run, else the trace, else the process.
 */
import {
  SpanKind,
  context,
  createContextKey,
  isSpanContextValid,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { FaultlineInputError } from '../../src/errors';
import { now } from '../../src/clock';
import { getFrameworkRun, isRootCall } from '../frameworks/scope';
import { ATTR_FL_TASK_ID, ATTR_GEN_AI_OPERATION_NAME, GEN_AI_OPERATION_INVOKE_WORKFLOW } from '../semconv';
import {
  checkWorkflowDeclaration,
  createWorkflow,
  withWorkflow,
  workflowBody,
  workflowDeclarationAttributes,
  type WorkflowDeclaration,
  type WorkflowRecovery,
} from './declarations';
import { tracer } from './invoke-agent';
import { runInSpan } from './run-in-span';

/**
 * How a call's task is found when no `withTask` / `runWorkflow` scope declares one (an explicit scope always wins):
 * - `auto`: the framework run it is part of (an OpenAI Agents SDK trace, a LangChain/LangGraph root run, an AI SDK
 *   function id), else its trace when it has a parent span, else the process;
 * - `trace`: its trace (a call with no parent span is its own trace, so its own task);
 * - `process`: one task for the whole process.
 */
export type TaskScope = 'auto' | 'trace' | 'process';

export const TASK_SCOPES: readonly TaskScope[] = ['auto', 'trace', 'process'];

/** The task id of everything a process does outside any other task (scope `process`, or `auto` with no parent). */
export const processTaskId = (): string => `process-${process.pid}`;

/**
 * The task of a call. `ctx` is the call's parent context, or its own (the call's span active: what the span layer's
 * steps have); `ownTraceId` is the call's trace id, for scope `trace` when `ctx` is a parent context with no span.
 */
export function resolveTaskId(ctx: Context, scope: TaskScope = 'auto', ownTraceId?: string): string {
  const explicit = getTaskId(ctx);
  if (explicit !== undefined) return explicit;
  if (scope === 'auto') {
    const run = getFrameworkRun(ctx);
    if (run !== undefined) return run;
  }
  if (scope === 'process') return processTaskId();
  const sc = trace.getSpanContext(ctx);
  const traceId = sc !== undefined && isSpanContextValid(sc) ? sc.traceId : undefined;
  // A root call's own context has a span (the call's), and the mark that it started without a parent.
  if (traceId !== undefined && !isRootCall(ctx)) return traceId;
  if (scope === 'trace') return traceId ?? ownTraceId ?? processTaskId();
  return processTaskId();
}

const TASK_KEY = createContextKey('faultline.task.id');

/** The task id of the innermost `withTask` / `runWorkflow` scope in `ctx`, if any. */
export function getTaskId(ctx: Context = context.active()): string | undefined {
  const v = ctx.getValue(TASK_KEY);
  return typeof v === 'string' ? v : undefined;
}

/** Run `fn` in an explicit task scope (no span of its own). Returns what `fn` returns. */
export function withTask<T>(taskId: string, fn: () => T): T {
  checkTaskId('withTask', taskId);
  if (typeof fn !== 'function') {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `withTask("${taskId}", fn): fn must be a function, got ${typeof fn}`,
    );
  }
  return context.with(context.active().setValue(TASK_KEY, taskId), fn);
}

export interface RunWorkflowOptions extends WorkflowDeclaration {
  /** The task id; default: the new trace's id. */
  taskId?: string;
  /** Extra attributes for the workflow span. */
  attributes?: Attributes;
  /** Checkpoint-based recovery (`checkpoints({ store })` from faultline): `checkpoint()` saves, a severe failure rolls
   * back and resumes. */
  checkpoints?: WorkflowRecovery;
}

/**
 * Run `fn` as one task of workflow `name`: a new trace whose root is an INTERNAL `invoke_workflow {name}` span
 * carrying faultline.task.id, with the task scope set for everything inside. Returns what `fn` returns; an error is
 * recorded on the span and rethrown unchanged.
 */
export function runWorkflow<T>(name: string, fn: (span: Span) => T, options: RunWorkflowOptions = {}): T {
  if (typeof name !== 'string') {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `runWorkflow(name, fn): name must be a string, got ${typeof name}`,
    );
  }
  if (typeof fn !== 'function') {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `runWorkflow("${name}", fn): fn must be a function, got ${typeof fn}`,
    );
  }
  if (options.taskId !== undefined) checkTaskId('runWorkflow', options.taskId);
  checkWorkflowDeclaration(`runWorkflow("${name}")`, options);
  const span = tracer().startSpan(
    name === '' ? GEN_AI_OPERATION_INVOKE_WORKFLOW : `${GEN_AI_OPERATION_INVOKE_WORKFLOW} ${name}`,
    {
      kind: SpanKind.INTERNAL,
      root: true,
      startTime: now(),
      attributes: {
        ...options.attributes,
        ...workflowDeclarationAttributes(options),
        [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_INVOKE_WORKFLOW,
        // Known up front: set at start, where span processors (the fault plan) can see it.
        ...(options.taskId !== undefined ? { [ATTR_FL_TASK_ID]: options.taskId } : {}),
      },
    },
  );
  const spanContext = span.spanContext();
  const taskId = options.taskId ?? (isSpanContextValid(spanContext) ? spanContext.traceId : undefined);
  let ctx = trace.setSpan(context.active(), span);
  if (taskId !== undefined) {
    if (options.taskId === undefined) span.setAttribute(ATTR_FL_TASK_ID, taskId);
    ctx = ctx.setValue(TASK_KEY, taskId);
  }
  const abort = new AbortController();
  const workflow = createWorkflow(name, span, taskId, options, abort.signal, options.checkpoints);
  return runInSpan(span, withWorkflow(ctx, workflow), workflowBody(workflow, fn, options.checkpoints, abort));
}

function checkTaskId(where: string, taskId: unknown): void {
  if (typeof taskId !== 'string' || taskId === '') {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `${where}: taskId must be a non-empty string, got ${taskId === '' ? 'an empty string' : typeof taskId}`,
    );
  }
}
