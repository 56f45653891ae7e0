/**
 * Rewrites of a trace in latest GenAI semconv (content as `gen_ai.input.messages` / `gen_ai.output.messages` JSON,
 * agents and tools as OpenLLMetry / GenAI spans) into other producers' conventions, the way a trace moves between
 * backends: OpenLLMetry's flat indexed attributes (`gen_ai.prompt.N.*`, `gen_ai.completion.N.*`, `llm.request.type`,
 * no operation name), OpenInference (`openinference.span.kind`, `llm.input_messages.N.message.*`, token counts, no
 * finish reasons), and instrumentation-openai (`gen_ai.system`, content moved to log-record events with bodies).
 * Ground truth (`faultline.fault.*`) is carried over untouched. Used to check that the one reading of a span reads
 * the same facts whichever convention wrote them.
 */
import type { AttrValue, Attributes, SpanEventRecord, SpanRecord, TraceRecord } from '../../../src/traces/model';

type Msg = {
  role: string;
  parts: { type: string; content?: unknown; name?: string; arguments?: unknown; id?: string; response?: unknown }[];
  finish_reason?: string;
};

function messages(v: AttrValue | undefined): Msg[] {
  if (typeof v !== 'string') return [];
  try {
    return JSON.parse(v) as Msg[];
  } catch {
    return [];
  }
}

const text = (m: Msg): string =>
  m.parts
    .filter((p) => p.type === 'text')
    .map((p) => String(p.content ?? ''))
    .join('');
const args = (a: unknown): string => (typeof a === 'string' ? a : JSON.stringify(a ?? {}));
const tools = (m: Msg) => m.parts.filter((p) => p.type === 'tool_call');

function keep(a: Attributes, drop: (k: string) => boolean): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(a)) if (k.startsWith('faultline.fault.') || !drop(k)) out[k] = v;
  return out;
}

function rewrite(trace: TraceRecord, fn: (s: SpanRecord) => SpanRecord): TraceRecord {
  return { traceId: trace.traceId, spans: trace.spans.map((s) => fn(structuredClone(s))) };
}

const isLlm = (s: SpanRecord): boolean => s.attributes['gen_ai.operation.name'] === 'chat';

/** Agents / tools / workflows in OpenLLMetry's terms stay as they are (they already are). */
export function toOpenLlmetryFlat(trace: TraceRecord): TraceRecord {
  return rewrite(trace, (s) => {
    if (!isLlm(s)) return s;
    const a = s.attributes;
    const out = keep(
      a,
      (k) =>
        k.startsWith('gen_ai.input.') ||
        k.startsWith('gen_ai.output.') ||
        k === 'gen_ai.operation.name' ||
        k === 'gen_ai.provider.name' ||
        k === 'gen_ai.tool.definitions' ||
        k.startsWith('gen_ai.usage.') ||
        k === 'gen_ai.response.finish_reasons',
    );
    out['llm.request.type'] = 'chat';
    out['gen_ai.system'] = String(a['gen_ai.provider.name'] ?? 'openai');
    messages(a['gen_ai.input.messages']).forEach((m, i) => {
      out[`gen_ai.prompt.${i}.role`] = m.role;
      const t = m.role === 'tool' ? String(m.parts[0]?.response ?? '') : text(m);
      if (t !== '' || tools(m).length === 0) out[`gen_ai.prompt.${i}.content`] = t;
      tools(m).forEach((tc, j) => {
        out[`gen_ai.prompt.${i}.tool_calls.${j}.name`] = tc.name ?? '';
        out[`gen_ai.prompt.${i}.tool_calls.${j}.arguments`] = args(tc.arguments);
      });
    });
    messages(a['gen_ai.output.messages']).forEach((m, i) => {
      out[`gen_ai.completion.${i}.role`] = m.role;
      if (tools(m).length === 0) out[`gen_ai.completion.${i}.content`] = text(m);
      if (m.finish_reason) out[`gen_ai.completion.${i}.finish_reason`] = m.finish_reason;
      tools(m).forEach((tc, j) => {
        out[`gen_ai.completion.${i}.tool_calls.${j}.id`] = tc.id ?? '';
        out[`gen_ai.completion.${i}.tool_calls.${j}.name`] = tc.name ?? '';
        out[`gen_ai.completion.${i}.tool_calls.${j}.arguments`] = args(tc.arguments);
      });
    });
    const defs =
      typeof a['gen_ai.tool.definitions'] === 'string'
        ? (JSON.parse(a['gen_ai.tool.definitions']) as {
            function?: { name: string; description?: string; parameters?: unknown };
          }[])
        : [];
    defs.forEach((d, i) => {
      out[`llm.request.functions.${i}.name`] = d.function?.name ?? '';
      if (d.function?.description) out[`llm.request.functions.${i}.description`] = d.function.description;
      out[`llm.request.functions.${i}.parameters`] = JSON.stringify(d.function?.parameters ?? {});
    });
    if (a['gen_ai.usage.input_tokens'] !== undefined)
      out['gen_ai.usage.prompt_tokens'] = a['gen_ai.usage.input_tokens'];
    if (a['gen_ai.usage.output_tokens'] !== undefined)
      out['gen_ai.usage.completion_tokens'] = a['gen_ai.usage.output_tokens'];
    s.attributes = out;
    s.name = 'openai.chat';
    return s;
  });
}

/** OpenInference: LLM / AGENT / CHAIN / TOOL spans, flat messages, token counts; it has no finish-reason attribute. */
export function toOpenInference(trace: TraceRecord): TraceRecord {
  return rewrite(trace, (s) => {
    const a = s.attributes;
    const kind = a['traceloop.span.kind'];
    if (!isLlm(s)) {
      if (kind === undefined) return s;
      const out = keep(a, (k) => k.startsWith('traceloop.'));
      const name = String(a['traceloop.entity.name'] ?? s.name);
      if (kind === 'agent') Object.assign(out, { 'openinference.span.kind': 'AGENT', 'agent.name': name });
      else if (kind === 'tool')
        Object.assign(out, {
          'openinference.span.kind': 'TOOL',
          'tool.name': name,
          'input.value': String(a['traceloop.entity.input'] ?? ''),
        });
      else Object.assign(out, { 'openinference.span.kind': 'CHAIN' });
      s.attributes = out;
      s.name = name;
      return s;
    }
    const out = keep(a, (k) => k.startsWith('gen_ai.'));
    out['openinference.span.kind'] = 'LLM';
    out['llm.system'] = 'openai';
    out['llm.model_name'] = String(a['gen_ai.response.model'] ?? a['gen_ai.request.model'] ?? '');
    const params: Record<string, unknown> = { model: a['gen_ai.request.model'] };
    if (a['gen_ai.request.max_tokens'] !== undefined) params.max_tokens = a['gen_ai.request.max_tokens'];
    if (a['gen_ai.request.temperature'] !== undefined) params.temperature = a['gen_ai.request.temperature'];
    out['llm.invocation_parameters'] = JSON.stringify(params);
    const put = (prefix: string, list: Msg[]) =>
      list.forEach((m, i) => {
        out[`${prefix}.${i}.message.role`] = m.role;
        const t = m.role === 'tool' ? String(m.parts[0]?.response ?? '') : text(m);
        if (t !== '') out[`${prefix}.${i}.message.content`] = t;
        tools(m).forEach((tc, j) => {
          out[`${prefix}.${i}.message.tool_calls.${j}.tool_call.function.name`] = tc.name ?? '';
          out[`${prefix}.${i}.message.tool_calls.${j}.tool_call.function.arguments`] = args(tc.arguments);
        });
      });
    put('llm.input_messages', messages(a['gen_ai.input.messages']));
    const output = messages(a['gen_ai.output.messages']);
    put('llm.output_messages', output);
    out['output.value'] = output.map(text).join('');
    out['output.mime_type'] = 'text/plain';
    const defs =
      typeof a['gen_ai.tool.definitions'] === 'string' ? (JSON.parse(a['gen_ai.tool.definitions']) as unknown[]) : [];
    defs.forEach((d, i) => (out[`llm.tools.${i}.tool.json_schema`] = JSON.stringify(d)));
    if (a['gen_ai.usage.input_tokens'] !== undefined) out['llm.token_count.prompt'] = a['gen_ai.usage.input_tokens'];
    if (a['gen_ai.usage.output_tokens'] !== undefined)
      out['llm.token_count.completion'] = a['gen_ai.usage.output_tokens'];
    s.attributes = out;
    s.name = 'ChatCompletion';
    s.kind = 'INTERNAL';
    return s;
  });
}

/** instrumentation-openai: `gen_ai.system`, finish reasons and usage on the span; content as joined log records. */
export function toContribWithLogs(trace: TraceRecord): TraceRecord {
  return rewrite(trace, (s) => {
    if (!isLlm(s)) return s;
    const a = s.attributes;
    const out = keep(
      a,
      (k) =>
        k.startsWith('gen_ai.input.') ||
        k.startsWith('gen_ai.output.') ||
        k === 'gen_ai.provider.name' ||
        k === 'gen_ai.tool.definitions',
    );
    out['gen_ai.system'] = 'openai';
    const events: SpanEventRecord[] = [...s.events];
    const ev = (name: string, body: unknown): void =>
      void events.push({ name, time: s.start, attributes: { 'event.name': name, 'gen_ai.system': 'openai' }, body });
    for (const m of messages(a['gen_ai.input.messages'])) {
      if (m.role === 'tool')
        ev('gen_ai.tool.message', { id: m.parts[0]?.id, content: String(m.parts[0]?.response ?? '') });
      else if (m.role === 'assistant')
        ev('gen_ai.assistant.message', {
          ...(text(m) ? { content: text(m) } : {}),
          tool_calls: tools(m).map((tc) => ({
            id: tc.id,
            type: 'function',
            function: { name: tc.name, arguments: args(tc.arguments) },
          })),
        });
      else ev(`gen_ai.${m.role}.message`, { content: text(m) });
    }
    messages(a['gen_ai.output.messages']).forEach((m, index) => {
      const msg: Record<string, unknown> = {};
      if (text(m)) msg.content = text(m);
      if (tools(m).length > 0)
        msg.tool_calls = tools(m).map((tc) => ({
          id: tc.id,
          type: 'function',
          function: { name: tc.name, arguments: args(tc.arguments) },
        }));
      ev('gen_ai.choice', { finish_reason: m.finish_reason, index, message: msg });
    });
    s.attributes = out;
    s.events = events;
    return s;
  });
}
