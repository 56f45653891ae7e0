/**
 * Observations from wire bytes, through the very protocol modules the interceptor uses (so a guard, a test over
 * recorded traffic and the live span all read a response the same way): request JSON → LlmRequestSummary, response
 * bytes (JSON or SSE) → LlmResponseSummary.
 */
import type { ProtocolModule } from '../instrumentation/internal-types';
import { anthropicMessages } from '../instrumentation/providers/anthropic-messages';
import { geminiGenerateContent } from '../instrumentation/providers/gemini';
import { ollamaChat, ollamaGenerate } from '../instrumentation/providers/ollama';
import { openaiChat } from '../instrumentation/providers/openai-chat';
import { openaiResponses } from '../instrumentation/providers/openai-responses';
import type { Exchange, LlmRequestSummary, LlmResponseSummary, Protocol } from '../instrumentation/types';
import type { LlmObservation } from './types';

export type LlmProtocol = Extract<
  Protocol,
  | 'openai.chat'
  | 'openai.responses'
  | 'anthropic.messages'
  | 'gemini.generate_content'
  | 'ollama.chat'
  | 'ollama.generate'
>;

const MODULES: Record<LlmProtocol, ProtocolModule> = {
  'openai.chat': openaiChat,
  'openai.responses': openaiResponses,
  'anthropic.messages': anthropicMessages,
  'gemini.generate_content': geminiGenerateContent,
  'ollama.chat': ollamaChat,
  'ollama.generate': ollamaGenerate,
};

/** Whether `protocol` is one whose answers the detectors read (an LLM answer; not embeddings, not agent calls). */
export function isLlmProtocol(protocol: Protocol): protocol is LlmProtocol {
  return Object.hasOwn(MODULES, protocol);
}

const DEFAULT_URL: Record<LlmProtocol, string> = {
  'openai.chat': 'https://api.openai.com/v1/chat/completions',
  'openai.responses': 'https://api.openai.com/v1/responses',
  'anthropic.messages': 'https://api.anthropic.com/v1/messages',
  'gemini.generate_content': 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent',
  'ollama.chat': 'http://localhost:11434/api/chat',
  'ollama.generate': 'http://localhost:11434/api/generate',
};

/** The request summary the interceptor would build for this body (content included). */
export function summarizeLlmRequest(
  protocol: LlmProtocol,
  body: unknown,
  url?: URL,
  time = Date.now(),
): LlmRequestSummary | undefined {
  const start = MODULES[protocol].start(url ?? new URL(DEFAULT_URL[protocol]), body, {}, true);
  const req = start?.llmRequest;
  if (req) req.time = time;
  return req;
}

export interface WireResponse {
  status: number;
  headers?: Record<string, string | string[] | undefined>;
  /** Body bytes as received (JSON or SSE), in one or more chunks. */
  chunks: readonly (Buffer | string)[];
  durationMs?: number;
  failure?: { errorType?: string; aborted?: boolean };
}

/** The response summary the interceptor would hand to `onExchangeEnd` for these bytes. */
export function summarizeLlmResponse(
  protocol: LlmProtocol,
  res: WireResponse,
  exchange?: Exchange,
): LlmResponseSummary {
  const reader = MODULES[protocol].reader(exchange ?? ({} as Exchange), true);
  const headers = res.headers ?? { 'content-type': sniffContentType(res.chunks) };
  reader.onStart(res.status, headers);
  for (const c of res.chunks) reader.onData(typeof c === 'string' ? Buffer.from(c) : c);
  if (!res.failure) reader.onEnd();
  const { outcome } = reader.finish(exchange ?? ({} as Exchange), res.failure, res.durationMs ?? 0);
  return (
    outcome.response ?? {
      finishReasons: [],
      text: '',
      toolCalls: [],
      durationMs: res.durationMs ?? 0,
      status: res.status,
    }
  );
}

function sniffContentType(chunks: readonly (Buffer | string)[]): string {
  const first = chunks[0];
  const head = (typeof first === 'string' ? first : (first?.toString('utf8', 0, 16) ?? '')).trimStart();
  return head.startsWith('data:') || head.startsWith('event:') ? 'text/event-stream' : 'application/json';
}

/** A full LLM observation from recorded request / response bytes. */
export function llmObservationFromWire(
  protocol: LlmProtocol,
  requestBody: unknown,
  res: WireResponse,
  spanId?: string,
  sentAt?: number,
): LlmObservation {
  const request = summarizeLlmRequest(protocol, requestBody, undefined, sentAt);
  const response = summarizeLlmResponse(protocol, res);
  const obs: LlmObservation = { kind: 'llm', response, hasContent: true };
  if (request) obs.request = request;
  if (spanId !== undefined) obs.spanId = spanId;
  return obs;
}
