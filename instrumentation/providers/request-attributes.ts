/** Request-side attributes shared by the LLM protocol modules (sampling-relevant ones are set at span start). */
import { SpanKind, type Attributes } from '@opentelemetry/api';
import {
  ATTR_FL_REQUEST_MESSAGE_COUNT,
  ATTR_FL_REQUEST_RETRY_COUNT,
  ATTR_FL_REQUEST_TOOL_NAMES,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_STOP_SEQUENCES,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_REQUEST_TEMPERATURE,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_GEN_AI_TOOL_DEFINITIONS,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
} from '../semconv';
import type { LlmRequestHead, ProtocolStart } from '../internal-types';
import type { LlmRequestSummary } from '../types';
import { systemInstructionParts } from './content';

export function serverPort(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/**
 * Each SDK attempt is its own HTTP call and so its own chat span; the openai and Anthropic SDKs number their retries
 * in `x-stainless-retry-count`, which we record so a retried call can be told from a new one.
 */
export function retryCount(headers: Record<string, string>): number | undefined {
  const raw = headers['x-stainless-retry-count'];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** What the start attributes need: a full summary, or (content capture off) its head with the message count. */
export type LlmStartHead =
  | LlmRequestSummary
  | (Pick<LlmRequestSummary, 'provider' | 'operation' | 'stream' | 'tools'> & {
      model?: string | undefined;
      maxTokens?: number | undefined;
      temperature?: number | undefined;
      messageCount: number;
    });

export function llmStartAttributes(
  url: URL,
  req: LlmStartHead,
  headers: Record<string, string>,
  captureContent: boolean,
): Attributes {
  const a: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: req.operation,
    [ATTR_GEN_AI_PROVIDER_NAME]: req.provider,
    [ATTR_SERVER_ADDRESS]: url.hostname,
    [ATTR_SERVER_PORT]: serverPort(url),
    [ATTR_FL_REQUEST_MESSAGE_COUNT]: 'messageCount' in req ? req.messageCount : req.messages.length,
  };
  if (req.model !== undefined) a[ATTR_GEN_AI_REQUEST_MODEL] = req.model;
  if (req.maxTokens !== undefined) a[ATTR_GEN_AI_REQUEST_MAX_TOKENS] = req.maxTokens;
  if (req.temperature !== undefined) a[ATTR_GEN_AI_REQUEST_TEMPERATURE] = req.temperature;
  if (req.stream) a[ATTR_GEN_AI_REQUEST_STREAM] = true;
  if (req.tools.length > 0) a[ATTR_FL_REQUEST_TOOL_NAMES] = req.tools.map((t) => t.name);
  const retries = retryCount(headers);
  if (retries !== undefined) a[ATTR_FL_REQUEST_RETRY_COUNT] = retries;
  if (captureContent && 'messages' in req) {
    a[ATTR_GEN_AI_INPUT_MESSAGES] = JSON.stringify(req.messages);
    if (req.systemInstructions !== undefined) {
      a[ATTR_GEN_AI_SYSTEM_INSTRUCTIONS] = JSON.stringify(systemInstructionParts(req.systemInstructions));
    }
    if (req.tools.length > 0) a[ATTR_GEN_AI_TOOL_DEFINITIONS] = JSON.stringify(req.tools);
  }
  return a;
}

export function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** Set `key` to `value` when it is a number (a request parameter the caller may leave out). */
export function setNumber(attributes: Attributes, key: string, value: unknown): void {
  const n = num(value);
  if (n !== undefined) attributes[key] = n;
}

/** `gen_ai.request.stop_sequences` from a `stop` parameter that is one string or a list of them. */
export function setStopSequences(attributes: Attributes, stop: unknown): void {
  if (typeof stop === 'string') attributes[ATTR_GEN_AI_REQUEST_STOP_SEQUENCES] = [stop];
  else if (Array.isArray(stop))
    attributes[ATTR_GEN_AI_REQUEST_STOP_SEQUENCES] = stop.filter((s): s is string => typeof s === 'string');
}

/**
 * The span start of an LLM call whose full request summary is built only when something asks for it (it costs more
 * than the metrics' head): named `{operation} {model}`, with the head, and `llmRequest` a getter when there is one.
 * A class, so the getter lives on its prototype: defining it on each object (`Object.defineProperty`) turned every
 * start into a dictionary-mode object, twice per call.
 */
export function lazyLlmStart(
  operation: string,
  provider: string,
  model: string | undefined,
  attributes: Attributes,
  stream: boolean,
  summarise?: () => LlmRequestSummary,
): ProtocolStart {
  return new LazyLlmStart(operation, provider, model, attributes, stream, summarise);
}

class LazyLlmStart implements ProtocolStart {
  readonly name: string;
  readonly kind = SpanKind.CLIENT;
  readonly llmHead: LlmRequestHead;
  readonly #summarise: (() => LlmRequestSummary) | undefined;

  constructor(
    readonly operation: string,
    readonly provider: string,
    model: string | undefined,
    public attributes: Attributes,
    readonly stream: boolean,
    summarise: (() => LlmRequestSummary) | undefined,
  ) {
    this.name = model !== undefined ? `${operation} ${model}` : operation;
    this.llmHead = model !== undefined ? { operation, provider, model } : { operation, provider };
    this.#summarise = summarise;
  }

  get llmRequest(): LlmRequestSummary | undefined {
    return this.#summarise?.();
  }
}
