/**
 * The one reading of a trace (`viewTrace`): its LLM calls, inter-agent messages, tool executions and agents, each
 * read once from whichever producer's names the spans carry — latest GenAI semconv, its older names, content as
 * span events or joined OTLP log records, OpenInference, OpenLLMetry — with faultline's own facts used when present.
 * The offline detectors (detectors/from-span.ts) and every diagnoser read this, never raw attributes.
 */
import { str, type SpanRecord, type TraceRecord } from '../model';
import { ObjectMemo } from '../../memo';
import { spanFailure } from './failure';
import { readLlmCall } from './llm';
import { isMessageSpan, joinMessages, readMessage, type MessageExchange } from './message';
import { DETECTION_CHILD, agentOfSpan, llmOperation, toolOfSpan } from './recognize';
import type { AgentSpan, LlmCall, MessageStep, SpanFailure, Step, ToolStep, TraceView } from './types';

export type {
  AgentSpan,
  Convention,
  FaultlineFacts,
  LlmCall,
  MessageStep,
  SpanFailure,
  Step,
  ToolStep,
  TraceView,
} from './types';
export type { GenAiMessage, ToolCallPart, ToolDefinition } from './content';
export type {
  Content,
  DeliveredFacts,
  GuardEvent,
  MessageExchange,
  MessageFacts,
  MessageFailure,
  MessageSide,
  PayloadFacts,
} from './message';
export { messageText } from './content';
export { looksLikeTimeout, spanFailure } from './failure';
export { edgeKey, guardEvents, isMessageSpan, joinMessages, messageObservation, readMessage } from './message';
export { DETECTION_CHILD, agentOfSpan, isLlmCallSpan, llmOperation, toolOfSpan } from './recognize';

const views = new ObjectMemo<TraceRecord, TraceView>('faultline.view');
const NO_CHILDREN: ReadonlyMap<string, SpanRecord[]> = new Map();

/** The reading of a trace, built once per TraceRecord object (spans must already be in start order). */
export function viewTrace(trace: TraceRecord): TraceView {
  let v = views.get(trace);
  if (!v) {
    v = build(trace);
    views.set(trace, v);
  }
  return v;
}

function build(trace: TraceRecord): TraceView {
  const byId = new Map<string, SpanRecord>();
  for (const s of trace.spans) byId.set(s.spanId, s);
  const parentOf = (s: SpanRecord): SpanRecord | undefined =>
    s.parentSpanId !== undefined ? byId.get(s.parentSpanId) : undefined;

  // Online detection recorded after the exchange span ended rides on a zero-length child: credit its parent. (Most
  // traces have none: they share one empty map, which is only read.)
  let detectionChildren: Map<string, SpanRecord[]> | undefined;
  for (const s of trace.spans) {
    if (s.name !== DETECTION_CHILD || s.parentSpanId === undefined || !byId.has(s.parentSpanId)) continue;
    detectionChildren ??= new Map();
    const list = detectionChildren.get(s.parentSpanId) ?? [];
    list.push(s);
    detectionChildren.set(s.parentSpanId, list);
  }

  // LLM call candidates; one that has another LLM span below it (a framework's span around the client's, the
  // client instrumentation's span around faultline's per-attempt span) is a wrapper of that call, not a call.
  const ops = new Map<string, string>();
  for (const s of trace.spans) {
    const op = llmOperation(s);
    if (op !== undefined) ops.set(s.spanId, op);
  }
  let wrappers: Set<string> | undefined; // made for the first wrapper found (most traces have none)
  for (const id of ops.keys()) {
    let p = parentOf(byId.get(id)!);
    for (let depth = 0; p && depth < 64; depth++, p = parentOf(p))
      if (ops.has(p.spanId)) (wrappers ??= new Set()).add(p.spanId);
  }

  const agentCache = new Map<string, AgentSpan | null>();
  const agentSpans: AgentSpan[] = [];
  const agentById = new Map<string, AgentSpan>();
  for (const s of trace.spans) {
    const a = agentOfSpan(s);
    if (a) {
      const rec: AgentSpan = { span: s, name: a.name, kind: a.kind };
      agentSpans.push(rec);
      agentById.set(s.spanId, rec);
    }
  }
  /** The nearest ancestor agent; a workflow or task only when no agent is above. */
  const agentOf = (span: SpanRecord): AgentSpan | undefined => {
    const hit = agentCache.get(span.spanId);
    if (hit !== undefined) return hit ?? undefined;
    let fallback: AgentSpan | undefined;
    let found: AgentSpan | undefined;
    let p = parentOf(span);
    for (let depth = 0; p && depth < 64 && !found; depth++, p = parentOf(p)) {
      const a = agentById.get(p.spanId);
      if (a?.kind === 'agent') found = a;
      else if (a && !fallback) fallback = a;
    }
    const r = found ?? fallback;
    if (!r) {
      // An LLM span that names its agent itself (frameworks that put gen_ai.agent.name on the call).
      const own = str(span.attributes, 'gen_ai.agent.name') ?? str(span.attributes, 'traceloop.entity.path');
      if (own !== undefined) {
        const rec: AgentSpan = { span, name: own, kind: 'agent' };
        agentCache.set(span.spanId, rec);
        return rec;
      }
    }
    agentCache.set(span.spanId, r ?? null);
    return r;
  };

  const llm: LlmCall[] = [];
  const messages: MessageStep[] = [];
  const tools: ToolStep[] = [];
  const steps: Step[] = [];
  const llmById = new Map<string, LlmCall>();
  for (const s of trace.spans) {
    const op = ops.get(s.spanId);
    if (op !== undefined && wrappers?.has(s.spanId) !== true) {
      const call = readLlmCall(s, op, llm.length + 1);
      const agent = agentOf(s);
      if (agent) call.agent = agent;
      llm.push(call);
      steps.push(call);
      llmById.set(s.spanId, call);
    } else if (op === undefined && s.name !== DETECTION_CHILD && isMessageSpan(s)) {
      const m: MessageStep = { kind: 'message', span: s, step: messages.length + 1, facts: readMessage(s) };
      const agent = agentOf(s);
      if (agent) m.agent = agent;
      messages.push(m);
      steps.push(m);
    }
    const tool = toolOfSpan(s);
    if (tool !== undefined) {
      const t: ToolStep = { kind: 'tool', span: s, name: tool };
      const a = s.attributes;
      const callId = str(a, 'gen_ai.tool.call.id') ?? str(a, 'tool.id') ?? str(a, 'tool_call.id');
      const args =
        str(a, 'gen_ai.tool.call.arguments') ??
        str(a, 'traceloop.entity.input') ??
        (a['openinference.span.kind'] !== undefined ? str(a, 'input.value') : undefined);
      const result =
        str(a, 'gen_ai.tool.call.result') ??
        str(a, 'traceloop.entity.output') ??
        (a['openinference.span.kind'] !== undefined ? str(a, 'output.value') : undefined);
      if (callId !== undefined) t.callId = callId;
      if (args !== undefined) t.arguments = args;
      if (result !== undefined) t.result = result;
      const failure = spanFailure(s);
      if (failure) t.failure = failure;
      const agent = agentOf(s);
      if (agent) t.agent = agent;
      tools.push(t);
    }
  }

  // Depth in the span tree (a parent outside the trace counts one level), bounded: a malformed trace may have cycles.
  const depthOf = (span: SpanRecord): number => {
    let d = 0;
    for (let p = span.parentSpanId; p !== undefined && d < 256; p = byId.get(p)?.parentSpanId) d++;
    return d;
  };
  const exchanges = joinMessages(
    messages.map((m) => m.facts),
    depthOf,
  );
  const exchangeBySpan = new Map<string, MessageExchange>();
  for (const x of exchanges) {
    if (x.send) exchangeBySpan.set(x.send.span.spanId, x);
    for (const r of x.receives) exchangeBySpan.set(r.span.spanId, x);
  }

  const failures = new Map<string, SpanFailure | null>();
  return {
    trace,
    byId,
    llm,
    messages,
    exchanges,
    tools,
    agents: agentSpans,
    steps,
    detectionChildren: detectionChildren ?? NO_CHILDREN,
    llmOf: (spanId) => llmById.get(spanId),
    exchangeOf: (spanId) => exchangeBySpan.get(spanId),
    agentOf,
    failureOf(span) {
      let f = failures.get(span.spanId);
      if (f === undefined) {
        f = spanFailure(span) ?? null;
        failures.set(span.spanId, f);
      }
      return f ?? undefined;
    },
  };
}
