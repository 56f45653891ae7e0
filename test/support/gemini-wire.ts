/**
 * Gemini answers written by the project, in the wire format of the Gemini API reference: a GenerateContentResponse
 * (`candidates[].content.parts`, `finishReason`, `usageMetadata`, `modelVersion`, `responseId`) and the two ways
 * `streamGenerateContent` sends its partial responses: SSE with `alt=sse` (`data: {…}` events, what @google/genai
 * asks for) and, without it, one JSON array flushed element by element. Plus the error body.
 *
 *   generateContent                     POST …/models/{model}:generateContent
 *   generateContentSse / generateContentArray   POST …/models/{model}:streamGenerateContent[?alt=sse]
 *   geminiError                         the `{"error":{"code","message","status"}}` body of a 4xx/5xx answer
 */
import { freshId, roughTokens, textPieces } from './wire-text';

export interface FunctionCallSpec {
  name: string;
  args: Record<string, unknown>;
}

export interface GeminiAnswerSpec {
  /** The model version the answer names (e.g. gemini-2.5-flash). */
  model: string;
  text?: string;
  functionCalls?: FunctionCallSpec[];
  /** Default STOP. */
  finishReason?: 'STOP' | 'MAX_TOKENS' | 'SAFETY' | 'RECITATION' | 'MALFORMED_FUNCTION_CALL' | 'OTHER';
  promptTokens?: number;
  candidatesTokens?: number;
  /** Thinking tokens (`thoughtsTokenCount`) of a thinking model. */
  thoughtsTokens?: number;
}

type Json = Record<string, unknown>;

function usage(a: GeminiAnswerSpec, final: boolean): Json {
  const prompt = a.promptTokens ?? 12;
  const candidates = a.candidatesTokens ?? roughTokens(a.text ?? JSON.stringify(a.functionCalls ?? ''));
  const thoughts = a.thoughtsTokens;
  if (!final)
    return {
      promptTokenCount: prompt,
      totalTokenCount: prompt,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
    };
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    totalTokenCount: prompt + candidates + (thoughts ?? 0),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
    ...(thoughts !== undefined ? { thoughtsTokenCount: thoughts } : {}),
  };
}

function chunk(a: GeminiAnswerSpec, responseId: string, parts: Json[], final: boolean): Json {
  return {
    candidates: [
      { content: { parts, role: 'model' }, ...(final ? { finishReason: a.finishReason ?? 'STOP' } : {}), index: 0 },
    ],
    usageMetadata: usage(a, final),
    modelVersion: a.model,
    responseId,
  };
}

const callParts = (a: GeminiAnswerSpec): Json[] =>
  (a.functionCalls ?? []).map((c) => ({ functionCall: { name: c.name, args: c.args } }));

/** A GenerateContentResponse (the JSON body of `generateContent`). */
export function generateContent(a: GeminiAnswerSpec): Json {
  const parts = [...(a.text !== undefined ? [{ text: a.text }] : []), ...callParts(a)];
  return chunk(a, freshId('', 22), parts, true);
}

/**
 * The partial responses of a stream: the text a few words at a time (function calls whole, in the last chunk, as
 * Gemini sends them), `finishReason` and the full `usageMetadata` on the last.
 */
export function streamChunks(a: GeminiAnswerSpec): Json[] {
  const id = freshId('', 22);
  const pieces = a.text !== undefined ? textPieces(a.text) : [];
  const groups: string[] = [];
  for (let i = 0; i < pieces.length; i += 3) groups.push(pieces.slice(i, i + 3).join(''));
  const calls = callParts(a);
  if (groups.length === 0) return [chunk(a, id, calls, true)];
  return groups.map((text, i) =>
    chunk(a, id, i === groups.length - 1 ? [{ text }, ...calls] : [{ text }], i === groups.length - 1),
  );
}

/** `streamGenerateContent?alt=sse`: one `data:` event per partial response (Gemini ends each with CRLF CRLF). */
export function generateContentSse(a: GeminiAnswerSpec): string[] {
  return streamChunks(a).map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`);
}

/** `streamGenerateContent` without alt=sse: a JSON array, as the pieces the server flushes (one element each). */
export function generateContentArray(a: GeminiAnswerSpec): string[] {
  const els = streamChunks(a).map((c) => JSON.stringify(c, null, 2));
  return els.map((e, i) => (i === 0 ? `[${e}` : `\n,\r\n${e}`)).concat(['\n]']);
}

/** The canonical status Google APIs give for each HTTP status. */
const STATUSES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** Gemini's error body: `{"error":{"code","message","status"}}`. */
export function geminiError(code: number, message: string): Json {
  return { error: { code, message, status: STATUSES[code] ?? (code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION') } };
}
