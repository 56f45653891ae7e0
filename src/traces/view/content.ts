/**
 * Message content, whichever way a producer wrote it, as GenAI semconv messages (`{role, parts, finish_reason?}`):
 * - `gen_ai.input.messages` / `gen_ai.output.messages` JSON (latest semconv), or arrays of JSON strings, or the
 *   OpenAI shape `{role, content, tool_calls}` some producers put there;
 * - the older indexed attributes `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` (OpenLLMetry's flat form, with
 *   `tool_calls.M.*` and `function_call.*`);
 * - OpenInference's `llm.input_messages.N.message.*` / `llm.output_messages.N.message.*`;
 * - per-message events or OTLP log records joined to the span (`gen_ai.user.message`, `gen_ai.choice`, …, the
 *   body carrying the content), the older `gen_ai.content.prompt` / `gen_ai.content.completion` events, and the
 *   `gen_ai.client.inference.operation.details` event.
 * Everything here is pure and tolerant: what cannot be read is left out, never thrown.
 */
import type { GenAiMessage, GenAiPart, ToolDefinition } from '../../../instrumentation/types';
import type { AttrValue, Attributes, SpanEventRecord } from '../model';
import { ObjectMemo } from '../../memo';

export type { GenAiMessage, GenAiPart, ToolDefinition };

type Loose = Record<string, unknown>;

function isObj(v: unknown): v is Loose {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseJson(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const t = v.trimStart();
  if (t[0] !== '[' && t[0] !== '{') return undefined;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return undefined;
  }
}

function asText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  return JSON.stringify(v);
}

/** Tool-call arguments as the JSON text the model produced (objects re-serialised; strings kept verbatim). */
function argumentsText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  return JSON.stringify(v);
}

/** OpenAI-style tool calls (`[{id, type, function: {name, arguments}}]`) → semconv tool_call parts. */
function openAiToolCalls(v: unknown): GenAiPart[] {
  if (!Array.isArray(v)) return [];
  const out: GenAiPart[] = [];
  for (const tc of v) {
    if (!isObj(tc)) continue;
    const fn = isObj(tc.function) ? tc.function : tc;
    if (typeof fn.name !== 'string') continue;
    out.push({
      type: 'tool_call',
      id: typeof tc.id === 'string' ? tc.id : null,
      name: fn.name,
      arguments: argumentsText(fn.arguments ?? fn.input),
    });
  }
  return out;
}

/** Content in the OpenAI / Anthropic shapes: a string, or a list of `{type:'text', text}` blocks. */
function contentParts(content: unknown): GenAiPart[] {
  if (typeof content === 'string') return [{ type: 'text', content }];
  if (!Array.isArray(content)) return [];
  const out: GenAiPart[] = [];
  for (const c of content) {
    if (typeof c === 'string') out.push({ type: 'text', content: c });
    else if (isObj(c)) {
      if (typeof c.text === 'string') out.push({ type: 'text', content: c.text });
      else if (c.type === 'tool_use' && typeof c.name === 'string')
        out.push({
          type: 'tool_call',
          id: typeof c.id === 'string' ? c.id : null,
          name: c.name,
          arguments: argumentsText(c.input),
        });
    }
  }
  return out;
}

/** One message in any of the JSON shapes producers write. */
export function toMessage(raw: unknown, defaultRole = 'user'): GenAiMessage | undefined {
  if (typeof raw === 'string') {
    const parsed = parseJson(raw);
    return parsed === undefined
      ? { role: defaultRole, parts: [{ type: 'text', content: raw }] }
      : toMessage(parsed, defaultRole);
  }
  if (!isObj(raw)) return undefined;
  const m =
    isObj(raw.message) && raw.parts === undefined && raw.content === undefined
      ? { ...raw.message, finish_reason: raw.finish_reason }
      : raw;
  const role = typeof m.role === 'string' ? m.role : defaultRole;
  let parts: GenAiPart[];
  if (Array.isArray(m.parts)) {
    // One pass, one list: this runs for every message of every call.
    parts = [];
    for (const p of m.parts) if (isObj(p) && typeof p.type === 'string') parts.push(normalisePart(p as GenAiPart));
  } else {
    parts = [...contentParts(m.content), ...openAiToolCalls(m.tool_calls)];
    if (isObj(m.function_call) && typeof m.function_call.name === 'string') {
      parts.push({
        type: 'tool_call',
        id: null,
        name: m.function_call.name,
        arguments: argumentsText(m.function_call.arguments),
      });
    }
  }
  const out: GenAiMessage = { role, parts };
  if (typeof m.finish_reason === 'string' && m.finish_reason !== '') out.finish_reason = m.finish_reason;
  return out;
}

/** Semconv parts with tool-call arguments kept as the text the model produced (some producers write objects). */
function normalisePart(p: GenAiPart): GenAiPart {
  if (p.type !== 'tool_call') return p;
  const t = p as { type: 'tool_call'; id?: unknown; name?: unknown; arguments?: unknown };
  return {
    type: 'tool_call',
    id: typeof t.id === 'string' ? t.id : null,
    name: typeof t.name === 'string' ? t.name : '',
    arguments: argumentsText(t.arguments),
  };
}

function pushMessage(out: GenAiMessage[], raw: unknown, defaultRole: string): void {
  const m = toMessage(raw, defaultRole);
  if (m !== undefined) out.push(m);
}

/**
 * A messages attribute: a JSON array (or object) string, an array of JSON strings, or already-parsed data. A list
 * is read one level flat (`list.flat()`, holes skipped) straight into the messages: no list in between, as this
 * runs for every call's input and output.
 */
export function messagesValue(v: unknown, defaultRole = 'user'): GenAiMessage[] | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const parsed = Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? (parseJson(x) ?? x) : x)) : parseJson(v);
  if (parsed === undefined)
    return typeof v === 'string' ? [{ role: defaultRole, parts: [{ type: 'text', content: v }] }] : undefined;
  const out: GenAiMessage[] = [];
  if (!Array.isArray(parsed)) {
    pushMessage(out, parsed, defaultRole);
    return out;
  }
  for (let i = 0; i < parsed.length; i++) {
    if (!(i in parsed)) continue;
    const x: unknown = parsed[i];
    if (!Array.isArray(x)) pushMessage(out, x, defaultRole);
    else for (let j = 0; j < x.length; j++) if (j in x) pushMessage(out, x[j], defaultRole);
  }
  return out;
}

/** Every indexed family of an attribute set (`prefix.N.*` → prefix → indices), found in one pass over its keys. */
const families = new ObjectMemo<Attributes, Map<string, Set<number>>>('faultline.attributeFamilies');
const NO_FAMILIES: ReadonlyMap<string, Set<number>> = new Map();
/** The last set found to have no family: a call's attributes are asked several times in a row, and most have none. */
let lastWithout: Attributes | undefined;

function familiesOf(attrs: Attributes): ReadonlyMap<string, Set<number>> {
  if (attrs === lastWithout) return NO_FAMILIES;
  // Producers index from 0: a set with no `.0` segment has no family (the common case, checked first and cheaply —
  // no key list, no lookup — and not remembered).
  let indexed = false;
  for (const k in attrs) {
    if (k.includes('.0.') || k.endsWith('.0')) {
      indexed = true;
      break;
    }
  }
  if (!indexed) {
    lastWithout = attrs;
    return NO_FAMILIES;
  }
  let f = families.get(attrs);
  if (f) return f;
  f = new Map();
  for (const k of Object.keys(attrs)) {
    // Every `.N.` (or trailing `.N`) segment names an index of the family before it (nested families too).
    for (let i = k.indexOf('.'); i >= 0; i = k.indexOf('.', i + 1)) {
      let j = i + 1;
      while (j < k.length && k.charCodeAt(j) >= 48 && k.charCodeAt(j) <= 57) j++;
      if (j === i + 1 || (j < k.length && k[j] !== '.')) continue;
      const prefix = k.slice(0, i);
      const set = f.get(prefix) ?? new Set<number>();
      set.add(Number(k.slice(i + 1, j)));
      f.set(prefix, set);
    }
  }
  families.set(attrs, f);
  return f;
}

/** Keys of an indexed family (`prefix.N.*`) present on the span, as the sorted list of indices. */
function indices(attrs: Attributes, prefix: string): number[] {
  const set = familiesOf(attrs).get(prefix);
  return set ? [...set].sort((a, b) => a - b) : [];
}

function s(attrs: Attributes, key: string): string | undefined {
  const v = attrs[key];
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
}

/**
 * The older indexed form (`gen_ai.prompt.0.role`, `gen_ai.prompt.0.content`, `gen_ai.completion.0.tool_calls.0.name`,
 * `gen_ai.completion.0.function_call.arguments`, `gen_ai.completion.0.finish_reason`). Undefined when absent.
 */
export function indexedMessages(attrs: Attributes, prefix: string, defaultRole: string): GenAiMessage[] | undefined {
  const idx = indices(attrs, prefix);
  if (idx.length === 0) return undefined;
  const out: GenAiMessage[] = [];
  for (const i of idx) {
    const base = `${prefix}.${i}`;
    const content = s(attrs, `${base}.content`);
    const parts: GenAiPart[] = [];
    if (content !== undefined) {
      // Some producers put a JSON list of content blocks here.
      const blocks = content.startsWith('[') ? parseJson(content) : undefined;
      parts.push(
        ...(Array.isArray(blocks) && blocks.length > 0 && blocks.every(isObj)
          ? contentParts(blocks)
          : [{ type: 'text' as const, content }]),
      );
    }
    for (const j of indices(attrs, `${base}.tool_calls`)) {
      const name = s(attrs, `${base}.tool_calls.${j}.name`) ?? s(attrs, `${base}.tool_calls.${j}.function.name`);
      if (name === undefined) continue;
      const args =
        s(attrs, `${base}.tool_calls.${j}.arguments`) ?? s(attrs, `${base}.tool_calls.${j}.function.arguments`) ?? '';
      parts.push({ type: 'tool_call', id: s(attrs, `${base}.tool_calls.${j}.id`) ?? null, name, arguments: args });
    }
    const fname = s(attrs, `${base}.function_call.name`);
    if (fname !== undefined)
      parts.push({
        type: 'tool_call',
        id: null,
        name: fname,
        arguments: s(attrs, `${base}.function_call.arguments`) ?? '',
      });
    const m: GenAiMessage = { role: s(attrs, `${base}.role`) ?? defaultRole, parts };
    const fr = s(attrs, `${base}.finish_reason`);
    if (fr !== undefined && fr !== '') m.finish_reason = fr;
    out.push(m);
  }
  return out;
}

/**
 * OpenInference's flat messages: `llm.input_messages.N.message.role` / `.content` / `.contents.M.message_content.text`
 * / `.tool_calls.M.tool_call.function.name|arguments` / `.tool_call_id`. Undefined when absent.
 */
export function openInferenceMessages(
  attrs: Attributes,
  prefix: string,
  defaultRole: string,
): GenAiMessage[] | undefined {
  const idx = indices(attrs, prefix);
  if (idx.length === 0) return undefined;
  const out: GenAiMessage[] = [];
  for (const i of idx) {
    const base = `${prefix}.${i}.message`;
    const parts: GenAiPart[] = [];
    const content = s(attrs, `${base}.content`);
    if (content !== undefined) parts.push({ type: 'text', content });
    for (const j of indices(attrs, `${base}.contents`)) {
      const text = s(attrs, `${base}.contents.${j}.message_content.text`);
      if (text !== undefined) parts.push({ type: 'text', content: text });
    }
    for (const j of indices(attrs, `${base}.tool_calls`)) {
      const name = s(attrs, `${base}.tool_calls.${j}.tool_call.function.name`);
      if (name === undefined) continue;
      parts.push({
        type: 'tool_call',
        id: s(attrs, `${base}.tool_calls.${j}.tool_call.id`) ?? null,
        name,
        arguments: s(attrs, `${base}.tool_calls.${j}.tool_call.function.arguments`) ?? '',
      });
    }
    const role = s(attrs, `${base}.role`) ?? defaultRole;
    const callId = s(attrs, `${base}.tool_call_id`);
    if (role === 'tool' && callId !== undefined && parts.length === 1 && parts[0]!.type === 'text') {
      out.push({
        role,
        parts: [{ type: 'tool_call_response', id: callId, response: (parts[0] as { content: string }).content }],
      });
      continue;
    }
    out.push({ role, parts });
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ events / logs

/** Per-message event names (deprecated in semconv, still what instrumentation-openai emits as log records). */
const MESSAGE_EVENTS: Record<string, string> = {
  'gen_ai.system.message': 'system',
  'gen_ai.user.message': 'user',
  'gen_ai.assistant.message': 'assistant',
  'gen_ai.tool.message': 'tool',
};
export const EVENT_CHOICE = 'gen_ai.choice';
export const EVENT_OPERATION_DETAILS = 'gen_ai.client.inference.operation.details';

/** What an event carries: its body when it has one (log records), else its attributes. */
function eventFields(e: SpanEventRecord): Loose {
  const body = e.body;
  if (isObj(body)) return body;
  const out: Loose = {};
  for (const [k, v] of Object.entries(e.attributes)) out[k] = v;
  if (typeof body === 'string') out.content = body;
  return out;
}

function eventName(e: SpanEventRecord): string {
  const attr = e.attributes['event.name'];
  return typeof attr === 'string' && (e.name === '' || e.name === 'log') ? attr : e.name;
}

export interface EventContent {
  input?: GenAiMessage[];
  output?: GenAiMessage[];
  system?: string;
  /** Whether the producer captured message content (bodies carry `content`), as opposed to ids and names only. */
  captured: boolean;
}

/** Content carried by span events and joined log records, if any. */
export function eventContent(events: readonly SpanEventRecord[]): EventContent | undefined {
  let input: GenAiMessage[] | undefined;
  let output: GenAiMessage[] | undefined;
  let system: string | undefined;
  let captured = false;
  const choices: { index: number; m: GenAiMessage }[] = [];
  for (const e of events) {
    const name = eventName(e);
    const role = MESSAGE_EVENTS[name];
    if (role !== undefined) {
      const f = eventFields(e);
      if ('content' in f || 'gen_ai.event.content' in f) captured = true;
      const raw = 'gen_ai.event.content' in f ? parseJson(f['gen_ai.event.content']) : f;
      const m = toMessage({ ...(isObj(raw) ? raw : {}), role: typeof f.role === 'string' ? f.role : role }, role);
      if (role === 'tool' && m) {
        const id = typeof f.id === 'string' ? f.id : null;
        m.parts = [{ type: 'tool_call_response', id, response: asText(f.content) }];
      }
      if (m) (input ??= []).push(m);
      if (role === 'system' && typeof f.content === 'string')
        system = system === undefined ? f.content : `${system}\n${f.content}`;
    } else if (name === EVENT_CHOICE) {
      const f = eventFields(e);
      const msg = isObj(f.message) ? f.message : f;
      if (
        'content' in msg ||
        (Array.isArray(msg.tool_calls) &&
          msg.tool_calls.some((tc) => isObj(tc) && isObj(tc.function) && 'arguments' in tc.function))
      )
        captured = true;
      const m = toMessage({ role: 'assistant', ...msg, finish_reason: f.finish_reason }, 'assistant');
      if (m) choices.push({ index: typeof f.index === 'number' ? f.index : choices.length, m });
    } else if (name === 'gen_ai.content.prompt' || name === 'gen_ai.content.completion') {
      const f = eventFields(e);
      const v = f['gen_ai.prompt'] ?? f['gen_ai.completion'];
      const msgs = messagesValue(v, name === 'gen_ai.content.prompt' ? 'user' : 'assistant');
      if (msgs) {
        captured = true;
        if (name === 'gen_ai.content.prompt') input = [...(input ?? []), ...msgs];
        else output = [...(output ?? []), ...msgs];
      }
    } else if (name === EVENT_OPERATION_DETAILS) {
      const f = eventFields(e);
      const ins = messagesValue(f['gen_ai.input.messages']);
      const outs = messagesValue(f['gen_ai.output.messages'], 'assistant');
      const sys = f['gen_ai.system_instructions'];
      if (ins) input = [...(input ?? []), ...ins];
      if (outs) output = [...(output ?? []), ...outs];
      if (ins || outs) captured = true;
      if (sys !== undefined) system = systemText(sys);
    }
  }
  if (choices.length > 0) output = [...(output ?? []), ...choices.sort((a, b) => a.index - b.index).map((c) => c.m)];
  if (input === undefined && output === undefined && system === undefined) return undefined;
  return {
    ...(input ? { input } : {}),
    ...(output ? { output } : {}),
    ...(system !== undefined ? { system } : {}),
    captured,
  };
}

/** `gen_ai.system_instructions`: a JSON list of parts, or plain text. */
export function systemText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  const parsed = parseJson(v);
  if (Array.isArray(parsed)) return parsed.map((p) => (isObj(p) ? asText(p.content ?? p.text) : asText(p))).join('');
  return typeof v === 'string' ? v : asText(v);
}

// ------------------------------------------------------------------------------------------------ text helpers

/** Text of a message (its text parts joined). */
export function messageText(m: GenAiMessage): string {
  let out = '';
  for (const p of m.parts) if (p.type === 'text') out += asText((p as { content?: unknown }).content);
  return out;
}

export interface ToolCallPart {
  id?: string;
  name: string;
  arguments: string;
}

export function toolCallsOf(messages: readonly GenAiMessage[]): ToolCallPart[] {
  const out: ToolCallPart[] = [];
  for (const m of messages) {
    for (const p of m.parts) {
      if (p.type !== 'tool_call') continue;
      const t = p as { id?: unknown; name?: unknown; arguments?: unknown };
      const call: ToolCallPart = {
        name: typeof t.name === 'string' ? t.name : '',
        arguments: argumentsText(t.arguments),
      };
      if (typeof t.id === 'string') call.id = t.id;
      out.push(call);
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ tool definitions

function toolDefinition(raw: unknown): ToolDefinition | undefined {
  const t = typeof raw === 'string' ? parseJson(raw) : raw;
  if (!isObj(t)) return undefined;
  const fn = isObj(t.function) ? t.function : t; // OpenAI's {type:'function', function:{…}} shape too
  if (typeof fn.name !== 'string') return undefined;
  const def: ToolDefinition = { name: fn.name };
  if (typeof fn.description === 'string') def.description = fn.description;
  const params = fn.parameters ?? fn.input_schema ?? t.input_schema ?? fn.inputSchema;
  const p = typeof params === 'string' ? parseJson(params) : params;
  if (p !== undefined) def.parameters = p;
  return def;
}

/**
 * Tool definitions from `gen_ai.tool.definitions`, OpenInference's `llm.tools.N.tool.json_schema`, OpenLLMetry's
 * `llm.request.functions.N.{name,description,parameters}` (0.22: the schema under `.arguments`), or the request body's `tools` when the producer kept it.
 */
export function toolDefinitions(attrs: Attributes, requestBody?: Loose): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  for (const d of listedDefinitions(attrs['gen_ai.tool.definitions'])) out.push(d);
  for (const i of indices(attrs, 'llm.tools')) pushDef(out, toolDefinition(attrs[`llm.tools.${i}.tool.json_schema`]));
  for (const i of indices(attrs, 'llm.request.functions')) {
    const name = s(attrs, `llm.request.functions.${i}.name`);
    if (name === undefined) continue;
    // OpenLLMetry writes the JSON Schema as `.parameters`; its 0.22 line as `.arguments`.
    const parameters = attrs[`llm.request.functions.${i}.parameters`] ?? attrs[`llm.request.functions.${i}.arguments`];
    pushDef(out, toolDefinition({ name, description: s(attrs, `llm.request.functions.${i}.description`), parameters }));
  }
  if (out.length === 0 && requestBody && Array.isArray(requestBody.tools))
    for (const r of requestBody.tools) pushDef(out, toolDefinition(r));
  return out;
}

/**
 * `gen_ai.tool.definitions` as definitions, read once per text: an agent sends the same tool list with every call, so
 * a trace file holds the same text thousands of times, and parsing it was most of the cost of such calls — with what
 * follows from fresh objects (the schema validator keys its compiled schemas by content when an object is new to
 * it). The definitions are shared by the calls that carry the same text: read-only, as the whole reading is.
 * Bounded: the least recently used texts are dropped past 256 of them or 4 MB of text.
 */
const definitionsByText = new Map<string, readonly ToolDefinition[]>();
const DEFINITIONS_MAX = 256;
const DEFINITIONS_MAX_CHARS = 4 * 1024 * 1024;
let definitionsChars = 0;

function listedDefinitions(v: AttrValue | undefined): readonly ToolDefinition[] {
  if (typeof v !== 'string') return readDefinitions(v);
  let defs = definitionsByText.get(v);
  if (defs !== undefined) {
    definitionsByText.delete(v);
    definitionsByText.set(v, defs);
    return defs;
  }
  defs = readDefinitions(v);
  if (v.length > DEFINITIONS_MAX_CHARS) return defs;
  definitionsByText.set(v, defs);
  definitionsChars += v.length;
  for (const k of definitionsByText.keys()) {
    if (definitionsByText.size <= DEFINITIONS_MAX && definitionsChars <= DEFINITIONS_MAX_CHARS) break;
    definitionsByText.delete(k);
    definitionsChars -= k.length;
  }
  return defs;
}

function readDefinitions(v: AttrValue | undefined): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  const listed = parseJson(v);
  if (Array.isArray(listed)) for (const r of listed) pushDef(out, toolDefinition(r));
  return out;
}

function pushDef(out: ToolDefinition[], d: ToolDefinition | undefined): void {
  if (d && !out.some((x) => x.name === d.name)) out.push(d);
}

export { parseJson, isObj };
