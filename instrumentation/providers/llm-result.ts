/**
 * What an LLM reader accumulated, turned into span attributes and the outcome handed to `onExchangeEnd`. Shared by
 * every LLM reader (OpenAI chat and Responses, Anthropic, Gemini, Ollama) so all record the same facts under the
 * same names.
 */
import type { Attributes } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_FL_RESPONSE_ABORTED,
  ATTR_FL_RESPONSE_BODY_BYTES,
  ATTR_FL_RESPONSE_CHUNK_COUNT,
  ATTR_FL_RESPONSE_CONTENT_HASH,
  ATTR_FL_RESPONSE_CONTENT_TYPE,
  ATTR_FL_RESPONSE_CREATED,
  ATTR_FL_RESPONSE_DONE,
  ATTR_FL_RESPONSE_MALFORMED_EVENTS,
  ATTR_FL_RESPONSE_OUTPUT_CHARS,
  ATTR_FL_RESPONSE_TOOL_CALL_COUNT,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ERROR_TYPE_OTHER,
} from '../semconv';
import type { ExchangeOutcome, GenAiMessage, LlmResponseSummary, ToolCallSummary, UsageSummary } from '../types';
import { contentHash } from './content';
import type { ResponseBody } from './response-body';
import { answerVerdicts, type Declared } from './verdicts';

export interface LlmAccumulated {
  id?: string;
  model?: string;
  created?: number;
  finishReasons: string[];
  text: string;
  toolCalls: ToolCallSummary[];
  usage?: UsageSummary;
  /** The stream's terminal marker arrived (OpenAI `[DONE]`, Anthropic `message_stop`, Responses `response.completed`,
   * Ollama's `done: true` line, the closing `]` of Gemini's JSON-array stream). */
  done: boolean;
  /** SSE events whose `data:` was not JSON (a garbled or cut event): counted, not thrown away silently. */
  malformedEvents?: number;
  /** Error code from a provider error body (`rate_limit_exceeded`, `overloaded_error`), when there was one. */
  errorCode?: string;
  /** The provider reported a failure inside a successful HTTP response (a Responses `error` event or
   * `response.failed`, an `error` line in an Ollama stream): the call failed although the status says 2xx. */
  failedInBand?: boolean;
  unparsedBody?: string;
}

export interface FinishOptions {
  /** The body is a stream whatever its content type (Ollama NDJSON, Gemini's JSON-array stream). Default: SSE. */
  stream?: boolean;
  /** What the request declared (tools, response schema): the answer's content-free verdicts are judged against it. */
  declared?: Declared;
}

export type Failure = { errorType?: string; aborted?: boolean } | undefined;

export function finishLlm(
  body: ResponseBody,
  acc: LlmAccumulated,
  outputMessages: (() => GenAiMessage[]) | undefined,
  failure: Failure,
  durationMs: number,
  options: FinishOptions = {},
): { attributes: Attributes; outcome: ExchangeOutcome; error?: string } {
  const a: Attributes = {};
  const streamed = options.stream ?? body.sse;
  const status = body.status || undefined;
  if (status !== undefined) a[ATTR_HTTP_RESPONSE_STATUS_CODE] = status;
  if (acc.id !== undefined) a[ATTR_GEN_AI_RESPONSE_ID] = acc.id;
  if (acc.model !== undefined) a[ATTR_GEN_AI_RESPONSE_MODEL] = acc.model;
  if (acc.finishReasons.length > 0) a[ATTR_GEN_AI_RESPONSE_FINISH_REASONS] = acc.finishReasons;
  if (acc.created !== undefined) a[ATTR_FL_RESPONSE_CREATED] = acc.created;
  const u = acc.usage;
  if (u) {
    if (u.inputTokens !== undefined) a[ATTR_GEN_AI_USAGE_INPUT_TOKENS] = u.inputTokens;
    if (u.outputTokens !== undefined) a[ATTR_GEN_AI_USAGE_OUTPUT_TOKENS] = u.outputTokens;
    if (u.cacheReadInputTokens !== undefined) a[ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = u.cacheReadInputTokens;
    if (u.cacheCreationInputTokens !== undefined)
      a[ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = u.cacheCreationInputTokens;
    if (u.reasoningOutputTokens !== undefined) a[ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = u.reasoningOutputTokens;
  }
  a[ATTR_FL_RESPONSE_OUTPUT_CHARS] = acc.text.length;
  a[ATTR_FL_RESPONSE_TOOL_CALL_COUNT] = acc.toolCalls.length;
  a[ATTR_FL_RESPONSE_CONTENT_HASH] = contentHash(acc.text, acc.toolCalls);
  a[ATTR_FL_RESPONSE_BODY_BYTES] = body.bytes;
  if (body.contentType !== undefined) a[ATTR_FL_RESPONSE_CONTENT_TYPE] = body.contentType;
  if (streamed) {
    a[ATTR_FL_RESPONSE_CHUNK_COUNT] = body.chunks;
    a[ATTR_FL_RESPONSE_DONE] = acc.done;
    if (body.firstChunkMs !== undefined) a[ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = body.firstChunkMs / 1000;
    if (acc.malformedEvents) a[ATTR_FL_RESPONSE_MALFORMED_EVENTS] = acc.malformedEvents;
  }
  if (failure?.aborted) a[ATTR_FL_RESPONSE_ABORTED] = true;
  // Verdicts on what came back (never the content itself): an answer, not an error body.
  if (status === undefined || status < 400) Object.assign(a, answerVerdicts(acc.text, acc.toolCalls, options.declared));

  let errorType: string | undefined;
  let error: string | undefined;
  if (failure?.errorType !== undefined && !failure.aborted) {
    errorType = failure.errorType;
    error = failure.errorType;
  } else if (status !== undefined && status >= 400) {
    errorType = String(status);
    error = acc.errorCode !== undefined ? `HTTP ${status} ${acc.errorCode}` : `HTTP ${status}`;
  } else if (acc.failedInBand) {
    errorType = acc.errorCode ?? ERROR_TYPE_OTHER;
    error = `in-band error ${errorType}`;
  }
  if (errorType !== undefined) a[ATTR_ERROR_TYPE] = errorType;
  if (outputMessages && status !== undefined && status < 400) {
    const messages = outputMessages();
    if (messages.length > 0) a[ATTR_GEN_AI_OUTPUT_MESSAGES] = JSON.stringify(messages);
  }

  const response: LlmResponseSummary = {
    finishReasons: acc.finishReasons,
    text: acc.text,
    toolCalls: acc.toolCalls,
    bodyBytes: body.bytes,
    durationMs,
  };
  if (status !== undefined) response.status = status;
  if (acc.id !== undefined) response.id = acc.id;
  if (acc.model !== undefined) response.model = acc.model;
  if (acc.created !== undefined) response.created = acc.created;
  if (acc.usage) response.usage = acc.usage;
  if (body.contentType !== undefined) response.contentType = body.contentType;
  if (acc.unparsedBody !== undefined) response.unparsedBody = acc.unparsedBody;
  if (streamed) {
    response.stream = { chunks: body.chunks, done: acc.done };
    if (body.firstChunkMs !== undefined) response.stream.timeToFirstChunkMs = body.firstChunkMs;
    if (acc.malformedEvents) response.stream.malformedEvents = acc.malformedEvents;
  }
  if (errorType !== undefined) response.errorType = errorType;
  if (acc.errorCode !== undefined) response.errorCode = acc.errorCode;
  if (failure?.aborted) response.aborted = true;

  const outcome: ExchangeOutcome = { response, durationMs };
  if (status !== undefined) outcome.status = status;
  if (errorType !== undefined) outcome.errorType = errorType;
  return error !== undefined ? { attributes: a, outcome, error } : { attributes: a, outcome };
}
