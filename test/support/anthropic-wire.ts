/**
 * Anthropic Messages answers written by the project, in the wire format of Anthropic's API reference: a `message`
 * object and its SSE stream (`message_start`, per content block `content_block_start` / `content_block_delta` … /
 * `content_block_stop`, `message_delta` with the stop reason and output tokens, `message_stop`), and the error body.
 * Built from what the answer says (text, tool uses, model, usage), so a test states the answer it needs.
 *
 *   message / messageStream   POST /v1/messages, JSON or `stream: true`
 *   anthropicError            the `{"type":"error","error":{…}}` body of a 4xx/5xx answer (or an SSE `error` event)
 *
 * Each call makes fresh ids (`msg_…`, `toolu_…`), as a live provider does.
 */
import { freshId, jsonPieces, roughTokens, textPieces } from './wire-text';

export interface ToolUseSpec {
  name: string;
  /** The tool's input, as the model writes it. */
  input: Record<string, unknown>;
}

export interface MessageSpec {
  /** The model the answer names (as Anthropic returns it, e.g. claude-sonnet-5-5). */
  model: string;
  /** The text block (written before the tool uses when both are given). */
  text?: string;
  toolUses?: ToolUseSpec[];
  /** A thinking block before the rest (extended thinking). */
  thinking?: string;
  /** Default: `tool_use` with tool uses, else `end_turn`. */
  stopReason?: 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal';
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheCreationTokens?: number;
}

type Block = Record<string, unknown> & { type: string };

function blocks(m: MessageSpec): Block[] {
  const out: Block[] = [];
  if (m.thinking !== undefined) out.push({ type: 'thinking', thinking: m.thinking, signature: freshId('Ep', 40) });
  if (m.text !== undefined) out.push({ type: 'text', text: m.text });
  for (const t of m.toolUses ?? [])
    out.push({ type: 'tool_use', id: freshId('toolu_01'), name: t.name, input: t.input });
  return out;
}

const stopOf = (m: MessageSpec) => m.stopReason ?? (m.toolUses?.length ? 'tool_use' : 'end_turn');

function usage(m: MessageSpec, output: number): Record<string, unknown> {
  return {
    input_tokens: m.inputTokens ?? 30,
    cache_creation_input_tokens: m.cacheCreationTokens ?? 0,
    cache_read_input_tokens: m.cacheReadTokens ?? 0,
    output_tokens: output,
    service_tier: 'standard',
  };
}

const outputOf = (m: MessageSpec) => m.outputTokens ?? roughTokens((m.text ?? '') + JSON.stringify(m.toolUses ?? ''));

/** A `message` object (the JSON body). */
export function message(m: MessageSpec): Record<string, unknown> {
  return {
    id: freshId('msg_01'),
    type: 'message',
    role: 'assistant',
    model: m.model,
    content: blocks(m),
    stop_reason: stopOf(m),
    stop_sequence: null,
    usage: usage(m, outputOf(m)),
  };
}

const event = (data: { type: string }) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * The SSE events of a streamed message, one string per event: `message_start` (empty content, output tokens so far),
 * a `ping`, each block opened empty, filled by `text_delta` / `input_json_delta` / `thinking_delta` (+
 * `signature_delta`) pieces and closed, then `message_delta` (stop reason, output tokens) and `message_stop`.
 */
export function messageStream(m: MessageSpec): string[] {
  const all = blocks(m);
  const start = {
    id: freshId('msg_01'),
    type: 'message',
    role: 'assistant',
    model: m.model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: usage(m, 1),
  };
  const events = [event({ type: 'message_start', message: start } as { type: string }), event({ type: 'ping' })];
  all.forEach((b, index) => {
    const ev = (data: Record<string, unknown>) => events.push(event({ ...data, index } as unknown as { type: string }));
    if (b.type === 'text') {
      ev({ type: 'content_block_start', content_block: { type: 'text', text: '' } });
      for (const text of textPieces(b.text as string))
        ev({ type: 'content_block_delta', delta: { type: 'text_delta', text } });
    } else if (b.type === 'thinking') {
      ev({ type: 'content_block_start', content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const thinking of textPieces(b.thinking as string))
        ev({ type: 'content_block_delta', delta: { type: 'thinking_delta', thinking } });
      ev({ type: 'content_block_delta', delta: { type: 'signature_delta', signature: b.signature } });
    } else {
      ev({ type: 'content_block_start', content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
      for (const partial_json of jsonPieces(JSON.stringify(b.input)))
        ev({ type: 'content_block_delta', delta: { type: 'input_json_delta', partial_json } });
    }
    ev({ type: 'content_block_stop' });
  });
  const u = usage(m, outputOf(m));
  events.push(
    event({
      type: 'message_delta',
      delta: { stop_reason: stopOf(m), stop_sequence: null },
      usage: { output_tokens: u.output_tokens },
    } as { type: string }),
  );
  events.push(event({ type: 'message_stop' }));
  return events;
}

/** The error `type` Anthropic's API reference gives for each status. */
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

/** Anthropic's error body: `{"type":"error","error":{"type","message"},"request_id"}`. */
export function anthropicError(status: number, message: string): Record<string, unknown> {
  return {
    type: 'error',
    error: { type: ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message },
    request_id: freshId('req_011'),
  };
}

/** The same error sent mid-stream, as an SSE `error` event (an overload after the stream has begun). */
export function anthropicErrorEvent(status: number, message: string): string {
  const { type: _type, request_id: _id, ...rest } = anthropicError(status, message);
  return event({ type: 'error', ...rest } as { type: string });
}
