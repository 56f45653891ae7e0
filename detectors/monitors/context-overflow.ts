/**
 * Context overflow (ARCF: specification / system design; MAST 1.4, nearest): the provider refused the request for
 * its length (OpenAI `context_length_exceeded`, a finish reason `model_context_window_exceeded`), or the input the
 * model was given fills its context window — the next turn of that conversation will not fit, and whatever the
 * caller trims is history the model no longer sees.
 *
 * The window is the model's published context length, matched by model-name prefix (`contextWindowOf`); models not
 * in the table are judged by their errors only. Input size comes from the reported usage, or — for a refused call,
 * which reports none — from the request itself at ~4 characters per token.
 */
import type { Detector, Finding, LlmObservation } from '../types';
import { monitorFinding } from './common';

export const CONTEXT_OVERFLOW = 'context_overflow';

/** Published context windows in tokens, by model-name prefix (longest prefix wins). */
export const CONTEXT_WINDOWS: ReadonlyArray<readonly [string, number]> = [
  ['gpt-3.5-turbo', 16_385],
  ['gpt-4-32k', 32_768],
  ['gpt-4', 8_192],
  ['gpt-4-turbo', 128_000],
  ['gpt-4o', 128_000],
  ['gpt-4.5', 128_000],
  ['gpt-4.1', 1_047_576],
  ['gpt-5', 400_000],
  ['o1', 200_000],
  ['o1-mini', 128_000],
  ['o1-preview', 128_000],
  ['o3', 200_000],
  ['o4-mini', 200_000],
  ['claude-', 200_000],
  ['gemini-1.5', 1_048_576],
  ['gemini-2', 1_048_576],
  ['gemini-3', 1_048_576],
  ['llama3.1', 131_072],
  ['llama3.2', 131_072],
  ['llama3.3', 131_072],
  ['llama3:', 8_192],
  ['mistral-large', 131_072],
];

export function contextWindowOf(model: string | undefined): number | undefined {
  if (model === undefined) return undefined;
  const m = model.toLowerCase().replace(/^(openai|anthropic|google|models)\//, '');
  let best: readonly [string, number] | undefined;
  for (const entry of CONTEXT_WINDOWS) if (m.startsWith(entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
  return best?.[1];
}

const OVERFLOW_CODES = /context_length_exceeded|context_window_exceeded|string_above_max_length|prompt[_ ]too[_ ]long/i;
/** Providers that reject an over-long input with a generic 400 say so in the body (checked only when it is at hand). */
const OVERFLOW_TEXT = /maximum context length|context (window|length)|prompt is too long|input token count .* exceeds|exceeds the maximum number of tokens|too many tokens/i;

/** Share of the window that counts as full. */
const FULL = 0.95;

function requestChars(o: LlmObservation): number | undefined {
  const req = o.request;
  if (!req || req.messages.length === 0) return undefined;
  let n = req.systemInstructions?.length ?? 0;
  for (const m of req.messages) n += JSON.stringify(m.parts).length;
  return n;
}

export const contextOverflowDetector: Detector = {
  name: CONTEXT_OVERFLOW,
  level: 'workflow',
  applies: (obs) => obs.kind === 'llm',
  detect(obs): Finding[] {
    const o = obs as LlmObservation;
    const r = o.response;
    const model = o.request?.model ?? r.model;
    const window = contextWindowOf(model);
    const failed = r.status !== undefined && r.status >= 400;
    const code = r.errorCode ?? '';
    if ((failed && (OVERFLOW_CODES.test(code) || OVERFLOW_TEXT.test(r.unparsedBody ?? ''))) || r.finishReasons.some((f) => /context_window_exceeded/i.test(f))) {
      return [monitorFinding(CONTEXT_OVERFLOW, 'context_overflow', 'error', 'error', 0.95, `the provider refused the input as too long (${code || r.finishReasons.join(',') || `HTTP ${r.status}`})`)];
    }
    if (window === undefined) return [];
    const input = r.usage?.inputTokens;
    if (input !== undefined && input >= FULL * window) {
      return [
        monitorFinding(CONTEXT_OVERFLOW, 'context_overflow', 'error', 'warning', 0.7, `input of ${input} tokens fills ${Math.round((100 * input) / window)}% of ${model}'s ${window}-token context window`),
      ];
    }
    // A refused call reports no usage: estimate the input from the request it sent.
    const chars = failed && r.status === 400 ? requestChars(o) : undefined;
    if (chars !== undefined && chars / 4 >= window) {
      return [monitorFinding(CONTEXT_OVERFLOW, 'context_overflow', 'error', 'error', 0.75, `HTTP 400 for a request of ~${Math.round(chars / 4)} tokens, over ${model}'s ${window}-token window`)];
    }
    return [];
  },
};
