/**
 * Context overflow (ARCF: specification / system design; MAST 1.4, nearest): the provider refused the request for
 * its length, or the input the model was given fills its context window — the next turn of that conversation will
 * not fit, and whatever the caller trims is history the model no longer sees.
 *
 * A refusal is read from what any producer records of a failed call: `error.type`, the provider's error code, and
 * the status or exception message, matched against the providers' documented refusals (REFUSALS below). A refused
 * call whose message the producer did not keep is still one when the conversation's own growth says so: the input of
 * the agent's previous call plus its last increase passes the model's window. An answered call is at the limit when
 * its reported input tokens fill FULL of the window (context-windows.ts; unknown models by their refusals only).
 */
import type { Detector, Finding, LlmObservation, Observation } from '../types';
import { answered, monitorFinding } from './common';
import { contextWindowOf } from './context-windows';

export const CONTEXT_OVERFLOW = 'context_overflow';
export { CONTEXT_WINDOWS, contextWindowOf } from './context-windows';

/**
 * How each provider refuses an input too long for the model, as its error code / type and message:
 *  - OpenAI and Azure OpenAI: code `context_length_exceeded`, "This model's maximum context length is N tokens.
 *    However, your messages resulted in M tokens" (400 invalid_request_error); vLLM and other OpenAI-compatible
 *    servers send the same sentence ("However, you requested M tokens");
 *  - Anthropic (and Claude on Bedrock): "prompt is too long: N tokens > M maximum" (400 invalid_request_error); the
 *    stop reason `model_context_window_exceeded` when the window fills while answering;
 *  - Gemini: "The input token count (N) exceeds the maximum number of tokens allowed (M)" (400 INVALID_ARGUMENT);
 *  - Bedrock: ValidationException "Input is too long for requested model", "too many input tokens";
 *  - llama.cpp server: type `exceed_context_size_error`, "the request exceeds the available context size";
 *  - Mistral: "… too large for model with N maximum context length".
 * Bedrock's ThrottlingException "Too many tokens, please wait" is a rate limit, not a length refusal: not matched.
 */
const REFUSAL_CODES =
  /context_length_exceeded|context_window_exceeded|exceed_context_size|string_above_max_length|prompt[_ ]too[_ ]long/i;
const REFUSAL_TEXT =
  /maximum context length|prompt is too long|input token count.{0,40}exceeds the maximum|input is too long for (the )?requested model|too many input tokens|exceeds the available context size|too large for model with \d+ maximum context length|context[_ ](length|window)[_ ]exceeded/i;

/** Share of the window that counts as full: less than 5 % of it is left for the answer and the next turn. */
const FULL = 0.95;

/** The window and the requested size, when the refusal states them (token counts only; never the message). */
function statedSizes(text: string): { requested?: number; window?: number } {
  const n = (s: string | undefined): number | undefined => (s !== undefined ? Number(s) : undefined);
  let m = /maximum context length is (\d+) tokens.*?(?:resulted in|requested|has) (\d+)/is.exec(text);
  if (m) return { window: n(m[1]), requested: n(m[2]) };
  m = /too long: (\d+) tokens > (\d+)/i.exec(text);
  if (m) return { requested: n(m[1]), window: n(m[2]) };
  m = /input token count \(?(\d+)\)? exceeds the maximum number of tokens allowed \(?(\d+)/i.exec(text);
  if (m) return { requested: n(m[1]), window: n(m[2]) };
  return {};
}

function refusal(o: LlmObservation): string | undefined {
  const r = o.response;
  const failed = (r.status !== undefined && r.status >= 400) || r.errorType !== undefined || r.errorCode !== undefined;
  const finish = r.finishReasons.find((f) => /context_window_exceeded/i.test(f));
  if (finish !== undefined) return `finish reason ${finish}`;
  if (!failed) return undefined;
  const code = [r.errorCode, r.errorType].find((c) => c !== undefined && REFUSAL_CODES.test(c));
  const text = `${r.errorMessage ?? ''}\n${r.unparsedBody ?? ''}`;
  if (code === undefined && !REFUSAL_TEXT.test(text)) return undefined;
  const { requested, window } = statedSizes(text);
  const sizes =
    requested !== undefined && window !== undefined
      ? `: ${requested} tokens against a ${window}-token window`
      : window !== undefined
        ? `: a ${window}-token window`
        : '';
  return `${code ?? r.errorType ?? (r.status !== undefined ? `HTTP ${r.status}` : 'error')}${sizes}`;
}

/** Input tokens as reported (`gen_ai.usage.input_tokens`, which the semconv defines to include cached tokens). */
const inputTokens = (o: LlmObservation): number | undefined => o.response.usage?.inputTokens;

/** The same conversation's earlier calls: the agent turn's, else the agent's. */
function conversation(o: LlmObservation, earlier: readonly Observation[]): LlmObservation[] {
  const turn = o.scope?.turn;
  const agent = o.scope?.agent;
  if (turn === undefined && agent === undefined) return [];
  return earlier.filter(
    (e): e is LlmObservation =>
      e.kind === 'llm' && (turn !== undefined ? e.scope?.turn === turn : e.scope?.agent === agent),
  );
}

/** A refused call that recorded no reason: the conversation's last two inputs project past the window. */
function projectedPast(o: LlmObservation, earlier: readonly Observation[], window: number): string | undefined {
  const r = o.response;
  const refusedRequest =
    r.status === 400 || r.status === 413 || /bad ?request|invalid|validation|400/i.test(r.errorType ?? '');
  if (!refusedRequest) return undefined;
  const sizes = conversation(o, earlier)
    .filter(answered)
    .map(inputTokens)
    .filter((n): n is number => n !== undefined);
  if (sizes.length < 2) return undefined;
  const last = sizes[sizes.length - 1]!;
  const step = last - sizes[sizes.length - 2]!;
  if (step <= 0 || last + step < window) return undefined;
  return `a refused request after the conversation's input grew to ${last} tokens (+${step} a call), past the ${window}-token window at that rate`;
}

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
  detect(obs, ctx): Finding[] {
    const o = obs as LlmObservation;
    const r = o.response;
    const model = o.request?.model ?? r.model;
    const refused = refusal(o);
    if (refused !== undefined)
      return [
        monitorFinding(
          CONTEXT_OVERFLOW,
          'context_overflow',
          'error',
          'error',
          0.95,
          `the provider refused the input as too long (${refused})`,
        ),
      ];
    const window = contextWindowOf(model);
    if (window === undefined) return [];
    const input = answered(o) ? inputTokens(o) : undefined;
    if (input !== undefined && input >= FULL * window) {
      return [
        monitorFinding(
          CONTEXT_OVERFLOW,
          'context_overflow',
          'error',
          'warning',
          0.7,
          `input of ${input} tokens fills ${Math.round((100 * input) / window)}% of ${model}'s ${window}-token context window`,
        ),
      ];
    }
    if (answered(o)) return [];
    const projected = projectedPast(o, ctx.earlier, window);
    if (projected !== undefined)
      return [monitorFinding(CONTEXT_OVERFLOW, 'context_overflow', 'error', 'error', 0.75, projected)];
    // A refused call reports no usage: estimate the input from the request it sent (~4 characters a token).
    const chars = r.status === 400 ? requestChars(o) : undefined;
    if (chars !== undefined && chars / 4 >= window) {
      return [
        monitorFinding(
          CONTEXT_OVERFLOW,
          'context_overflow',
          'error',
          'error',
          0.75,
          `HTTP 400 for a request of ~${Math.round(chars / 4)} tokens, over ${model}'s ${window}-token window`,
        ),
      ];
    }
    return [];
  },
};
