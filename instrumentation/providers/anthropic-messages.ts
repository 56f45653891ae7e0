/**
 * Anthropic messages (`POST …/v1/messages`), JSON and SSE (`message_start`, `content_block_*`, `message_delta`,
 * `message_stop`). Usage follows the GenAI conventions: gen_ai.usage.input_tokens includes cached tokens, which
 * Anthropic reports separately.
 */
import { SpanKind } from '@opentelemetry/api';
import {
  ATTR_GEN_AI_REQUEST_STOP_SEQUENCES,
  ATTR_GEN_AI_REQUEST_TOP_K,
  ATTR_GEN_AI_REQUEST_TOP_P,
  GEN_AI_OPERATION_CHAT,
} from '../semconv';
import type { ProtocolModule, ProtocolStart, ResponseReader } from '../internal-types';
import type { Exchange, GenAiMessage, LlmRequestSummary, ToolCallSummary, UsageSummary } from '../types';
import { anthropicInput, anthropicOutputMessage, anthropicSystem, anthropicTools, isObject } from './content';
import { finishLlm, type Failure, type LlmAccumulated } from './llm-result';
import { providerName } from './provider-name';
import { llmStartAttributes, num, setNumber } from './request-attributes';
import { BodyReader, eventJson } from './response-body';
import type { SseEvent } from '../../src/wire/sse';
import { processEnv } from '../../src/env';

type Json = Record<string, unknown>;

/** Raw usage counters, merged across message_start and message_delta. */
interface RawUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheCreation?: number;
}

function mergeUsage(into: RawUsage, u: unknown): void {
  if (!isObject(u)) return;
  const input = num(u.input_tokens);
  const output = num(u.output_tokens);
  const read = num(u.cache_read_input_tokens);
  const creation = num(u.cache_creation_input_tokens);
  if (input !== undefined) into.input = input;
  if (output !== undefined) into.output = output;
  if (read !== undefined) into.cacheRead = read;
  if (creation !== undefined) into.cacheCreation = creation;
}

function toUsage(r: RawUsage): UsageSummary | undefined {
  if (r.input === undefined && r.output === undefined) return undefined;
  const u: UsageSummary = {};
  if (r.input !== undefined) u.inputTokens = r.input + (r.cacheRead ?? 0) + (r.cacheCreation ?? 0);
  if (r.output !== undefined) u.outputTokens = r.output;
  if (r.cacheRead !== undefined) u.cacheReadInputTokens = r.cacheRead;
  if (r.cacheCreation !== undefined) u.cacheCreationInputTokens = r.cacheCreation;
  return u;
}

/** A content block being streamed. */
interface Block {
  type: string;
  id?: string;
  name?: string;
  text: string;
  /** input_json_delta fragments of a tool_use block. */
  json: string;
  input?: unknown;
}

class AnthropicMessagesReader extends BodyReader implements ResponseReader {
  readonly #capture: boolean;
  readonly #acc: LlmAccumulated = { finishReasons: [], text: '', toolCalls: [], done: false };
  readonly #usage: RawUsage = {};
  #blocks: Map<number, Block> | undefined;
  #stopReason: string | undefined;
  #jsonContent: unknown;

  /** The exchange whose request declared the tools the answer is judged against (verdicts.ts), when known. */
  readonly #exchange: Exchange | undefined;

  constructor(capture: boolean, exchange?: Exchange) {
    super();
    this.#capture = capture;
    this.#exchange = exchange;
  }

  protected override onEvent(e: SseEvent): void {
    const data = eventJson(e, this.#acc);
    if (data === undefined) return;
    if (!isObject(data)) return;
    const type = typeof data.type === 'string' ? data.type : e.event;
    const acc = this.#acc;
    switch (type) {
      case 'message_start': {
        const m = isObject(data.message) ? data.message : {};
        if (typeof m.id === 'string') acc.id = m.id;
        if (typeof m.model === 'string') acc.model = m.model;
        mergeUsage(this.#usage, m.usage);
        break;
      }
      case 'content_block_start': {
        const b = isObject(data.content_block) ? data.content_block : {};
        const block: Block = { type: typeof b.type === 'string' ? b.type : 'unknown', text: '', json: '' };
        if (typeof b.id === 'string') block.id = b.id;
        if (typeof b.name === 'string') block.name = b.name;
        if (typeof b.text === 'string') block.text = b.text;
        if (b.input !== undefined) block.input = b.input;
        this.#blocks ??= new Map();
        this.#blocks.set(typeof data.index === 'number' ? data.index : this.#blocks.size, block);
        break;
      }
      case 'content_block_delta': {
        const block = this.#blocks?.get(typeof data.index === 'number' ? data.index : -1);
        const d = isObject(data.delta) ? data.delta : {};
        if (!block) break;
        if (d.type === 'text_delta' && typeof d.text === 'string') block.text += d.text;
        else if (d.type === 'input_json_delta' && typeof d.partial_json === 'string') block.json += d.partial_json;
        else if (d.type === 'thinking_delta' && typeof d.thinking === 'string') block.text += d.thinking;
        break;
      }
      case 'message_delta': {
        const d = isObject(data.delta) ? data.delta : {};
        if (typeof d.stop_reason === 'string') this.#stopReason = d.stop_reason;
        mergeUsage(this.#usage, data.usage);
        break;
      }
      case 'message_stop':
        acc.done = true;
        break;
      case 'error':
        if (isObject(data.error) && typeof data.error.type === 'string') acc.errorCode = data.error.type;
        break;
      default:
        break;
    }
  }

  #fromJson(value: unknown, preview: string | undefined): void {
    const acc = this.#acc;
    if (preview !== undefined) acc.unparsedBody = preview;
    if (!isObject(value)) return;
    if (value.type === 'error' && isObject(value.error) && typeof value.error.type === 'string')
      acc.errorCode = value.error.type;
    if (typeof value.id === 'string') acc.id = value.id;
    if (typeof value.model === 'string') acc.model = value.model;
    if (typeof value.stop_reason === 'string') this.#stopReason = value.stop_reason;
    mergeUsage(this.#usage, value.usage);
    if (!Array.isArray(value.content)) return;
    this.#jsonContent = value.content;
    const texts: string[] = [];
    const calls: ToolCallSummary[] = [];
    for (const b of value.content) {
      if (!isObject(b)) continue;
      if (b.type === 'text' && typeof b.text === 'string') texts.push(b.text);
      else if (b.type === 'tool_use') calls.push(toolCall(b.id, b.name, JSON.stringify(b.input ?? {})));
    }
    acc.text = texts.join('');
    acc.toolCalls = calls;
  }

  #fromStream(): void {
    if (!this.#blocks) return;
    const texts: string[] = [];
    const calls: ToolCallSummary[] = [];
    for (const [, b] of [...this.#blocks.entries()].sort((x, y) => x[0] - y[0])) {
      if (b.type === 'text') texts.push(b.text);
      else if (b.type === 'tool_use') calls.push(toolCall(b.id, b.name, b.json || JSON.stringify(b.input ?? {})));
    }
    this.#acc.text = texts.join('');
    this.#acc.toolCalls = calls;
  }

  #outputMessages(): GenAiMessage[] {
    if (this.#jsonContent !== undefined) return [anthropicOutputMessage(this.#jsonContent, this.#stopReason)];
    if (!this.#blocks) return [];
    const content = [...this.#blocks.entries()]
      .sort((x, y) => x[0] - y[0])
      .map(([, b]) => {
        if (b.type === 'text') return { type: 'text', text: b.text };
        if (b.type === 'thinking') return { type: 'thinking', thinking: b.text };
        if (b.type === 'tool_use')
          return { type: 'tool_use', id: b.id, name: b.name, input: parseJson(b.json) ?? b.input };
        return { type: b.type, id: b.id, name: b.name, input: parseJson(b.json) ?? b.input };
      });
    return [anthropicOutputMessage(content, this.#stopReason)];
  }

  finish(_exchange: Exchange, failure: Failure, durationMs: number) {
    const body = this.body;
    if (body.sse) {
      body.text();
      this.#fromStream();
    } else {
      const { value, preview } = body.json();
      this.#fromJson(value, preview);
    }
    if (this.#stopReason !== undefined) this.#acc.finishReasons = [this.#stopReason];
    const usage = toUsage(this.#usage);
    if (usage) this.#acc.usage = usage;
    const request = this.#exchange?.request;
    return finishLlm(
      body,
      this.#acc,
      this.#capture ? () => this.#outputMessages() : undefined,
      failure,
      durationMs,
      isObject(request) ? { declared: { tools: anthropicTools(request) } } : {},
    );
  }
}

function parseJson(s: string): unknown {
  if (!s) return undefined;
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

function toolCall(id: unknown, name: unknown, args: string): ToolCallSummary {
  const call: ToolCallSummary = { name: typeof name === 'string' ? name : '', arguments: args };
  if (typeof id === 'string') call.id = id;
  return call;
}

export const anthropicMessages: ProtocolModule = {
  protocol: 'anthropic.messages',

  matches(method: string, url: URL): boolean {
    return method === 'POST' && url.pathname.endsWith('/v1/messages');
  },

  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined {
    if (!isObject(body)) return undefined;
    const model = typeof body.model === 'string' ? body.model : undefined;
    return anthropicStart(url, body, headers, captureContent, model, providerName(url.hostname, 'anthropic'));
  },

  reader(exchange: Exchange, captureContent: boolean): ResponseReader {
    return anthropicReader(captureContent, exchange);
  },
};

/** A reader of an Anthropic messages answer (JSON or SSE). */
export function anthropicReader(captureContent: boolean, exchange?: Exchange): ResponseReader {
  return new AnthropicMessagesReader(captureContent, exchange);
}

/**
 * The span start of an Anthropic messages request body: `model` and `provider` are the caller's (the body's model and
 * the host's provider here; the path's model id and `aws.bedrock` for Bedrock's InvokeModel, whose body has none).
 */
export function anthropicStart(
  url: URL,
  b: Json,
  headers: Record<string, string>,
  captureContent: boolean,
  model: string | undefined,
  provider: string,
): ProtocolStart {
  const stream = b.stream === true;
  const llmRequest: LlmRequestSummary = {
    provider,
    operation: GEN_AI_OPERATION_CHAT,
    stream,
    messages: anthropicInput(b.messages),
    tools: anthropicTools(b),
    time: Date.now(),
  };
  if (model !== undefined) llmRequest.model = model;
  const maxTokens = num(b.max_tokens);
  if (maxTokens !== undefined) llmRequest.maxTokens = maxTokens;
  const temperature = num(b.temperature);
  if (temperature !== undefined) llmRequest.temperature = temperature;
  const system = anthropicSystem(b.system);
  if (system !== undefined) llmRequest.systemInstructions = system;

  const attributes = llmStartAttributes(url, llmRequest, headers, captureContent);
  setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_P, b.top_p);
  setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_K, b.top_k);
  if (Array.isArray(b.stop_sequences)) {
    attributes[ATTR_GEN_AI_REQUEST_STOP_SEQUENCES] = b.stop_sequences.filter((s): s is string => typeof s === 'string');
  }
  return {
    name: model !== undefined ? `${GEN_AI_OPERATION_CHAT} ${model}` : GEN_AI_OPERATION_CHAT,
    kind: SpanKind.CLIENT,
    attributes,
    stream,
    operation: GEN_AI_OPERATION_CHAT,
    provider: llmRequest.provider,
    llmRequest,
  };
}

/**
 * @anthropic-ai/sdk ≥ 0.134 emits its own call span (`anthropic.messages.create`, scope `com.anthropic.sdk.typescript`,
 * with gen_ai usage but its finish reason under `anthropic.message.stop_reason`) whenever a tracer provider is
 * registered, so each call would have two GenAI spans: usage counted twice, and a chat-like span without a finish
 * reason in every trace. Under a tracer provider that faultline registered, the application never asked for those
 * spans and would not get them without faultline: they are turned off (`ANTHROPIC_OPEN_TELEMETRY=false`, which the
 * SDK reads when a client is constructed) unless the application set the variable itself. An application that
 * registered its own provider keeps the SDK's spans, as it has them without faultline.
 */
export function oneSpanPerAnthropicCall(env: NodeJS.ProcessEnv = processEnv()): void {
  if (env.ANTHROPIC_OPEN_TELEMETRY === undefined) env.ANTHROPIC_OPEN_TELEMETRY = 'false';
}
