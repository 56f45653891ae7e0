/**
 * The converter from the corpus's multi-agent transcripts (`agent-transcripts.jsonl`: Who&When logs and the
 * human-labelled MAST/MAD traces) to spans, so the workflow monitors judge them as they judge any trace.
 *
 * Each transcript becomes one trace: an `invoke_workflow {system}` root; per message an `invoke_agent {agent}` span
 * (one turn: in these group chats every message is an agent's turn) with one `chat` span holding the message as the
 * model's output (text and, where the log records them, tool calls with their arguments, and the input tokens),
 * the messages before it as the request (their number as they were, only the last one's text); a message addressed to another agent (Magentic-One's
 * `Orchestrator (-> WebSurfer)`) is a handoff span from one to the other. Content is captured (the monitors judge with
 * content). Nothing is declared — the logs carry no tool lists or required steps — so the modes that need
 * declarations cannot fire. Timing is synthetic (1 ms per message, in order), so latency and deadlines are not judged.
 *
 * How each system's log is split into messages (what the converter reads, by system):
 *  - Who&When: the `messages` array (`agent` name, `content`); `Name (thought)` / `Name (-> Target)` → agent Name.
 *  - AG2 (MAD): the JSON `trajectory` of {name | role, content}.
 *  - HyperAgent: trajectory lines `… - INFO - <Agent>'s Response: …` (the text up to the next such line).
 *  - ChatDev: `[<time> INFO] <Role>: **…` headers (System lines skipped).
 *  - MetaGPT: `<Name>(<Role>): to do …` log lines, or `FROM: X TO: Y` blocks, or `<Role>:` after `NEW MESSAGES`.
 *  - AppWorld: `Response from <X> Agent` blocks (the agent's turn; `Message to` and code output are its context).
 *  - Magentic-One (GAIA): `---------- <Agent> ----------` headers.
 *  - OpenManus (GAIA): `✨ <Agent>'s thoughts:` entries with their `Tools being prepared` / `Tool arguments` lines and
 *    the `Token usage: Input=N` line before them.
 * A transcript none of these splits into two messages or more is reported as not converted.
 */
import type { SpanRecord, TraceRecord } from '../../src/traces/model';

export interface TranscriptRecord {
  id: string;
  dataset: 'who_and_when' | 'mast_mad_human_labelled' | 'crewai_hierarchical_session';
  mas_name?: string;
  subset?: string;
  messages?: Array<{ index?: number; agent?: string; name?: string; role?: string; content?: unknown }>;
  trace_text?: string;
  labels?: unknown;
}

export interface TranscriptMessage {
  agent: string;
  text: string;
  target?: string;
  toolCalls?: Array<{ name: string; arguments: string }>;
  inputTokens?: number;
  /** Position in the original log (Who&When's `index`, the mistake step refers to it). */
  index: number;
}

const text = (v: unknown): string =>
  typeof v === 'string'
    ? v
    : Array.isArray(v)
      ? v.map(String).join('\n')
      : v === undefined || v === null
        ? ''
        : JSON.stringify(v);

function whoAndWhen(r: TranscriptRecord): TranscriptMessage[] {
  return (r.messages ?? []).map((m, i) => {
    const raw = String(m.agent ?? m.name ?? m.role ?? 'agent');
    const to = /\(->\s*([^)]+)\)/.exec(raw)?.[1]?.trim();
    const agent = raw.replace(/\s*\(.*\)\s*$/, '').trim() || raw;
    return { agent, text: text(m.content), index: m.index ?? i, ...(to ? { target: to } : {}) };
  });
}

/** Split `t` at every match of `header` (group 1: the agent); the text runs to the next header. */
function splitAt(t: string, header: RegExp, skip: (agent: string) => boolean = () => false): TranscriptMessage[] {
  const out: TranscriptMessage[] = [];
  const hits = [...t.matchAll(header)];
  hits.forEach((h, i) => {
    const agent = (h[1] ?? '').trim();
    if (agent === '' || skip(agent)) return;
    const start = (h.index ?? 0) + h[0].length;
    const end = i + 1 < hits.length ? hits[i + 1]!.index : t.length;
    out.push({ agent, text: t.slice(start, end).trim(), index: out.length });
  });
  return out;
}

function openManus(t: string): TranscriptMessage[] {
  const out: TranscriptMessage[] = [];
  const lines = t.split('\n');
  let tokens: number | undefined;
  let current: TranscriptMessage | undefined;
  for (const line of lines) {
    const usage = /Token usage: Input=(\d+)/.exec(line);
    if (usage) tokens = Number(usage[1]);
    const thought = /✨ ([\w ]+?)'s thoughts:(.*)$/.exec(line);
    if (thought) {
      current = {
        agent: thought[1]!.trim(),
        text: thought[2]!.trim(),
        index: out.length,
        ...(tokens !== undefined ? { inputTokens: tokens } : {}),
      };
      out.push(current);
      continue;
    }
    if (!current) continue;
    const tools = /Tools being prepared: \[([^\]]*)\]/.exec(line);
    if (tools)
      current.toolCalls = tools[1]!
        .split(',')
        .map((s) => ({ name: s.trim().replace(/^'|'$/g, ''), arguments: '' }))
        .filter((c) => c.name !== '');
    const args = /Tool arguments: (.*)$/.exec(line);
    if (args && current.toolCalls?.length) current.toolCalls[current.toolCalls.length - 1]!.arguments = args[1]!.trim();
    if (!/ - (✨|🛠️|🧰|🔧|Token usage)/.test(line) && / \| INFO {5}\| /.test(line) === false)
      current.text += `\n${line}`;
  }
  return out;
}

/** The messages of a MAST/MAD trace, by the system that wrote it. */
function mastMessages(r: TranscriptRecord): TranscriptMessage[] {
  const t = r.trace_text ?? '';
  const mas = r.mas_name ?? '';
  let doc: { trajectory?: unknown[]; content?: string } | undefined;
  try {
    doc = JSON.parse(t) as typeof doc;
  } catch {
    doc = undefined;
  }
  if (mas === 'AG2' && Array.isArray(doc?.trajectory)) {
    return doc.trajectory.flatMap((s, i) => {
      if (typeof s !== 'object' || s === null) return [];
      const m = s as { name?: string; role?: string; content?: unknown };
      return [{ agent: String(m.name ?? m.role ?? 'agent'), text: text(m.content), index: i }];
    });
  }
  if (mas === 'HyperAgent' && Array.isArray(doc?.trajectory))
    return splitAt(doc.trajectory.map(text).join('\n'), /^.* - INFO - ([\w-]+)'s Response:/gm);
  if (mas === 'ChatDev') return splitAt(t, /^\[[^\]]*INFO\] ([A-Z][\w ]+): \*\*/gm, (a) => a === 'System');
  if (mas === 'MetaGPT') {
    const body = typeof doc?.content === 'string' ? doc.content : t;
    const todo = splitAt(body, /^.*? - (\w+)\(\w+\): to do .*$/gm);
    if (todo.length >= 2) return todo;
    const from = splitAt(body, /^\[[^\]]+\] FROM: (\w+) TO: .*$/gm);
    if (from.length >= 2) return from;
    return splitAt(body, /^(\w+): *$/gm, (a) => /^(CONTENT|ACTION|Answer|Question)$/.test(a));
  }
  if (mas === 'AppWorld') return splitAt(t, /^ *Response from (\w+) Agent\s*$/gm);
  if (mas === 'GAIA') {
    const magentic = splitAt(t, /^-+ (\w+) -+$/gm);
    if (magentic.length >= 2) return magentic;
    return openManus(t);
  }
  return [];
}

export function transcriptMessages(r: TranscriptRecord): TranscriptMessage[] {
  if (r.dataset === 'who_and_when') return whoAndWhen(r);
  if (r.dataset === 'mast_mad_human_labelled') return mastMessages(r);
  return [];
}

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0').slice(-width);

/** The transcript as one trace (undefined when it does not split into two messages or more). */
export function transcriptTrace(r: TranscriptRecord): TraceRecord | undefined {
  const messages = transcriptMessages(r).filter((m) => m.text !== '' || (m.toolCalls?.length ?? 0) > 0);
  if (messages.length < 2) return undefined;
  let seed = 0;
  for (const c of r.id) seed = (seed * 31 + c.charCodeAt(0)) >>> 0;
  const traceId = hex(seed, 8).repeat(4);
  let ids = 0;
  const nextId = (): string => hex(seed ^ ++ids, 8) + hex(ids, 8);
  const t0 = Date.UTC(2025, 0, 1);
  const system = r.mas_name ?? r.subset ?? r.dataset;
  const base = (
    name: string,
    start: number,
    end: number,
    attributes: SpanRecord['attributes'],
    parent?: string,
  ): SpanRecord => ({
    traceId,
    spanId: nextId(),
    ...(parent !== undefined ? { parentSpanId: parent } : {}),
    name,
    kind: 'INTERNAL',
    start,
    end,
    attributes,
    events: [],
    links: [],
    status: { code: 'UNSET' },
    resource: { 'service.name': system },
    scope: { name: 'faultline/transcripts' },
  });
  const root = base(`invoke_workflow ${system}`, t0, t0 + messages.length + 1, {
    'gen_ai.operation.name': 'invoke_workflow',
    'faultline.task.id': r.id,
  });
  const spans: SpanRecord[] = [root];
  messages.forEach((m, i) => {
    const at = t0 + i + 0.1;
    const agent = base(
      `invoke_agent ${m.agent}`,
      at,
      at + 0.8,
      { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': m.agent, 'faultline.transcript.index': m.index },
      root.spanId,
    );
    const parts: Array<Record<string, unknown>> = [];
    if (m.text !== '') parts.push({ type: 'text', content: m.text });
    for (const c of m.toolCalls ?? []) parts.push({ type: 'tool_call', name: c.name, arguments: c.arguments });
    // What the agent was shown: the conversation so far — its length as it was, the earlier messages' text elided
    // (the logs do not say what each agent's context held) except the last one, which the agent answers.
    const before = messages.slice(0, i).map((p, j) => ({
      role: 'user',
      parts: [{ type: 'text', content: j === i - 1 ? `${p.agent}: ${p.text.slice(0, 2000)}` : '' }],
    }));
    const chat = base(
      'chat transcript',
      at + 0.1,
      at + 0.6,
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': system,
        'gen_ai.request.model': 'transcript',
        'gen_ai.input.messages': JSON.stringify(
          before.length > 0 ? before : [{ role: 'user', parts: [{ type: 'text', content: 'start' }] }],
        ),
        'gen_ai.output.messages': JSON.stringify([
          { role: 'assistant', parts, finish_reason: (m.toolCalls?.length ?? 0) > 0 ? 'tool_call' : 'stop' },
        ]),
        'gen_ai.response.finish_reasons': [(m.toolCalls?.length ?? 0) > 0 ? 'tool_call' : 'stop'],
        'faultline.request.message_count': Math.max(1, i),
        ...(m.inputTokens !== undefined ? { 'gen_ai.usage.input_tokens': m.inputTokens } : {}),
      },
      agent.spanId,
    );
    spans.push(agent, chat);
    if (m.target !== undefined) {
      spans.push(
        base(
          `handoff ${m.target}`,
          at + 0.65,
          at + 0.7,
          {
            'faultline.message.id': `${r.id}-${i}`,
            'faultline.message.source': m.agent,
            'faultline.message.target': m.target,
            'faultline.message.payload': JSON.stringify({ text: m.text }),
            'faultline.message.delivered_count': 1,
          },
          root.spanId,
        ),
      );
    }
  });
  return { traceId, spans };
}
