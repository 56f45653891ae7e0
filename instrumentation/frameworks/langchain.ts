/**
 * LangChain.js / LangGraph.js (`@langchain/core` 1, `@langchain/langgraph` 1.7), through a callback handler. A root
 * run (a graph's `invoke`/`stream`, or any chain invoked on its own) becomes an `invoke_workflow {name}` span and a
 * task; each graph node becomes an `invoke_agent {node}` span (a compiled agent used as a node, or a prebuilt agent's
 * own nodes, likewise); each tool run an `execute_tool {tool}` span. The other runnables of a graph (sequences,
 * channel writes, branches) are left out, and so are LLM runs: the span layer's LLM spans are those calls, and they
 * nest under the node that made them because LangChain's current run is read from its async context at each call.
 *
 * Registration: `@langchain/core` offers one process-wide hook, its configure hooks (`registerConfigureHook` with a
 * context variable holding the handler), which must be called from the copy of `@langchain/core` the app runs, in the
 * app's own async context. LangChain publishes its async-local storage on `globalThis` while the app's imports are
 * evaluated; the bridge registers the hook then, through that copy (CommonJS, or ES modules where Node can `require`
 * them: 20.19+, 22.12+). An app whose imports never set that storage up (`@langchain/langgraph/prebuilt`'s
 * `createReactAgent`, `@langchain/core/runnables` alone) gets it from the bridge at LangChain's first read of it, with
 * the registration in it (see StorageWithDefaults). Where neither can (older Node with an ES module app, a bundled app), one line does it:
 * `registerLangChain(await import('@langchain/core/context'))`.
 */
import { SpanStatusCode, context, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorage } from 'node:async_hooks';
import { fileURLToPath } from 'node:url';
import { logger, safely } from '../../src/diag';
import { now } from '../../src/clock';
import { withAgentName } from '../agents/invoke-agent';
import { getTaskId } from '../agents/task';
import { errorTypeOf } from '../agents/run-in-span';
import {
  ATTR_ERROR_TYPE,
  ATTR_FL_TASK_ID,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  GEN_AI_OPERATION_EXECUTE_TOOL,
  GEN_AI_OPERATION_INVOKE_AGENT,
  GEN_AI_OPERATION_INVOKE_WORKFLOW,
} from '../semconv';
import { whenGlobalSet } from './global-trap';
import { addScopeSource, frameworkContext, getFrameworkRun, startMirror, type Mirror, type ScopeSource } from './scope';

const log = logger('frameworks/langchain');

const STORAGE_KEY = Symbol.for('ls:tracing_async_local_storage');
const CHILD_CONFIG_KEY = Symbol.for('lc:child_config');
/** The context variable holding the handler (the configure hook's `contextVar`). */
const HANDLER_VARIABLE = 'faultline_callback_handler';
/** Runs whose end never came (a run abandoned mid-stream) are dropped past this many. */
const MAX_RUNS = 10_000;

/** The part of `@langchain/core/context` the registration uses. */
export interface LangChainContextModule {
  registerConfigureHook(config: { contextVar?: string; inheritable?: boolean }): void;
  setContextVariable(name: string, value: unknown): void;
}

interface Serialized {
  name?: string;
  id?: string[];
}

interface Run {
  /** The run's own mirror (root runs, graph nodes, tools). */
  mirror?: Mirror;
  /** Where the run's children go: its mirror, else its nearest mirrored ancestor's. */
  scope: Mirror | undefined;
}

export interface LangChainBridgeOptions {
  /** Record tool arguments and results (message content capture). */
  captureContent: () => boolean;
}

/**
 * The callback handler. LangChain recognises a handler by `name`, `copy()` and `awaitHandlers`
 * (`isBaseCallbackHandler`), so it needs no base class from the app's copy of `@langchain/core`.
 */
export class FaultlineCallbackHandler {
  readonly name = 'faultline';
  /** Awaited, so a run's span has started before its body runs (the handler does no I/O). */
  readonly awaitHandlers = true;
  readonly raiseError = false;
  readonly ignoreLLM = true;
  readonly ignoreRetriever = true;
  readonly ignoreCustomEvent = true;
  readonly lc_serializable = false;
  readonly #runs = new Map<string, Run>();
  #enabled = true;
  /** The scope source reading this handler's mirrors. */
  readonly source: ScopeSource = () => this.current();

  constructor(private readonly options: LangChainBridgeOptions) {}

  copy(): this {
    return this;
  }

  // ---------------------------------------------------------------- callbacks, in lifecycle order

  /** Fires when a chain run starts: a graph, one of its nodes, or any runnable inside them. */
  async handleChainStart(
    chain: Serialized | undefined,
    _inputs: unknown,
    runId: string,
    parentRunId?: string,
    _tags?: string[],
    metadata?: Record<string, unknown>,
    _runType?: string,
    runName?: string,
  ): Promise<void> {
    safely(
      log,
      'handleChainStart',
      () => this.#enabled && this.#chainStart(chain, runId, parentRunId, metadata, runName),
      undefined,
    );
  }

  /** Fires when a tool run starts. */
  async handleToolStart(
    tool: Serialized | undefined,
    input: string,
    runId: string,
    parentRunId?: string,
    _tags?: string[],
    _metadata?: Record<string, unknown>,
    runName?: string,
    toolCallId?: string,
  ): Promise<void> {
    safely(
      log,
      'handleToolStart',
      () => {
        if (!this.#enabled) return;
        const name = runName ?? nameOf(tool);
        const attributes: Attributes = {
          [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_EXECUTE_TOOL,
          [ATTR_GEN_AI_TOOL_NAME]: name,
          [ATTR_GEN_AI_TOOL_TYPE]: 'function',
        };
        if (typeof toolCallId === 'string' && toolCallId !== '') attributes[ATTR_GEN_AI_TOOL_CALL_ID] = toolCallId;
        if (this.options.captureContent() && typeof input === 'string')
          attributes[ATTR_GEN_AI_TOOL_CALL_ARGUMENTS] = input;
        const mirror = startMirror(`${GEN_AI_OPERATION_EXECUTE_TOOL} ${name}`, this.#parentContext(parentRunId), {
          attributes,
        });
        this.#add(runId, { mirror, scope: mirror });
      },
      undefined,
    );
  }

  async handleToolEnd(output: unknown, runId: string): Promise<void> {
    safely(
      log,
      'handleToolEnd',
      () => {
        const run = this.#take(runId);
        if (run?.mirror === undefined) return;
        if (this.options.captureContent()) {
          const result = toolResult(output);
          if (result !== undefined) run.mirror.span.setAttribute(ATTR_GEN_AI_TOOL_CALL_RESULT, result);
        }
        run.mirror.span.end(now());
      },
      undefined,
    );
  }

  async handleToolError(err: unknown, runId: string): Promise<void> {
    safely(log, 'handleToolError', () => this.#fail(runId, err, 'tool_error'), undefined);
  }

  async handleChainEnd(_outputs: unknown, runId: string): Promise<void> {
    safely(log, 'handleChainEnd', () => this.#take(runId)?.mirror?.span.end(now()), undefined);
  }

  async handleChainError(err: unknown, runId: string): Promise<void> {
    safely(log, 'handleChainError', () => this.#fail(runId, err), undefined);
  }

  // ---------------------------------------------------------------- scope source

  /** Where an LLM call made now goes: under the scope of the run LangChain is executing, if any. */
  current(): Mirror | undefined {
    if (!this.#enabled || this.#runs.size === 0) return undefined;
    const storage = (globalThis as Record<symbol, unknown>)[STORAGE_KEY] as { getStore?: () => unknown } | undefined;
    const store = storage?.getStore?.() as { extra?: Record<symbol, unknown> } | undefined;
    const config = store?.extra?.[CHILD_CONFIG_KEY] as { callbacks?: unknown } | undefined;
    // The config a runnable's body runs with carries its child callback manager, whose parent run is that runnable.
    const callbacks = config?.callbacks as { getParentRunId?: () => string | undefined } | undefined;
    const runId = typeof callbacks?.getParentRunId === 'function' ? callbacks.getParentRunId() : undefined;
    return runId === undefined ? undefined : this.#runs.get(runId)?.scope;
  }

  disable(): void {
    this.#enabled = false;
    const end = now();
    for (const run of this.#runs.values()) run.mirror?.span.end(end);
    this.#runs.clear();
  }

  // ---------------------------------------------------------------- runs

  #chainStart(
    chain: Serialized | undefined,
    runId: string,
    parentRunId: string | undefined,
    metadata: Record<string, unknown> | undefined,
    runName: string | undefined,
  ): void {
    const name = runName ?? nameOf(chain);
    const parent = parentRunId === undefined ? undefined : this.#runs.get(parentRunId);
    if (parent === undefined) {
      // A root run (or one whose parent faultline never saw): the framework run, and a task of its own unless it was
      // started inside one (declared, or another framework's run).
      const attributes: Attributes = { [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_INVOKE_WORKFLOW };
      const thread = (metadata?.thread_id ??
        (metadata?.configurable as Record<string, unknown> | undefined)?.thread_id) as unknown;
      if (typeof thread === 'string' && thread !== '') attributes[ATTR_GEN_AI_CONVERSATION_ID] = thread;
      const parent = frameworkContext(context.active(), this.source);
      const own = getTaskId(parent) === undefined && getFrameworkRun(parent) === undefined;
      if (own) attributes[ATTR_FL_TASK_ID] = runId;
      const mirror = startMirror(`${GEN_AI_OPERATION_INVOKE_WORKFLOW} ${name}`, parent, {
        attributes,
        ...(own ? { run: runId } : {}),
      });
      this.#add(runId, { mirror, scope: mirror });
      return;
    }
    // A graph node: LangGraph tags every run inside a node with the node's name; the node's own run bears it.
    const node = metadata?.langgraph_node;
    if (typeof node === 'string' && node === name && !node.startsWith('__') && parent.scope !== undefined) {
      const mirror = startMirror(`${GEN_AI_OPERATION_INVOKE_AGENT} ${name}`, parent.scope.context, {
        attributes: { [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_INVOKE_AGENT, [ATTR_GEN_AI_AGENT_NAME]: name },
        decorate: (ctx) => withAgentName(ctx, name),
      });
      this.#add(runId, { mirror, scope: mirror });
      return;
    }
    this.#add(runId, { scope: parent.scope });
  }

  #parentContext(parentRunId: string | undefined) {
    const scope = parentRunId === undefined ? undefined : this.#runs.get(parentRunId)?.scope;
    return scope?.context ?? frameworkContext(context.active(), this.source);
  }

  #add(runId: string, run: Run): void {
    this.#runs.set(runId, run);
    if (this.#runs.size > MAX_RUNS) {
      const oldest = this.#runs.keys().next().value as string;
      this.#runs.get(oldest)?.mirror?.span.end(now());
      this.#runs.delete(oldest);
    }
  }

  #take(runId: string): Run | undefined {
    const run = this.#runs.get(runId);
    this.#runs.delete(runId);
    return run;
  }

  #fail(runId: string, err: unknown, errorType?: string): void {
    const run = this.#take(runId);
    if (run?.mirror === undefined) return;
    const span = run.mirror.span;
    // LangGraph's interrupts and Command handoffs to a parent graph travel as errors: control flow, not failures.
    if (!(err !== null && typeof err === 'object' && (err as { is_bubble_up?: unknown }).is_bubble_up === true)) {
      span.setAttribute(ATTR_ERROR_TYPE, errorType ?? errorTypeOf(err));
      if (err instanceof Error) span.recordException(err, now());
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    }
    span.end(now());
  }
}

function nameOf(serialized: Serialized | undefined): string {
  if (typeof serialized?.name === 'string' && serialized.name !== '') return serialized.name;
  const id = serialized?.id;
  return Array.isArray(id) && typeof id[id.length - 1] === 'string' ? id[id.length - 1] : 'unknown';
}

function toolResult(output: unknown): string | undefined {
  if (typeof output === 'string') return output;
  const content = (output as { content?: unknown } | null | undefined)?.content;
  if (typeof content === 'string') return content;
  try {
    return JSON.stringify(output);
  } catch {
    return undefined;
  }
}

let active: FaultlineCallbackHandler | undefined;

/**
 * Register faultline's handler with LangChain's configure hooks through `mod` (`@langchain/core/context` of the
 * app's copy), for every run started in the current async context and below it: call it at the app's top level.
 * `enableFrameworks` does this by itself where it can; this is the one line for where it cannot. Returns false when
 * faultline is not running (nothing to register).
 */
export function registerLangChain(mod: LangChainContextModule): boolean {
  if (active === undefined) return false;
  mod.registerConfigureHook({ contextVar: HANDLER_VARIABLE, inheritable: true });
  mod.setContextVariable(HANDLER_VARIABLE, active);
  return true;
}

/** The handler itself, for `callbacks: [langChainHandler()]` on one invocation; undefined when faultline is not running. */
export function langChainHandler(): FaultlineCallbackHandler | undefined {
  return active;
}

/** The `@langchain/core` copy whose code is running now, from the call stack: its `dist/` directory and file type. */
function callerCopy(): { dist: string; ext: string } | undefined {
  const limit = Error.stackTraceLimit;
  const prepare = Error.prepareStackTrace;
  let sites: NodeJS.CallSite[] = [];
  try {
    Error.stackTraceLimit = 20;
    Error.prepareStackTrace = (_err, callSites) => callSites;
    sites = new Error().stack as unknown as NodeJS.CallSite[];
  } finally {
    Error.stackTraceLimit = limit;
    Error.prepareStackTrace = prepare;
  }
  for (const site of Array.isArray(sites) ? sites : []) {
    const file = site.getFileName?.();
    if (typeof file !== 'string') continue;
    const path = file.startsWith('file:') ? fileURLToPath(file) : file;
    const m = /^(.*[\\/]@langchain[\\/]core[\\/]dist[\\/]).*\.(c?js)$/.exec(path);
    if (m) return { dist: m[1], ext: m[2] };
  }
  return undefined;
}

/** `@langchain/core/context` of that copy (the same module instance the app's copy runs), or undefined with a warning. */
function contextModule(copy: { dist: string; ext: string }): LangChainContextModule | undefined {
  try {
    return require(`${copy.dist}singletons/async_local_storage/context.${copy.ext}`) as LangChainContextModule;
  } catch (err) {
    log.warn(
      `cannot reach LangChain's configure hooks (${(err as Error).message}), so its runs are not recorded as spans: add registerLangChain(await import("@langchain/core/context")) at the top of the app`,
    );
    return undefined;
  }
}

/**
 * LangChain's async-local storage, for an app whose imports never set one up: `@langchain/langgraph`'s main entry
 * and `@langchain/core/context` create it when imported, but `@langchain/langgraph/prebuilt` (`createReactAgent`),
 * `@langchain/core/runnables` and the other entry points do not, and LangChain then runs on a no-op stand-in, with no
 * context variables (so no configure hook) and no current run. Created at LangChain's first read, it is what those
 * entry points would have created, with one difference: a context holding no store reads as holding the context
 * variables the registration set (faultline's configure hook and handler), so every run sees them, in whatever
 * async context it starts — what a registration at the app's top level gives.
 */
class StorageWithDefaults extends AsyncLocalStorage<unknown> {
  defaults: unknown;
  override getStore(): unknown {
    return super.getStore() ?? this.defaults;
  }
}

/** Bridge LangChain when the app loads it. Returns the removal. */
export function bridgeLangChain(options: LangChainBridgeOptions): () => void {
  const handler = new FaultlineCallbackHandler(options);
  active = handler;
  // The scope source is added once LangChain is there: until then a call pays nothing for it.
  let removeSource: (() => void) | undefined;
  let ours: StorageWithDefaults | undefined;
  let settled = false;
  const removeTrap = whenGlobalSet(
    STORAGE_KEY,
    (storage) => {
      removeSource ??= addScopeSource(handler.source);
      if (storage === ours) return; // registered by the first read, below
      // Now, synchronously: this runs while the app's imports are evaluated, in the app's top-level async context,
      // which is where a context variable set outside any run is seen by every run (LangChain's "global").
      const copy = callerCopy();
      if (copy === undefined) {
        log.warn(
          'LangChain was loaded from a copy faultline cannot locate (bundled?), so its runs are not recorded as spans: add registerLangChain(await import("@langchain/core/context")) at the top of the app',
        );
        return;
      }
      const mod = contextModule(copy);
      if (mod !== undefined) registerLangChain(mod);
    },
    () => {
      // LangChain reads its storage and none was set up: create it, once, if the reader is a copy of @langchain/core.
      if (settled) return undefined;
      const copy = callerCopy();
      if (copy === undefined) return undefined;
      settled = true;
      const mod = contextModule(copy);
      if (mod === undefined) return undefined;
      const storage = new StorageWithDefaults();
      ours = storage;
      (globalThis as Record<symbol, unknown>)[STORAGE_KEY] = storage;
      storage.run({}, () => {
        registerLangChain(mod);
        storage.defaults = storage.getStore();
      });
      return storage;
    },
  );
  return () => {
    removeTrap();
    removeSource?.();
    handler.disable();
    if (active === handler) active = undefined;
  };
}
