/**
 * In-band error and timeout notices: a 200 response whose content is an error message instead of an answer (the
 * AgentChaos catalog strings and their real-world cousins: proxy / gateway notices, JSON error envelopes). To stay
 * quiet on prose that merely discusses errors, a notice must *be* the content: it opens the text and the text is
 * short, or the whole content is a JSON error envelope.
 */
import type { FaultType } from '../src/taxonomy';
import type { Detector, Finding, LlmObservation, MessageObservation, Observation } from './types';
import { failedCall, looksLikeJson, safeParse } from './text';

interface Rule {
  re: RegExp;
  faultType: FaultType;
}

/** Content longer than this is an answer that may mention errors, not a notice. */
const MAX_NOTICE_CHARS = 400;

const RULES: Rule[] = [
  // Bracketed tags (AgentChaos and similar harnesses).
  { re: /^\[(TIMEOUT|TIMED OUT|DEADLINE EXCEEDED)\]/i, faultType: 'timeout' },
  { re: /^\[(API ERROR|ERROR|SERVICE UNAVAILABLE|SERVER ERROR|RATE LIMITED?|OVERLOADED)\]/i, faultType: 'error' },
  { re: /^\[(CONTENT FILTERED|BLOCKED|FILTERED)\]/i, faultType: 'empty' },
  // Timeouts.
  {
    re: /^(error:?\s*)?(the )?(request|operation|upstream( request)?|connection|call) (has )?timed? ?out\b/i,
    faultType: 'timeout',
  },
  {
    re: /^(error:?\s*)?(upstream request timeout|gateway time-?out|504 gateway time-?out|deadline exceeded|context deadline exceeded)/i,
    faultType: 'timeout',
  },
  {
    re: /^(error:?\s*)?connection (dropped|reset|refused|closed)\b.*\b(respond|timeout|timed out|server)/i,
    faultType: 'timeout',
  },
  // Server / gateway errors.
  {
    re: /^(error:?\s*)?(HTTP\s*)?(5\d\d)\b[\s:-]*(internal server error|bad gateway|service unavailable|gateway|server error|error)/i,
    faultType: 'error',
  },
  {
    re: /^(error:?\s*)?(internal server error|bad gateway|service (temporarily )?unavailable|too many requests|rate limit (exceeded|reached)|overloaded_error|the server (is )?(currently )?overloaded)/i,
    faultType: 'error',
  },
  {
    re: /^(an )?(internal )?error (has )?occurred (while|during) (processing|generating|handling)/i,
    faultType: 'error',
  },
];

const ENVELOPE_KEYS = new Set(['error', 'message', 'code', 'type', 'status', 'detail', 'details', 'request_id']);

/** A JSON error envelope (a small object whose meaning is "error", not an answer): its keys, else undefined. */
function errorEnvelope(text: string): string[] | undefined {
  if (!looksLikeJson(text) || text.length > 2000) return undefined;
  // An envelope has an `error` key, spelled out or with \u escapes: most JSON content has neither, and is not parsed.
  if (!text.includes('"error"') && !text.includes('\\u')) return undefined;
  const v = safeParse(text);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const keys = Object.keys(v);
  if (!('error' in v) || keys.length > 5) return undefined;
  return keys.every((k) => ENVELOPE_KEYS.has(k)) ? keys : undefined;
}

const NOTICE_KIND: Partial<Record<FaultType, string>> = { timeout: 'timeout', error: 'error', empty: 'content-filter' };

/**
 * Whether a text is an error notice instead of an answer. The evidence says what kind and how long, never the text
 * itself: findings land on spans, where content is recorded only when capture is on.
 */
export function classifyNotice(text: string): { faultType: FaultType; evidence: string } | undefined {
  if (text.length > 2000 + MAX_NOTICE_CHARS) return undefined; // an answer, not a notice (and no copy of it is made)
  const t = text.trim();
  if (t.length === 0) return undefined;
  const envelope = errorEnvelope(t);
  if (envelope)
    return {
      faultType: 'schema',
      evidence: `a JSON error envelope (keys ${envelope.join(', ')}) instead of an answer`,
    };
  if (t.length > MAX_NOTICE_CHARS) return undefined;
  for (const r of RULES) {
    if (r.re.test(t))
      return {
        faultType: r.faultType,
        evidence: `an in-band ${NOTICE_KIND[r.faultType] ?? r.faultType} notice (${t.length} chars) instead of an answer`,
      };
  }
  return undefined;
}

export const inBandErrorDetector: Detector = {
  name: 'in_band_error',
  applies: (obs) => obs.hasContent && (obs.kind === 'message' || !failedCall(obs)),
  detect(obs: Observation): Finding[] {
    if (obs.kind === 'llm') {
      const hit = classifyNotice((obs as LlmObservation).response.text);
      if (!hit) return [];
      return [
        {
          detector: 'in_band_error',
          severity: 'error',
          confidence: 0.9,
          ...hit,
          location: { spanId: obs.spanId, field: 'content' },
        },
      ];
    }
    const out: Finding[] = [];
    (obs as MessageObservation).delivered.forEach((m, index) => {
      const p = m.payload as unknown;
      const text =
        typeof p === 'string'
          ? p
          : typeof p === 'object' && p !== null
            ? textField(p as Record<string, unknown>)
            : undefined;
      const hit = text === undefined ? undefined : classifyNotice(text);
      if (hit)
        out.push({
          detector: 'in_band_error',
          severity: 'error',
          confidence: 0.85,
          ...hit,
          location: { spanId: obs.spanId, field: 'payload', index },
        });
    });
    return out;
  },
};

function textField(p: Record<string, unknown>): string | undefined {
  for (const k of ['text', 'content', 'result', 'output', 'answer']) if (typeof p[k] === 'string') return p[k];
  return undefined;
}
