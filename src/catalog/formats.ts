/**
 * What each LLM wire format offers a fault: how its errors look (the body a transport fault sends), how its streams
 * are framed and end (what stream faults cut, drop and garble), and which fields stand for the content, tool calls
 * and finish reason the AgentChaos faults act on (src/inject/bodies.ts maps them). A fault that has no meaning in a
 * format — tool-call faults on /api/generate, the terminal marker of a Gemini stream that has none, anything but a
 * transport fault on embeddings — is not applied there: the fault step reports it not applicable, and a plan whose
 * rules can meet such a format says so once at start-up (`planGaps`).
 */
import {
  encodeMessage,
  isEventStream,
  stringHeaders,
  type EventStreamMessage,
} from '../../instrumentation/providers/eventstream';
import { SseParser, type SseEvent } from '../wire/sse';
import type { Protocol } from '../../instrumentation/types';
import { compileSelector, HANDOFF_OPERATION } from '../plan/select';
import type { FaultPlan } from '../plan/schema';
import { getFault } from './index';
import type { FaultDefinition, StreamEvent } from './types';

/** The provider family whose error bodies a transport fault sends. */
export type ErrorShape = 'openai' | 'anthropic' | 'gemini' | 'ollama' | 'bedrock';

/** How a streamed answer in text is framed: SSE events, NDJSON lines, or the elements of one JSON array. */
export type StreamFraming = 'sse' | 'ndjson' | 'json-array';

/** Any streamed answer's framing: a text one, or AWS event-stream binary messages (Bedrock's, `eventStreamEvent`). */
export type AnyStreamFraming = StreamFraming | 'eventstream';

export interface WireFormat {
  readonly protocol: Protocol;
  readonly label: string;
  readonly errors: ErrorShape;
  /** The operation its spans carry (what a rule's `operation` selects). */
  readonly operation: string;
  /** Provider names its spans may carry (a rule's `provider`); undefined: any (OpenAI-compatible hosts). */
  readonly providers?: readonly string[];
  /** An example URL (a rule's `url` selector is checked against it). */
  readonly url: string;
  /** How its streams are framed; undefined: it does not stream. */
  readonly streams?: string;
  /** Its stream's terminal marker (what stream_drop_done drops); undefined: none. */
  readonly terminal?: string;
  /** The fields the AgentChaos faults act on; undefined: none (embeddings). */
  readonly content?: { text: string; toolCalls?: string; finish: string };
  /** Why its answers' bodies and streams cannot be faulted yet (only transport faults apply); undefined: they can. */
  readonly bodiesNotFaulted?: string;
}

export const WIRE_FORMATS: readonly WireFormat[] = [
  {
    protocol: 'openai.chat',
    label: 'OpenAI chat completions',
    errors: 'openai',
    operation: 'chat',
    url: 'https://api.openai.com/v1/chat/completions',
    streams: 'SSE',
    terminal: '`data: [DONE]`',
    content: {
      text: '`choices[0].message.content`',
      toolCalls: '`choices[0].message.tool_calls`',
      finish: '`finish_reason`',
    },
  },
  {
    protocol: 'openai.responses',
    label: 'OpenAI Responses',
    errors: 'openai',
    operation: 'chat',
    url: 'https://api.openai.com/v1/responses',
    streams: 'SSE (typed events)',
    terminal: '`response.completed` / `response.incomplete` / `response.failed`',
    content: {
      text: '`output_text` of the `message` items (joined; written back as one)',
      toolCalls: '`function_call` items (`arguments`)',
      finish:
        '`status` + `incomplete_details.reason` (length ↔ incomplete/max_output_tokens, content_filter ↔ incomplete/content_filter, stop ↔ completed)',
    },
  },
  {
    protocol: 'anthropic.messages',
    label: 'Anthropic messages',
    errors: 'anthropic',
    operation: 'chat',
    providers: ['anthropic', 'anthropic_compatible', 'aws.bedrock'],
    url: 'https://api.anthropic.com/v1/messages',
    streams: 'SSE',
    terminal: '`event: message_stop`',
    content: {
      text: '`text` blocks (joined; written back as one)',
      toolCalls: '`tool_use` blocks (`input`)',
      finish: '`stop_reason` (length ↔ max_tokens, content_filter ↔ refusal)',
    },
  },
  {
    protocol: 'gemini.generate_content',
    label: 'Gemini generateContent',
    errors: 'gemini',
    operation: 'generate_content',
    providers: ['gcp.gemini', 'gcp.vertex_ai'],
    url: 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent',
    streams: 'SSE (`alt=sse`) or one JSON array',
    content: {
      text: 'the text parts of `candidates[0].content.parts` that are not thoughts (joined; written back as one)',
      toolCalls: '`functionCall` parts (`args`)',
      finish: '`candidates[0].finishReason` (length ↔ MAX_TOKENS, content_filter ↔ SAFETY, stop ↔ STOP)',
    },
  },
  {
    protocol: 'ollama.chat',
    label: 'Ollama /api/chat',
    errors: 'ollama',
    operation: 'chat',
    providers: ['ollama'],
    url: 'http://localhost:11434/api/chat',
    streams: 'NDJSON',
    terminal: 'the `"done": true` line (it also carries `done_reason` and the token counts)',
    content: {
      text: '`message.content`',
      toolCalls: '`message.tool_calls` (`function.arguments`)',
      finish: '`done_reason`',
    },
  },
  {
    protocol: 'ollama.generate',
    label: 'Ollama /api/generate',
    errors: 'ollama',
    operation: 'text_completion',
    providers: ['ollama'],
    url: 'http://localhost:11434/api/generate',
    streams: 'NDJSON',
    terminal: 'the `"done": true` line (it also carries `done_reason` and the token counts)',
    content: { text: '`response`', finish: '`done_reason`' },
  },
  {
    protocol: 'bedrock.converse',
    label: 'Amazon Bedrock Converse',
    errors: 'bedrock',
    operation: 'chat',
    providers: ['aws.bedrock'],
    url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse',
    streams: 'AWS event-stream (ConverseStream)',
    terminal: 'the `messageStop` event (the stop reason) and the `metadata` event after it',
    content: {
      text: 'the `text` blocks of `output.message.content` (joined; written back as one)',
      toolCalls: '`toolUse` blocks (`input`)',
      finish: '`stopReason` (length ↔ max_tokens, content_filter ↔ content_filtered)',
    },
  },
  {
    protocol: 'bedrock.invoke',
    label: 'Amazon Bedrock InvokeModel',
    errors: 'bedrock',
    operation: 'chat',
    providers: ['aws.bedrock'],
    url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke',
    streams:
      "AWS event-stream (InvokeModelWithResponseStream: `chunk` frames, each the base64 JSON of one event of the family's stream)",
    terminal: 'the last `chunk` (it carries `amazon-bedrock-invocationMetrics`)',
    // Bedrock returns Anthropic's own answer body, and Converse's shape for Nova; the other families' bodies (Llama,
    // Mistral, Titan, Cohere) have no view yet: content faults are reported not applicable on them.
    content: {
      text: 'Anthropic body: `text` blocks; Nova body: the `text` blocks of `output.message.content` (joined; written back as one)',
      toolCalls: '`tool_use` blocks (Anthropic), `toolUse` blocks (Nova)',
      finish: '`stop_reason` (Anthropic) / `stopReason` (Nova)',
    },
  },
  {
    protocol: 'openai.embeddings',
    label: 'OpenAI-compatible embeddings',
    errors: 'openai',
    operation: 'embeddings',
    url: 'https://api.openai.com/v1/embeddings',
  },
  {
    protocol: 'gemini.embeddings',
    label: 'Gemini embeddings',
    errors: 'gemini',
    operation: 'embeddings',
    providers: ['gcp.gemini', 'gcp.vertex_ai'],
    url: 'https://generativelanguage.googleapis.com/v1beta/models/gemini-embedding-001:batchEmbedContents',
  },
  {
    protocol: 'ollama.embeddings',
    label: 'Ollama embeddings',
    errors: 'ollama',
    operation: 'embeddings',
    providers: ['ollama'],
    url: 'http://localhost:11434/api/embed',
  },
];

const BY_PROTOCOL = new Map<Protocol, WireFormat>(WIRE_FORMATS.map((f) => [f.protocol, f]));

export function wireFormat(protocol: Protocol): WireFormat | undefined {
  return BY_PROTOCOL.get(protocol);
}

/** The error-body family of a call's format (OpenAI's for anything not named). */
export function errorShapeOf(protocol: Protocol): ErrorShape {
  return BY_PROTOCOL.get(protocol)?.errors ?? 'openai';
}

/**
 * How a streamed answer of `protocol` is framed, from its content type: SSE whenever the server says
 * text/event-stream; Bedrock's event-stream; else Ollama's NDJSON, or Gemini's JSON array. Undefined: not a stream we can read.
 */
export function streamFraming(protocol: Protocol, contentType: string): AnyStreamFraming | undefined {
  if (contentType.includes('text/event-stream')) return 'sse';
  if ((protocol === 'bedrock.converse' || protocol === 'bedrock.invoke') && isEventStream(contentType))
    return 'eventstream';
  if (protocol === 'ollama.chat' || protocol === 'ollama.generate') return 'ndjson';
  if (protocol === 'gemini.generate_content' && contentType.includes('json')) return 'json-array';
  return undefined;
}

/**
 * Why `fault` has no meaning on a call of `protocol`, or undefined when it has. Message faults act on A2A / MCP
 * requests and channel messages only; transport faults apply to every HTTP call.
 */
export function notApplicableReason(fault: FaultDefinition, protocol: Protocol): string | undefined {
  const format = BY_PROTOCOL.get(protocol);
  if (fault.mode === 'message')
    return protocol === 'a2a' || protocol === 'mcp'
      ? undefined
      : 'message faults act on agent messages (A2A, MCP, channels)';
  if (fault.mode === 'transport') return undefined;
  if (format?.bodiesNotFaulted !== undefined) return format.bodiesNotFaulted;
  if (fault.mode === 'stream') {
    // A2A and MCP streams are SSE without a terminal marker of their own: cut, stall and garble apply.
    if (format === undefined)
      return fault.base === 'stream_drop_done' ? 'its streams have no terminal marker' : undefined;
    if (format.streams === undefined) return 'it never streams';
    if (fault.base === 'stream_drop_done' && format.terminal === undefined)
      return 'its streams have no terminal marker (the last chunk carries the finish reason)';
    return undefined;
  }
  if (format === undefined) return 'it is an agent call, not an LLM answer';
  if (format.content === undefined) return 'it has no text or tool calls';
  if (fault.target === 'tool_calls' && format.content.toolCalls === undefined) return 'it has no tool calls';
  return undefined;
}

/** The formats a rule's selector may meet: judged on operation, provider and url (the rest may match any call). */
function formatsMatching(match: FaultPlan['rules'][number]['match']): WireFormat[] {
  if (match.boundary !== undefined || match.source !== undefined || match.target !== undefined) return []; // message spans only
  const sel = compileSelector({
    ...(match.operation !== undefined ? { operation: match.operation } : {}),
    ...(match.url !== undefined ? { url: match.url } : {}),
  });
  const provider = match.provider === undefined ? undefined : compileSelector({ provider: match.provider });
  return WIRE_FORMATS.filter((f) => {
    if (!sel({ 'gen_ai.operation.name': f.operation, 'url.full': f.url })) return false;
    if (provider === undefined || f.providers === undefined) return true;
    return f.providers.some((p) => provider({ 'gen_ai.provider.name': p }));
  });
}

/** The agent messages message faults act on, as a rule's selector sees their spans. */
const MESSAGE_KINDS: ReadonlyArray<{ operation: string; provider?: string }> = [
  { operation: 'invoke_agent', provider: 'a2a' },
  { operation: 'execute_tool', provider: 'mcp' },
  // In-process channel handoffs: no provider, no URL.
  { operation: HANDOFF_OPERATION },
];

/** Whether a rule's selector may meet an agent message (A2A, MCP, a channel handoff). */
function canMeetMessages(match: FaultPlan['rules'][number]['match']): boolean {
  if (match.boundary !== undefined || match.source !== undefined || match.target !== undefined) return true;
  const operation = match.operation === undefined ? undefined : compileSelector({ operation: match.operation });
  const provider = match.provider === undefined ? undefined : compileSelector({ provider: match.provider });
  return MESSAGE_KINDS.some((k) => {
    if (operation && !operation({ 'gen_ai.operation.name': k.operation })) return false;
    if (provider && (k.provider === undefined || !provider({ 'gen_ai.provider.name': k.provider }))) return false;
    // A2A and MCP servers live at the application's own URLs: any url selector may meet them, never a channel.
    return match.url === undefined || k.provider !== undefined;
  });
}

/**
 * For each rule of a plan: the formats its selector may meet where its fault has no meaning, with the reason. Empty
 * when every rule means something wherever it can match. Two kinds of gap are named only when the rule can act
 * nowhere else: a stream fault meeting a format that never streams (like meeting any JSON answer), and a message
 * fault meeting LLM calls (it acts on the agent messages the same rule also meets).
 */
export function planGaps(plan: FaultPlan): Array<{ rule: string; gaps: Array<{ format: string; reason: string }> }> {
  const counts = new Map<string, number>();
  for (const r of plan.rules) counts.set(r.fault, (counts.get(r.fault) ?? 0) + 1);
  const out: Array<{ rule: string; gaps: Array<{ format: string; reason: string }> }> = [];
  plan.rules.forEach((r, i) => {
    const def = getFault(r.fault);
    if (def === undefined || def.mode === 'transport') return;
    if (def.mode === 'message' && canMeetMessages(r.match)) return;
    const formats = formatsMatching(r.match);
    const streamsSomewhere = formats.some((f) => f.streams !== undefined);
    const gaps = formats.flatMap((f) => {
      // A format faultline cannot rewrite yet is named for a rule aimed at its provider: a `model` or `chat` rule would
      // otherwise announce it in every app, Bedrock or not (the trigger report still lists the calls it met there).
      if (f.bodiesNotFaulted !== undefined && r.match.provider === undefined) return [];
      const reason = notApplicableReason(def, f.protocol);
      if (reason === undefined || (def.mode === 'stream' && f.streams === undefined && streamsSomewhere)) return [];
      return [{ format: f.label, reason }];
    });
    const name = r.name ?? ((counts.get(r.fault) ?? 0) > 1 ? `${r.fault}_${i + 1}` : r.fault);
    if (gaps.length > 0) out.push({ rule: name, gaps });
  });
  return out;
}

/** The one start-up message for a plan's gaps (undefined when it has none). */
export function planGapsMessage(plan: FaultPlan): string | undefined {
  const gaps = planGaps(plan);
  if (gaps.length === 0) return undefined;
  const rules = gaps.map((g) => {
    // One reason per group of formats: "embeddings calls (it never streams)".
    const byReason = new Map<string, string[]>();
    for (const { format, reason } of g.gaps) byReason.set(reason, [...(byReason.get(reason) ?? []), format]);
    return `rule "${g.rule}" has no meaning on ${[...byReason].map(([reason, formats]) => `${formats.join(', ')} (${reason})`).join('; ')}`;
  });
  return `fault plan: ${rules.join('; ')}. Such calls pass through untouched and \`faultline verify\` lists the rule as not applicable there.`;
}

// ------------------------------------------------------------------------------------------------ stream events

const RESPONSES_TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** The Responses event type: the `event:` field, else the payload's `type`. */
function responsesType(event: string | undefined, data: string): string | undefined {
  if (event !== undefined && event !== 'message') return event;
  return /"type"\s*:\s*"([^"]+)"/.exec(data)?.[1];
}

function isTerminal(protocol: Protocol, framing: StreamFraming, data: string, event: string | undefined): boolean {
  if (framing === 'sse') {
    if (protocol === 'openai.chat') return data.trim() === '[DONE]';
    if (protocol === 'anthropic.messages')
      return event === 'message_stop' || /^\s*\{\s*"type"\s*:\s*"message_stop"/.test(data);
    if (protocol === 'openai.responses') return RESPONSES_TERMINAL.has(responsesType(event, data) ?? '');
    return false;
  }
  return framing === 'ndjson' && /"done"\s*:\s*true/.test(data);
}

/** Half of a payload, then U+FFFD: a chunk garbled in transit. */
const half = (payload: string): string => `${payload.slice(0, Math.max(1, Math.floor(payload.length / 2)))}\uFFFD`;

/**
 * One event of a `protocol` stream framed as `framing`: an SSE block with the data it dispatched (undefined for a
 * comment block), or an NDJSON line / JSON-array element with its JSON text (undefined for bare separators).
 */
export function streamEvent(
  protocol: Protocol,
  framing: StreamFraming,
  raw: string,
  data: string | undefined,
  event?: string,
): StreamEvent {
  const isData = data !== undefined;
  return {
    raw,
    isData,
    isTerminal: isData && isTerminal(protocol, framing, data, event),
    corrupt() {
      if (!isData) return raw;
      if (framing === 'sse') return raw.replace(/^data:(.*)$/m, (_m, payload: string) => `data:${half(payload)}`);
      // The element's text sits after its separators (the array's `[` or `,`, line breaks); what follows is kept.
      const at = raw.indexOf(data);
      if (at === -1) return half(raw);
      return raw.slice(0, at) + half(data) + raw.slice(at + data.length);
    },
  };
}

/** ConverseStream's events that end an answer: its stop reason, then its usage. */
const CONVERSE_TERMINAL = new Set(['messageStop', 'metadata']);

/**
 * One event-stream message of a Bedrock stream as a stream event: `raw` is its frame, one latin1 character a byte;
 * `frame` undefined when its CRC or headers are wrong (it passes as it came, a data event no more). Garbling it
 * rewrites the whole frame with valid CRCs, as a server that sent a broken delta would: the delta's text (or a tool
 * input fragment) cut in half and followed by U+FFFD, the JSON kept valid; any other event's JSON cut in half.
 */
export function eventStreamEvent(protocol: Protocol, frame: Buffer, m: EventStreamMessage | undefined): StreamEvent {
  const raw = frame.toString('latin1');
  const kind = m?.headers[':message-type'];
  const isData = kind === 'event' || kind === 'exception';
  const type = m?.headers[':event-type'];
  const chunk =
    m !== undefined && protocol === 'bedrock.invoke' && type === 'chunk' ? invokeChunk(m.payload) : undefined;
  return {
    raw,
    isData,
    isTerminal:
      isData &&
      (protocol === 'bedrock.converse'
        ? typeof type === 'string' && CONVERSE_TERMINAL.has(type)
        : chunk !== undefined && typeof chunk.inner['amazon-bedrock-invocationMetrics'] === 'object'),
    corrupt() {
      if (m === undefined || !isData) return raw;
      let payload: string;
      if (chunk !== undefined) {
        // The family's event is garbled; it goes back into `bytes` as base64, the frame's other fields kept.
        const inner = garbledEvent(JSON.stringify(chunk.inner));
        payload = JSON.stringify({ ...chunk.outer, bytes: Buffer.from(inner, 'utf8').toString('base64') });
      } else payload = garbledEvent(m.payload.toString('utf8'));
      return encodeMessage(stringHeaders(m), Buffer.from(payload, 'utf8')).toString('latin1');
    },
  };
}

/** An InvokeModelWithResponseStream `chunk` payload: its outer JSON and the family event its `bytes` carry. */
function invokeChunk(payload: Buffer): { outer: Record<string, unknown>; inner: Record<string, unknown> } | undefined {
  try {
    const outer = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
    if (typeof outer.bytes !== 'string') return undefined;
    const inner: unknown = JSON.parse(Buffer.from(outer.bytes, 'base64').toString('utf8'));
    return inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? { outer, inner: inner as Record<string, unknown> }
      : undefined;
  } catch {
    return undefined;
  }
}

type Garbled = Record<string, unknown> & {
  delta?: { text?: unknown; toolUse?: { input?: unknown } };
  contentBlockDelta?: { delta?: { text?: unknown } };
  outputs?: Array<{ text?: unknown }>;
};

/**
 * One stream event's JSON with its text garbled (half of it, then U+FFFD), the JSON kept valid: a Converse or
 * Anthropic delta, a Nova `contentBlockDelta`, a Llama `generation`, a Mistral output, a Titan `outputText`, a Cohere
 * `text`. An event with no text has its JSON cut in half.
 */
function garbledEvent(json: string): string {
  try {
    const data = JSON.parse(json) as Garbled;
    const d = data.delta ?? data.contentBlockDelta?.delta;
    const output = Array.isArray(data.outputs) ? data.outputs[0] : undefined;
    if (typeof d?.text === 'string') d.text = half(d.text);
    else if (typeof data.delta?.toolUse?.input === 'string') data.delta.toolUse.input = half(data.delta.toolUse.input);
    else if (typeof output?.text === 'string') output.text = half(output.text);
    else {
      const key = ['generation', 'outputText', 'text'].find((k) => typeof data[k] === 'string');
      if (key === undefined) return half(json);
      data[key] = half(data[key] as string);
    }
    return JSON.stringify(data);
  } catch {
    return half(json);
  }
}

/** A stream event from the text of one SSE block (read with the span layer's parser). */
export function sseStreamEvent(protocol: Protocol, raw: string): StreamEvent {
  let dispatched: SseEvent | undefined;
  const parser = new SseParser(() => {}, { onBlock: (b) => (dispatched = b.event ?? dispatched) });
  parser.push(Buffer.from(raw.endsWith('\n\n') || raw.endsWith('\r\n\r\n') ? raw : `${raw}\n\n`));
  return streamEvent(protocol, 'sse', raw, dispatched?.data, dispatched?.event);
}
