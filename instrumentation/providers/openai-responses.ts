/**
 * OpenAI Responses API (`POST …/responses` on api.openai.com, Azure OpenAI and compatible hosts), JSON and SSE. The
 * answer is a list of output items (message, function_call, custom_tool_call, reasoning, built-in tool calls);
 * streams are typed events (`response.output_item.added`, `response.output_text.delta`,
 * `response.function_call_arguments.delta`, …) ending with `response.completed`, `response.incomplete` or
 * `response.failed`, whose `response` is the whole answer. A stream cut before it is rebuilt from the item events.
 *
 * Finish reason (the Responses API has none): `incomplete_details.reason` of an incomplete answer
 * (`max_output_tokens` → `length`, `content_filter`), `error` for a failed one, `tool_call` for a completed answer
 * with function calls, else `stop`.
 */
import {
  ATTR_FL_REQUEST_PREVIOUS_RESPONSE_ID,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OUTPUT_TYPE,
  ATTR_GEN_AI_REQUEST_TOP_P,
  ATTR_OPENAI_API_TYPE,
  GEN_AI_OPERATION_CHAT,
} from '../semconv';
import type { ProtocolModule, ProtocolStart, ResponseReader } from '../internal-types';
import type { Exchange, GenAiMessage, GenAiPart, LlmRequestSummary, ToolCallSummary, UsageSummary } from '../types';
import { dataUriPart, isObject, openAiTools, parseArguments, str } from './content';
import { finishLlm, type Failure, type LlmAccumulated } from './llm-result';
import { providerName } from './provider-name';
import { lazyLlmStart, llmStartAttributes, num, setNumber } from './request-attributes';
import { BodyReader, eventJson } from './response-body';
import type { SseEvent } from '../../src/wire/sse';
import type { Declared } from './verdicts';

type Json = Record<string, unknown>;

// ------------------------------------------------------------------------------------------------ output items

/** One output item, from a JSON answer or rebuilt from stream events. */
interface OutItem {
  type: string;
  id?: string;
  /** function_call / custom_tool_call: the id the app answers with (`call_id`). */
  callId?: string;
  name?: string;
  /** message: the output_text parts, joined. */
  text: string;
  refusal: string;
  /** function_call arguments / custom_tool_call input, as the model produced them. */
  args: string;
  /** reasoning: summary and reasoning text, joined. */
  reasoning: string;
  /** Built-in tool items are kept whole (their shape is the tool's). */
  raw?: Json;
  /** A built-in tool item the application executes (`execution: "client"`, e.g. tool_search_call). */
  clientExecuted?: boolean;
}

/** Items the application has to act on: function and custom tool calls, and the built-in tools it executes itself. */
const TOOL_ITEMS = new Set([
  'function_call',
  'custom_tool_call',
  'computer_call',
  'local_shell_call',
  'shell_call',
  'apply_patch_call',
  'mcp_approval_request',
]);

function isToolCall(item: OutItem): boolean {
  return TOOL_ITEMS.has(item.type) || item.clientExecuted === true;
}

function outItem(item: Json): OutItem {
  const type = str(item.type) ?? 'message';
  const out: OutItem = { type, text: '', refusal: '', args: '', reasoning: '' };
  if (typeof item.id === 'string') out.id = item.id;
  if (typeof item.call_id === 'string') out.callId = item.call_id;
  if (typeof item.name === 'string') out.name = item.name;
  if (type === 'message' && Array.isArray(item.content)) {
    for (const c of item.content) {
      if (!isObject(c)) continue;
      if (c.type === 'output_text' && typeof c.text === 'string') out.text += c.text;
      else if (c.type === 'refusal' && typeof c.refusal === 'string') out.refusal += c.refusal;
    }
  } else if (type === 'function_call') {
    out.args =
      typeof item.arguments === 'string'
        ? item.arguments
        : item.arguments !== undefined
          ? JSON.stringify(item.arguments)
          : '';
  } else if (type === 'custom_tool_call') {
    out.args = str(item.input) ?? '';
  } else if (type === 'reasoning') {
    out.reasoning = reasoningText(item);
  } else {
    out.raw = item;
    if (item.execution === 'client') out.clientExecuted = true;
    // What a client-executed tool is asked to do: its action, arguments or patch, as JSON text.
    const args = item.arguments ?? item.action ?? item.operation ?? item.input;
    if (args !== undefined) out.args = typeof args === 'string' ? args : JSON.stringify(args);
  }
  return out;
}

/**
 * The tool a built-in item belongs to, named as the request declared it: `tool_search_call` → `tool_search`,
 * `computer_call` → `computer_use_preview` (or `computer`), as the request's `tools` list has it.
 */
function builtinToolName(itemType: string, request: unknown): string {
  const base = itemType.replace(/_call$/, '');
  const tools = isObject(request) && Array.isArray(request.tools) ? request.tools : [];
  for (const t of tools) {
    const type = isObject(t) ? str(t.type) : undefined;
    if (type !== undefined && (type === base || type.startsWith(`${base}_`))) return type;
  }
  return base;
}

function reasoningText(item: Json): string {
  const texts: string[] = [];
  for (const list of [item.summary, item.content]) {
    if (!Array.isArray(list)) continue;
    for (const s of list) if (isObject(s) && typeof s.text === 'string') texts.push(s.text);
  }
  return texts.join('\n');
}

function usageOf(u: unknown): UsageSummary | undefined {
  if (!isObject(u)) return undefined;
  const usage: UsageSummary = {};
  const input = num(u.input_tokens);
  const output = num(u.output_tokens);
  if (input !== undefined) usage.inputTokens = input;
  if (output !== undefined) usage.outputTokens = output;
  const cached = isObject(u.input_tokens_details) ? num(u.input_tokens_details.cached_tokens) : undefined;
  if (cached !== undefined) usage.cacheReadInputTokens = cached;
  const reasoning = isObject(u.output_tokens_details) ? num(u.output_tokens_details.reasoning_tokens) : undefined;
  if (reasoning !== undefined) usage.reasoningOutputTokens = reasoning;
  return input === undefined && output === undefined ? undefined : usage;
}

/** The semconv finish reason of a Responses answer (`status` + `incomplete_details`), undefined while it runs. */
export function responsesFinishReason(response: Json, hasToolCalls: boolean): string | undefined {
  switch (response.status) {
    case 'completed':
      return hasToolCalls ? 'tool_call' : 'stop';
    case 'incomplete': {
      const reason = isObject(response.incomplete_details) ? str(response.incomplete_details.reason) : undefined;
      if (reason === 'max_output_tokens') return 'length';
      return reason ?? 'length';
    }
    case 'failed':
      return 'error';
    case 'cancelled':
      return 'cancelled';
    default:
      return undefined; // queued / in_progress (background mode): no answer yet
  }
}

function errorCode(e: unknown): string | undefined {
  if (!isObject(e)) return undefined;
  return str(e.code) ?? str(e.type);
}

/** The tools and the `text.format` JSON Schema (structured outputs) a Responses request declared. */
function declaredBy(body: unknown): Declared {
  if (!isObject(body)) return {};
  const out: Declared = { tools: openAiTools(body) };
  const format = isObject(body.text) ? body.text.format : undefined;
  if (isObject(format) && format.type === 'json_schema' && isObject(format.schema)) out.responseSchema = format.schema;
  return out;
}

class OpenAiResponsesReader extends BodyReader implements ResponseReader {
  readonly #capture: boolean;
  readonly #acc: LlmAccumulated = { finishReasons: [], text: '', toolCalls: [], done: false };
  /** The answer as the last snapshot event (or the JSON body) gave it. */
  #response: Json | undefined;
  /** Stream: items by output_index, as the item events build them. */
  #items: Map<number, OutItem> | undefined;
  /** The terminal event's (or the JSON body's) output list, which replaces the rebuilt items. */
  #final: OutItem[] | undefined;

  /** The exchange whose request declared what the answer is judged against (verdicts.ts). */
  readonly #exchange: Exchange;

  constructor(capture: boolean, exchange: Exchange) {
    super();
    this.#capture = capture;
    this.#exchange = exchange;
  }

  protected override onEvent(e: SseEvent): void {
    const data = eventJson(e, this.#acc);
    if (data === undefined) return;
    if (!isObject(data)) return;
    const type = str(data.type) ?? e.event;
    switch (type) {
      case 'response.created':
      case 'response.in_progress':
      case 'response.queued':
        if (isObject(data.response)) this.#snapshot(data.response);
        break;
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed':
        if (isObject(data.response)) this.#snapshot(data.response, true);
        this.#acc.done = true;
        break;
      case 'response.output_item.added':
      case 'response.output_item.done':
        if (isObject(data.item)) this.#itemsMap().set(this.#index(data), outItem(data.item));
        break;
      case 'response.output_text.delta':
        this.#item(data).text += str(data.delta) ?? '';
        break;
      case 'response.refusal.delta':
        this.#item(data).refusal += str(data.delta) ?? '';
        break;
      case 'response.function_call_arguments.delta':
      case 'response.custom_tool_call_input.delta':
        this.#item(data).args += str(data.delta) ?? '';
        break;
      case 'response.function_call_arguments.done':
        if (typeof data.arguments === 'string') this.#item(data).args = data.arguments;
        break;
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        this.#item(data).reasoning += str(data.delta) ?? '';
        break;
      case 'error':
        this.#acc.errorCode = errorCode(data.error) ?? str(data.code) ?? this.#acc.errorCode;
        this.#acc.failedInBand = true;
        break;
      default:
        break;
    }
  }

  #itemsMap(): Map<number, OutItem> {
    return (this.#items ??= new Map());
  }

  #index(data: Json): number {
    return typeof data.output_index === 'number' ? data.output_index : this.#itemsMap().size;
  }

  /** The item a delta belongs to (by output_index, else by item_id), created when its `added` event was missed. */
  #item(data: Json): OutItem {
    const items = this.#itemsMap();
    if (typeof data.output_index === 'number') {
      let item = items.get(data.output_index);
      if (!item)
        items.set(data.output_index, (item = { type: 'message', text: '', refusal: '', args: '', reasoning: '' }));
      return item;
    }
    for (const item of items.values()) if (item.id !== undefined && item.id === data.item_id) return item;
    const item: OutItem = { type: 'message', text: '', refusal: '', args: '', reasoning: '' };
    items.set(items.size, item);
    return item;
  }

  #snapshot(response: Json, terminal = false): void {
    this.#response = response;
    const acc = this.#acc;
    if (typeof response.id === 'string') acc.id = response.id;
    if (typeof response.model === 'string') acc.model = response.model;
    if (typeof response.created_at === 'number') acc.created = response.created_at;
    const usage = usageOf(response.usage);
    if (usage) acc.usage = usage;
    if (response.status === 'failed') {
      acc.failedInBand = true;
      acc.errorCode = errorCode(response.error) ?? acc.errorCode;
    }
    if (terminal && Array.isArray(response.output)) this.#final = response.output.filter(isObject).map(outItem);
  }

  #fromJson(value: unknown, preview: string | undefined): void {
    const acc = this.#acc;
    if (preview !== undefined) acc.unparsedBody = preview;
    if (!isObject(value)) return;
    if (isObject(value.error)) acc.errorCode = errorCode(value.error);
    if (value.object !== 'response' && !Array.isArray(value.output)) return;
    this.#snapshot(value, true);
  }

  #outItems(): OutItem[] {
    if (this.#final) return this.#final;
    if (!this.#items) return [];
    return [...this.#items.entries()].sort((x, y) => x[0] - y[0]).map(([, item]) => item);
  }

  #outputMessages(items: OutItem[], finishReason: string | undefined): GenAiMessage[] {
    const parts: GenAiPart[] = [];
    for (const item of items) {
      if (item.type === 'message') {
        if (item.text) parts.push({ type: 'text', content: item.text });
        if (item.refusal) parts.push({ type: 'text', content: item.refusal });
      } else if (isToolCall(item)) {
        parts.push({
          type: 'tool_call',
          id: item.callId ?? item.id ?? null,
          name: item.name ?? '',
          arguments: item.type === 'custom_tool_call' ? item.args : parseArguments(item.args),
        });
      } else if (item.type === 'reasoning') {
        if (item.reasoning) parts.push({ type: 'reasoning', content: item.reasoning });
      } else {
        parts.push({
          type: 'server_tool_call',
          id: item.id ?? null,
          name: item.type,
          server_tool_call: { ...(item.raw ?? {}), type: item.type },
        });
      }
    }
    if (parts.length === 0 && finishReason === undefined) return [];
    return [{ role: 'assistant', parts, finish_reason: finishReason ?? '' }];
  }

  finish(exchange: Exchange, failure: Failure, durationMs: number) {
    const body = this.body;
    if (body.sse) {
      body.text(); // replays an encoded stream through the parser; a no-op otherwise
    } else {
      const { value, preview } = body.json();
      this.#fromJson(value, preview);
    }
    const acc = this.#acc;
    const items = this.#outItems();
    for (const item of items)
      if (item.name === undefined && isToolCall(item)) item.name = builtinToolName(item.type, exchange.request);
    acc.text = items.map((i) => (i.type === 'message' ? i.text || i.refusal : '')).join('');
    acc.toolCalls = items.filter(isToolCall).map(toolCall);
    const finishReason = this.#response ? responsesFinishReason(this.#response, acc.toolCalls.length > 0) : undefined;
    if (finishReason !== undefined) acc.finishReasons = [finishReason];
    return finishLlm(
      body,
      acc,
      this.#capture ? () => this.#outputMessages(items, finishReason) : undefined,
      failure,
      durationMs,
      { declared: declaredBy(this.#exchange.request) },
    );
  }
}

function toolCall(item: OutItem): ToolCallSummary {
  const call: ToolCallSummary = { name: item.name ?? '', arguments: item.args };
  const id = item.callId ?? item.id;
  if (id !== undefined) call.id = id;
  return call;
}

// ------------------------------------------------------------------------------------------------ request

/** Input content parts (input_text, input_image, input_file, output_text, refusal, …) → semconv parts. */
function inputParts(content: unknown): GenAiPart[] {
  if (typeof content === 'string') return [{ type: 'text', content }];
  if (!Array.isArray(content)) return [];
  const parts: GenAiPart[] = [];
  for (const c of content) {
    if (!isObject(c)) continue;
    switch (c.type) {
      case 'input_text':
      case 'output_text':
      case 'text':
        parts.push({ type: 'text', content: str(c.text) ?? '' });
        break;
      case 'refusal':
        parts.push({ type: 'text', content: str(c.refusal) ?? '' });
        break;
      case 'input_image': {
        const url = str(c.image_url);
        if (url) parts.push(dataUriPart(url, 'image'));
        else if (str(c.file_id)) parts.push({ type: 'file', modality: 'image', file_id: c.file_id });
        else parts.push({ type: 'image' });
        break;
      }
      case 'input_file':
        if (str(c.file_id)) parts.push({ type: 'file', modality: 'document', file_id: c.file_id });
        else if (str(c.file_url)) parts.push({ type: 'uri', modality: 'document', uri: c.file_url });
        else if (str(c.file_data)) parts.push(dataUriPart(c.file_data as string, 'document'));
        else parts.push({ type: 'file' });
        break;
      case 'input_audio': {
        const a = isObject(c.input_audio) ? c.input_audio : {};
        parts.push({
          type: 'blob',
          modality: 'audio',
          mime_type: str(a.format) ? `audio/${a.format}` : null,
          content: str(a.data) ?? '',
        });
        break;
      }
      default:
        if (typeof c.type === 'string') parts.push({ type: c.type });
    }
  }
  return parts;
}

const textOf = (parts: GenAiPart[]): string =>
  parts.map((p) => (p.type === 'text' ? (p as { content: string }).content : '')).join('');

/**
 * `instructions` + `input` (a string or a list of items) → semconv input messages, with system/developer messages
 * split out. Consecutive items of one role (a reasoning item and the function calls after it) form one message.
 */
export function responsesInput(body: Json): { messages: GenAiMessage[]; system?: string } {
  const messages: GenAiMessage[] = [];
  const system: string[] = [];
  if (typeof body.instructions === 'string') system.push(body.instructions);
  const push = (role: string, part: GenAiPart): void => {
    const last = messages[messages.length - 1];
    if (last && last.role === role && role !== 'user') last.parts.push(part);
    else messages.push({ role, parts: [part] });
  };
  if (typeof body.input === 'string') messages.push({ role: 'user', parts: [{ type: 'text', content: body.input }] });
  else if (Array.isArray(body.input)) {
    for (const item of body.input) {
      if (!isObject(item)) continue;
      const type = str(item.type) ?? 'message';
      if (type === 'message' || (item.role !== undefined && item.type === undefined)) {
        const role = str(item.role) ?? 'user';
        const parts = inputParts(item.content);
        if (role === 'system' || role === 'developer') system.push(textOf(parts));
        else messages.push({ role, parts });
      } else if (type === 'function_call') {
        push('assistant', {
          type: 'tool_call',
          id: str(item.call_id) ?? str(item.id) ?? null,
          name: str(item.name) ?? '',
          arguments: parseArguments(item.arguments),
        });
      } else if (type === 'custom_tool_call') {
        push('assistant', {
          type: 'tool_call',
          id: str(item.call_id) ?? str(item.id) ?? null,
          name: str(item.name) ?? '',
          arguments: item.input,
        });
      } else if (
        type === 'function_call_output' ||
        type === 'custom_tool_call_output' ||
        type.endsWith('_call_output')
      ) {
        const output = item.output;
        push('tool', {
          type: 'tool_call_response',
          id: str(item.call_id) ?? str(item.id) ?? null,
          response: typeof output === 'string' ? output : (output ?? null),
        });
      } else if (type === 'reasoning') {
        // Encrypted reasoning carries no text: the item is still part of the turn, but adds no part.
        const text = reasoningText(item);
        if (text) push('assistant', { type: 'reasoning', content: text });
      } else if (type === 'item_reference') {
        push('user', { type: 'item_reference', id: str(item.id) ?? null });
      } else {
        // Built-in tool calls replayed as input (web_search_call, mcp_call, …).
        push('assistant', {
          type: 'server_tool_call',
          id: str(item.id) ?? null,
          name: type,
          server_tool_call: { ...item, type },
        });
      }
    }
  }
  return system.length > 0 ? { messages, system: system.join('\n\n') } : { messages };
}

/** How many messages {@link responsesInput} would return, without building them. */
function inputMessageCount(body: Json): number {
  if (typeof body.input === 'string') return 1;
  if (!Array.isArray(body.input)) return 0;
  let n = 0;
  let last: string | undefined;
  for (const item of body.input) {
    if (!isObject(item)) continue;
    const type = str(item.type) ?? 'message';
    let role: string;
    if (type === 'message' || (item.role !== undefined && item.type === undefined)) {
      role = str(item.role) ?? 'user';
      if (role === 'system' || role === 'developer') continue;
      n++;
      last = role;
      continue;
    }
    role = type.endsWith('_output') ? 'tool' : type === 'item_reference' ? 'user' : 'assistant';
    if (role !== last || role === 'user') n++;
    last = role;
  }
  return n;
}

function conversationId(body: Json): string | undefined {
  const c = body.conversation;
  if (typeof c === 'string') return c;
  return isObject(c) ? str(c.id) : undefined;
}

/** The recognised paths: `…/responses` (OpenAI, `/openai/v1/responses` and `/openai/responses` on Azure). */
function isResponsesPath(pathname: string): boolean {
  return pathname.endsWith('/responses');
}

export const openaiResponses: ProtocolModule = {
  protocol: 'openai.responses',

  matches(method: string, url: URL): boolean {
    return method === 'POST' && isResponsesPath(url.pathname);
  },

  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined {
    // Evidence that this is the Responses API and not some other `/responses` endpoint: a model, an input or a
    // stored prompt.
    if (!isObject(body) || (typeof body.model !== 'string' && body.input === undefined && !isObject(body.prompt)))
      return undefined;
    const model = str(body.model);
    const stream = body.stream === true;
    const provider = providerName(url.hostname, 'openai');
    const time = Date.now();
    const tools = openAiTools(body);
    const maxTokens = num(body.max_output_tokens);
    const temperature = num(body.temperature);
    let summary: LlmRequestSummary | undefined;
    const summarise = (): LlmRequestSummary => {
      if (summary !== undefined) return summary;
      const input = responsesInput(body);
      const llmRequest: LlmRequestSummary = {
        provider,
        operation: GEN_AI_OPERATION_CHAT,
        stream,
        messages: input.messages,
        tools,
        time,
      };
      if (model !== undefined) llmRequest.model = model;
      if (maxTokens !== undefined) llmRequest.maxTokens = maxTokens;
      if (temperature !== undefined) llmRequest.temperature = temperature;
      if (input.system !== undefined) llmRequest.systemInstructions = input.system;
      return (summary = llmRequest);
    };
    const head = captureContent
      ? summarise()
      : {
          provider,
          operation: GEN_AI_OPERATION_CHAT,
          stream,
          model,
          maxTokens,
          temperature,
          tools,
          messageCount: inputMessageCount(body),
        };
    const attributes = llmStartAttributes(url, head, headers, captureContent);
    attributes[ATTR_OPENAI_API_TYPE] = 'responses';
    setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_P, body.top_p);
    const conversation = conversationId(body);
    if (conversation !== undefined) attributes[ATTR_GEN_AI_CONVERSATION_ID] = conversation;
    if (typeof body.previous_response_id === 'string')
      attributes[ATTR_FL_REQUEST_PREVIOUS_RESPONSE_ID] = body.previous_response_id;
    const format = isObject(body.text) && isObject(body.text.format) ? body.text.format.type : undefined;
    if (format === 'json_object' || format === 'json_schema') attributes[ATTR_GEN_AI_OUTPUT_TYPE] = 'json';
    else if (format === 'text') attributes[ATTR_GEN_AI_OUTPUT_TYPE] = 'text';

    return lazyLlmStart(GEN_AI_OPERATION_CHAT, provider, model, attributes, stream, summarise);
  },

  reader(exchange: Exchange, captureContent: boolean): ResponseReader {
    return new OpenAiResponsesReader(captureContent, exchange);
  },
};
