/**
 * AgentChaos's faults are defined on OpenAI chat-completion bodies. Every other LLM format is faulted through a
 * chat-completion *view* of its body — `message.content` (the answer's text), `message.tool_calls` (its tool calls,
 * arguments as JSON text) and `finish_reason` — and only what a fault changed is written back into the format's own
 * fields (src/catalog/formats.ts lists them; docs/fault-catalog.md documents them):
 *
 *  - Anthropic: text blocks ↔ content, tool_use blocks ↔ tool_calls, stop_reason ↔ finish_reason;
 *  - Responses: the output_text of message items ↔ content, function_call items ↔ tool_calls,
 *    status/incomplete_details ↔ finish_reason;
 *  - Gemini: candidates[0]'s non-thought text parts ↔ content, functionCall parts ↔ tool_calls, finishReason;
 *  - Ollama: message.content (chat) or response (generate) ↔ content, message.tool_calls, done_reason;
 *  - Bedrock Converse: the text blocks of output.message.content ↔ content, toolUse blocks ↔ tool_calls, stopReason
 *    ↔ finish_reason; InvokeModel with an Anthropic body is Anthropic's, with a Nova body Converse's.
 *
 * What no fault touched (thinking, reasoning items, built-in tool items, thought signatures, usage) is kept.
 */
import type { Protocol } from '../../instrumentation/types';
import { pyDumps } from '../catalog/json';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

interface ViewMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: Array<{ id: unknown; type: 'function'; function: { name: unknown; arguments: string } }>;
}

interface ChatView {
  choices: [{ index: 0; message: ViewMessage; finish_reason: string | null }];
}

interface Codec {
  /** The view of a body, or undefined when the body is not one we can fault. */
  view(
    body: Obj,
  ): { content: string | null; tools: ViewMessage['tool_calls'] | undefined; finish: string | null } | undefined;
  /** Write the changed parts back (a copy: the original is not modified). */
  write(body: Obj, change: { content?: string | null; tools?: ViewMessage['tool_calls']; finish?: string }): Obj;
}

function chatView(v: {
  content: string | null;
  tools: ViewMessage['tool_calls'] | undefined;
  finish: string | null;
}): ChatView {
  const message: ViewMessage = { role: 'assistant', content: v.content };
  if (v.tools !== undefined && v.tools.length > 0) message.tool_calls = v.tools;
  return { choices: [{ index: 0, message, finish_reason: v.finish }] };
}

function argsObject(args: unknown): Obj {
  if (typeof args !== 'string') return {};
  try {
    const v: unknown = JSON.parse(args);
    return isObj(v) ? v : { _raw_arguments: args };
  } catch {
    // Anthropic input, Gemini args and Ollama arguments must be objects: keep the broken text visible under one key.
    return { _raw_arguments: args };
  }
}

const calls = (tools: ViewMessage['tool_calls']): Array<{ id: unknown; name: unknown; arguments: string }> =>
  (tools ?? []).filter(isObj).map((t) => ({
    id: t.id,
    name: isObj(t.function) ? t.function.name : undefined,
    arguments: isObj(t.function) ? String(t.function.arguments ?? '') : '',
  }));

// ------------------------------------------------------------------------------------------------ Anthropic

const STOP_TO_FINISH: Record<string, string> = {
  end_turn: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  stop_sequence: 'stop',
  refusal: 'content_filter',
};
const FINISH_TO_STOP: Record<string, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
};

const anthropic: Codec = {
  view(body) {
    if (!Array.isArray(body.content)) return undefined;
    const blocks = body.content.filter(isObj);
    const texts = blocks.filter((b) => b.type === 'text').map((b) => String(b.text ?? ''));
    const tools = blocks
      .filter((b) => b.type === 'tool_use')
      .map((b) => ({
        id: b.id,
        type: 'function' as const,
        function: { name: b.name, arguments: pyDumps(b.input ?? {}) },
      }));
    const stop = typeof body.stop_reason === 'string' ? body.stop_reason : undefined;
    return {
      content: texts.length > 0 ? texts.join('') : null,
      tools,
      finish: stop ? (STOP_TO_FINISH[stop] ?? stop) : null,
    };
  },
  write(body, change) {
    const out: Obj = { ...body };
    if (change.content !== undefined || change.tools !== undefined) {
      const blocks = (body.content as unknown[]).filter(isObj);
      const others = blocks.filter((b) => b.type !== 'text' && b.type !== 'tool_use');
      const text =
        change.content !== undefined
          ? typeof change.content === 'string'
            ? [{ type: 'text', text: change.content }]
            : []
          : blocks.filter((b) => b.type === 'text');
      const tools =
        change.tools !== undefined
          ? calls(change.tools).map((t) => ({
              type: 'tool_use',
              id: t.id,
              name: t.name,
              input: argsObject(t.arguments),
            }))
          : blocks.filter((b) => b.type === 'tool_use');
      out.content = [...others, ...text, ...tools];
    }
    if (change.finish !== undefined) out.stop_reason = FINISH_TO_STOP[change.finish] ?? change.finish;
    return out;
  },
};

// ------------------------------------------------------------------------------------------------ Bedrock Converse

/** Converse `stopReason`s (Bedrock's API reference) in the view's terms, and back. */
const CONVERSE_TO_FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
};
const FINISH_TO_CONVERSE: Record<string, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'content_filtered',
};

function converseMessage(body: Obj): Obj | undefined {
  return isObj(body.output) && isObj(body.output.message) && Array.isArray(body.output.message.content)
    ? body.output.message
    : undefined;
}

const converse: Codec = {
  view(body) {
    const m = converseMessage(body);
    if (!m) return undefined;
    const blocks = (m.content as unknown[]).filter(isObj);
    const texts = blocks.filter((b) => typeof b.text === 'string').map((b) => b.text as string);
    const tools = blocks
      .filter((b) => isObj(b.toolUse))
      .map((b) => {
        const t = b.toolUse as Obj;
        return {
          id: t.toolUseId,
          type: 'function' as const,
          function: { name: t.name, arguments: pyDumps(t.input ?? {}) },
        };
      });
    const stop = typeof body.stopReason === 'string' ? body.stopReason : undefined;
    return {
      content: texts.length > 0 ? texts.join('') : null,
      tools,
      finish: stop ? (CONVERSE_TO_FINISH[stop] ?? stop) : null,
    };
  },
  write(body, change) {
    const out: Obj = { ...body };
    const m = converseMessage(body) as Obj;
    if (change.content !== undefined || change.tools !== undefined) {
      const blocks = (m.content as unknown[]).filter(isObj);
      const others = blocks.filter((b) => typeof b.text !== 'string' && !isObj(b.toolUse));
      const text =
        change.content !== undefined
          ? typeof change.content === 'string'
            ? [{ text: change.content }]
            : []
          : blocks.filter((b) => typeof b.text === 'string');
      const tools =
        change.tools !== undefined
          ? calls(change.tools).map((t) => ({
              toolUse: { toolUseId: t.id, name: t.name, input: argsObject(t.arguments) },
            }))
          : blocks.filter((b) => isObj(b.toolUse));
      out.output = { ...(body.output as Obj), message: { ...m, content: [...others, ...text, ...tools] } };
    }
    if (change.finish !== undefined) out.stopReason = FINISH_TO_CONVERSE[change.finish] ?? change.finish;
    return out;
  },
};

// ------------------------------------------------------------------------------------------------ Responses

const TOOL_ITEMS = new Set(['function_call', 'custom_tool_call']);

const responses: Codec = {
  view(body) {
    if (!Array.isArray(body.output)) return undefined;
    const items = body.output.filter(isObj);
    const texts: string[] = [];
    for (const item of items) {
      if (item.type !== 'message' || !Array.isArray(item.content)) continue;
      for (const c of item.content) if (isObj(c) && c.type === 'output_text') texts.push(String(c.text ?? ''));
    }
    const tools = items
      .filter((i) => TOOL_ITEMS.has(String(i.type)))
      .map((i) => ({
        id: i.call_id ?? i.id,
        type: 'function' as const,
        function: { name: i.name, arguments: String((i.type === 'function_call' ? i.arguments : i.input) ?? '') },
      }));
    let finish: string | null = null;
    if (body.status === 'completed') finish = tools.length > 0 ? 'tool_calls' : 'stop';
    else if (body.status === 'incomplete') {
      const reason = isObj(body.incomplete_details) ? body.incomplete_details.reason : undefined;
      finish = reason === 'content_filter' ? 'content_filter' : 'length';
    }
    return { content: texts.length > 0 ? texts.join('') : null, tools, finish };
  },
  write(body, change) {
    const out: Obj = { ...body };
    let items = (body.output as unknown[]).filter(isObj);
    if (change.content !== undefined) {
      // The text goes into the first output_text part; the other text parts and message items go.
      const first = items.findIndex((i) => i.type === 'message');
      const message =
        first === -1
          ? { type: 'message', id: 'msg_faultline', status: 'completed', role: 'assistant', content: [] }
          : items[first];
      const parts = Array.isArray(message.content) ? message.content.filter(isObj) : [];
      const textPart = parts.find((p) => p.type === 'output_text') ?? {
        type: 'output_text',
        annotations: [],
        logprobs: [],
      };
      const kept = parts.filter((p) => p.type !== 'output_text');
      const rewritten = {
        ...message,
        content: change.content === null ? kept : [{ ...textPart, text: change.content }, ...kept],
      };
      const rest = items.filter((i, k) => i.type !== 'message' || k === first);
      items = first === -1 ? [...rest, rewritten] : rest.map((i) => (i === items[first] ? rewritten : i));
    }
    if (change.tools !== undefined) {
      const at = items.findIndex((i) => TOOL_ITEMS.has(String(i.type)));
      const old = items.filter((i) => TOOL_ITEMS.has(String(i.type)));
      const fresh = calls(change.tools).map((t, k) => {
        const was = old[k];
        return {
          ...(was?.type === 'function_call' ? was : {}),
          type: 'function_call',
          id: was?.id ?? `fc_faultline_${k}`,
          call_id: t.id ?? was?.call_id,
          name: t.name,
          arguments: t.arguments,
          status: 'completed',
        };
      });
      const others = items.filter((i) => !TOOL_ITEMS.has(String(i.type)));
      items = at === -1 ? [...others, ...fresh] : [...others.slice(0, at), ...fresh, ...others.slice(at)];
    }
    out.output = items;
    if (change.finish !== undefined) {
      if (change.finish === 'length' || change.finish === 'content_filter') {
        out.status = 'incomplete';
        out.incomplete_details = { reason: change.finish === 'length' ? 'max_output_tokens' : 'content_filter' };
      } else {
        out.status = 'completed';
        out.incomplete_details = null;
      }
    }
    return out;
  },
};

// ------------------------------------------------------------------------------------------------ Gemini

const GEMINI_TO_FINISH: Record<string, string> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
};
const FINISH_TO_GEMINI: Record<string, string> = {
  stop: 'STOP',
  tool_calls: 'STOP',
  length: 'MAX_TOKENS',
  content_filter: 'SAFETY',
};

const isAnswerText = (p: Obj): boolean => typeof p.text === 'string' && p.thought !== true;

function firstCandidate(body: Obj): Obj | undefined {
  return Array.isArray(body.candidates) && isObj(body.candidates[0]) ? body.candidates[0] : undefined;
}

const gemini: Codec = {
  view(body) {
    const c = firstCandidate(body);
    if (!c) return undefined;
    const parts = isObj(c.content) && Array.isArray(c.content.parts) ? c.content.parts.filter(isObj) : [];
    const texts = parts.filter(isAnswerText).map((p) => p.text as string);
    const tools = parts
      .filter((p) => isObj(p.functionCall))
      .map((p, k) => {
        const fc = p.functionCall as Obj;
        return {
          id: fc.id ?? `call_${k}`,
          type: 'function' as const,
          function: { name: fc.name, arguments: pyDumps(fc.args ?? {}) },
        };
      });
    const reason = typeof c.finishReason === 'string' ? c.finishReason : undefined;
    const finish =
      reason === undefined
        ? null
        : reason === 'STOP' && tools.length > 0
          ? 'tool_calls'
          : (GEMINI_TO_FINISH[reason] ?? reason.toLowerCase());
    return { content: texts.length > 0 ? texts.join('') : null, tools, finish };
  },
  write(body, change) {
    const c = firstCandidate(body) as Obj;
    const content = isObj(c.content) ? c.content : { role: 'model', parts: [] };
    let parts = Array.isArray(content.parts) ? content.parts.filter(isObj) : [];
    if (change.content !== undefined) {
      const first = parts.findIndex(isAnswerText);
      const rewritten =
        typeof change.content === 'string' ? [{ ...(first === -1 ? {} : parts[first]), text: change.content }] : [];
      const rest = parts.filter((p) => !isAnswerText(p));
      const at = first === -1 ? rest.length : parts.slice(0, first).filter((p) => !isAnswerText(p)).length;
      parts = [...rest.slice(0, at), ...rewritten, ...rest.slice(at)];
    }
    if (change.tools !== undefined) {
      const old = parts.filter((p) => isObj(p.functionCall));
      const at = parts.findIndex((p) => isObj(p.functionCall));
      const fresh = calls(change.tools).map((t, k) => {
        const was = old[k];
        const oldCall = was && isObj(was.functionCall) ? was.functionCall : {};
        const fc: Obj = { name: t.name, args: argsObject(t.arguments) };
        if (oldCall.id !== undefined) fc.id = oldCall.id;
        return { ...(was ?? {}), functionCall: fc };
      });
      const others = parts.filter((p) => !isObj(p.functionCall));
      parts = at === -1 ? [...others, ...fresh] : [...others.slice(0, at), ...fresh, ...others.slice(at)];
    }
    const candidate: Obj = { ...c, content: { ...content, parts } };
    if (change.finish !== undefined)
      candidate.finishReason = FINISH_TO_GEMINI[change.finish] ?? change.finish.toUpperCase();
    return { ...body, candidates: [candidate, ...(body.candidates as unknown[]).slice(1)] };
  },
};

// ------------------------------------------------------------------------------------------------ Ollama

function ollama(chat: boolean): Codec {
  return {
    view(body) {
      if (chat && !isObj(body.message)) return undefined;
      if (!chat && typeof body.response !== 'string') return undefined;
      const m = chat ? (body.message as Obj) : body;
      const text = chat ? m.content : m.response;
      const tools = (Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObj) : []).map((tc, k) => {
        const fn = isObj(tc.function) ? tc.function : {};
        return {
          id: tc.id ?? `call_${k}`,
          type: 'function' as const,
          function: {
            name: fn.name,
            arguments: typeof fn.arguments === 'string' ? fn.arguments : pyDumps(fn.arguments ?? {}),
          },
        };
      });
      const reason = typeof body.done_reason === 'string' ? body.done_reason : null;
      return {
        content: typeof text === 'string' ? text : null,
        tools,
        finish: reason === 'stop' && tools.length > 0 ? 'tool_calls' : reason,
      };
    },
    write(body, change) {
      const out: Obj = { ...body };
      if (chat) {
        const m: Obj = { ...(body.message as Obj) };
        if (change.content !== undefined) m.content = change.content ?? '';
        if (change.tools !== undefined) {
          const fresh = calls(change.tools).map((t, k) => {
            const was = Array.isArray(m.tool_calls) && isObj(m.tool_calls[k]) ? (m.tool_calls[k] as Obj) : {};
            return {
              ...was,
              function: {
                ...(isObj(was.function) ? was.function : {}),
                name: t.name,
                arguments: argsObject(t.arguments),
              },
            };
          });
          if (fresh.length > 0) m.tool_calls = fresh;
          else delete m.tool_calls;
        }
        out.message = m;
      } else if (change.content !== undefined) {
        out.response = change.content ?? '';
      }
      if (change.finish !== undefined) out.done_reason = change.finish === 'tool_calls' ? 'stop' : change.finish;
      return out;
    },
  };
}

// ------------------------------------------------------------------------------------------------ dispatch

const CODECS: Partial<Record<Protocol, Codec>> = {
  'anthropic.messages': anthropic,
  // InvokeModel: Bedrock answers an Anthropic body with Anthropic's own, a Nova body in Converse's shape.
  'bedrock.invoke': {
    view: (b) => anthropic.view(b) ?? converse.view(b),
    write: (b, c) => (Array.isArray(b.content) ? anthropic : converse).write(b, c),
  },
  'bedrock.converse': converse,
  'openai.responses': responses,
  'gemini.generate_content': gemini,
  'ollama.chat': ollama(true),
  'ollama.generate': ollama(false),
};

/** The chat-completion view of a response body; undefined when the body is not one we can fault. */
export function toChatView(protocol: Protocol, body: unknown): unknown {
  if (protocol === 'openai.chat') return isObj(body) && Array.isArray(body.choices) ? body : undefined;
  const codec = CODECS[protocol];
  if (codec === undefined || !isObj(body)) return undefined;
  const v = codec.view(body);
  return v === undefined ? undefined : chatView(v);
}

/** Write a faulted view back into the provider's body shape (only the fields the fault changed). */
export function fromChatView(protocol: Protocol, original: unknown, view: unknown): unknown {
  if (protocol === 'openai.chat') return view;
  const codec = CODECS[protocol] as Codec;
  const before = (toChatView(protocol, original) as ChatView).choices[0];
  const after = (view as { choices?: Array<{ message?: Obj; finish_reason?: unknown }> }).choices?.[0] ?? {};
  const msg = after.message ?? {};
  const change: Parameters<Codec['write']>[1] = {};
  const content = typeof msg.content === 'string' ? msg.content : null;
  if (JSON.stringify(content) !== JSON.stringify(before.message.content)) change.content = content;
  const tools = (Array.isArray(msg.tool_calls) ? msg.tool_calls : []) as ViewMessage['tool_calls'];
  if (JSON.stringify(tools ?? []) !== JSON.stringify(before.message.tool_calls ?? [])) change.tools = tools;
  if (after.finish_reason !== before.finish_reason && typeof after.finish_reason === 'string')
    change.finish = after.finish_reason;
  return codec.write(original as Obj, change);
}
