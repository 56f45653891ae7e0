/**
 * Embeddings calls, one CLIENT `embeddings {model}` span each, in the three wire formats apps use:
 *  - OpenAI-compatible `POST …/embeddings` (OpenAI, Azure, Mistral, Voyage, vLLM, LiteLLM, …): `input` →
 *    `data[].embedding` (floats, or base64 with `encoding_format: "base64"`, the openai SDK's default);
 *  - Gemini `…/models/{model}:embedContent` and `:batchEmbedContents` (what @google/genai sends for one or many);
 *  - Ollama `POST …/api/embed` (`input` → `embeddings`) and the older `/api/embeddings` (`prompt` → `embedding`).
 * Recorded: model, encoding formats, the number of inputs and vectors, the vector dimension
 * (gen_ai.embeddings.dimension.count) and input tokens when the provider counts them. An embeddings call has no
 * messages, text or tool calls: no content is captured and the online LLM detectors do not read it.
 */
import type { Attributes } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_FL_REQUEST_INPUT_COUNT,
  ATTR_FL_REQUEST_RETRY_COUNT,
  ATTR_FL_RESPONSE_BODY_BYTES,
  ATTR_FL_RESPONSE_EMBEDDING_COUNT,
  ATTR_GEN_AI_EMBEDDINGS_DIMENSION_COUNT,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_ENCODING_FORMATS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  GEN_AI_OPERATION_EMBEDDINGS,
} from '../semconv';
import type { ProtocolModule, ProtocolStart, ResponseReader } from '../internal-types';
import type { Exchange, ExchangeOutcome, Protocol } from '../types';
import { isObject, str } from './content';
import { isVertex } from './gemini';
import type { Failure } from './llm-result';
import { providerName, type WireFamily } from './provider-name';
import { lazyLlmStart, num, retryCount, serverPort } from './request-attributes';
import { ResponseBody } from './response-body';

type Json = Record<string, unknown>;

/** What an embeddings answer says, in any of the three formats. */
interface EmbeddingsAnswer {
  vectors: number;
  dimensions?: number;
  inputTokens?: number;
  model?: string;
  id?: string;
  errorCode?: string;
}

/** A vector's dimension: a float array's length, or a base64 float32 vector's bytes / 4. */
function dimensionOf(v: unknown): number | undefined {
  if (Array.isArray(v)) return v.length;
  if (typeof v === 'string') return Math.floor(Math.floor((v.replace(/=+$/, '').length * 3) / 4) / 4);
  if (isObject(v) && Array.isArray(v.values)) return v.values.length;
  return undefined;
}

function errorCodeOf(value: Json): string | undefined {
  const e = value.error;
  if (typeof e === 'string') return e;
  if (!isObject(e)) return undefined;
  return str(e.code) ?? str(e.status) ?? str(e.type);
}

const ANSWERS: Record<'openai' | 'gemini' | 'ollama', (v: Json) => EmbeddingsAnswer> = {
  openai(v) {
    const data = Array.isArray(v.data) ? v.data.filter(isObject) : [];
    const a: EmbeddingsAnswer = { vectors: data.length };
    const dims = data[0] !== undefined ? dimensionOf(data[0].embedding) : undefined;
    if (dims !== undefined) a.dimensions = dims;
    const input = isObject(v.usage) ? num(v.usage.prompt_tokens) : undefined;
    if (input !== undefined) a.inputTokens = input;
    if (typeof v.model === 'string') a.model = v.model;
    if (typeof v.id === 'string') a.id = v.id;
    return a;
  },
  gemini(v) {
    const list = Array.isArray(v.embeddings) ? v.embeddings : isObject(v.embedding) ? [v.embedding] : [];
    const a: EmbeddingsAnswer = { vectors: list.length };
    const dims = list[0] !== undefined ? dimensionOf(list[0]) : undefined;
    if (dims !== undefined) a.dimensions = dims;
    const input = isObject(v.usageMetadata) ? num(v.usageMetadata.promptTokenCount) : undefined;
    if (input !== undefined) a.inputTokens = input;
    return a;
  },
  ollama(v) {
    const list = Array.isArray(v.embeddings) ? v.embeddings : Array.isArray(v.embedding) ? [v.embedding] : [];
    const a: EmbeddingsAnswer = { vectors: list.length };
    const dims = list[0] !== undefined ? dimensionOf(list[0]) : undefined;
    if (dims !== undefined) a.dimensions = dims;
    const input = num(v.prompt_eval_count);
    if (input !== undefined) a.inputTokens = input;
    if (typeof v.model === 'string') a.model = v.model;
    return a;
  },
};

class EmbeddingsReader implements ResponseReader {
  readonly #body = new ResponseBody(0, () => {});
  readonly #family: 'openai' | 'gemini' | 'ollama';

  constructor(family: 'openai' | 'gemini' | 'ollama') {
    this.#family = family;
  }

  onStart(status: number, headers: Record<string, string | string[] | undefined>): void {
    this.#body.onStart(status, headers);
  }

  onData(chunk: Buffer): void {
    this.#body.onData(chunk);
  }

  onEnd(): void {
    this.#body.onEnd();
  }

  finish(
    _exchange: Exchange,
    failure: Failure,
    durationMs: number,
  ): { attributes: Attributes; outcome: ExchangeOutcome; error?: string } {
    const body = this.#body;
    const a: Attributes = { [ATTR_FL_RESPONSE_BODY_BYTES]: body.bytes };
    const status = body.status || undefined;
    if (status !== undefined) a[ATTR_HTTP_RESPONSE_STATUS_CODE] = status;
    const { value } = body.json();
    let errorCode: string | undefined;
    if (isObject(value)) {
      errorCode = errorCodeOf(value);
      if (status !== undefined && status < 400) {
        const answer = ANSWERS[this.#family](value);
        a[ATTR_FL_RESPONSE_EMBEDDING_COUNT] = answer.vectors;
        if (answer.dimensions !== undefined) a[ATTR_GEN_AI_EMBEDDINGS_DIMENSION_COUNT] = answer.dimensions;
        if (answer.inputTokens !== undefined) a[ATTR_GEN_AI_USAGE_INPUT_TOKENS] = answer.inputTokens;
        if (answer.model !== undefined) a[ATTR_GEN_AI_RESPONSE_MODEL] = answer.model;
        if (answer.id !== undefined) a[ATTR_GEN_AI_RESPONSE_ID] = answer.id;
      }
    }
    const outcome: ExchangeOutcome = { durationMs };
    if (status !== undefined) outcome.status = status;
    let error: string | undefined;
    if (failure?.errorType !== undefined && !failure.aborted) {
      outcome.errorType = failure.errorType;
      error = failure.errorType;
    } else if (status !== undefined && status >= 400) {
      outcome.errorType = String(status);
      error = errorCode !== undefined ? `HTTP ${status} ${errorCode}` : `HTTP ${status}`;
    }
    if (outcome.errorType !== undefined) a[ATTR_ERROR_TYPE] = outcome.errorType;
    return error !== undefined ? { attributes: a, outcome, error } : { attributes: a, outcome };
  }
}

/** What a request embeds: its model (when the body names it), inputs and encoding format. */
interface EmbeddingsRequest {
  model?: string;
  inputs: number;
  encodingFormat?: string;
}

function count(input: unknown): number {
  if (typeof input === 'string') return 1;
  if (!Array.isArray(input)) return 0;
  // A list of token ids is one input; a list of lists (or strings) is many.
  return input.length > 0 && input.every((x) => typeof x === 'number') ? 1 : input.length;
}

const GEMINI_METHOD = /\/([^/]+):(embedContent|batchEmbedContents)$/;

function embeddingsModule(
  protocol: Extract<Protocol, 'openai.embeddings' | 'gemini.embeddings' | 'ollama.embeddings'>,
  family: 'openai' | 'gemini' | 'ollama',
  matchesPath: (pathname: string) => boolean,
  read: (url: URL, body: Json) => EmbeddingsRequest | undefined,
): ProtocolModule {
  return {
    protocol,
    matches: (method, url) => method === 'POST' && matchesPath(url.pathname),

    start(url: URL, body: unknown, headers: Record<string, string>): ProtocolStart | undefined {
      if (!isObject(body)) return undefined;
      const req = read(url, body);
      if (req === undefined) return undefined;
      const wire: WireFamily = family === 'gemini' && isVertex(url) ? 'vertex' : family;
      const provider = providerName(url.hostname, wire);
      const attributes: Attributes = {
        [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_EMBEDDINGS,
        [ATTR_GEN_AI_PROVIDER_NAME]: provider,
        [ATTR_SERVER_ADDRESS]: url.hostname,
        [ATTR_SERVER_PORT]: serverPort(url),
        [ATTR_FL_REQUEST_INPUT_COUNT]: req.inputs,
      };
      if (req.model !== undefined) attributes[ATTR_GEN_AI_REQUEST_MODEL] = req.model;
      if (req.encodingFormat !== undefined) attributes[ATTR_GEN_AI_REQUEST_ENCODING_FORMATS] = [req.encodingFormat];
      const retries = retryCount(headers);
      if (retries !== undefined) attributes[ATTR_FL_REQUEST_RETRY_COUNT] = retries;
      return lazyLlmStart(GEN_AI_OPERATION_EMBEDDINGS, provider, req.model, attributes, false);
    },

    reader: () => new EmbeddingsReader(family),
  };
}

export const openaiEmbeddings: ProtocolModule = embeddingsModule(
  'openai.embeddings',
  'openai',
  (p) => p.endsWith('/embeddings'),
  (_url, body) => {
    if (body.input === undefined) return undefined;
    const req: EmbeddingsRequest = { inputs: count(body.input) };
    if (typeof body.model === 'string') req.model = body.model;
    // The API's default is float; the openai SDK asks for base64 unless told otherwise.
    req.encodingFormat = str(body.encoding_format) ?? 'float';
    return req;
  },
);

export const geminiEmbeddings: ProtocolModule = embeddingsModule(
  'gemini.embeddings',
  'gemini',
  (p) => GEMINI_METHOD.test(p),
  (url, body) => {
    const m = GEMINI_METHOD.exec(url.pathname);
    if (!m) return undefined;
    // The URL is the evidence (Google's `:embedContent` / `:batchEmbedContents`).
    const batch = m[2] === 'batchEmbedContents';
    return {
      model: decodeURIComponent(m[1] as string),
      inputs: batch ? (Array.isArray(body.requests) ? body.requests.length : 0) : 1,
    };
  },
);

export const ollamaEmbeddings: ProtocolModule = embeddingsModule(
  'ollama.embeddings',
  'ollama',
  (p) => p.endsWith('/api/embed') || p.endsWith('/api/embeddings'),
  (url, body) => {
    if (typeof body.model !== 'string') return undefined;
    if (url.pathname.endsWith('/api/embed'))
      return body.input === undefined ? undefined : { model: body.model, inputs: count(body.input) };
    // /api/embeddings: `prompt`; an OpenAI-shaped body on that path is left to the OpenAI-compatible module.
    return typeof body.prompt === 'string' ? { model: body.model, inputs: 1 } : undefined;
  },
);
