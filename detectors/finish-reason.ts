/**
 * finish_reason: what the provider itself says about how the output ended, and usage that contradicts the output.
 * - `length` / `max_tokens` / `model_context_window_exceeded` / `MAX_TOKENS`: the output was cut (truncate).
 * - `content_filter` / `refusal` / `SAFETY`: the output was blocked (empty: withheld content).
 * - a missing finish reason on a 2xx response that carried an id, or a stream that ended without its terminal
 *   marker: the output probably ended early (truncate, lower confidence).
 * - usage: output tokens exactly at the request's max_tokens, or the visible output far shorter than the output
 *   tokens paid for (≈ 1 char per token when English runs at ≈ 4), both mean a cut the finish reason hides.
 */
import type { Detector, Finding, LlmObservation, Observation } from './types';
import { failedCall, outputLength } from './text';

const CUT = new Set(['length', 'max_tokens', 'model_context_window_exceeded', 'max_output_tokens', 'MAX_TOKENS']);
const BLOCKED = new Set(['content_filter', 'refusal', 'SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'BLOCKLIST']);
// A blocked output is withheld content: an omission (the catalog's compound_content_filter is `empty`).

/** Visible chars per output token below which the output cannot be what was paid for. English ≈ 4, code ≈ 3,
 * CJK ≈ 1–1.5: 0.6 leaves room for all of them and still catches a cut to 30 %. */
const MIN_CHARS_PER_TOKEN = 0.6;
const MIN_TOKENS_FOR_RATIO = 40;

export const finishReasonDetector: Detector = {
  name: 'finish_reason',
  applies: (obs: Observation) => obs.kind === 'llm' && !failedCall(obs),
  detect(obs: Observation): Finding[] {
    const o = obs as LlmObservation;
    const r = o.response;
    const out: Finding[] = [];
    const location = { spanId: o.spanId, field: 'finish_reason' };
    const cut = r.finishReasons.find((f) => CUT.has(f));
    if (cut !== undefined) {
      out.push({
        detector: 'finish_reason',
        faultType: 'truncate',
        severity: 'error',
        confidence: 0.95,
        evidence: `finish reason ${cut}: the output was cut at the token limit`,
        location,
      });
    }
    const blocked = r.finishReasons.find((f) => BLOCKED.has(f));
    if (blocked !== undefined) {
      out.push({
        detector: 'finish_reason',
        faultType: 'empty',
        severity: 'error',
        confidence: 0.9,
        evidence: `finish reason ${blocked}: the output was blocked`,
        location,
      });
    }
    if (r.finishReasons.length > 0 && r.stream && !r.stream.done) {
      out.push({
        detector: 'finish_reason',
        faultType: 'truncate',
        severity: 'warning',
        confidence: 0.6,
        evidence: `stream ended without its terminal marker after ${r.stream.chunks} chunks`,
        location,
      });
    }
    const malformed = (r.stream as { malformedEvents?: number } | undefined)?.malformedEvents;
    if (malformed !== undefined && malformed > 0) {
      // Read defensively: the readers may count stream events whose JSON did not parse (a garbled chunk).
      out.push({
        detector: 'finish_reason',
        faultType: 'corrupt',
        severity: 'error',
        confidence: 0.85,
        evidence: `${malformed} stream events did not parse`,
        location,
      });
    }
    if (r.finishReasons.length === 0) {
      if (r.stream && !r.stream.done) {
        out.push({
          detector: 'finish_reason',
          faultType: 'truncate',
          severity: 'error',
          confidence: 0.85,
          evidence: `stream ended after ${r.stream.chunks} chunks without a finish reason or terminal marker`,
          location,
        });
      } else if (!r.stream && r.id !== undefined && (r.status === undefined || r.status < 300)) {
        // A stream that reached its terminal marker is complete even without a finish reason (some proxies omit it).
        out.push({
          detector: 'finish_reason',
          faultType: 'truncate',
          severity: 'warning',
          confidence: 0.5,
          evidence: 'response carries no finish reason',
          location,
        });
      }
    }
    if (cut === undefined && blocked === undefined) {
      const usage = r.usage;
      const outTok = usage?.outputTokens;
      const max = o.request?.maxTokens;
      if (outTok !== undefined && max !== undefined && max > 0 && outTok >= max) {
        out.push({
          detector: 'finish_reason',
          faultType: 'truncate',
          severity: 'warning',
          confidence: 0.7,
          evidence: `output tokens ${outTok} reached max_tokens ${max} but the finish reason is ${r.finishReasons.join(',') || 'missing'}`,
          location: { spanId: o.spanId, field: 'usage.output_tokens' },
        });
      } else if (outTok !== undefined && (o.hasContent || o.facts?.outputChars !== undefined)) {
        const visible = outTok - (usage?.reasoningOutputTokens ?? 0);
        const chars = outputLength(o);
        if (visible >= MIN_TOKENS_FOR_RATIO && chars < visible * MIN_CHARS_PER_TOKEN && !hiddenReasoning(o)) {
          out.push({
            detector: 'finish_reason',
            faultType: chars === 0 ? 'empty' : 'truncate',
            severity: 'warning',
            confidence: 0.7,
            evidence: `${chars} visible chars for ${visible} output tokens (expected ≥ ${Math.round(visible * MIN_CHARS_PER_TOKEN)})`,
            location: { spanId: o.spanId, field: 'usage.output_tokens' },
          });
        }
      }
    }
    return out;
  },
};

/** Models that think without reporting reasoning tokens separately (Anthropic extended thinking counts thinking in
 * output_tokens): the visible output is legitimately short. */
function hiddenReasoning(o: LlmObservation): boolean {
  const model = o.response.model ?? o.request?.model ?? '';
  if (o.request?.provider === 'anthropic' || /claude/i.test(model))
    return o.response.usage?.reasoningOutputTokens === undefined;
  return /^(o\d|gpt-5)/i.test(model) && o.response.usage?.reasoningOutputTokens === undefined;
}
