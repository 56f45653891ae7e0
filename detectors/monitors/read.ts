/**
 * How the offline monitors and the reliability model read a trace: its workflows (one per `invoke_workflow` root, or
 * the whole trace when there is none), what each declared, its agent turns, and its LLM calls, messages and tool
 * executions in start order, each observation with the scope it ran in (agent, turn, declaration, workflow) — the
 * same scope online monitors get from the context.
 *
 * This is the one place they read traces; spans are read through the one span reading (src/traces/view) and the
 * offline detectors' observations of it (detectors/from-span.ts); only faultline's own declaration attributes are read
 * here.
 */
import {
  ATTR_FL_AGENT_ROLE,
  ATTR_FL_AGENT_TARGETS,
  ATTR_FL_AGENT_TOOLS,
  ATTR_FL_STEP_NAME,
  ATTR_FL_WORKFLOW_COMPLETED_STEPS,
  ATTR_FL_WORKFLOW_DEADLINE_MS,
  ATTR_FL_WORKFLOW_OUTPUT,
  ATTR_FL_WORKFLOW_REQUIRED_STEPS,
  EVENT_FL_WORKFLOW_STEP,
  type AgentDeclaration,
  type ObservationScope,
} from '../../instrumentation/agents/declarations';
import { ATTR_ERROR_TYPE, ATTR_FL_TASK_ID, ATTR_MCP_METHOD_NAME } from '../../instrumentation/semconv';
import { num, str, strList, type SpanRecord, type TraceRecord } from '../../src/traces/model';
import {
  DETECTION_CHILD,
  messageObservation,
  viewTrace,
  type AgentSpan,
  type SpanFailure,
} from '../../src/traces/view';
import { llmObservation } from '../observations';
import type { MessageObservation, Observation } from '../types';

export interface AgentTurnRecord {
  span: SpanRecord;
  name: string;
  declaration?: AgentDeclaration;
  /** The enclosing agent turn's name (who waits on this one). */
  parent?: string;
  ok: boolean;
}

export interface WorkflowStep {
  span: SpanRecord;
  /** An LLM call or a message, with its scope. */
  observation?: Observation;
  /** For an LLM call in an agent turn: the tools the turn ran after it and before its next call, in order (what the
   * call asked for, as the executions show it — read without content too). */
  ranTools?: string[];
  /** A tool execution (framework tool spans, MCP tool calls): its name and the agent that ran it. */
  tool?: {
    name: string;
    agent?: string;
    /** The agent turn (conversation) it ran in, as `ObservationScope.turn` names it. */
    turn?: string;
    declaration?: AgentDeclaration;
    ok: boolean;
    /** Its arguments and result as recorded (content capture), when they were. */
    arguments?: string;
    result?: string;
    /** Run inside another tool's execution (a tool that runs its own agent): not a call of the agent above. */
    nested?: boolean;
    /** How the span failed, when it did. */
    failure?: SpanFailure;
  };
}

export interface WorkflowRun {
  trace: TraceRecord;
  /** The workflow's root span (`invoke_workflow …`), when it has one. */
  root?: SpanRecord;
  name: string;
  taskId: string;
  start: number;
  end: number;
  requiredSteps?: string[];
  deadlineMs?: number;
  /** Steps completed, in order, with when. */
  completed: Array<{ name: string; at: number }>;
  outcome: 'ok' | 'error';
  output?: 'present' | 'empty' | 'error';
  errorType?: string;
  /** The oracle's or evaluator's verdict (`faultline.task.success`), when the trace carries one. */
  success?: boolean;
  agents: Map<string, AgentDeclaration>;
  turns: AgentTurnRecord[];
  steps: WorkflowStep[];
}

function declarationOf(s: SpanRecord): AgentDeclaration | undefined {
  const a = s.attributes;
  const d: AgentDeclaration = {};
  const role = str(a, ATTR_FL_AGENT_ROLE);
  const tools = a[ATTR_FL_AGENT_TOOLS] !== undefined ? strList(a, ATTR_FL_AGENT_TOOLS) : undefined;
  const targets = a[ATTR_FL_AGENT_TARGETS] !== undefined ? strList(a, ATTR_FL_AGENT_TARGETS) : undefined;
  if (role !== undefined) d.role = role;
  if (tools !== undefined) d.tools = tools;
  if (targets !== undefined) d.targets = targets;
  return d.role !== undefined || d.tools !== undefined || d.targets !== undefined ? d : undefined;
}

const failed = (s: SpanRecord): boolean => s.status.code === 'ERROR';

/**
 * The workflows of a trace, each with its steps in start order, read through the one span reading (viewTrace): every
 * producer's agent, workflow, tool, LLM-call and message spans, a wrapper around another LLM span not counted twice.
 * Spans must be in start order (readTraces sorts).
 */
export function readWorkflows(trace: TraceRecord): WorkflowRun[] {
  const view = viewTrace(trace);
  const kindOf = new Map<string, AgentSpan>(view.agents.map((a) => [a.span.spanId, a]));
  const ancestor = (s: SpanRecord, pred: (a: AgentSpan) => boolean): AgentSpan | undefined => {
    let p = s.parentSpanId !== undefined ? view.byId.get(s.parentSpanId) : undefined;
    for (let i = 0; p && i < 64; i++, p = p.parentSpanId !== undefined ? view.byId.get(p.parentSpanId) : undefined) {
      const a = kindOf.get(p.spanId);
      if (a && pred(a)) return a;
    }
    return undefined;
  };
  const toolSpans = new Set(view.tools.map((t) => t.span.spanId));
  const insideTool = (s: SpanRecord): boolean => {
    let p = s.parentSpanId !== undefined ? view.byId.get(s.parentSpanId) : undefined;
    for (
      let i = 0;
      p && i < 64 && !kindOf.has(p.spanId);
      i++, p = p.parentSpanId !== undefined ? view.byId.get(p.parentSpanId) : undefined
    )
      if (toolSpans.has(p.spanId)) return true;
    return false;
  };
  const isAgent = (a: AgentSpan) => a.kind === 'agent';
  const isWorkflow = (a: AgentSpan) => a.kind === 'workflow';

  const roots = new Set(
    view.agents.filter((a) => isWorkflow(a) && !ancestor(a.span, isWorkflow)).map((a) => a.span.spanId),
  );
  const runs = new Map<string, WorkflowRun>();
  const runOf = (s: SpanRecord): WorkflowRun => {
    const key = roots.has(s.spanId) ? s.spanId : (ancestor(s, (a) => roots.has(a.span.spanId))?.span.spanId ?? '');
    let run = runs.get(key);
    if (!run) {
      run = newRun(trace, key !== '' ? view.byId.get(key) : undefined);
      runs.set(key, run);
    }
    return run;
  };
  for (const id of roots) runOf(view.byId.get(id)!);

  const tools = new Map(view.tools.map((t) => [t.span.spanId, t]));
  const messages = new Map(view.messages.map((m) => [m.span.spanId, m]));
  for (const s of trace.spans) {
    if (s.name === DETECTION_CHILD || roots.has(s.spanId)) continue;
    const me = kindOf.get(s.spanId);
    if (me?.kind === 'workflow') continue;
    const run = runOf(s);
    if (me?.kind === 'agent') {
      const d = declarationOf(s);
      const outer = ancestor(s, isAgent);
      const turn: AgentTurnRecord = { span: s, name: me.name, ok: !failed(s) };
      if (d) {
        turn.declaration = d;
        if (!run.agents.has(me.name)) run.agents.set(me.name, d);
      }
      if (outer) turn.parent = outer.name;
      run.turns.push(turn);
      continue;
    }
    const scope = scopeOf(run, ancestor(s, isAgent) ?? namedAgent(s));
    const tool = tools.get(s.spanId);
    const mcpTool = s.attributes[ATTR_MCP_METHOD_NAME] === 'tools/call' && s.kind === 'CLIENT';
    if (tool || mcpTool) {
      const name = tool?.name ?? str(s.attributes, 'gen_ai.tool.name') ?? s.name.replace(/^tools\/call\s*/, '');
      const step: NonNullable<WorkflowStep['tool']> = { name, ok: !failed(s) };
      if (insideTool(s)) step.nested = true;
      const failure = view.failureOf(s);
      if (failure) step.failure = failure;
      if (scope.agent !== undefined) step.agent = scope.agent;
      if (scope.turn !== undefined) step.turn = scope.turn;
      if (scope.declaration) step.declaration = scope.declaration;
      if (tool?.arguments !== undefined) step.arguments = tool.arguments;
      if (tool?.result !== undefined) step.result = tool.result;
      run.steps.push({ span: s, tool: step });
    }
    const call = view.llmOf(s.spanId);
    // A message is observed once, at the span that stands for it (a send, or a receive the trace has alone).
    const exchange = call || !messages.has(s.spanId) ? undefined : view.exchangeOf(s.spanId);
    const obs: Observation | undefined = call
      ? llmObservation(call)
      : exchange && exchange.step === s
        ? messageObservation(exchange)
        : undefined;
    if (!obs) continue;
    if (Object.keys(scope).length > 0) obs.scope = scope;
    if (obs.kind === 'message') withShell(obs, s);
    if (obs.kind === 'llm') {
      const count = num(s.attributes, 'faultline.request.message_count');
      if (count !== undefined) obs.facts = { ...obs.facts, messageCount: count };
      // The provider's error code rides in the status message faultline's span layer writes (`HTTP 400 <code>`).
      const code = /^HTTP \d{3} ([A-Za-z0-9_.-]+)$/.exec(s.status.message ?? '')?.[1];
      if (code !== undefined && obs.response.errorCode === undefined) obs.response.errorCode = code;
    }
    run.steps.push({ span: s, observation: obs });
  }
  const out = [...runs.values()].filter((r) => r.root !== undefined || r.steps.length > 0 || r.turns.length > 0);
  for (const run of out) withRanTools(run.steps);
  return out;
}

/** Each LLM call's `ranTools`: the same turn's tool executions between it and the turn's next call. */
function withRanTools(steps: WorkflowStep[]): void {
  steps.forEach((step, i) => {
    const turn = step.observation?.kind === 'llm' ? step.observation.scope?.turn : undefined;
    if (turn === undefined) return;
    const ran: string[] = [];
    for (let j = i + 1; j < steps.length; j++) {
      const next = steps[j]!;
      if (next.observation?.kind === 'llm' && next.observation.scope?.turn === turn) break;
      if (next.tool && next.tool.turn === turn && !next.tool.nested) ran.push(next.tool.name);
    }
    step.ranTools = ran;
  });
}

/**
 * A call or tool span under no agent span that names its agent itself (`gen_ai.agent.name` on the call, as some
 * frameworks record it): that agent, its calls one conversation (the turn is keyed by its name).
 */
function namedAgent(s: SpanRecord): AgentSpan | undefined {
  const name = str(s.attributes, 'gen_ai.agent.name');
  if (name === undefined || name === '') return undefined;
  const a: AgentSpan = { span: s, name, kind: 'agent' };
  named.add(a);
  return a;
}
const named = new WeakSet<AgentSpan>();

function scopeOf(run: WorkflowRun, agent: AgentSpan | undefined): ObservationScope {
  const scope: ObservationScope = {};
  if (agent) {
    scope.agent = agent.name;
    scope.turn = named.has(agent) ? `agent:${agent.name}` : agent.span.spanId;
    const d = declarationOf(agent.span);
    if (d) scope.declaration = d;
  }
  if (run.root) {
    scope.agents = run.agents;
    scope.workflow = { name: run.name, startedAt: run.start };
    if (run.deadlineMs !== undefined) scope.workflow.deadlineMs = run.deadlineMs;
    if (run.requiredSteps !== undefined) scope.workflow.requiredSteps = run.requiredSteps;
  }
  return scope;
}

/** Offline the message as sent is known only by its content; the route is known anyway. */
function withShell(obs: MessageObservation, s: SpanRecord): void {
  if (obs.original) return;
  const a = s.attributes;
  const source = str(a, 'faultline.message.source') ?? '';
  const target = str(a, 'faultline.message.target') ?? str(a, 'gen_ai.agent.name') ?? str(a, 'gen_ai.tool.name') ?? '';
  obs.original = { id: str(a, 'faultline.message.id') ?? s.spanId, source, target, payload: undefined };
}

function newRun(trace: TraceRecord, root: SpanRecord | undefined): WorkflowRun {
  const first = trace.spans[0];
  const base = root ?? first;
  const run: WorkflowRun = {
    trace,
    ...(root ? { root } : {}),
    name: root
      ? (str(root.attributes, 'gen_ai.workflow.name') ?? root.name.replace(/^invoke_workflow\s*/, '')) || root.name
      : (first?.name ?? trace.traceId),
    taskId: (root && str(root.attributes, ATTR_FL_TASK_ID)) ?? trace.traceId,
    start: base?.start ?? 0,
    end: root ? root.end : Math.max(...trace.spans.map((s) => s.end), 0),
    completed: [],
    outcome: root
      ? failed(root)
        ? 'error'
        : 'ok'
      : trace.spans.some((s) => s.parentSpanId === undefined && failed(s))
        ? 'error'
        : 'ok',
    agents: new Map(),
    turns: [],
    steps: [],
  };
  if (root) {
    const a = root.attributes;
    if (a[ATTR_FL_WORKFLOW_REQUIRED_STEPS] !== undefined)
      run.requiredSteps = strList(a, ATTR_FL_WORKFLOW_REQUIRED_STEPS) ?? [];
    const deadline = num(a, ATTR_FL_WORKFLOW_DEADLINE_MS);
    if (deadline !== undefined) run.deadlineMs = deadline;
    const output = str(a, ATTR_FL_WORKFLOW_OUTPUT);
    if (output === 'present' || output === 'empty' || output === 'error') run.output = output;
    const errorType = str(a, ATTR_ERROR_TYPE);
    if (errorType !== undefined) run.errorType = errorType;
    const success = a['faultline.task.success'];
    if (typeof success === 'boolean') run.success = success;
    for (const e of root.events) {
      if (e.name !== EVENT_FL_WORKFLOW_STEP) continue;
      const n = str(e.attributes, ATTR_FL_STEP_NAME);
      if (n !== undefined) run.completed.push({ name: n, at: e.time });
    }
    // A producer without step events: the recorded list, at the workflow's end.
    if (run.completed.length === 0)
      for (const n of strList(a, ATTR_FL_WORKFLOW_COMPLETED_STEPS) ?? []) run.completed.push({ name: n, at: root.end });
  }
  return run;
}
