/**
 * Wire messages → GenAI semconv message shapes (gen_ai.input.messages / gen_ai.output.messages /
 * gen_ai.system_instructions / gen_ai.tool.definitions), for the OpenAI chat completions and Anthropic messages
 * formats, plus the content hash recorded on every span. Inputs are untrusted JSON: every reader is defensive and
 * never throws on an unexpected shape (it just yields fewer parts).
 */
import type { GenAiMessage, GenAiPart, ToolCallSummary, ToolDefinition } from '../types';

type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** Tool-call arguments as an object when they are JSON (the schema's preferred shape), else the raw string. */
export function parseArguments(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/**
 * A 64-bit fingerprint (16 hex characters) of the output text and every tool call (name and raw arguments). Two
 * responses with the same fingerprint said the same thing; detectors compare it across calls (stale / duplicate)
 * without content. It is an equality check, not a cryptographic digest: computed on every call, it costs a loop over
 * the text instead of a hash context (crypto.hash spends most of its time setting one up for a few KB).
 */
export function contentHash(text: string, toolCalls: readonly ToolCallSummary[]): string {
  let input = text;
  for (const call of toolCalls) input += `\u0000${call.name}\u0000${call.arguments}`;
  return fingerprint64(input);
}

/** Two 32-bit multiply-xorshift lanes over the UTF-16 code units, cross-mixed at the end (as in cyrb53). */
function fingerprint64(s: string): string {
  let h1 = 0xdeadbeef ^ s.length;
  let h2 = 0x41c6ce57 ^ s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h2 >>> 0).toString(16).padStart(8, '0') + (h1 >>> 0).toString(16).padStart(8, '0');
}

// ------------------------------------------------------------------------------------------------ media parts

export function dataUriPart(url: string, modality: string): GenAiPart {
  const m = /^data:([^;,]+)?(;base64)?,/.exec(url);
  if (m) return { type: 'blob', modality, mime_type: m[1] ?? null, content: url.slice(m[0].length) };
  return { type: 'uri', modality, uri: url };
}

// ------------------------------------------------------------------------------------------------ OpenAI

function openAiContentParts(content: unknown): GenAiPart[] {
  if (typeof content === 'string') return [{ type: 'text', content }];
  if (!Array.isArray(content)) return [];
  const parts: GenAiPart[] = [];
  for (const p of content) {
    if (!isObject(p)) continue;
    switch (p.type) {
      case 'text':
        parts.push({ type: 'text', content: str(p.text) ?? '' });
        break;
      case 'refusal':
        parts.push({ type: 'text', content: str(p.refusal) ?? '' });
        break;
      case 'image_url': {
        const url = isObject(p.image_url) ? str(p.image_url.url) : undefined;
        if (url) parts.push(dataUriPart(url, 'image'));
        break;
      }
      case 'input_audio': {
        const a = isObject(p.input_audio) ? p.input_audio : {};
        parts.push({
          type: 'blob',
          modality: 'audio',
          mime_type: str(a.format) ? `audio/${a.format}` : null,
          content: str(a.data) ?? '',
        });
        break;
      }
      case 'file': {
        const f = isObject(p.file) ? p.file : {};
        if (str(f.file_id)) parts.push({ type: 'file', modality: 'document', file_id: f.file_id });
        else parts.push({ type: 'file' });
        break;
      }
      default:
        if (typeof p.type === 'string') parts.push({ type: p.type });
    }
  }
  return parts;
}

function openAiToolCallParts(m: Json): GenAiPart[] {
  const parts: GenAiPart[] = [];
  if (Array.isArray(m.tool_calls)) {
    for (const tc of m.tool_calls) {
      if (!isObject(tc)) continue;
      const fn = isObject(tc.function) ? tc.function : isObject(tc.custom) ? tc.custom : {};
      parts.push({
        type: 'tool_call',
        id: str(tc.id) ?? null,
        name: str(fn.name) ?? '',
        arguments: parseArguments(fn.arguments ?? fn.input),
      });
    }
  }
  if (isObject(m.function_call)) {
    parts.push({
      type: 'tool_call',
      id: null,
      name: str(m.function_call.name) ?? '',
      arguments: parseArguments(m.function_call.arguments),
    });
  }
  return parts;
}

/** OpenAI request messages → semconv input messages, with system/developer messages split out. */
export function openAiInput(messages: unknown): { messages: GenAiMessage[]; system?: string } {
  const out: GenAiMessage[] = [];
  const system: string[] = [];
  if (!Array.isArray(messages)) return { messages: out };
  for (const m of messages) {
    if (!isObject(m)) continue;
    const role = str(m.role) ?? 'user';
    if (role === 'system' || role === 'developer') {
      const text = openAiContentParts(m.content)
        .map((p) => (p.type === 'text' ? (p as { content: string }).content : ''))
        .join('');
      system.push(text);
      continue;
    }
    if (role === 'tool' || role === 'function') {
      out.push({
        role: 'tool',
        parts: [
          {
            type: 'tool_call_response',
            id: str(m.tool_call_id) ?? null,
            response: typeof m.content === 'string' ? m.content : (m.content ?? null),
          },
        ],
      });
      continue;
    }
    const msg: GenAiMessage = { role, parts: [...openAiContentParts(m.content), ...openAiToolCallParts(m)] };
    if (typeof m.refusal === 'string') msg.parts.push({ type: 'text', content: m.refusal });
    if (typeof m.name === 'string') msg.name = m.name;
    out.push(msg);
  }
  return system.length > 0 ? { messages: out, system: system.join('\n\n') } : { messages: out };
}

/** How many messages {@link openAiInput} would return (system/developer messages excluded), without building them. */
export function openAiMessageCount(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let n = 0;
  for (const m of messages) {
    if (!isObject(m)) continue;
    const role = str(m.role) ?? 'user';
    if (role !== 'system' && role !== 'developer') n++;
  }
  return n;
}

export function openAiTools(body: Json): ToolDefinition[] {
  const tools: ToolDefinition[] = [];
  if (Array.isArray(body.tools)) {
    for (const t of body.tools) {
      if (!isObject(t)) continue;
      const fn = isObject(t.function) ? t.function : isObject(t.custom) ? t.custom : t;
      const def: ToolDefinition = { name: str(fn.name) ?? str(t.type) ?? '', type: str(t.type) ?? 'function' };
      if (typeof fn.description === 'string') def.description = fn.description;
      if (fn.parameters !== undefined) def.parameters = fn.parameters;
      tools.push(def);
    }
  }
  if (Array.isArray(body.functions)) {
    for (const f of body.functions) {
      if (!isObject(f)) continue;
      const def: ToolDefinition = { name: str(f.name) ?? '', type: 'function' };
      if (typeof f.description === 'string') def.description = f.description;
      if (f.parameters !== undefined) def.parameters = f.parameters;
      tools.push(def);
    }
  }
  return tools;
}

/** One OpenAI choice's message (JSON response) → semconv output message. */
export function openAiOutputMessage(message: unknown, finishReason: string | undefined): GenAiMessage {
  const m = isObject(message) ? message : {};
  const parts = [...openAiContentParts(m.content), ...openAiToolCallParts(m)];
  if (typeof m.refusal === 'string') parts.push({ type: 'text', content: m.refusal });
  return { role: str(m.role) ?? 'assistant', parts, finish_reason: finishReason ?? '' };
}

// ------------------------------------------------------------------------------------------------ Anthropic

function anthropicBlockParts(content: unknown): GenAiPart[] {
  if (typeof content === 'string') return [{ type: 'text', content }];
  if (!Array.isArray(content)) return [];
  const parts: GenAiPart[] = [];
  for (const b of content) {
    if (!isObject(b)) continue;
    switch (b.type) {
      case 'text':
        parts.push({ type: 'text', content: str(b.text) ?? '' });
        break;
      case 'thinking':
        parts.push({ type: 'reasoning', content: str(b.thinking) ?? '' });
        break;
      case 'tool_use':
        parts.push({ type: 'tool_call', id: str(b.id) ?? null, name: str(b.name) ?? '', arguments: b.input });
        break;
      case 'server_tool_use':
        parts.push({
          type: 'server_tool_call',
          id: str(b.id) ?? null,
          name: str(b.name) ?? '',
          server_tool_call: { type: str(b.name) ?? 'server_tool', input: b.input },
        });
        break;
      case 'tool_result':
        parts.push({
          type: 'tool_call_response',
          id: str(b.tool_use_id) ?? null,
          response: toolResultValue(b.content),
        });
        break;
      case 'image': {
        const s = isObject(b.source) ? b.source : {};
        if (s.type === 'base64')
          parts.push({
            type: 'blob',
            modality: 'image',
            mime_type: str(s.media_type) ?? null,
            content: str(s.data) ?? '',
          });
        else if (s.type === 'url' && str(s.url)) parts.push({ type: 'uri', modality: 'image', uri: s.url });
        else parts.push({ type: 'image' });
        break;
      }
      default:
        if (typeof b.type === 'string') parts.push({ type: b.type });
    }
  }
  return parts;
}

function toolResultValue(content: unknown): unknown {
  if (!Array.isArray(content)) return content ?? null;
  const texts = content.filter((c) => isObject(c) && c.type === 'text').map((c) => str((c as Json).text) ?? '');
  return texts.length === content.length ? texts.join('') : content;
}

/** The text of an Anthropic `system` (string or text blocks). */
export function anthropicSystem(system: unknown): string | undefined {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) return undefined;
  return system.map((b) => (isObject(b) ? (str(b.text) ?? '') : '')).join('\n\n');
}

export function anthropicInput(messages: unknown): GenAiMessage[] {
  if (!Array.isArray(messages)) return [];
  const out: GenAiMessage[] = [];
  for (const m of messages) {
    if (!isObject(m)) continue;
    out.push({ role: str(m.role) ?? 'user', parts: anthropicBlockParts(m.content) });
  }
  return out;
}

export function anthropicTools(body: Json): ToolDefinition[] {
  if (!Array.isArray(body.tools)) return [];
  const tools: ToolDefinition[] = [];
  for (const t of body.tools) {
    if (!isObject(t)) continue;
    const def: ToolDefinition = { name: str(t.name) ?? '', type: str(t.type) ?? 'function' };
    if (typeof t.description === 'string') def.description = t.description;
    if (t.input_schema !== undefined) def.parameters = t.input_schema;
    tools.push(def);
  }
  return tools;
}

/** Anthropic response content blocks → one semconv output message. */
export function anthropicOutputMessage(content: unknown, stopReason: string | undefined): GenAiMessage {
  return { role: 'assistant', parts: anthropicBlockParts(content), finish_reason: stopReason ?? '' };
}

/** System instructions in the gen_ai.system_instructions shape (an array of parts). */
export function systemInstructionParts(text: string): GenAiPart[] {
  return [{ type: 'text', content: text }];
}
