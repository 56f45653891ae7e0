/**
 * Structural truncation: output whose structure says it stopped early, whatever the finish reason claims.
 * - JSON-looking content or tool arguments that end inside a string or with unclosed brackets;
 * - an unclosed ``` code fence;
 * - a tool-argument string that stops mid-word: it is the start of a word the conversation contains but never the
 *   whole word (a city, a password, a path cut short), or it ends in a space.
 * For messages: a string payload or JSON-string field that is cut JSON.
 */
import type { Detector, Finding, LlmObservation, MessageObservation, Observation } from './types';
import {
  argumentsValue,
  conversationRaw,
  conversationText,
  failedCall,
  forEachString,
  looksLikeJson,
  scanJson,
  unclosedFence,
  wholePrefix,
} from './text';

function isWord(code: number): boolean {
  return (
    (code >= 48 && code <= 57) ||
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    code === 95 ||
    code > 0x7f
  );
}

/**
 * A capitalised leaf that the conversation only ever continues with another capitalised word: the head of a longer
 * proper name ("San" of "San Francisco", "New" of "New York") — a name cut at a word boundary.
 */
export function cutName(leaf: string, raw: string): boolean {
  if (!/^\p{Lu}[\p{L}\p{N}'.-]*( \p{Lu}[\p{L}\p{N}'.-]*)*$/u.test(leaf) || leaf.length > 60) return false;
  let hits = 0;
  for (let at = raw.indexOf(leaf); at >= 0; at = raw.indexOf(leaf, at + 1)) {
    const prev = at > 0 ? raw.charCodeAt(at - 1) : 32;
    if (isWord(prev)) continue;
    const rest = raw.slice(at + leaf.length, at + leaf.length + 2);
    if (!/^ \p{Lu}/u.test(rest)) return false;
    hits++;
  }
  return hits > 0;
}

/**
 * The leaf (lower-cased) occurs in the conversation only as the start of a longer word, never as a whole token, and
 * ends in a word character: a mid-word cut of something the model copied from the conversation.
 */
export function cutMidWord(leaf: string, convo: string, caseSensitive = false): boolean {
  const l = caseSensitive ? leaf : leaf.toLowerCase();
  if (l.length === 0 || l.length > 200 || !isWord(l.charCodeAt(l.length - 1))) return false;
  let prefixHits = 0;
  for (let at = convo.indexOf(l); at >= 0; at = convo.indexOf(l, at + 1)) {
    const next = at + l.length < convo.length ? convo.charCodeAt(at + l.length) : 32;
    if (!isWord(next)) return false; // the whole token is in the conversation: not a cut
    if (wholePrefix(l, convo.slice(at + l.length, at + l.length + 2))) return false; // a short SHA, a path's head
    const prev = at > 0 ? convo.charCodeAt(at - 1) : 32;
    if (!isWord(prev) || !isWord(l.charCodeAt(0))) prefixHits++;
  }
  return prefixHits > 0;
}

export const structuralTruncationDetector: Detector = {
  name: 'structural_truncation',
  applies: (obs) => obs.hasContent && (obs.kind === 'message' || !failedCall(obs)),
  detect(obs: Observation): Finding[] {
    const out: Finding[] = [];
    const add = (confidence: number, evidence: string, field: string, index?: number) =>
      out.push({
        detector: 'structural_truncation',
        faultType: 'truncate',
        severity: 'error',
        confidence,
        evidence,
        location: index === undefined ? { spanId: obs.spanId, field } : { spanId: obs.spanId, field, index },
      });
    if (obs.kind === 'llm') {
      const o = obs as LlmObservation;
      const text = o.response.text;
      if (looksLikeJson(text) && scanJson(text) === 'incomplete')
        add(0.9, 'JSON content ends inside a string or with unclosed brackets', 'content');
      else if (unclosedFence(text)) add(0.8, 'unclosed code fence', 'content');
      // The conversation (all of the request's text, lower-cased too) is read only for tool arguments: built when
      // the response has tool calls, not for every answer (it cannot throw, so nothing else depends on when).
      const hasCalls = o.response.toolCalls.length > 0;
      const convo = hasCalls && o.request ? conversationText(o.request) : undefined;
      const rawConvo = hasCalls && o.request ? conversationRaw(o.request) : undefined;
      o.response.toolCalls.forEach((tc, index) => {
        const raw = tc.arguments;
        if (raw.trim() === '') return;
        const args = argumentsValue(tc);
        if (args === undefined) {
          if (scanJson(raw) === 'incomplete')
            add(
              0.9,
              'tool arguments end inside a string or with unclosed brackets',
              `tool_calls[${index}].arguments`,
              index,
            );
          return;
        }
        let hit: string | undefined;
        forEachString(args, (s, path) => {
          if (hit !== undefined || s.length === 0) return;
          if (s.length > 1 && s.endsWith(' ') && !s.endsWith('  ') && s.trim() !== '')
            hit = `${path.slice(1)} ends in a space`;
          else if (convo !== undefined && cutMidWord(s, convo))
            hit = `${path.slice(1)} stops mid-word of a value the conversation contains`;
          else if (rawConvo !== undefined && cutName(s, rawConvo))
            hit = `${path.slice(1)} is the head of a longer name the conversation contains`;
          // Case-sensitive: "S" of "Senior Writer" is cut even if a lower-case "s" stands alone somewhere.
          else if (rawConvo !== undefined && /^\p{Lu}/u.test(s) && cutMidWord(s, rawConvo, true))
            hit = `${path.slice(1)} stops mid-word of a name the conversation contains`;
        });
        if (hit !== undefined) add(0.75, `tool argument ${hit}`, `tool_calls[${index}].arguments`, index);
      });
      return out;
    }
    (obs as MessageObservation).delivered.forEach((m, index) => {
      const p = m.payload as unknown;
      if (typeof p === 'string' && looksLikeJson(p) && scanJson(p) === 'incomplete')
        add(0.9, 'payload is cut JSON', 'payload', index);
      else
        forEachString(p, (s, path) => {
          if (looksLikeJson(s) && s.length > 1 && scanJson(s) === 'incomplete')
            add(0.85, `${path.slice(1)} is cut JSON`, `payload${path.slice(1)}`, index);
        });
    });
    return out;
  },
};
