/**
 * Framework scopes. An agent framework (the OpenAI Agents SDK, LangChain/LangGraph) keeps its current agent, tool or
 * node in its own async context, not in OpenTelemetry's. Its bridge mirrors those as OTel spans and registers a source
 * that returns the mirror of the framework's current span; `frameworkContext()` then puts the LLM calls, agent turns
 * and messages started now under the innermost one — unless the active OTel span is already below it (started inside
 * it, e.g. a `runAgent` in a tool). The mirror's context also carries the agent's name and the framework run, which is
 * a task (see `resolveTaskId` in ../agents/task.ts).
 */
import {
  ROOT_CONTEXT,
  context,
  createContextKey,
  isSpanContextValid,
  SpanKind,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TimeInput,
} from '@opentelemetry/api';
import { now } from '../../src/clock';
import { logger } from '../../src/diag';
import { PACKAGE_NAME, VERSION } from '../../src/version';
import { aiSdkFunctionId, aiSdkOperationFunctionId } from './ai-sdk';

const log = logger('frameworks');

/** One framework span mirrored as an OTel span. */
export interface Mirror {
  readonly span: Span;
  /** The context for work done under the span: the span active, and the agent name and framework run when known. */
  readonly context: Context;
  /** Ids of the OTel spans this one was started under, as far as faultline knows its ancestry. */
  readonly above: ReadonlySet<string>;
}

/** The mirror of a framework's current span, if the framework is inside one now. */
export type ScopeSource = () => Mirror | undefined;

const MIRROR_KEY = createContextKey('faultline.framework.mirror');
const RUN_KEY = createContextKey('faultline.framework.run');
const ROOT_CALL_KEY = createContextKey('faultline.call.root');
const ROOT_CALL_CONTEXT = ROOT_CONTEXT.setValue(ROOT_CALL_KEY, true);

const sources = new Set<ScopeSource>();

/** Register a scope source; returns its removal. */
export function addScopeSource(source: ScopeSource): () => void {
  sources.add(source);
  return () => sources.delete(source);
}

/**
 * The context work started now belongs to: `base` (the active OTel context), or the context of the innermost
 * framework span when the framework is inside one that `base`'s span is not below. A bridge finding the parent of a
 * run it is starting passes its own source as `except`.
 */
export function frameworkContext(base: Context = context.active(), except?: ScopeSource): Context {
  if (sources.size === 0) return base;
  let best: Mirror | undefined;
  for (const source of sources) {
    if (source === except) continue;
    let m: Mirror | undefined;
    try {
      m = source();
    } catch (err) {
      log.error('internal error reading a framework scope (ignored, the application is unaffected):', err);
    }
    // Two frameworks inside each other (a LangGraph node in an Agents SDK tool): the deeper one wins.
    if (m !== undefined && (best === undefined || m.above.has(best.span.spanContext().spanId))) best = m;
  }
  if (best === undefined) return base;
  const active = trace.getSpanContext(base);
  if (active !== undefined && isSpanContextValid(active) && !best.above.has(active.spanId)) return base;
  return best.context;
}

/**
 * The parent context of a call starting now (what the GenAI span layer starts its span under): `frameworkContext()`,
 * with the AI SDK operation's function id as its run when no framework run is set (ai 7 keeps it in the async scope,
 * not on a span), and marked when it has no span, so the task of a call without a parent can be told apart later from
 * the call's own context (whose span is the call's).
 */
export function callContext(base: Context = context.active()): Context {
  let ctx = frameworkContext(base);
  if (ctx.getValue(RUN_KEY) === undefined) {
    const run = aiSdkOperationFunctionId();
    if (run !== undefined) ctx = ctx.setValue(RUN_KEY, run);
  }
  const sc = trace.getSpanContext(ctx);
  if (sc !== undefined && isSpanContextValid(sc)) return ctx;
  // The common case (a script's call, nothing in context) without a new context per call.
  return ctx === ROOT_CONTEXT ? ROOT_CALL_CONTEXT : ctx.setValue(ROOT_CALL_KEY, true);
}

/** Whether `ctx` (a call's parent context, or the call's own) belongs to a call started without a parent span. */
export function isRootCall(ctx: Context): boolean {
  return ctx.getValue(ROOT_CALL_KEY) === true;
}

/**
 * The framework run (a task) `ctx` is inside, if any: an Agents SDK trace or a LangChain root run (set on their
 * mirrors), an AI SDK 7 operation's function id (set by `callContext`), else the function id of the AI SDK 6
 * operation whose span is active.
 */
export function getFrameworkRun(ctx: Context): string | undefined {
  const v = ctx.getValue(RUN_KEY);
  return typeof v === 'string' ? v : aiSdkFunctionId(ctx);
}

export interface MirrorOptions {
  attributes?: Attributes;
  kind?: SpanKind;
  startTime?: TimeInput;
  /** Adds to the span's context what work under it should see (the agent whose turn it is: `withAgentName`). */
  decorate?: (ctx: Context) => Context;
  /** This span is a framework run and a task: the task of everything under it, unless an explicit scope is set. */
  run?: string;
}

/** Start the OTel span mirroring a framework span, under `parent`. */
export function startMirror(name: string, parent: Context, options: MirrorOptions = {}): Mirror {
  const span = trace.getTracer(PACKAGE_NAME, VERSION).startSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes ? { attributes: options.attributes } : {}),
      startTime: options.startTime ?? now(),
    },
    parent,
  );
  const above = new Set<string>();
  const enclosing = parent.getValue(MIRROR_KEY) as Mirror | undefined;
  if (enclosing !== undefined) {
    for (const id of enclosing.above) above.add(id);
    above.add(enclosing.span.spanContext().spanId);
  }
  const sc = trace.getSpanContext(parent);
  if (sc !== undefined && isSpanContextValid(sc)) above.add(sc.spanId);
  let ctx = trace.setSpan(parent, span);
  if (options.decorate) ctx = options.decorate(ctx);
  if (options.run !== undefined) ctx = ctx.setValue(RUN_KEY, options.run);
  const mirror: { span: Span; context: Context; above: Set<string> } = { span, context: ctx, above };
  mirror.context = ctx.setValue(MIRROR_KEY, mirror);
  return mirror;
}
