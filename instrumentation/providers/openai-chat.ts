/**
 * OpenAI-compatible chat completions (`POST …/chat/completions` on any host: OpenAI, Azure, vLLM, Ollama, LiteLLM,
 * …), JSON and SSE. Streams are read delta by delta, including parallel tool-call deltas (merged by `index`) and the
 * optional usage chunk of `stream_options.include_usage`. Most chunks of a stream only extend a choice's text or a
 * tool call's arguments: those are read with a bounded scan of the event's data (`plainDelta`) instead of a JSON.parse
 * of the whole chunk; every other chunk (the first, the finish, usage, errors, new tool calls) is parsed.
 */
import {
  ATTR_GEN_AI_OUTPUT_TYPE,
  ATTR_GEN_AI_REQUEST_CHOICE_COUNT,
  ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY,
  ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY,
  ATTR_GEN_AI_REQUEST_SEED,
  ATTR_GEN_AI_REQUEST_TOP_P,
  GEN_AI_OPERATION_CHAT,
} from '../semconv';
import type { ProtocolModule, ProtocolStart, ResponseReader } from '../internal-types';
import type { Exchange, GenAiMessage, GenAiPart, LlmRequestSummary, ToolCallSummary, UsageSummary } from '../types';
import { isObject, openAiInput, openAiMessageCount, openAiOutputMessage, openAiTools, parseArguments } from './content';
import { finishLlm, type Failure, type LlmAccumulated } from './llm-result';
import { providerName } from './provider-name';
import { lazyLlmStart, llmStartAttributes, num, setNumber, setStopSequences } from './request-attributes';
import { BodyReader, eventJson, jsonStringAt } from './response-body';
import type { SseEvent } from '../../src/wire/sse';
import type { Declared } from './verdicts';

type Json = Record<string, unknown>;

function usageOf(u: unknown): UsageSummary | undefined {
  if (!isObject(u)) return undefined;
  const usage: UsageSummary = {};
  const input = num(u.prompt_tokens);
  const output = num(u.completion_tokens);
  if (input !== undefined) usage.inputTokens = input;
  if (output !== undefined) usage.outputTokens = output;
  const cached = isObject(u.prompt_tokens_details) ? num(u.prompt_tokens_details.cached_tokens) : undefined;
  if (cached !== undefined) usage.cacheReadInputTokens = cached;
  const reasoning = isObject(u.completion_tokens_details)
    ? num(u.completion_tokens_details.reasoning_tokens)
    : undefined;
  if (reasoning !== undefined) usage.reasoningOutputTokens = reasoning;
  return usage;
}

function azureDeployment(url: URL): string | undefined {
  const m = /\/deployments\/([^/]+)\//.exec(url.pathname);
  return m ? decodeURIComponent(m[1] as string) : undefined;
}

/** What a chunk that only extends a choice's text (or, with `tool`, a tool call's arguments) adds. */
interface PlainDelta {
  choice: number;
  tool: number | undefined;
  text: string;
}

const CHOICES = '"choices":[{"index":';
const TEXT = ',"delta":{"content":"';
const TOOL_ARGS = ['"tool_calls":[{"index":', ',"function":{"arguments":"'] as const;
/** What may follow a plain delta in its choice: nothing the reader keeps (a null finish reason, null logprobs). */
const CHOICE_TAILS = [
  ',"logprobs":null,"finish_reason":null}]',
  ',"finish_reason":null}]',
  ',"finish_reason":null,"logprobs":null}]',
];

/** A JSON non-negative integer at `at` and the index after it, or undefined. */
function indexAt(data: string, at: number): [number, number] | undefined {
  let i = at;
  while (i < data.length && data.charCodeAt(i) >= 48 && data.charCodeAt(i) <= 57) i++;
  if (i === at || i - at > 6 || (i - at > 1 && data.charCodeAt(at) === 48)) return undefined;
  return [Number(data.slice(at, i)), i];
}

/** Whether every `"usage":` of `text` (searched backwards from `before`) is null: a chunk's null usage is ignored. */
function usageNullBefore(text: string, before: number): boolean {
  for (let u = text.lastIndexOf('"usage":', before); u !== -1; u = u === 0 ? -1 : text.lastIndexOf('"usage":', u - 1)) {
    if (!text.startsWith('null', u + 8)) return false;
  }
  return true;
}

/** A field the reader keeps from the first chunk that has it, and has not got yet, is named in `text` before `before`. */
function firstFieldBefore(text: string, before: number, acc: LlmAccumulated): boolean {
  return (
    (acc.id === undefined && text.lastIndexOf('"id":', before) !== -1) ||
    (acc.model === undefined && text.lastIndexOf('"model":', before) !== -1) ||
    (acc.created === undefined && text.lastIndexOf('"created":', before) !== -1)
  );
}

/**
 * The text a chunk adds, when the chunk is in the compact shape OpenAI sends and carries nothing else the reader keeps:
 * one choice, with only scalar fields before and after it at the top level (so it is the top level's `choices`, and
 * the only one, and no error object is there), whose delta is only `content` or only one tool call's `arguments` (no
 * id or name), with a null finish reason; no usage but null; and no id, model or created the reader does not have
 * yet. Anything else, undefined: the chunk is parsed whole. What it returns is what JSON.parse of the chunk would have
 * added. Each test searches the part of the chunk it is about, once: string search costs about as much per character
 * as JSON.parse does.
 */
function plainDelta(data: string, acc: LlmAccumulated): PlainDelta | undefined {
  if (data.charCodeAt(0) !== 123 || data.charCodeAt(data.length - 1) !== 125) return undefined;
  const c = data.indexOf(CHOICES);
  // Only scalars before the choices: the first object opened after the chunk's own is the first choice, no array before.
  if (c === -1 || data.indexOf('{', 1) !== c + 11 || data.indexOf('[') !== c + 10) return undefined;
  if (!usageNullBefore(data, c) || firstFieldBefore(data, c, acc)) return undefined;
  const choice = indexAt(data, c + CHOICES.length);
  if (choice === undefined) return undefined;
  let at = choice[1];
  let tool: number | undefined;
  let close: string;
  if (data.startsWith(TEXT, at)) {
    at += TEXT.length - 1;
    close = '}';
  } else {
    if (!data.startsWith(',"delta":{', at) || !data.startsWith(TOOL_ARGS[0], at + 10)) return undefined;
    const t = indexAt(data, at + 10 + TOOL_ARGS[0].length);
    if (t === undefined || !data.startsWith(TOOL_ARGS[1], t[1])) return undefined;
    tool = t[0];
    at = t[1] + TOOL_ARGS[1].length - 1;
    close = '}}]}';
  }
  const text = jsonStringAt(data, at);
  if (text === undefined || !data.startsWith(close, text.end)) return undefined;
  const tail = text.end + close.length;
  const choiceTail = CHOICE_TAILS.find((t) => data.startsWith(t, tail));
  if (choiceTail === undefined) return undefined;
  // Only scalars after the choices, and none of them a second `choices` (JSON.parse keeps the last).
  const rest = data.slice(tail + choiceTail.length);
  if (rest.includes('{') || rest.includes('[') || rest.includes('"choices":')) return undefined;
  if (!usageNullBefore(rest, rest.length) || firstFieldBefore(rest, rest.length, acc)) return undefined;
  return { choice: choice[0], tool, text: text.value };
}

/** Per-choice state of a stream. */
interface ChoiceState {
  text: string;
  refusal: string;
  finish?: string;
  /** Tool calls by delta `index` (parallel calls interleave their argument fragments). */
  tools: Map<number, { id?: string; name: string; args: string }>;
}

class OpenAiChatReader extends BodyReader implements ResponseReader {
  readonly #capture: boolean;
  readonly #acc: LlmAccumulated = { finishReasons: [], text: '', toolCalls: [], done: false };
  #choices: Map<number, ChoiceState> | undefined;
  /** JSON response choices (kept for output messages). */
  #jsonChoices: unknown[] | undefined;

  /** The exchange's request, read when the answer is judged (a streamed request body is complete by then). */
  readonly #exchange: Exchange;

  constructor(capture: boolean, exchange: Exchange) {
    super();
    this.#capture = capture;
    this.#exchange = exchange;
  }

  // One `data:` event of the stream: a chat.completion.chunk, `[DONE]`, or an error object.
  protected override onEvent(e: SseEvent): void {
    if (e.data === '[DONE]') {
      this.#acc.done = true;
      return;
    }
    const plain = plainDelta(e.data, this.#acc);
    if (plain !== undefined) {
      const st = this.#choice(plain.choice);
      if (plain.tool === undefined) st.text += plain.text;
      else {
        let t = st.tools.get(plain.tool);
        if (!t) st.tools.set(plain.tool, (t = { name: '', args: '' }));
        t.args += plain.text;
      }
      return;
    }
    const chunk = eventJson(e, this.#acc);
    if (chunk === undefined) return;
    if (!isObject(chunk)) return;
    const acc = this.#acc;
    if (isObject(chunk.error)) acc.errorCode = errorCode(chunk.error);
    if (typeof chunk.id === 'string' && acc.id === undefined) acc.id = chunk.id;
    if (typeof chunk.model === 'string' && acc.model === undefined) acc.model = chunk.model;
    if (typeof chunk.created === 'number' && acc.created === undefined) acc.created = chunk.created;
    if (chunk.usage != null) acc.usage = usageOf(chunk.usage);
    if (!Array.isArray(chunk.choices)) return;
    for (const c of chunk.choices) {
      if (!isObject(c)) continue;
      const st = this.#choice(typeof c.index === 'number' ? c.index : 0);
      if (typeof c.finish_reason === 'string') st.finish = c.finish_reason;
      const d = c.delta;
      if (!isObject(d)) continue;
      if (typeof d.content === 'string') st.text += d.content;
      if (typeof d.refusal === 'string') st.refusal += d.refusal;
      if (Array.isArray(d.tool_calls)) {
        for (const tc of d.tool_calls) {
          if (!isObject(tc)) continue;
          const ti = typeof tc.index === 'number' ? tc.index : st.tools.size;
          let t = st.tools.get(ti);
          if (!t) st.tools.set(ti, (t = { name: '', args: '' }));
          if (typeof tc.id === 'string') t.id = tc.id;
          const fn = isObject(tc.function) ? tc.function : {};
          if (typeof fn.name === 'string') t.name += fn.name;
          if (typeof fn.arguments === 'string') t.args += fn.arguments;
        }
      }
      if (isObject(d.function_call)) {
        let t = st.tools.get(-1);
        if (!t) st.tools.set(-1, (t = { name: '', args: '' }));
        if (typeof d.function_call.name === 'string') t.name += d.function_call.name;
        if (typeof d.function_call.arguments === 'string') t.args += d.function_call.arguments;
      }
    }
  }

  #choice(index: number): ChoiceState {
    this.#choices ??= new Map();
    let st = this.#choices.get(index);
    if (!st) this.#choices.set(index, (st = { text: '', refusal: '', tools: new Map() }));
    return st;
  }

  #fromJson(value: unknown, preview: string | undefined): void {
    const acc = this.#acc;
    if (preview !== undefined) acc.unparsedBody = preview;
    if (!isObject(value)) return;
    if (isObject(value.error)) acc.errorCode = errorCode(value.error);
    if (typeof value.id === 'string') acc.id = value.id;
    if (typeof value.model === 'string') acc.model = value.model;
    if (typeof value.created === 'number') acc.created = value.created;
    const usage = usageOf(value.usage);
    if (usage) acc.usage = usage;
    if (!Array.isArray(value.choices)) return;
    this.#jsonChoices = value.choices;
    value.choices.forEach((c, i) => {
      if (!isObject(c)) return;
      if (typeof c.finish_reason === 'string') acc.finishReasons.push(c.finish_reason);
      if (i !== 0 || !isObject(c.message)) return;
      const m = c.message as Json;
      if (typeof m.content === 'string') acc.text = m.content;
      else if (typeof m.refusal === 'string') acc.text = m.refusal;
      acc.toolCalls = jsonToolCalls(m);
    });
  }

  #fromStream(): void {
    const acc = this.#acc;
    if (!this.#choices) return;
    const sorted = [...this.#choices.entries()].sort((x, y) => x[0] - y[0]);
    for (const [, st] of sorted) if (st.finish !== undefined) acc.finishReasons.push(st.finish);
    const first = sorted[0]?.[1];
    if (first) {
      acc.text = first.text || first.refusal;
      acc.toolCalls = streamToolCalls(first);
    }
  }

  #outputMessages(): GenAiMessage[] {
    if (this.#jsonChoices) {
      return this.#jsonChoices
        .filter(isObject)
        .map((c) => openAiOutputMessage(c.message, typeof c.finish_reason === 'string' ? c.finish_reason : undefined));
    }
    if (!this.#choices) return [];
    return [...this.#choices.entries()]
      .sort((x, y) => x[0] - y[0])
      .map(([, st]) => {
        const parts: GenAiPart[] = [];
        if (st.text) parts.push({ type: 'text', content: st.text });
        if (st.refusal) parts.push({ type: 'text', content: st.refusal });
        for (const t of streamToolCalls(st))
          parts.push({ type: 'tool_call', id: t.id ?? null, name: t.name, arguments: parseArguments(t.arguments) });
        return { role: 'assistant', parts, finish_reason: st.finish ?? '' };
      });
  }

  finish(_exchange: Exchange, failure: Failure, durationMs: number) {
    const body = this.body;
    if (body.sse) {
      body.text(); // replays an encoded stream through the parser; a no-op otherwise
      this.#fromStream();
    } else {
      const { value, preview } = body.json();
      if (value !== undefined && isObject(value) && value.object === 'chat.completion.chunk') {
        // A stream sent without the SSE content type is not something we can read from one JSON value.
        this.#fromJson(undefined, preview);
      } else {
        this.#fromJson(value, preview);
      }
    }
    return finishLlm(body, this.#acc, this.#capture ? () => this.#outputMessages() : undefined, failure, durationMs, {
      declared: declaredBy(this.#exchange.request),
    });
  }
}

function errorCode(e: Json): string | undefined {
  const c = e.code ?? e.type;
  return typeof c === 'string' ? c : undefined;
}

function jsonToolCalls(m: Json): ToolCallSummary[] {
  const out: ToolCallSummary[] = [];
  if (Array.isArray(m.tool_calls)) {
    for (const tc of m.tool_calls) {
      if (!isObject(tc)) continue;
      const fn = isObject(tc.function) ? tc.function : {};
      const call: ToolCallSummary = {
        name: typeof fn.name === 'string' ? fn.name : '',
        arguments: typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? ''),
      };
      if (typeof tc.id === 'string') call.id = tc.id;
      out.push(call);
    }
  }
  if (isObject(m.function_call)) {
    const fc = m.function_call;
    out.push({
      name: typeof fc.name === 'string' ? fc.name : '',
      arguments: typeof fc.arguments === 'string' ? fc.arguments : '',
    });
  }
  return out;
}

function streamToolCalls(st: ChoiceState): ToolCallSummary[] {
  return [...st.tools.entries()]
    .sort((x, y) => x[0] - y[0])
    .map(([, t]) =>
      t.id !== undefined ? { id: t.id, name: t.name, arguments: t.args } : { name: t.name, arguments: t.args },
    );
}

/** The tools and the `response_format` JSON Schema a chat request declared, to judge the answer against. */
function declaredBy(body: unknown): Declared {
  if (!isObject(body)) return {};
  const out: Declared = { tools: openAiTools(body) };
  const rf = body.response_format;
  if (isObject(rf) && rf.type === 'json_schema' && isObject(rf.json_schema) && isObject(rf.json_schema.schema))
    out.responseSchema = rf.json_schema.schema;
  return out;
}

export const openaiChat: ProtocolModule = {
  protocol: 'openai.chat',

  matches(method: string, url: URL): boolean {
    return method === 'POST' && url.pathname.endsWith('/chat/completions');
  },

  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined {
    if (!isObject(body)) return undefined;
    const model = typeof body.model === 'string' ? body.model : azureDeployment(url);
    const stream = body.stream === true;
    const provider = providerName(url.hostname, 'openai');
    const time = Date.now();
    const tools = openAiTools(body);
    const maxTokens = num(body.max_completion_tokens) ?? num(body.max_tokens);
    const temperature = num(body.temperature);
    // The request summary (messages in semconv shape) is built only when something reads it: content capture,
    // a step, an onExchangeEnd consumer, metrics. The span's attributes need only the message count.
    let summary: LlmRequestSummary | undefined;
    const summarise = (): LlmRequestSummary => {
      if (summary !== undefined) return summary;
      const input = openAiInput(body.messages);
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
          messageCount: openAiMessageCount(body.messages),
        };
    const attributes = llmStartAttributes(url, head, headers, captureContent);
    setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_P, body.top_p);
    setNumber(attributes, ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY, body.frequency_penalty);
    setNumber(attributes, ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY, body.presence_penalty);
    setNumber(attributes, ATTR_GEN_AI_REQUEST_SEED, body.seed);
    const n = num(body.n);
    if (n !== undefined && n !== 1) attributes[ATTR_GEN_AI_REQUEST_CHOICE_COUNT] = n;
    setStopSequences(attributes, body.stop);
    const format = isObject(body.response_format) ? body.response_format.type : undefined;
    if (format === 'json_object' || format === 'json_schema') attributes[ATTR_GEN_AI_OUTPUT_TYPE] = 'json';
    else if (format === 'text') attributes[ATTR_GEN_AI_OUTPUT_TYPE] = 'text';

    return lazyLlmStart(GEN_AI_OPERATION_CHAT, provider, model, attributes, stream, summarise);
  },

  reader(exchange: Exchange, captureContent: boolean): ResponseReader {
    return new OpenAiChatReader(captureContent, exchange);
  },
};
