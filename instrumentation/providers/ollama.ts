/**
 * Ollama's native API: `POST …/api/chat` (`chat`) and `POST …/api/generate` (`text_completion`), JSON and NDJSON
 * streams (one JSON object per line; Ollama streams unless the request says `"stream": false`). The last object has
 * `done: true`, `done_reason` (stop, length, load, unload) and the token counts: `prompt_eval_count` (input) and
 * `eval_count` (output). Ollama gives no response id. A finish of `stop` with tool calls is `tool_call`.
 */
import { SpanKind } from '@opentelemetry/api';
import {
  ATTR_GEN_AI_OUTPUT_TYPE,
  ATTR_GEN_AI_REQUEST_SEED,
  ATTR_GEN_AI_REQUEST_TOP_K,
  ATTR_GEN_AI_REQUEST_TOP_P,
  GEN_AI_OPERATION_CHAT,
  GEN_AI_OPERATION_TEXT_COMPLETION,
} from '../semconv';
import type { ProtocolModule, ProtocolStart, ResponseReader } from '../internal-types';
import type {
  Exchange,
  GenAiMessage,
  GenAiPart,
  LlmRequestSummary,
  Protocol,
  ToolCallSummary,
  UsageSummary,
} from '../types';
import { isObject, openAiTools, parseArguments, str } from './content';
import { jsonStreamElements } from '../../src/wire/json-stream';
import { finishLlm, type Failure, type LlmAccumulated } from './llm-result';
import { providerName } from './provider-name';
import { llmStartAttributes, num, setNumber, setStopSequences } from './request-attributes';
import { BodyReader } from './response-body';

type Json = Record<string, unknown>;

/** A done_reason as a semconv finish reason. */
export function ollamaFinishReason(reason: string, calledTools: boolean): string {
  return reason === 'stop' && calledTools ? 'tool_call' : reason;
}

function imageParts(images: unknown): GenAiPart[] {
  if (!Array.isArray(images)) return [];
  return images
    .filter((i): i is string => typeof i === 'string')
    .map((content) => ({ type: 'blob', modality: 'image', mime_type: null, content }));
}

function toolCallParts(calls: unknown): GenAiPart[] {
  if (!Array.isArray(calls)) return [];
  const parts: GenAiPart[] = [];
  for (const tc of calls) {
    if (!isObject(tc)) continue;
    const fn = isObject(tc.function) ? tc.function : {};
    parts.push({
      type: 'tool_call',
      id: str(tc.id) ?? null,
      name: str(fn.name) ?? '',
      arguments: parseArguments(fn.arguments),
    });
  }
  return parts;
}

/** A chat message (request or response) → its semconv parts. */
function messageParts(m: Json): GenAiPart[] {
  const parts: GenAiPart[] = [];
  if (typeof m.thinking === 'string' && m.thinking !== '') parts.push({ type: 'reasoning', content: m.thinking });
  if (typeof m.content === 'string' && (m.content !== '' || !Array.isArray(m.tool_calls)))
    parts.push({ type: 'text', content: m.content });
  parts.push(...imageParts(m.images), ...toolCallParts(m.tool_calls));
  return parts;
}

/** `/api/chat` messages → semconv input messages, with system messages split out. */
export function ollamaInput(messages: unknown): { messages: GenAiMessage[]; system?: string } {
  const out: GenAiMessage[] = [];
  const system: string[] = [];
  if (!Array.isArray(messages)) return { messages: out };
  for (const m of messages) {
    if (!isObject(m)) continue;
    const role = str(m.role) ?? 'user';
    if (role === 'system') {
      system.push(str(m.content) ?? '');
    } else if (role === 'tool') {
      const msg: GenAiMessage = {
        role: 'tool',
        parts: [{ type: 'tool_call_response', id: str(m.tool_call_id) ?? null, response: m.content ?? null }],
      };
      if (typeof m.tool_name === 'string') msg.name = m.tool_name;
      out.push(msg);
    } else {
      out.push({ role, parts: messageParts(m) });
    }
  }
  return system.length > 0 ? { messages: out, system: system.join('\n\n') } : { messages: out };
}

function toolCalls(calls: unknown): ToolCallSummary[] {
  if (!Array.isArray(calls)) return [];
  const out: ToolCallSummary[] = [];
  for (const tc of calls) {
    if (!isObject(tc)) continue;
    const fn = isObject(tc.function) ? tc.function : {};
    const args = fn.arguments;
    const call: ToolCallSummary = {
      name: str(fn.name) ?? '',
      arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
    };
    if (typeof tc.id === 'string') call.id = tc.id;
    out.push(call);
  }
  return out;
}

class OllamaReader extends BodyReader implements ResponseReader {
  readonly #capture: boolean;
  readonly #chat: boolean;
  readonly #acc: LlmAccumulated = { finishReasons: [], text: '', toolCalls: [], done: false };
  #thinking = '';
  #rawCalls: unknown[] = [];
  #doneReason: string | undefined;

  constructor(capture: boolean, chat: boolean) {
    super();
    this.#capture = capture;
    this.#chat = chat;
    // NDJSON is read at the end, from the body's text: no SSE events to handle.
  }

  /** One response object: the whole answer, or one line of a stream (its content appended). */
  #object(value: unknown, streamed: boolean): void {
    if (!isObject(value)) return;
    const acc = this.#acc;
    if (typeof value.error === 'string') {
      acc.errorCode = value.error;
      if (streamed) acc.failedInBand = true;
      return;
    }
    if (typeof value.model === 'string') acc.model = value.model;
    if (acc.created === undefined && typeof value.created_at === 'string') {
      const t = Date.parse(value.created_at);
      if (Number.isFinite(t)) acc.created = Math.floor(t / 1000);
    }
    const m = this.#chat ? (isObject(value.message) ? value.message : {}) : value;
    const text = this.#chat ? m.content : m.response;
    if (typeof text === 'string') acc.text += text;
    if (typeof m.thinking === 'string') this.#thinking += m.thinking;
    if (Array.isArray(m.tool_calls)) this.#rawCalls.push(...m.tool_calls);
    if (value.done === true) {
      acc.done = true;
      if (typeof value.done_reason === 'string') this.#doneReason = value.done_reason;
      const usage: UsageSummary = {};
      const input = num(value.prompt_eval_count);
      const output = num(value.eval_count);
      if (input !== undefined) usage.inputTokens = input;
      if (output !== undefined) usage.outputTokens = output;
      if (input !== undefined || output !== undefined) acc.usage = usage;
    }
  }

  #outputMessages(finish: string | undefined): GenAiMessage[] {
    const m: Json = { content: this.#acc.text, thinking: this.#thinking };
    if (this.#rawCalls.length > 0) m.tool_calls = this.#rawCalls;
    return [{ role: 'assistant', parts: messageParts(m), finish_reason: finish ?? '' }];
  }

  finish(_exchange: Exchange, failure: Failure, durationMs: number) {
    const body = this.body;
    const acc = this.#acc;
    const text = body.text() ?? '';
    // A stream is what the content type says (application/x-ndjson), or several lines of JSON.
    const streamed = body.status < 400 && (body.contentType?.includes('ndjson') === true || /\}\s*\n\s*\{/.test(text));
    if (streamed) {
      const { elements, malformed } = jsonStreamElements(text, 'ndjson');
      for (const el of elements) this.#object(el, true);
      if (malformed > 0) acc.malformedEvents = malformed;
    } else if (text.length > 0) {
      try {
        this.#object(JSON.parse(text), false);
      } catch {
        acc.unparsedBody = text.slice(0, 4096);
      }
    }
    acc.toolCalls = toolCalls(this.#rawCalls);
    const finish =
      this.#doneReason !== undefined ? ollamaFinishReason(this.#doneReason, acc.toolCalls.length > 0) : undefined;
    if (finish !== undefined) acc.finishReasons = [finish];
    const capture = this.#capture && (acc.done || acc.text !== '' || acc.toolCalls.length > 0);
    return finishLlm(body, acc, capture ? () => this.#outputMessages(finish) : undefined, failure, durationMs, {
      stream: streamed,
    });
  }
}

function ollamaModule(
  protocol: Extract<Protocol, 'ollama.chat' | 'ollama.generate'>,
  path: string,
  operation: string,
): ProtocolModule {
  const chat = protocol === 'ollama.chat';
  return {
    protocol,

    matches(method: string, url: URL): boolean {
      return method === 'POST' && url.pathname.endsWith(path);
    },

    start(
      url: URL,
      body: unknown,
      headers: Record<string, string>,
      captureContent: boolean,
    ): ProtocolStart | undefined {
      if (!isObject(body) || typeof body.model !== 'string') return undefined;
      if (chat && body.messages !== undefined && !Array.isArray(body.messages)) return undefined;
      if (!chat && body.prompt !== undefined && typeof body.prompt !== 'string') return undefined;
      const model = body.model;
      // Ollama streams unless told not to.
      const stream = body.stream !== false;
      const provider = providerName(url.hostname, 'ollama');
      const options = isObject(body.options) ? body.options : {};
      const input = chat
        ? ollamaInput(body.messages)
        : {
            messages:
              typeof body.prompt === 'string'
                ? [{ role: 'user', parts: [{ type: 'text', content: body.prompt }] }]
                : [],
          };
      const llmRequest: LlmRequestSummary = {
        provider,
        operation,
        model,
        stream,
        messages: input.messages,
        tools: openAiTools(body),
        time: Date.now(),
      };
      const maxTokens = num(options.num_predict);
      if (maxTokens !== undefined && maxTokens >= 0) llmRequest.maxTokens = maxTokens;
      const temperature = num(options.temperature);
      if (temperature !== undefined) llmRequest.temperature = temperature;
      const system = chat ? input.system : str(body.system);
      if (system !== undefined) llmRequest.systemInstructions = system;

      const attributes = llmStartAttributes(url, llmRequest, headers, captureContent);
      setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_P, options.top_p);
      setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_K, options.top_k);
      setNumber(attributes, ATTR_GEN_AI_REQUEST_SEED, options.seed);
      setStopSequences(attributes, options.stop);
      if (body.format === 'json' || isObject(body.format)) attributes[ATTR_GEN_AI_OUTPUT_TYPE] = 'json';
      return {
        name: `${operation} ${model}`,
        kind: SpanKind.CLIENT,
        attributes,
        stream,
        operation,
        provider,
        llmRequest,
      };
    },

    reader(_exchange: Exchange, captureContent: boolean): ResponseReader {
      return new OllamaReader(captureContent, chat);
    },
  };
}

export const ollamaChat: ProtocolModule = ollamaModule('ollama.chat', '/api/chat', GEN_AI_OPERATION_CHAT);
export const ollamaGenerate: ProtocolModule = ollamaModule(
  'ollama.generate',
  '/api/generate',
  GEN_AI_OPERATION_TEXT_COMPLETION,
);
