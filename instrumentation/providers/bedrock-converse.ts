/**
 * Amazon Bedrock runtime `Converse` (`POST …/model/{modelId}/converse`) and `ConverseStream` (`…/converse-stream`):
 * one request shape for every model family Bedrock serves (Claude, Llama, Mistral, Nova, …), so one module reads them
 * all. The path is the evidence: only Bedrock's runtime API has `model/{modelId}/converse`, on
 * `bedrock-runtime.{region}.amazonaws.com`, a VPC endpoint or a gateway in front of it; the model id is the path's
 * (URL-encoded by the SDK: an inference profile or model ARN has `:` and `/`), the body never names it.
 *
 * The AWS SDK signs these requests (SigV4: `authorization`, `x-amz-date`, `x-amz-security-token`,
 * `x-amz-content-sha256`); the span layer removes the credential headers before any module sees them, and nothing here
 * reads the rest. `amz-sdk-request: attempt=N; max=M` numbers the SDK's attempts: attempt N is retry N-1.
 *
 * `stopReason` is mapped to the semconv finish reasons: end_turn and stop_sequence → stop, tool_use → tool_call,
 * max_tokens and model_context_window_exceeded → length, guardrail_intervened and content_filtered → content_filter,
 * malformed_model_output and malformed_tool_use → error. Usage follows the conventions: input tokens include the
 * cache reads and writes Bedrock counts apart (`cacheReadInputTokens`, `cacheWriteInputTokens`). An error answer
 * names its type in `x-amzn-errortype` (`ThrottlingException:http://internal.amazon.com/…`), its body is
 * `{"message": …}`. A ConverseStream answer is AWS event-stream frames (eventstream.ts), one event per frame.
 */
import { SpanKind } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import {
  ATTR_FL_REQUEST_RETRY_COUNT,
  ATTR_GEN_AI_REQUEST_STOP_SEQUENCES,
  ATTR_GEN_AI_REQUEST_TOP_K,
  ATTR_GEN_AI_REQUEST_TOP_P,
  GEN_AI_OPERATION_CHAT,
} from '../semconv';
import type { ProtocolModule, ProtocolStart, ResponseReader } from '../internal-types';
import type {
  Exchange,
  GenAiMessage,
  GenAiPart,
  LlmRequestSummary,
  ToolCallSummary,
  ToolDefinition,
  UsageSummary,
} from '../types';
import { isObject, str } from './content';
import { EventStreamParser, isEventStream, type EventStreamMessage } from './eventstream';
import { finishLlm, type Failure, type LlmAccumulated } from './llm-result';
import { providerName } from './provider-name';
import { llmStartAttributes, num, setNumber } from './request-attributes';
import { BodyReader, headerValue } from './response-body';

type Json = Record<string, unknown>;

const ROUTE = /\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream)$/;

/** A Bedrock runtime path → the model id (decoded: the SDK encodes an ARN's `:` and `/`) and the action after it. */
export function bedrockRoute(url: URL): { model: string; action: string } | undefined {
  const m = ROUTE.exec(url.pathname);
  if (!m) return undefined;
  let model = m[1] as string;
  try {
    model = decodeURIComponent(model);
  } catch {
    // a malformed escape: the id as it was sent
  }
  return { model, action: m[2] as string };
}

/** `/model/us.anthropic.claude-sonnet-4-5-v1%3A0/converse` → the model id and whether the call streams. */
export function converseRoute(url: URL): { model: string; stream: boolean } | undefined {
  const r = bedrockRoute(url);
  if (r === undefined || !r.action.startsWith('converse')) return undefined;
  return { model: r.model, stream: r.action === 'converse-stream' };
}

const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool_call',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
  malformed_model_output: 'error',
  malformed_tool_use: 'error',
};

/** A Bedrock `stopReason` as a semconv finish reason (an unknown one as it is). */
export function converseFinishReason(stopReason: string): string {
  return FINISH[stopReason] ?? stopReason;
}

function usageOf(u: unknown): UsageSummary | undefined {
  if (!isObject(u)) return undefined;
  const input = num(u.inputTokens);
  const output = num(u.outputTokens);
  const read = num(u.cacheReadInputTokens);
  const write = num(u.cacheWriteInputTokens);
  if (input === undefined && output === undefined) return undefined;
  const usage: UsageSummary = {};
  if (input !== undefined) usage.inputTokens = input + (read ?? 0) + (write ?? 0);
  if (output !== undefined) usage.outputTokens = output;
  if (read !== undefined) usage.cacheReadInputTokens = read;
  if (write !== undefined) usage.cacheCreationInputTokens = write;
  return usage;
}

/** The retry number the AWS SDK puts in `amz-sdk-request` (`attempt=2; max=3` → 1). */
function awsRetryCount(headers: Record<string, string>): number | undefined {
  const m = /attempt=(\d+)/.exec(headers['amz-sdk-request'] ?? '');
  return m ? Number(m[1]) - 1 : undefined;
}

// ------------------------------------------------------------------------------------------------ content

const MIME: Record<string, string> = {
  pdf: 'application/pdf',
  csv: 'text/csv',
  html: 'text/html',
  txt: 'text/plain',
  md: 'text/markdown',
  json: 'application/json',
};

function mimeOf(modality: string, format: string | undefined): string | null {
  if (format === undefined) return null;
  if (modality === 'document') return MIME[format] ?? null;
  return `${modality}/${format}`;
}

/** An image / document / video block → a blob part (bytes, base64 on the wire) or a uri part (an S3 location). */
function mediaPart(modality: string, b: Json): GenAiPart {
  const format = str(b.format);
  const source = isObject(b.source) ? b.source : {};
  const mime_type = mimeOf(modality, format);
  if (typeof source.bytes === 'string') return { type: 'blob', modality, mime_type, content: source.bytes };
  const s3 = isObject(source.s3Location) ? str(source.s3Location.uri) : undefined;
  if (s3 !== undefined) return { type: 'uri', modality, mime_type, uri: s3 };
  return { type: modality };
}

/** A toolResult's content: its text when it is only text, its JSON when it is one JSON block, else the blocks. */
function toolResultValue(content: unknown): unknown {
  if (!Array.isArray(content)) return content ?? null;
  if (content.length === 1 && isObject(content[0]) && 'json' in content[0]) return content[0].json;
  const texts = content.filter((c) => isObject(c) && typeof c.text === 'string').map((c) => (c as Json).text as string);
  return texts.length === content.length ? texts.join('') : content;
}

/** Converse content blocks (each an object with one key naming its kind) → semconv parts. */
export function converseParts(content: unknown): GenAiPart[] {
  if (!Array.isArray(content)) return [];
  const parts: GenAiPart[] = [];
  for (const b of content) {
    if (!isObject(b)) continue;
    if (typeof b.text === 'string') parts.push({ type: 'text', content: b.text });
    else if (isObject(b.toolUse)) {
      const t = b.toolUse;
      parts.push({
        type: 'tool_call',
        id: str(t.toolUseId) ?? null,
        name: str(t.name) ?? '',
        arguments: t.input ?? {},
      });
    } else if (isObject(b.toolResult)) {
      const t = b.toolResult;
      parts.push({ type: 'tool_call_response', id: str(t.toolUseId) ?? null, response: toolResultValue(t.content) });
    } else if (isObject(b.reasoningContent)) {
      const r = b.reasoningContent;
      parts.push({ type: 'reasoning', content: isObject(r.reasoningText) ? (str(r.reasoningText.text) ?? '') : '' });
    } else if (isObject(b.image)) parts.push(mediaPart('image', b.image));
    else if (isObject(b.document)) parts.push(mediaPart('document', b.document));
    else if (isObject(b.video)) parts.push(mediaPart('video', b.video));
    else if (isObject(b.guardContent) && isObject(b.guardContent.text))
      parts.push({ type: 'text', content: str(b.guardContent.text.text) ?? '' });
    else {
      // cachePoint marks where a prompt cache ends: not content.
      const key = Object.keys(b).find((k) => k !== 'cachePoint');
      if (key !== undefined) parts.push({ type: key });
    }
  }
  return parts;
}

export function converseInput(messages: unknown): GenAiMessage[] {
  if (!Array.isArray(messages)) return [];
  const out: GenAiMessage[] = [];
  for (const m of messages) if (isObject(m)) out.push({ role: str(m.role) ?? 'user', parts: converseParts(m.content) });
  return out;
}

/** `system`: text (and guard) blocks → their text. */
export function converseSystem(system: unknown): string | undefined {
  if (!Array.isArray(system)) return undefined;
  const texts = converseParts(system)
    .filter((p): p is { type: 'text'; content: string } => p.type === 'text')
    .map((p) => p.content);
  return texts.length > 0 ? texts.join('\n\n') : undefined;
}

/** `toolConfig.tools[].toolSpec` → tool definitions (the schema is `inputSchema.json`). */
export function converseTools(body: Json): ToolDefinition[] {
  const tools = isObject(body.toolConfig) && Array.isArray(body.toolConfig.tools) ? body.toolConfig.tools : [];
  const out: ToolDefinition[] = [];
  for (const t of tools) {
    if (!isObject(t)) continue;
    if (isObject(t.toolSpec)) {
      const s = t.toolSpec;
      const def: ToolDefinition = { name: str(s.name) ?? '', type: 'function' };
      if (typeof s.description === 'string') def.description = s.description;
      if (isObject(s.inputSchema) && s.inputSchema.json !== undefined) def.parameters = s.inputSchema.json;
      out.push(def);
    } else if (isObject(t.systemTool)) {
      const name = str(t.systemTool.name) ?? 'system_tool';
      out.push({ name, type: name });
    }
  }
  return out;
}

function toolCall(id: unknown, name: unknown, args: string): ToolCallSummary {
  const call: ToolCallSummary = { name: typeof name === 'string' ? name : '', arguments: args };
  if (typeof id === 'string') call.id = id;
  return call;
}

// ------------------------------------------------------------------------------------------------ response

/** A content block of a ConverseStream answer, built from its start and deltas. */
interface Block {
  kind: 'text' | 'toolUse' | 'reasoning' | 'other';
  text: string;
  id?: string;
  name?: string;
  /** toolUse input fragments (JSON text). */
  input: string;
}

class ConverseReader extends BodyReader implements ResponseReader {
  readonly #capture: boolean;
  readonly #acc: LlmAccumulated = { finishReasons: [], text: '', toolCalls: [], done: false };
  #stopReason: string | undefined;
  #content: unknown;
  #blocks: Map<number, Block> | undefined;
  #frames: EventStreamParser | undefined;

  constructor(capture: boolean) {
    super();
    this.#capture = capture;
  }

  override onStart(status: number, headers: IncomingHttpHeaders): void {
    super.onStart(status, headers);
    if (status >= 400) {
      // `ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/` → ThrottlingException
      const type = headerValue(headers, 'x-amzn-errortype')?.split(':', 1)[0];
      if (type) this.#acc.errorCode = type;
    } else if (isEventStream(this.body.contentType)) {
      const parser = new EventStreamParser((m) => this.#event(m));
      this.#frames = parser;
      this.body.takeBytes((chunk) => parser.push(chunk));
    }
  }

  /** One event-stream message of a ConverseStream answer. */
  #event(m: EventStreamMessage): void {
    const acc = this.#acc;
    const kind = m.headers[':message-type'];
    if (kind === 'exception' || kind === 'error') {
      // modelStreamErrorException, throttlingException, … inside a 200 answer: the call failed in band.
      const type = m.headers[':exception-type'] ?? m.headers[':error-code'];
      acc.errorCode = typeof type === 'string' ? type : 'exception';
      acc.failedInBand = true;
      return;
    }
    let data: unknown;
    try {
      data = JSON.parse(m.payload.toString('utf8'));
    } catch {
      acc.malformedEvents = (acc.malformedEvents ?? 0) + 1;
      return;
    }
    if (!isObject(data)) return;
    switch (m.headers[':event-type']) {
      case 'contentBlockStart': {
        const start = isObject(data.start) ? data.start : {};
        const block = this.#block(data.contentBlockIndex, isObject(start.toolUse) ? 'toolUse' : 'text');
        if (isObject(start.toolUse)) {
          const id = str(start.toolUse.toolUseId);
          const name = str(start.toolUse.name);
          if (id !== undefined) block.id = id;
          if (name !== undefined) block.name = name;
        }
        break;
      }
      case 'contentBlockDelta': {
        const d = isObject(data.delta) ? data.delta : {};
        if (typeof d.text === 'string') this.#block(data.contentBlockIndex, 'text').text += d.text;
        else if (isObject(d.toolUse) && typeof d.toolUse.input === 'string')
          this.#block(data.contentBlockIndex, 'toolUse').input += d.toolUse.input;
        else if (isObject(d.reasoningContent) && typeof d.reasoningContent.text === 'string')
          this.#block(data.contentBlockIndex, 'reasoning').text += d.reasoningContent.text;
        break;
      }
      case 'messageStop':
        if (typeof data.stopReason === 'string') this.#stopReason = data.stopReason;
        break;
      case 'metadata': {
        const usage = usageOf(data.usage);
        if (usage) acc.usage = usage;
        // The last event of a whole answer: it carries the usage and latency.
        acc.done = true;
        break;
      }
      default:
        break;
    }
  }

  #block(index: unknown, kind: Block['kind']): Block {
    const i = typeof index === 'number' ? index : 0;
    this.#blocks ??= new Map();
    let block = this.#blocks.get(i);
    if (block === undefined) this.#blocks.set(i, (block = { kind, text: '', input: '' }));
    else if (block.kind === 'text' && kind !== 'text' && block.text === '') block.kind = kind;
    return block;
  }

  #fromJson(value: unknown, preview: string | undefined): void {
    const acc = this.#acc;
    if (preview !== undefined) acc.unparsedBody = preview;
    if (!isObject(value)) return;
    if (typeof value.stopReason === 'string') this.#stopReason = value.stopReason;
    const usage = usageOf(value.usage);
    if (usage) acc.usage = usage;
    const message = isObject(value.output) && isObject(value.output.message) ? value.output.message : undefined;
    if (message === undefined || !Array.isArray(message.content)) return;
    this.#content = message.content;
    const texts: string[] = [];
    for (const b of message.content) {
      if (!isObject(b)) continue;
      if (typeof b.text === 'string') texts.push(b.text);
      else if (isObject(b.toolUse))
        acc.toolCalls.push(toolCall(b.toolUse.toolUseId, b.toolUse.name, JSON.stringify(b.toolUse.input ?? {})));
    }
    acc.text = texts.join('');
  }

  #sortedBlocks(): Block[] {
    return this.#blocks ? [...this.#blocks.entries()].sort((x, y) => x[0] - y[0]).map(([, b]) => b) : [];
  }

  #outputMessages(): GenAiMessage[] {
    const finish_reason = this.#stopReason === undefined ? '' : converseFinishReason(this.#stopReason);
    if (this.#content !== undefined) return [{ role: 'assistant', parts: converseParts(this.#content), finish_reason }];
    if (this.#blocks === undefined) return [];
    const parts = this.#sortedBlocks().map((b): GenAiPart => {
      if (b.kind === 'toolUse')
        return { type: 'tool_call', id: b.id ?? null, name: b.name ?? '', arguments: parseJson(b.input) };
      if (b.kind === 'reasoning') return { type: 'reasoning', content: b.text };
      return { type: 'text', content: b.text };
    });
    return [{ role: 'assistant', parts, finish_reason }];
  }

  finish(_exchange: Exchange, failure: Failure, durationMs: number) {
    const body = this.body;
    const acc = this.#acc;
    const streamed = this.#frames !== undefined;
    if (this.#frames !== undefined) {
      if (this.#frames.malformed > 0) acc.malformedEvents = (acc.malformedEvents ?? 0) + this.#frames.malformed;
      const blocks = this.#sortedBlocks();
      acc.text = blocks
        .filter((b) => b.kind === 'text')
        .map((b) => b.text)
        .join('');
      acc.toolCalls = blocks.filter((b) => b.kind === 'toolUse').map((b) => toolCall(b.id, b.name, b.input || '{}'));
    } else {
      const { value, preview } = body.json();
      this.#fromJson(value, preview);
    }
    if (this.#stopReason !== undefined) acc.finishReasons = [converseFinishReason(this.#stopReason)];
    return finishLlm(body, acc, this.#capture ? () => this.#outputMessages() : undefined, failure, durationMs, {
      stream: streamed,
    });
  }
}

function parseJson(s: string): unknown {
  if (!s) return {};
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

// ------------------------------------------------------------------------------------------------ module

export const bedrockConverse: ProtocolModule = {
  protocol: 'bedrock.converse',

  matches(method: string, url: URL): boolean {
    return method === 'POST' && converseRoute(url) !== undefined;
  },

  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined {
    const route = converseRoute(url);
    if (!route || !isObject(body)) return undefined;
    const { model, stream } = route;
    const provider = providerName(url.hostname, 'bedrock');
    const config = isObject(body.inferenceConfig) ? body.inferenceConfig : {};
    const llmRequest: LlmRequestSummary = {
      provider,
      operation: GEN_AI_OPERATION_CHAT,
      model,
      stream,
      messages: converseInput(body.messages),
      tools: converseTools(body),
      time: Date.now(),
    };
    const maxTokens = num(config.maxTokens);
    if (maxTokens !== undefined) llmRequest.maxTokens = maxTokens;
    const temperature = num(config.temperature);
    if (temperature !== undefined) llmRequest.temperature = temperature;
    const system = converseSystem(body.system);
    if (system !== undefined) llmRequest.systemInstructions = system;

    const attributes = llmStartAttributes(url, llmRequest, headers, captureContent);
    setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_P, config.topP);
    if (isObject(body.additionalModelRequestFields))
      setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_K, body.additionalModelRequestFields.top_k);
    if (Array.isArray(config.stopSequences))
      attributes[ATTR_GEN_AI_REQUEST_STOP_SEQUENCES] = config.stopSequences.filter(
        (s): s is string => typeof s === 'string',
      );
    const retries = awsRetryCount(headers);
    if (retries !== undefined && retries >= 0) attributes[ATTR_FL_REQUEST_RETRY_COUNT] = retries;
    return {
      name: `${GEN_AI_OPERATION_CHAT} ${model}`,
      kind: SpanKind.CLIENT,
      attributes,
      stream,
      operation: GEN_AI_OPERATION_CHAT,
      provider,
      llmRequest,
    };
  },

  reader(_exchange: Exchange, captureContent: boolean): ResponseReader {
    return new ConverseReader(captureContent);
  },
};
