/**
 * In-process agents: `runAgent` wraps one turn of an agent in an INTERNAL `invoke_agent {name}` span, so the LLM
 * calls, tool calls and handoffs the agent makes nest under it. The agent's name rides in the OTel context, so the
 * A2A / MCP modules and the message channel can name the sender of a message without being told.
 */
import { SpanKind, createContextKey, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { now } from '../../src/clock';
import { FaultlineInputError } from '../../src/errors';
import { PACKAGE_NAME, VERSION } from '../../src/version';
import {
  ATTR_GEN_AI_AGENT_DESCRIPTION,
  ATTR_GEN_AI_AGENT_ID,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_AGENT_VERSION,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  GEN_AI_OPERATION_INVOKE_AGENT,
} from '../semconv';
import { frameworkContext } from '../frameworks/scope';
import {
  agentDeclarationAttributes,
  agentTurn,
  checkAgentDeclaration,
  enterAgent,
  type AgentDeclaration,
} from './declarations';
import { setString } from './message';
import { runInSpan } from './run-in-span';

export interface RunAgentOptions extends AgentDeclaration {
  /** gen_ai.agent.id */
  id?: string;
  /** gen_ai.agent.description */
  description?: string;
  /** gen_ai.agent.version */
  version?: string;
  /** gen_ai.provider.name of the model behind the agent, when one provider serves it (`openai`, `anthropic`, …). */
  provider?: string;
  /** Extra attributes for the span (set at start, so samplers and the fault plan can see them). */
  attributes?: Attributes;
}

const AGENT_KEY = createContextKey('faultline.agent.name');

/** The name of the agent whose turn is running in `ctx` (the innermost `runAgent` or framework agent), if any. */
export function getAgentName(ctx: Context = frameworkContext()): string | undefined {
  const v = ctx.getValue(AGENT_KEY);
  return typeof v === 'string' ? v : undefined;
}

/** `ctx` with `name` as the agent whose turn is running (what `runAgent` and the framework bridges set). */
export function withAgentName(ctx: Context, name: string): Context {
  return ctx.setValue(AGENT_KEY, name);
}

/** The tracer of faultline's own spans, looked up per call so a provider registered later is still used. */
export function tracer() {
  return trace.getTracer(PACKAGE_NAME, VERSION);
}

/**
 * Run `fn` as one turn of agent `name`, inside an INTERNAL `invoke_agent {name}` span. Returns what `fn` returns (the
 * same promise, when it is async); an error thrown by `fn` is recorded on the span and rethrown unchanged.
 *
 * @example
 *   const plan = await runAgent('planner', async () => openai.chat.completions.create({ ... }));
 */
export function runAgent<T>(name: string, fn: (span: Span) => T, options: RunAgentOptions = {}): T {
  if (typeof name !== 'string') {
    throw new FaultlineInputError('FAULTLINE_USAGE', `runAgent(name, fn): name must be a string, got ${typeof name}`);
  }
  if (typeof fn !== 'function') {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `runAgent("${name}", fn): fn must be a function, got ${typeof fn}`,
    );
  }
  const attributes: Attributes = { ...options.attributes, [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_INVOKE_AGENT };
  setString(attributes, ATTR_GEN_AI_AGENT_NAME, name);
  setString(attributes, ATTR_GEN_AI_AGENT_ID, options.id);
  setString(attributes, ATTR_GEN_AI_AGENT_DESCRIPTION, options.description);
  setString(attributes, ATTR_GEN_AI_AGENT_VERSION, options.version);
  setString(attributes, ATTR_GEN_AI_PROVIDER_NAME, options.provider);
  checkAgentDeclaration(`runAgent("${name}")`, options);
  Object.assign(attributes, agentDeclarationAttributes(options));

  // Inside a framework's agent or tool span (an Agents SDK tool, a LangGraph node), the turn nests under it.
  const parent = frameworkContext();
  const spanName = name === '' ? GEN_AI_OPERATION_INVOKE_AGENT : `${GEN_AI_OPERATION_INVOKE_AGENT} ${name}`;
  const span = tracer().startSpan(spanName, { kind: SpanKind.INTERNAL, attributes, startTime: now() }, parent);
  const ctx = enterAgent(
    trace.setSpan(name === '' ? parent : parent.setValue(AGENT_KEY, name), span),
    name,
    span,
    options,
  );
  return runInSpan(span, ctx, agentTurn(ctx, fn));
}
