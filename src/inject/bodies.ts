/**
 * AgentChaos's faults are defined on OpenAI chat-completion bodies. Anthropic messages bodies are faulted through a
 * chat-completion *view*: text blocks = `message.content` (joined), tool_use blocks = `message.tool_calls`
 * (arguments = JSON of `input`), stop_reason ↔ finish_reason. Only what a fault changed is written back; other
 * blocks (thinking, server tools) are kept.
 */
import type { Protocol } from '../../instrumentation/types';
import { pyDumps } from '../catalog/json';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

const STOP_TO_FINISH: Record<string, string> = { end_turn: 'stop', max_tokens: 'length', tool_use: 'tool_calls', stop_sequence: 'stop', refusal: 'content_filter' };
const FINISH_TO_STOP: Record<string, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'refusal' };

/** The chat-completion view of a response body; undefined when the body is not one we can fault. */
export function toChatView(protocol: Protocol, body: unknown): unknown {
  if (protocol === 'openai.chat') return isObj(body) && Array.isArray(body.choices) ? body : undefined;
  if (protocol !== 'anthropic.messages' || !isObj(body) || !Array.isArray(body.content)) return undefined;
  const blocks = body.content.filter(isObj);
  const texts = blocks.filter((b) => b.type === 'text').map((b) => String(b.text ?? ''));
  const tools = blocks
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({ id: b.id, type: 'function', function: { name: b.name, arguments: pyDumps(b.input ?? {}) } }));
  const message: Obj = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null };
  if (tools.length > 0) message.tool_calls = tools;
  const stop = typeof body.stop_reason === 'string' ? body.stop_reason : undefined;
  return { choices: [{ index: 0, message, finish_reason: stop ? (STOP_TO_FINISH[stop] ?? stop) : null }] };
}

/** Write a faulted view back into the provider's body shape. */
export function fromChatView(protocol: Protocol, original: unknown, view: unknown): unknown {
  if (protocol === 'openai.chat') return view;
  const o = original as Obj;
  const before = toChatView(protocol, original) as { choices: [{ message: Obj; finish_reason: unknown }] };
  const after = (view as { choices?: Array<{ message?: Obj; finish_reason?: unknown }> }).choices?.[0] ?? {};
  const msg = after.message ?? {};
  const out: Obj = { ...o };
  const contentChanged = JSON.stringify(msg.content) !== JSON.stringify(before.choices[0].message.content);
  const toolsChanged = JSON.stringify(msg.tool_calls ?? []) !== JSON.stringify(before.choices[0].message.tool_calls ?? []);
  if (contentChanged || toolsChanged) {
    const blocks = (o.content as unknown[]).filter(isObj);
    const others = blocks.filter((b) => b.type !== 'text' && b.type !== 'tool_use');
    const text = contentChanged
      ? typeof msg.content === 'string'
        ? [{ type: 'text', text: msg.content }]
        : []
      : blocks.filter((b) => b.type === 'text');
    const tools = toolsChanged
      ? (Array.isArray(msg.tool_calls) ? msg.tool_calls : []).filter(isObj).map((t) => {
          const fn = (t.function ?? {}) as Obj;
          return { type: 'tool_use', id: t.id, name: fn.name, input: parseArgs(fn.arguments) };
        })
      : blocks.filter((b) => b.type === 'tool_use');
    out.content = [...others, ...text, ...tools];
  }
  if (after.finish_reason !== before.choices[0].finish_reason && typeof after.finish_reason === 'string') {
    out.stop_reason = FINISH_TO_STOP[after.finish_reason] ?? after.finish_reason;
  }
  return out;
}

function parseArgs(args: unknown): unknown {
  if (typeof args !== 'string') return {};
  try {
    return JSON.parse(args);
  } catch {
    // A tool_use input must be an object: keep the broken text visible under one key.
    return { _raw_arguments: args };
  }
}
