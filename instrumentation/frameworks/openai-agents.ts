/**
 * The OpenAI Agents SDK (`@openai/agents` 0.14), through its trace-processor API. The SDK's trace becomes an
 * `invoke_workflow {name}` span and a task (the run, or the runs the app groups into one trace with `withTrace`);
 * its agent, function-tool, handoff and guardrail spans become `invoke_agent {agent}`, `execute_tool {tool}`,
 * `handoff {agent}` and `guardrail {name}` spans. Its generation and response spans are left out: the span layer's
 * LLM spans are those calls, and they nest under the agent that made them because the SDK's current span is read from
 * its own async context at each call (a scope source). Task and turn spans are left out too (the trace is the task;
 * turns are the agent's LLM calls).
 *
 * The SDK publishes its trace provider on `globalThis` when it is first imported or used; the processor is registered
 * then. `@openai/agents` replaces the processor list with its OpenAI exporter at import, and apps do so with
 * `setTraceProcessors`: a processor the SDK shuts down that way is registered again.
 */
import { SpanStatusCode, context, type Attributes, type Context } from '@opentelemetry/api';
import { now } from '../../src/clock';
import { logger, safely } from '../../src/diag';
import { agentDeclarationAttributes } from '../agents/declarations';
import { withAgentName } from '../agents/invoke-agent';
import { getTaskId } from '../agents/task';
import {
  ATTR_ERROR_TYPE,
  ATTR_FL_GUARDRAIL_TRIGGERED,
  ATTR_FL_MESSAGE_SOURCE,
  ATTR_FL_MESSAGE_TARGET,
  ATTR_FL_TASK_ID,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ERROR_TYPE_OTHER,
  GEN_AI_OPERATION_EXECUTE_TOOL,
  GEN_AI_OPERATION_INVOKE_AGENT,
  GEN_AI_OPERATION_INVOKE_WORKFLOW,
} from '../semconv';
import { whenGlobalSet } from './global-trap';
import { addScopeSource, frameworkContext, getFrameworkRun, startMirror, type Mirror, type ScopeSource } from './scope';

const log = logger('frameworks/openai-agents');

const PROVIDER_KEY = Symbol.for('openai.agents.core.traceProvider');
const CONTEXT_KEY = Symbol.for('openai.agents.core.asyncLocalStorage');
/** The SDK's id of a span or trace it does not record (tracing disabled). */
const NOOP_ID = 'no-op';
/** The SDK span types that get a span of their own. */
const MIRRORED = new Set(['agent', 'function', 'handoff', 'guardrail']);

// The parts of the SDK's tracing objects the bridge reads (@openai/agents-core tracing/spans.d.ts, traces.d.ts).
interface SdkTrace {
  traceId: string;
  name: string;
  groupId?: string | null;
}
interface SdkSpanData {
  type: string;
  name?: string;
  input?: string;
  output?: string;
  from_agent?: string;
  to_agent?: string;
  triggered?: boolean;
  /** An agent span's handoff targets and tool names (the tools are filled in after the span starts). */
  handoffs?: string[];
  tools?: string[];
}
interface SdkSpan {
  readonly spanId: string;
  readonly traceId: string;
  readonly parentId: string | null;
  readonly spanData: SdkSpanData;
  readonly error: { message: string; data?: Record<string, unknown> } | null;
  readonly startedAt: string | null;
  readonly previousSpan?: SdkSpan;
}
interface SdkProvider {
  registerProcessor(processor: unknown): void;
}
interface SdkContextStore {
  active?: boolean;
  trace?: SdkTrace;
  span?: SdkSpan;
}

interface Entry {
  /** The span's own mirror (agent, tool, handoff, guardrail spans). */
  mirror?: Mirror;
  /** Where the span's children go: its mirror, else its nearest mirrored ancestor's. */
  scope: Mirror;
}

export interface AgentsBridgeOptions {
  /** Record tool arguments and results (message content capture). */
  captureContent: () => boolean;
}

/** A TracingProcessor of the Agents SDK that mirrors its spans, and the scope source that finds the current one. */
export class AgentsTraceProcessor {
  readonly #traces = new Map<string, Mirror>();
  readonly #spans = new Map<string, Entry>();
  #enabled = true;
  /** Set when the SDK replaced the processor list without us (setTraceProcessors): register again. */
  onReplaced: (() => void) | undefined;
  /** The scope source reading this processor's mirrors. */
  readonly source: ScopeSource = () => this.current();

  constructor(private readonly options: AgentsBridgeOptions) {}

  // ---------------------------------------------------------------- TracingProcessor, in lifecycle order

  /** Fires when a run (or `withTrace`) starts its trace. */
  async onTraceStart(sdkTrace: SdkTrace): Promise<void> {
    safely(log, 'onTraceStart', () => this.#enabled && this.#trace(sdkTrace), undefined);
  }

  /** Fires when an agent, tool, handoff, guardrail, generation, … span starts. */
  async onSpanStart(span: SdkSpan): Promise<void> {
    safely(log, 'onSpanStart', () => this.#enabled && this.#entry(span, undefined, true), undefined);
  }

  /** Fires when such a span ends, with its final data (handoff target, tool output, guardrail outcome, error). */
  async onSpanEnd(span: SdkSpan): Promise<void> {
    safely(log, 'onSpanEnd', () => this.#enabled && this.#end(span), undefined);
  }

  /** Fires when the trace ends. */
  async onTraceEnd(sdkTrace: SdkTrace): Promise<void> {
    safely(
      log,
      'onTraceEnd',
      () => {
        const mirror = this.#traces.get(sdkTrace.traceId);
        if (mirror === undefined) return;
        this.#traces.delete(sdkTrace.traceId);
        mirror.span.end(now());
      },
      undefined,
    );
  }

  /**
   * The SDK shuts processors down at exit (with a timeout) and when `setTraceProcessors` replaces them (without):
   * at exit the open mirrors end, so nothing is lost; a replacement registers us again.
   */
  async shutdown(timeout?: number): Promise<void> {
    if (timeout === undefined && this.#enabled && this.onReplaced) {
      const again = this.onReplaced;
      queueMicrotask(again);
      return;
    }
    this.#endAll();
  }

  async forceFlush(): Promise<void> {}

  // ---------------------------------------------------------------- scope source

  /** Where an LLM call made now goes: under the SDK's current span's scope, if the SDK is inside a run. */
  current(): Mirror | undefined {
    if (!this.#enabled) return undefined;
    const storage = (globalThis as Record<symbol, unknown>)[CONTEXT_KEY] as { getStore?: () => unknown } | undefined;
    const store = storage?.getStore?.() as SdkContextStore | undefined;
    if (store?.active !== true || store.trace === undefined) return undefined;
    if (store.trace.traceId === NOOP_ID) {
      noticeTracingOff();
      return undefined;
    }
    if (store.span !== undefined && store.span.spanId !== NOOP_ID) return this.#entry(store.span, store.trace).scope;
    return this.#trace(store.trace);
  }

  /** Stop mirroring (the SDK keeps the processor: it has no way to remove one). */
  disable(): void {
    this.#enabled = false;
    this.#endAll();
  }

  // ---------------------------------------------------------------- mirrors

  #trace(sdkTrace: SdkTrace): Mirror {
    let mirror = this.#traces.get(sdkTrace.traceId);
    if (mirror !== undefined) return mirror;
    const attributes: Attributes = { [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_INVOKE_WORKFLOW };
    if (typeof sdkTrace.groupId === 'string' && sdkTrace.groupId !== '')
      attributes[ATTR_GEN_AI_CONVERSATION_ID] = sdkTrace.groupId;
    // Under whatever the run was started in: the app's span, a runWorkflow, another framework's tool. A run started
    // inside a task (declared, or another framework's run) is part of that task; else it is a task of its own.
    const parent = frameworkContext(context.active(), this.source);
    const own = getTaskId(parent) === undefined && getFrameworkRun(parent) === undefined;
    if (own) attributes[ATTR_FL_TASK_ID] = sdkTrace.traceId;
    mirror = startMirror(`${GEN_AI_OPERATION_INVOKE_WORKFLOW} ${sdkTrace.name}`, parent, {
      attributes,
      ...(own ? { run: sdkTrace.traceId } : {}),
    });
    this.#traces.set(sdkTrace.traceId, mirror);
    return mirror;
  }

  /**
   * The entry of an SDK span, made now if the processor has not seen the span start (it was registered late). A span
   * seen as it starts is stamped now, on the span clock of faultline's own spans under it; one mirrored late keeps the
   * start the SDK recorded.
   */
  #entry(span: SdkSpan, sdkTrace?: SdkTrace, startingNow = false): Entry {
    const known = this.#spans.get(span.spanId);
    if (known !== undefined) return known;
    let parent: Mirror | undefined;
    if (span.parentId !== null) {
      parent = this.#spans.get(span.parentId)?.scope;
      if (parent === undefined && span.previousSpan?.spanId === span.parentId)
        parent = this.#entry(span.previousSpan, sdkTrace).scope;
    }
    parent ??= this.#trace(
      sdkTrace?.traceId === span.traceId ? sdkTrace : { traceId: span.traceId, name: 'Agent workflow' },
    );
    const mirror = this.#mirror(span, parent.context, startingNow);
    const entry: Entry = mirror !== undefined ? { mirror, scope: mirror } : { scope: parent };
    this.#spans.set(span.spanId, entry);
    return entry;
  }

  #mirror(span: SdkSpan, parent: Context, startingNow: boolean): Mirror | undefined {
    const data = span.spanData;
    const at = !startingNow && span.startedAt !== null ? { startTime: new Date(span.startedAt) } : {};
    switch (data.type) {
      case 'agent': {
        const name = data.name ?? '';
        return startMirror(
          name === '' ? GEN_AI_OPERATION_INVOKE_AGENT : `${GEN_AI_OPERATION_INVOKE_AGENT} ${name}`,
          parent,
          {
            ...at,
            attributes: { [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_INVOKE_AGENT, [ATTR_GEN_AI_AGENT_NAME]: name },
            decorate: (ctx) => withAgentName(ctx, name),
          },
        );
      }
      case 'function': {
        const name = data.name ?? '';
        const attributes: Attributes = {
          [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_EXECUTE_TOOL,
          [ATTR_GEN_AI_TOOL_NAME]: name,
          [ATTR_GEN_AI_TOOL_TYPE]: 'function',
        };
        return startMirror(`${GEN_AI_OPERATION_EXECUTE_TOOL} ${name}`, parent, { ...at, attributes });
      }
      case 'handoff': {
        // The target is known only when the handoff is done (the span is renamed then).
        const attributes: Attributes = {};
        if (data.from_agent !== undefined) attributes[ATTR_FL_MESSAGE_SOURCE] = data.from_agent;
        if (data.to_agent !== undefined) attributes[ATTR_FL_MESSAGE_TARGET] = data.to_agent;
        return startMirror(data.to_agent !== undefined ? `handoff ${data.to_agent}` : 'handoff', parent, {
          ...at,
          attributes,
        });
      }
      case 'guardrail':
        return startMirror(`guardrail ${data.name ?? ''}`.trimEnd(), parent, { ...at });
      default:
        // generation / response (the span layer's LLM spans are those calls), task, turn, custom, MCP list-tools, voice.
        return undefined;
    }
  }

  #end(span: SdkSpan): void {
    // A span whose start the processor missed (registered late) is mirrored now, from its recorded start time.
    const entry = this.#spans.get(span.spanId) ?? (MIRRORED.has(span.spanData.type) ? this.#entry(span) : undefined);
    this.#spans.delete(span.spanId);
    const mirror = entry?.mirror;
    if (mirror === undefined) return;
    const data = span.spanData;
    const otel = mirror.span;
    // The SDK fills a tool span's input after starting it: both are read at the end.
    if (data.type === 'function' && this.options.captureContent()) {
      if (typeof data.input === 'string' && data.input !== '')
        otel.setAttribute(ATTR_GEN_AI_TOOL_CALL_ARGUMENTS, data.input);
      if (typeof data.output === 'string' && data.output !== '')
        otel.setAttribute(ATTR_GEN_AI_TOOL_CALL_RESULT, data.output);
    }
    if (data.type === 'handoff' && data.to_agent !== undefined) {
      otel.updateName(`handoff ${data.to_agent}`);
      otel.setAttribute(ATTR_FL_MESSAGE_TARGET, data.to_agent);
    }
    // What the SDK agent declares, for the workflow monitors (detectors/monitors/role.ts): its tools and handoffs.
    if (data.type === 'agent') otel.setAttributes(agentDeclarationAttributes(sdkDeclaration(data)));
    if (data.type === 'guardrail' && typeof data.triggered === 'boolean')
      otel.setAttribute(ATTR_FL_GUARDRAIL_TRIGGERED, data.triggered);
    if (span.error !== null) {
      // A tool's failure is reported back to the model (the SDK's default), a low-cardinality tool_error as MCP does.
      otel.setAttribute(ATTR_ERROR_TYPE, data.type === 'function' ? 'tool_error' : ERROR_TYPE_OTHER);
      otel.setStatus({ code: SpanStatusCode.ERROR, message: span.error.message });
    }
    otel.end(now());
  }

  #endAll(): void {
    const end = now();
    for (const entry of this.#spans.values()) entry.mirror?.span.end(end);
    this.#spans.clear();
    for (const mirror of this.#traces.values()) mirror.span.end(end);
    this.#traces.clear();
  }
}

let toldTracingOff = false;

/**
 * A run whose SDK trace is a no-op (its tracing off: `setTracingDisabled(true)`, `OPENAI_AGENTS_DISABLE_TRACING`,
 * or `NODE_ENV=test`, where the SDK turns it off itself) reaches this bridge with no agent, tool or handoff spans:
 * only its LLM calls are recorded. That is said once per process, at the run's first LLM call, with how to turn
 * the SDK's tracing on, instead of leaving the missing structure unexplained.
 */
function noticeTracingOff(): void {
  if (toldTracingOff) return;
  toldTracingOff = true;
  process.stderr.write(
    "faultline: the OpenAI Agents SDK's tracing is off (setTracingDisabled(true), OPENAI_AGENTS_DISABLE_TRACING, or " +
      'NODE_ENV=test), so its runs have no agent, tool or handoff spans, only their LLM calls; to record them call ' +
      "setTracingDisabled(false) from '@openai/agents' (or unset OPENAI_AGENTS_DISABLE_TRACING)\n",
  );
}

/** Bridge the Agents SDK when the app loads it. Returns the removal. */
export function bridgeOpenAIAgents(options: AgentsBridgeOptions): () => void {
  const processor = new AgentsTraceProcessor(options);
  // The scope source is added once the SDK is there: until then a call pays nothing for it.
  let removeSource = (): void => {};
  let provider: SdkProvider | undefined;
  const register = (): void => {
    safely(log, 'registering the trace processor', () => provider?.registerProcessor(processor), undefined);
  };
  processor.onReplaced = register;
  const removeTrap = whenGlobalSet(PROVIDER_KEY, (value) => {
    if (value === provider || typeof (value as Partial<SdkProvider>).registerProcessor !== 'function') return;
    if (provider === undefined) removeSource = addScopeSource(processor.source);
    provider = value as SdkProvider;
    register();
  });
  return () => {
    removeTrap();
    removeSource();
    processor.onReplaced = undefined;
    processor.disable();
  };
}

/** An SDK agent's tools and handoff targets, when the SDK recorded them (lists of names). */
function sdkDeclaration(data: SdkSpanData): { tools?: string[]; targets?: string[] } {
  const names = (v: unknown): string[] | undefined =>
    Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
  const tools = names(data.tools);
  const targets = names(data.handoffs);
  return { ...(tools ? { tools } : {}), ...(targets ? { targets } : {}) };
}
