/**
 * Google Gemini `generateContent` (`POST …/models/{model}:generateContent`) and `streamGenerateContent`, on the
 * Gemini API (generativelanguage.googleapis.com, `gcp.gemini`) and Vertex AI (`…aiplatform.googleapis.com`,
 * `…/projects/{p}/locations/{l}/publishers/google/models/{model}:…`, `gcp.vertex_ai`). Streams come as SSE with
 * `alt=sse` (what @google/genai sends) or, without it, as one JSON array flushed element by element; each chunk is a
 * partial GenerateContentResponse (parts to append, `usageMetadata` so far, `finishReason` on the last).
 *
 * `finishReason` is mapped to the semconv values: STOP → stop (tool_call when the candidate called functions),
 * MAX_TOKENS → length, the safety family (SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY, …)
 * → content_filter, MALFORMED_FUNCTION_CALL and the other tool failures → error; a prompt blocked before any
 * candidate (`promptFeedback.blockReason`) is content_filter. Usage follows the conventions: input tokens are
 * `promptTokenCount` (cached tokens included, as Gemini counts them) plus tool-use prompt tokens; output tokens are
 * `candidatesTokenCount` plus `thoughtsTokenCount`, which is also the reasoning count.
 */
import { SpanKind } from '@opentelemetry/api';
import {
  ATTR_GEN_AI_OUTPUT_TYPE,
  ATTR_GEN_AI_REQUEST_CHOICE_COUNT,
  ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY,
  ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY,
  ATTR_GEN_AI_REQUEST_SEED,
  ATTR_GEN_AI_REQUEST_STOP_SEQUENCES,
  ATTR_GEN_AI_REQUEST_TOP_K,
  ATTR_GEN_AI_REQUEST_TOP_P,
  GEN_AI_OPERATION_GENERATE_CONTENT,
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
import { dataUriPart, isObject, str } from './content';
import { jsonStreamElements } from '../../src/wire/json-stream';
import { finishLlm, type Failure, type LlmAccumulated } from './llm-result';
import { providerName } from './provider-name';
import { llmStartAttributes, num, setNumber } from './request-attributes';
import { BodyReader, eventJson } from './response-body';
import type { SseEvent } from '../../src/wire/sse';

type Json = Record<string, unknown>;

const METHOD = /\/([^/]+):(generateContent|streamGenerateContent)$/;

/** `…/models/gemini-2.5-flash:generateContent` → the model and whether the call streams. */
export function geminiRoute(url: URL): { model: string; stream: boolean } | undefined {
  const m = METHOD.exec(url.pathname);
  if (!m) return undefined;
  return { model: decodeURIComponent(m[1] as string), stream: m[2] === 'streamGenerateContent' };
}

/** Vertex AI hosts and Vertex-shaped paths (a gateway in front of Vertex keeps its paths). */
export function isVertex(url: URL): boolean {
  return (
    url.hostname.endsWith('aiplatform.googleapis.com') || /\/projects\/[^/]+\/locations\/[^/]+\//.test(url.pathname)
  );
}

const SAFETY = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
]);
const TOOL_FAILURE = new Set(['MALFORMED_FUNCTION_CALL', 'UNEXPECTED_TOOL_CALL', 'TOO_MANY_TOOL_CALLS']);

/** A Gemini finishReason as a semconv finish reason. */
export function geminiFinishReason(reason: string, calledFunctions: boolean): string {
  if (reason === 'STOP') return calledFunctions ? 'tool_call' : 'stop';
  if (reason === 'MAX_TOKENS') return 'length';
  if (SAFETY.has(reason)) return 'content_filter';
  if (TOOL_FAILURE.has(reason)) return 'error';
  return reason.toLowerCase();
}

function usageOf(u: unknown): UsageSummary | undefined {
  if (!isObject(u)) return undefined;
  const prompt = num(u.promptTokenCount);
  const toolPrompt = num(u.toolUsePromptTokenCount);
  const candidates = num(u.candidatesTokenCount);
  const thoughts = num(u.thoughtsTokenCount);
  const cached = num(u.cachedContentTokenCount);
  const usage: UsageSummary = {};
  if (prompt !== undefined || toolPrompt !== undefined) usage.inputTokens = (prompt ?? 0) + (toolPrompt ?? 0);
  if (candidates !== undefined || thoughts !== undefined) usage.outputTokens = (candidates ?? 0) + (thoughts ?? 0);
  if (cached !== undefined) usage.cacheReadInputTokens = cached;
  if (thoughts !== undefined) usage.reasoningOutputTokens = thoughts;
  return usage.inputTokens === undefined && usage.outputTokens === undefined ? undefined : usage;
}

// ------------------------------------------------------------------------------------------------ content

/** Gemini parts → semconv parts. */
function geminiParts(parts: unknown): GenAiPart[] {
  if (!Array.isArray(parts)) return [];
  const out: GenAiPart[] = [];
  for (const p of parts) {
    if (!isObject(p)) continue;
    if (typeof p.text === 'string') {
      out.push(p.thought === true ? { type: 'reasoning', content: p.text } : { type: 'text', content: p.text });
    } else if (isObject(p.functionCall)) {
      out.push({
        type: 'tool_call',
        id: str(p.functionCall.id) ?? null,
        name: str(p.functionCall.name) ?? '',
        arguments: p.functionCall.args ?? {},
      });
    } else if (isObject(p.functionResponse)) {
      out.push({
        type: 'tool_call_response',
        id: str(p.functionResponse.id) ?? null,
        response: p.functionResponse.response ?? null,
      });
    } else if (isObject(p.inlineData)) {
      const d = p.inlineData;
      out.push({
        type: 'blob',
        modality: modalityOf(str(d.mimeType)),
        mime_type: str(d.mimeType) ?? null,
        content: str(d.data) ?? '',
      });
    } else if (isObject(p.fileData)) {
      const d = p.fileData;
      const uri = str(d.fileUri) ?? '';
      out.push(
        uri.startsWith('data:')
          ? dataUriPart(uri, modalityOf(str(d.mimeType)))
          : { type: 'uri', modality: modalityOf(str(d.mimeType)), mime_type: str(d.mimeType) ?? null, uri },
      );
    } else if (isObject(p.executableCode)) {
      out.push({
        type: 'server_tool_call',
        id: null,
        name: 'code_execution',
        server_tool_call: { type: 'code_execution', ...p.executableCode },
      });
    } else if (isObject(p.codeExecutionResult)) {
      out.push({
        type: 'server_tool_call_response',
        id: null,
        server_tool_call_response: { type: 'code_execution', ...p.codeExecutionResult },
      });
    } else {
      const key = Object.keys(p).find((k) => k !== 'thoughtSignature' && k !== 'thought');
      if (key !== undefined) out.push({ type: key });
    }
  }
  return out;
}

function modalityOf(mime: string | undefined): string {
  if (mime === undefined) return 'document';
  const top = mime.split('/')[0] as string;
  return top === 'image' || top === 'audio' || top === 'video' ? top : 'document';
}

function roleOf(content: Json): string {
  const role = str(content.role);
  if (role === 'model') return 'assistant';
  const parts = Array.isArray(content.parts) ? content.parts : [];
  if (parts.length > 0 && parts.every((p) => isObject(p) && isObject(p.functionResponse))) return 'tool';
  return role === 'function' ? 'tool' : (role ?? 'user');
}

/** `contents` → semconv input messages. */
export function geminiInput(contents: unknown): GenAiMessage[] {
  if (typeof contents === 'string') return [{ role: 'user', parts: [{ type: 'text', content: contents }] }];
  if (!Array.isArray(contents)) return [];
  const out: GenAiMessage[] = [];
  for (const c of contents) {
    if (!isObject(c)) continue;
    out.push({ role: roleOf(c), parts: geminiParts(c.parts) });
  }
  return out;
}

/** `systemInstruction` (Content, or a bare string some clients send) → its text. */
export function geminiSystem(system: unknown): string | undefined {
  if (typeof system === 'string') return system;
  if (!isObject(system) || !Array.isArray(system.parts)) return undefined;
  return system.parts.map((p) => (isObject(p) ? (str(p.text) ?? '') : '')).join('\n');
}

export function geminiTools(body: Json): ToolDefinition[] {
  if (!Array.isArray(body.tools)) return [];
  const tools: ToolDefinition[] = [];
  for (const t of body.tools) {
    if (!isObject(t)) continue;
    const decls = t.functionDeclarations ?? t.function_declarations;
    if (Array.isArray(decls)) {
      for (const d of decls) {
        if (!isObject(d)) continue;
        const def: ToolDefinition = { name: str(d.name) ?? '', type: 'function' };
        if (typeof d.description === 'string') def.description = d.description;
        const params = d.parametersJsonSchema ?? d.parameters;
        if (params !== undefined) def.parameters = params;
        tools.push(def);
      }
    } else {
      // Built-in tools: {googleSearch: {}}, {codeExecution: {}}, {urlContext: {}}, …
      for (const key of Object.keys(t)) tools.push({ name: key, type: key });
    }
  }
  return tools;
}

// ------------------------------------------------------------------------------------------------ response

/** One candidate, merged over a stream's chunks. */
interface Candidate {
  parts: Json[];
  finishReason?: string;
}

class GeminiReader extends BodyReader implements ResponseReader {
  readonly #capture: boolean;
  readonly #stream: boolean;
  readonly #acc: LlmAccumulated = { finishReasons: [], text: '', toolCalls: [], done: false };
  readonly #candidates = new Map<number, Candidate>();
  #blockReason: string | undefined;
  #sawFinish = false;

  constructor(capture: boolean, stream: boolean) {
    super();
    this.#capture = capture;
    this.#stream = stream;
  }

  protected override onEvent(e: SseEvent): void {
    const data = eventJson(e, this.#acc);
    if (data === undefined) return;
    this.#chunk(data, true);
  }

  /** One GenerateContentResponse: the whole answer (JSON) or a chunk of a stream (parts appended). */
  #chunk(value: unknown, streamed: boolean): void {
    if (!isObject(value)) return;
    const acc = this.#acc;
    if (isObject(value.error)) {
      acc.errorCode =
        str(value.error.status) ?? (typeof value.error.code === 'number' ? String(value.error.code) : undefined);
      if (streamed) acc.failedInBand = true;
      return;
    }
    if (typeof value.responseId === 'string') acc.id = value.responseId;
    if (typeof value.modelVersion === 'string') acc.model = value.modelVersion;
    if (typeof value.createTime === 'string') {
      const t = Date.parse(value.createTime);
      if (Number.isFinite(t)) acc.created = Math.floor(t / 1000);
    }
    const usage = usageOf(value.usageMetadata);
    if (usage) acc.usage = usage;
    if (isObject(value.promptFeedback) && typeof value.promptFeedback.blockReason === 'string')
      this.#blockReason = value.promptFeedback.blockReason;
    if (!Array.isArray(value.candidates)) return;
    value.candidates.forEach((c, i) => {
      if (!isObject(c)) return;
      const index = typeof c.index === 'number' ? c.index : i;
      let cand = this.#candidates.get(index);
      if (!cand) this.#candidates.set(index, (cand = { parts: [] }));
      const content = isObject(c.content) ? c.content : {};
      if (Array.isArray(content.parts)) for (const p of content.parts) if (isObject(p)) appendPart(cand.parts, p);
      if (typeof c.finishReason === 'string') {
        cand.finishReason = c.finishReason;
        this.#sawFinish = true;
      }
    });
  }

  #outputMessages(): GenAiMessage[] {
    return this.#sorted().map(([, c]) => ({
      role: 'assistant',
      parts: geminiParts(c.parts),
      finish_reason: finishOf(c) ?? '',
    }));
  }

  #sorted(): Array<[number, Candidate]> {
    return [...this.#candidates.entries()].sort((x, y) => x[0] - y[0]);
  }

  finish(_exchange: Exchange, failure: Failure, durationMs: number) {
    const body = this.body;
    const acc = this.#acc;
    let streamed = body.sse;
    if (body.sse) {
      body.text(); // replays an encoded stream through the parser; a no-op otherwise
      // Gemini streams have no terminal event: the chunk with the finish reason ends them.
      acc.done = this.#sawFinish;
    } else if (this.#stream && body.status < 400) {
      // streamGenerateContent without alt=sse: one JSON array, read element by element (a cut array still yields
      // the elements before the cut).
      streamed = true;
      const text = body.text() ?? '';
      const { elements, malformed, closed } = jsonStreamElements(text, 'json-array');
      for (const el of elements) this.#chunk(el, true);
      if (malformed > 0) acc.malformedEvents = malformed;
      acc.done = closed;
      if (elements.length === 0 && text.trim() !== '' && !text.trimStart().startsWith('[')) this.#fromJson(text);
    } else {
      const { value, preview } = body.json();
      if (preview !== undefined) acc.unparsedBody = preview;
      this.#chunk(value, false);
    }
    const sorted = this.#sorted();
    const first = sorted[0]?.[1];
    if (first) {
      acc.text = first.parts
        .filter((p) => typeof p.text === 'string' && p.thought !== true)
        .map((p) => p.text as string)
        .join('');
      acc.toolCalls = first.parts.filter((p) => isObject(p.functionCall)).map((p) => toolCall(p.functionCall as Json));
    }
    acc.finishReasons = sorted.map(([, c]) => finishOf(c)).filter((f): f is string => f !== undefined);
    if (acc.finishReasons.length === 0 && this.#blockReason !== undefined) acc.finishReasons = ['content_filter'];
    return finishLlm(body, acc, this.#capture ? () => this.#outputMessages() : undefined, failure, durationMs, {
      stream: streamed,
    });
  }

  /** A non-array body on a stream route (an error object sent as plain JSON). */
  #fromJson(text: string): void {
    try {
      this.#chunk(JSON.parse(text), false);
    } catch {
      this.#acc.unparsedBody = text.slice(0, 4096);
    }
  }
}

function finishOf(c: Candidate): string | undefined {
  return c.finishReason === undefined
    ? undefined
    : geminiFinishReason(
        c.finishReason,
        c.parts.some((p) => isObject(p.functionCall)),
      );
}

/** Stream chunks continue the last text part (same kind: thought or not) and add every other part. */
function appendPart(parts: Json[], p: Json): void {
  const last = parts[parts.length - 1];
  if (
    last &&
    typeof p.text === 'string' &&
    typeof last.text === 'string' &&
    (last.thought === true) === (p.thought === true) &&
    !isObject(p.functionCall)
  ) {
    parts[parts.length - 1] = { ...last, text: last.text + p.text };
    return;
  }
  parts.push(p);
}

function toolCall(fc: Json): ToolCallSummary {
  const call: ToolCallSummary = { name: str(fc.name) ?? '', arguments: JSON.stringify(fc.args ?? {}) };
  if (typeof fc.id === 'string') call.id = fc.id;
  return call;
}

// ------------------------------------------------------------------------------------------------ module

export const geminiGenerateContent: ProtocolModule = {
  protocol: 'gemini.generate_content',

  matches(method: string, url: URL): boolean {
    return method === 'POST' && geminiRoute(url) !== undefined;
  },

  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined {
    // The URL is the evidence (only Google's API has `models/{model}:generateContent`): a body not yet read (a
    // streamed upload) still names the call from it.
    const route = geminiRoute(url);
    if (!route || !isObject(body)) return undefined;
    const { model, stream } = route;
    const provider = providerName(url.hostname, isVertex(url) ? 'vertex' : 'gemini');
    const config = isObject(body.generationConfig)
      ? body.generationConfig
      : isObject(body.generation_config)
        ? body.generation_config
        : {};
    const llmRequest: LlmRequestSummary = {
      provider,
      operation: GEN_AI_OPERATION_GENERATE_CONTENT,
      model,
      stream,
      messages: geminiInput(body.contents),
      tools: geminiTools(body),
      time: Date.now(),
    };
    const maxTokens = num(config.maxOutputTokens);
    if (maxTokens !== undefined) llmRequest.maxTokens = maxTokens;
    const temperature = num(config.temperature);
    if (temperature !== undefined) llmRequest.temperature = temperature;
    const system = geminiSystem(body.systemInstruction ?? body.system_instruction);
    if (system !== undefined) llmRequest.systemInstructions = system;

    const attributes = llmStartAttributes(url, llmRequest, headers, captureContent);
    setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_P, config.topP);
    setNumber(attributes, ATTR_GEN_AI_REQUEST_TOP_K, config.topK);
    setNumber(attributes, ATTR_GEN_AI_REQUEST_SEED, config.seed);
    setNumber(attributes, ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY, config.frequencyPenalty);
    setNumber(attributes, ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY, config.presencePenalty);
    const n = num(config.candidateCount);
    if (n !== undefined && n !== 1) attributes[ATTR_GEN_AI_REQUEST_CHOICE_COUNT] = n;
    if (Array.isArray(config.stopSequences))
      attributes[ATTR_GEN_AI_REQUEST_STOP_SEQUENCES] = config.stopSequences.filter(
        (s): s is string => typeof s === 'string',
      );
    const mime = str(config.responseMimeType);
    if (mime === 'application/json' || config.responseSchema !== undefined || config.responseJsonSchema !== undefined)
      attributes[ATTR_GEN_AI_OUTPUT_TYPE] = 'json';
    else if (mime === 'text/plain') attributes[ATTR_GEN_AI_OUTPUT_TYPE] = 'text';
    return {
      name: `${GEN_AI_OPERATION_GENERATE_CONTENT} ${model}`,
      kind: SpanKind.CLIENT,
      attributes,
      stream,
      operation: GEN_AI_OPERATION_GENERATE_CONTENT,
      provider,
      llmRequest,
    };
  },

  reader(exchange: Exchange, captureContent: boolean): ResponseReader {
    return new GeminiReader(captureContent, exchange.stream === true);
  },
};
