/**
 * What a single span is, by the names each producer uses: an LLM call, an agent / workflow / task, a tool execution.
 * Kept free of value imports from the model so that `src/traces/model.ts` can use it.
 */
import { ATTR_GEN_AI_OPERATION_NAME, LLM_OPERATIONS } from '../../../instrumentation/semconv';
import type { Attributes, SpanRecord } from '../model';

/** The zero-length child online detection uses when the exchange span had already ended (detectors/online.ts). */
export const DETECTION_CHILD = 'faultline.detection';

const OI_KIND = 'openinference.span.kind';
const TRACELOOP_KIND = 'traceloop.span.kind';

function lower(attrs: Attributes, key: string): string | undefined {
  const v = attrs[key];
  return typeof v === 'string' ? v.toLowerCase() : undefined;
}

/**
 * The LLM operation of a span (chat / text_completion / generate_content), or undefined when it is not an LLM call:
 * - `gen_ai.operation.name` (latest semconv) — any other operation (invoke_agent, execute_tool, embeddings) is not;
 * - OpenInference `openinference.span.kind = LLM` (no operation name);
 * - OpenLLMetry `llm.request.type = chat | completion`;
 * - the older GenAI form: `gen_ai.system` with a request model or indexed prompt / completion attributes.
 */
export function llmOperation(span: SpanRecord): string | undefined {
  if (span.name === DETECTION_CHILD) return undefined;
  const a = span.attributes;
  const op = a[ATTR_GEN_AI_OPERATION_NAME];
  if (typeof op === 'string') {
    if (LLM_OPERATIONS.includes(op)) return op;
    return op === 'completion' ? 'text_completion' : undefined;
  }
  const oi = lower(a, OI_KIND);
  if (oi !== undefined) return oi === 'llm' ? 'chat' : undefined;
  const rt = lower(a, 'llm.request.type');
  if (rt !== undefined) return rt === 'chat' ? 'chat' : rt === 'completion' ? 'text_completion' : undefined;
  if (a[TRACELOOP_KIND] !== undefined) return undefined;
  if (a['gen_ai.system'] !== undefined || a['gen_ai.provider.name'] !== undefined) {
    if (
      a['gen_ai.request.model'] !== undefined ||
      a['gen_ai.prompt.0.content'] !== undefined ||
      a['gen_ai.prompt.0.role'] !== undefined ||
      a['gen_ai.completion.0.content'] !== undefined
    )
      return 'chat';
  }
  return undefined;
}

export function isLlmCallSpan(span: SpanRecord): boolean {
  return llmOperation(span) !== undefined;
}

/** A GenAI agent or workflow span's name: its attribute, else the span name after the operation's prefix. */
function agentName(span: SpanRecord, fallbackPrefix: string): string {
  const a = span.attributes;
  const n = a['gen_ai.agent.name'] ?? a['gen_ai.workflow.name'] ?? a['traceloop.entity.name'] ?? a['agent.name'];
  if (typeof n === 'string' && n !== '') return n;
  return span.name.startsWith(fallbackPrefix) ? span.name.slice(fallbackPrefix.length).trim() || span.name : span.name;
}

/** An agent, workflow or task span and its name, or undefined. */
export function agentOfSpan(span: SpanRecord): { name: string; kind: 'agent' | 'workflow' | 'task' } | undefined {
  const a = span.attributes;
  const op = a[ATTR_GEN_AI_OPERATION_NAME];
  if (op === 'invoke_agent' || op === 'create_agent') return { name: agentName(span, `${op} `), kind: 'agent' };
  if (op === 'invoke_workflow') return { name: agentName(span, 'invoke_workflow '), kind: 'workflow' };
  if (typeof op === 'string') return undefined;
  const tl = lower(a, TRACELOOP_KIND);
  if (tl === 'agent' || tl === 'workflow' || tl === 'task') {
    const n = a['traceloop.entity.name'] ?? (tl === 'workflow' ? a['traceloop.workflow.name'] : undefined);
    return {
      name: typeof n === 'string' && n !== '' ? n : span.name.replace(/\.(agent|workflow|task)$/, ''),
      kind: tl,
    };
  }
  const oi = lower(a, OI_KIND);
  if (oi === 'agent') {
    const n = a['agent.name'] ?? a['graph.node.id'];
    return { name: typeof n === 'string' && n !== '' ? n : span.name, kind: 'agent' };
  }
  if (oi === 'chain') {
    const n = a['graph.node.id'] ?? a['langgraph.node'];
    return { name: typeof n === 'string' && n !== '' ? n : span.name, kind: 'task' };
  }
  return undefined;
}

/** A tool execution span and its name, or undefined. */
export function toolOfSpan(span: SpanRecord): string | undefined {
  const a = span.attributes;
  const op = a[ATTR_GEN_AI_OPERATION_NAME];
  if (op === 'execute_tool') return toolName(span);
  if (typeof op === 'string') return undefined;
  if (lower(a, TRACELOOP_KIND) === 'tool' || lower(a, OI_KIND) === 'tool') return toolName(span);
  return undefined;
}

/** A tool span's tool name: its attribute, else the span name without the producer's prefix or suffix. */
function toolName(span: SpanRecord): string {
  const a = span.attributes;
  const n = a['gen_ai.tool.name'] ?? a['tool.name'] ?? a['traceloop.entity.name'];
  return typeof n === 'string' && n !== '' ? n : span.name.replace(/^execute_tool /, '').replace(/\.tool$/, '');
}
