/**
 * Amazon Bedrock runtime `InvokeModel` (`POST …/model/{modelId}/invoke`) and `InvokeModelWithResponseStream`
 * (`…/invoke-with-response-stream`), whose bodies are the model family's own. The path says Bedrock and the model; the
 * body says the family (the model id where the body alone cannot: a bare `prompt` is Llama's, Mistral's or Cohere's):
 *
 *  - Anthropic messages (`anthropic_version`, `messages`): read by the Anthropic messages module, whose answers
 *    Bedrock returns as they are;
 *  - Amazon Nova (`messages` of Converse-shaped content, `inferenceConfig`): answered in Converse's shape, read by the
 *    Converse module;
 *  - Meta Llama (`prompt`, `max_gen_len` → `generation`, `prompt_token_count`, `generation_token_count`,
 *    `stop_reason`), Mistral (`prompt` → `outputs[].text`, `stop_reason`), Amazon Titan Text (`inputText`,
 *    `textGenerationConfig` → `results[].outputText`, `completionReason`), Cohere Command R (`message` → `text`,
 *    `finish_reason`) and Command (`prompt` → `generations[].text`): read here.
 *
 * A streamed answer is AWS event-stream frames (eventstream.ts) whose `chunk` event carries `{"bytes": base64}`: the
 * JSON of one event of the family's own stream (an Anthropic stream event, a Nova `{contentBlockDelta: …}`, a Llama
 * partial `generation`, …); the last one adds `amazon-bedrock-invocationMetrics` (the token counts). Anthropic's events
 * reach the Anthropic reader as the SSE events they are elsewhere, Nova's the Converse reader as Converse frames. The
 * token counts are also in the answer's `x-amzn-bedrock-input-token-count` / `-output-token-count` headers (what a
 * Mistral body lacks). A body of no family above is not ours: no span, the call untouched.
 */
import { SpanKind } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import {
  ATTR_FL_RESPONSE_BODY_BYTES,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_REQUEST_TOP_P,
  GEN_AI_OPERATION_CHAT,
  GEN_AI_OPERATION_TEXT_COMPLETION,
} from '../semconv';
import type { ProtocolModule, ProtocolStart, ResponseReader } from '../internal-types';
import type { Exchange, GenAiMessage, LlmRequestSummary, UsageSummary } from '../types';
import { anthropicReader, anthropicStart } from './anthropic-messages';
import { bedrockConverse, bedrockRoute, converseInput, converseSystem } from './bedrock-converse';
import { isObject } from './content';
import { encodeMessage, EventStreamParser, isEventStream, type EventStreamMessage } from './eventstream';
import { finishLlm, type Failure, type LlmAccumulated } from './llm-result';
import { providerName } from './provider-name';
import { llmStartAttributes, num, setNumber } from './request-attributes';
import { BodyReader, headerValue } from './response-body';

type Json = Record<string, unknown>;

/** A model family whose InvokeModel body faultline reads. */
export type InvokeFamily = 'anthropic' | 'nova' | 'llama' | 'mistral' | 'titan' | 'cohere';

/** The family of a model id, inference profile prefixes (`us.`, `eu.`, `apac.`, `global.`) aside; undefined for an ARN. */
function familyOfModel(model: string): InvokeFamily | undefined {
  const id = model.replace(/^(us|eu|apac|us-gov|global)\./, '');
  if (id.startsWith('anthropic.')) return 'anthropic';
  if (id.startsWith('amazon.nova')) return 'nova';
  if (id.startsWith('amazon.titan-text')) return 'titan';
  if (id.startsWith('meta.')) return 'llama';
  if (id.startsWith('mistral.')) return 'mistral';
  if (id.startsWith('cohere.command')) return 'cohere';
  return undefined;
}

/** The family a request body is in (its fields first, the model id for a bare `prompt`). */
export function invokeFamily(body: Json, model: string): InvokeFamily | undefined {
  if (typeof body.anthropic_version === 'string' && Array.isArray(body.messages)) return 'anthropic';
  if (typeof body.inputText === 'string') return 'titan';
  if (
    Array.isArray(body.messages) &&
    (isObject(body.inferenceConfig) || body.schemaVersion === 'messages-v1' || familyOfModel(model) === 'nova')
  )
    return 'nova';
  if (typeof body.message === 'string')
    return familyOfModel(model) === 'cohere' || 'chat_history' in body || 'preamble' in body ? 'cohere' : undefined;
  if (typeof body.prompt === 'string') {
    const family = familyOfModel(model);
    if (family === 'llama' || family === 'mistral' || family === 'cohere') return family;
    if ('max_gen_len' in body) return 'llama';
  }
  return undefined;
}

/** The family each started request was read as (the reader is built from its exchange). */
const FAMILY = new WeakMap<LlmRequestSummary, InvokeFamily>();

function textStart(
  url: URL,
  body: Json,
  headers: Record<string, string>,
  capture: boolean,
  model: string,
  family: InvokeFamily,
  stream: boolean,
): ProtocolStart {
  const provider = providerName(url.hostname, 'bedrock');
  const chat = family === 'nova' || family === 'cohere';
  const operation = chat ? GEN_AI_OPERATION_CHAT : GEN_AI_OPERATION_TEXT_COMPLETION;
  const config =
    family === 'nova' && isObject(body.inferenceConfig)
      ? body.inferenceConfig
      : family === 'titan' && isObject(body.textGenerationConfig)
        ? body.textGenerationConfig
        : body;
  let messages: GenAiMessage[];
  if (family === 'nova') messages = converseInput(body.messages);
  else {
    const text =
      family === 'titan'
        ? body.inputText
        : family === 'cohere' && typeof body.message === 'string'
          ? body.message
          : body.prompt;
    messages = [{ role: 'user', parts: [{ type: 'text', content: String(text ?? '') }] }];
  }
  const llmRequest: LlmRequestSummary = { provider, operation, model, stream, messages, tools: [], time: Date.now() };
  const maxTokens = num(
    config.maxTokens ?? config.max_new_tokens ?? config.max_gen_len ?? config.max_tokens ?? config.maxTokenCount,
  );
  if (maxTokens !== undefined) llmRequest.maxTokens = maxTokens;
  const temperature = num(config.temperature);
  if (temperature !== undefined) llmRequest.temperature = temperature;
  if (family === 'nova') {
    const system = converseSystem(body.system);
    if (system !== undefined) llmRequest.systemInstructions = system;
  }
  const attributes = llmStartAttributes(url, llmRequest, headers, capture);
  setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_P, config.topP ?? config.top_p ?? config.p);
  FAMILY.set(llmRequest, family);
  return { name: `${operation} ${model}`, kind: SpanKind.CLIENT, attributes, stream, operation, provider, llmRequest };
}

// ------------------------------------------------------------------------------------------------ text families

const TITAN_FINISH: Record<string, string> = {
  FINISH: 'stop',
  STOP_CRITERIA_MET: 'stop',
  LENGTH: 'length',
  CONTENT_FILTERED: 'content_filter',
};
const COHERE_FINISH: Record<string, string> = {
  COMPLETE: 'stop',
  MAX_TOKENS: 'length',
  ERROR_TOXIC: 'content_filter',
  ERROR_LIMIT: 'length',
  ERROR: 'error',
  USER_CANCEL: 'cancelled',
};

/** What a Llama, Mistral, Titan or Cohere answer (or one event of its stream) says. */
interface TextState {
  text: string;
  finish?: string;
  input?: number;
  output?: number;
  id?: string;
}

/** Read one answer JSON, whole or one stream event, into `s` (a stream's text is its events' text joined). */
function readText(family: InvokeFamily, v: Json, s: TextState): void {
  const metrics = v['amazon-bedrock-invocationMetrics'];
  if (isObject(metrics)) {
    s.input = num(metrics.inputTokenCount) ?? s.input;
    s.output = num(metrics.outputTokenCount) ?? s.output;
  }
  switch (family) {
    case 'llama':
      if (typeof v.generation === 'string') s.text += v.generation;
      if (typeof v.stop_reason === 'string') s.finish = v.stop_reason;
      s.input = num(v.prompt_token_count) ?? s.input;
      s.output = num(v.generation_token_count) ?? s.output;
      break;
    case 'mistral': {
      const o = Array.isArray(v.outputs) && isObject(v.outputs[0]) ? v.outputs[0] : {};
      if (typeof o.text === 'string') s.text += o.text;
      if (typeof o.stop_reason === 'string') s.finish = o.stop_reason;
      break;
    }
    case 'titan': {
      const r = Array.isArray(v.results) && isObject(v.results[0]) ? v.results[0] : v;
      if (typeof r.outputText === 'string') s.text += r.outputText;
      if (typeof r.completionReason === 'string')
        s.finish = TITAN_FINISH[r.completionReason] ?? r.completionReason.toLowerCase();
      s.input = num(v.inputTextTokenCount) ?? s.input;
      s.output = num(r.tokenCount ?? v.totalOutputTextTokenCount) ?? s.output;
      break;
    }
    case 'cohere': {
      if (Array.isArray(v.generations)) {
        const g = isObject(v.generations[0]) ? v.generations[0] : {};
        if (typeof g.text === 'string') s.text += g.text;
        if (typeof g.finish_reason === 'string')
          s.finish = COHERE_FINISH[g.finish_reason] ?? g.finish_reason.toLowerCase();
        break;
      }
      // A stream's end repeats the whole answer (`response`): its text is not added again.
      if (typeof v.text === 'string' && v.event_type !== 'stream-end') s.text += v.text;
      if (typeof v.finish_reason === 'string')
        s.finish = COHERE_FINISH[v.finish_reason] ?? v.finish_reason.toLowerCase();
      if (typeof v.generation_id === 'string') s.id = v.generation_id;
      const billed = isObject(v.meta) && isObject(v.meta.billed_units) ? v.meta.billed_units : undefined;
      if (billed) {
        s.input = num(billed.input_tokens) ?? s.input;
        s.output = num(billed.output_tokens) ?? s.output;
      }
      break;
    }
    default:
      break;
  }
}

class TextFamilyReader extends BodyReader implements ResponseReader {
  readonly #state: TextState = { text: '' };
  readonly #acc: LlmAccumulated = { finishReasons: [], text: '', toolCalls: [], done: false };
  #frames: EventStreamParser | undefined;

  constructor(
    private readonly family: InvokeFamily,
    private readonly capture: boolean,
  ) {
    super();
  }

  override onStart(status: number, headers: IncomingHttpHeaders): void {
    super.onStart(status, headers);
    // InvokeModel's answer counts the tokens in its headers too (a Mistral body has no usage of its own).
    const s = this.#state;
    s.input = num(Number(headerValue(headers, 'x-amzn-bedrock-input-token-count') ?? NaN)) ?? s.input;
    s.output = num(Number(headerValue(headers, 'x-amzn-bedrock-output-token-count') ?? NaN)) ?? s.output;
    if (status >= 400) {
      const type = headerValue(headers, 'x-amzn-errortype')?.split(':', 1)[0];
      if (type) this.#acc.errorCode = type;
    } else if (isEventStream(this.body.contentType)) {
      const parser = new EventStreamParser((m) => this.#frame(m));
      this.#frames = parser;
      this.body.takeBytes((chunk) => parser.push(chunk));
    }
  }

  #frame(m: EventStreamMessage): void {
    const chunk = streamChunk(m, this.#acc);
    if (chunk === undefined) return;
    readText(this.family, chunk, this.#state);
    if (isObject(chunk['amazon-bedrock-invocationMetrics'])) this.#acc.done = true;
  }

  finish(_exchange: Exchange, failure: Failure, durationMs: number) {
    const acc = this.#acc;
    const s = this.#state;
    if (this.#frames === undefined) {
      const { value, preview } = this.body.json();
      if (preview !== undefined) acc.unparsedBody = preview;
      if (isObject(value)) readText(this.family, value, s);
    } else if (this.#frames.malformed > 0) acc.malformedEvents = (acc.malformedEvents ?? 0) + this.#frames.malformed;
    acc.text = s.text;
    if (s.id !== undefined) acc.id = s.id;
    if (s.finish !== undefined) acc.finishReasons = [s.finish];
    if (s.input !== undefined || s.output !== undefined) {
      const usage: UsageSummary = {};
      if (s.input !== undefined) usage.inputTokens = s.input;
      if (s.output !== undefined) usage.outputTokens = s.output;
      acc.usage = usage;
    }
    const output = (): GenAiMessage[] => [
      { role: 'assistant', parts: [{ type: 'text', content: s.text }], finish_reason: s.finish ?? '' },
    ];
    return finishLlm(this.body, acc, this.capture ? output : undefined, failure, durationMs, {
      stream: this.#frames !== undefined,
    });
  }
}

/**
 * The family JSON a `chunk` frame carries (base64 in `bytes`); undefined for any other frame. An exception frame
 * (`modelStreamErrorException`, a throttle mid-stream) marks the call failed in band.
 */
function streamChunk(m: EventStreamMessage, acc: LlmAccumulated): Json | undefined {
  const kind = m.headers[':message-type'];
  if (kind === 'exception' || kind === 'error') {
    const type = m.headers[':exception-type'] ?? m.headers[':error-code'];
    acc.errorCode = typeof type === 'string' ? type : 'exception';
    acc.failedInBand = true;
    return undefined;
  }
  if (m.headers[':event-type'] !== 'chunk') return undefined;
  try {
    const outer: unknown = JSON.parse(m.payload.toString('utf8'));
    if (!isObject(outer) || typeof outer.bytes !== 'string') return undefined;
    const inner: unknown = JSON.parse(Buffer.from(outer.bytes, 'base64').toString('utf8'));
    return isObject(inner) ? inner : undefined;
  } catch {
    acc.malformedEvents = (acc.malformedEvents ?? 0) + 1;
    return undefined;
  }
}

// ------------------------------------------------------------------------------------------------ Anthropic and Nova streams

/**
 * An InvokeModelWithResponseStream answer of a family another module reads (Anthropic, Nova): each chunk's event is
 * handed to that module's reader as its own stream carries it (an SSE event, a Converse frame). The wire size is the
 * frames'.
 */
class ChunkRelay implements ResponseReader {
  #frames: EventStreamParser | undefined;
  #wireBytes = 0;
  readonly #acc: LlmAccumulated = { finishReasons: [], text: '', toolCalls: [], done: false };

  constructor(
    private readonly family: 'anthropic' | 'nova',
    private readonly inner: ResponseReader,
  ) {}

  onStart(status: number, headers: IncomingHttpHeaders): void {
    if (status >= 400 || !isEventStream(headerValue(headers, 'content-type')))
      return this.inner.onStart(status, headers);
    const type = this.family === 'anthropic' ? 'text/event-stream' : 'application/vnd.amazon.eventstream';
    this.inner.onStart(status, { ...headers, 'content-type': type });
    this.#frames = new EventStreamParser((m) => this.#frame(m));
  }

  #frame(m: EventStreamMessage): void {
    const kind = m.headers[':message-type'];
    if (kind === 'exception' || kind === 'error') {
      const type = String(m.headers[':exception-type'] ?? m.headers[':error-code'] ?? 'exception');
      if (this.family === 'nova')
        this.inner.onData(
          encodeMessage(
            { ':message-type': 'exception', ':exception-type': type, ':content-type': 'application/json' },
            m.payload,
          ),
        );
      else
        this.inner.onData(
          Buffer.from(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message: '' } })}\n\n`),
        );
      return;
    }
    const chunk = streamChunk(m, this.#acc);
    if (chunk === undefined) return;
    if (this.family === 'anthropic') {
      const type = typeof chunk.type === 'string' ? chunk.type : 'message';
      this.inner.onData(Buffer.from(`event: ${type}\ndata: ${JSON.stringify(chunk)}\n\n`));
      return;
    }
    // Nova: `{"contentBlockDelta": {…}}` is the Converse event of that type.
    for (const [event, payload] of Object.entries(chunk)) {
      if (event === 'amazon-bedrock-invocationMetrics' || !isObject(payload)) continue;
      this.inner.onData(
        encodeMessage(
          { ':event-type': event, ':content-type': 'application/json', ':message-type': 'event' },
          Buffer.from(JSON.stringify(payload)),
        ),
      );
    }
  }

  onData(chunk: Buffer): void {
    if (this.#frames === undefined) return this.inner.onData(chunk);
    this.#wireBytes += chunk.length;
    this.#frames.push(chunk);
  }

  onEnd(): void {
    this.inner.onEnd();
  }

  finish(exchange: Exchange, failure: Failure, durationMs: number) {
    const result = this.inner.finish(exchange, failure, durationMs);
    if (this.#frames !== undefined) {
      result.attributes[ATTR_FL_RESPONSE_BODY_BYTES] = this.#wireBytes;
      if (result.outcome.response) result.outcome.response.bodyBytes = this.#wireBytes;
    }
    return result;
  }
}

// ------------------------------------------------------------------------------------------------ module

export const bedrockInvoke: ProtocolModule = {
  protocol: 'bedrock.invoke',

  matches(method: string, url: URL): boolean {
    const action = bedrockRoute(url)?.action;
    return method === 'POST' && (action === 'invoke' || action === 'invoke-with-response-stream');
  },

  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined {
    const route = bedrockRoute(url);
    // Only the body tells the family: a body not read yet (UNREAD) or of no family read here is not ours.
    if (route === undefined || !isObject(body)) return undefined;
    const stream = route.action === 'invoke-with-response-stream';
    const family = invokeFamily(body, route.model);
    if (family === undefined) return undefined;
    if (family !== 'anthropic') return textStart(url, body, headers, captureContent, route.model, family, stream);
    const start = anthropicStart(
      url,
      body,
      headers,
      captureContent,
      route.model,
      providerName(url.hostname, 'bedrock'),
    );
    if (start.llmRequest) FAMILY.set(start.llmRequest, 'anthropic');
    if (!stream) return start;
    if (start.llmRequest) start.llmRequest.stream = true;
    return { ...start, stream: true, attributes: { ...start.attributes, [ATTR_GEN_AI_REQUEST_STREAM]: true } };
  },

  reader(exchange: Exchange, captureContent: boolean): ResponseReader {
    const request = exchange.llmRequest;
    const family =
      (request && FAMILY.get(request)) ??
      (request?.model !== undefined ? familyOfModel(request.model) : undefined) ??
      'anthropic';
    if (family === 'anthropic') return new ChunkRelay('anthropic', anthropicReader(captureContent));
    if (family === 'nova') return new ChunkRelay('nova', bedrockConverse.reader(exchange, captureContent));
    return new TextFamilyReader(family, captureContent);
  },
};
