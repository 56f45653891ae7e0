/**
 * Encoding anomalies in LLM output (text and every string leaf of tool arguments) and in message payloads:
 * - mojibake (UTF-8 bytes read as Latin-1 / Windows-1252), confirmed by re-encoding the suspicious run to bytes and
 *   decoding it as strict UTF-8 (the ftfy confirmation: a gate alone has false positives, the round-trip removes them);
 * - U+FFFD replacement characters, lone surrogates;
 * - symbol noise inside words (random Miscellaneous Symbols spliced into text, AgentChaos `unicode` corruption);
 * - control characters other than tab / newline / carriage return (NUL from a broken body);
 * - an HTML error page where text or JSON was expected (a proxy's 502 page), reported as an error.
 */
import type { Detector, Finding, LlmObservation, MessageObservation, Observation } from './types';
import { byteOf, mojibakeRuns } from '../src/wire/mojibake';
import { argumentsValue, failedCall, forEachString } from './text';

export { mojibakeRuns } from '../src/wire/mojibake';

function isSymbolNoise(code: number): boolean {
  // Miscellaneous Symbols and Dingbats (what AgentChaos splices in), private use, specials.
  return (code >= 0x2600 && code <= 0x27bf) || (code >= 0xe000 && code <= 0xf8ff);
}

function isWordChar(code: number): boolean {
  return (
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    (code >= 0xc0 && code <= 0x24f && code !== 0xd7 && code !== 0xf7) ||
    (code >= 0x370 && code <= 0x52f) ||
    (code >= 0x4e00 && code <= 0x9fff)
  );
}

/** Symbol chars spliced into words: a symbol with a word char on both sides (or on one side, when `edges`). */
export function symbolNoise(text: string, edges: boolean): number {
  let hits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!isSymbolNoise(c)) continue;
    const before = i > 0 && isWordChar(text.charCodeAt(i - 1));
    const after = i + 1 < text.length && isWordChar(text.charCodeAt(i + 1));
    if ((before && after) || (edges && (before || after || text.length === 1))) hits++;
  }
  return hits;
}

const HTML_START = /^\s*(<!doctype html|<html[\s>])/i;
const HTML_ERROR =
  /<title>\s*[^<]*\b([45]\d\d|error|bad gateway|service unavailable|gateway time-?out|forbidden|not found|attention required|just a moment)\b/i;

/** An HTML error page (title names a 4xx/5xx status or a proxy error), not HTML the model was asked to write. */
export function htmlErrorPage(text: string): boolean {
  if (!HTML_START.test(text)) return false;
  return HTML_ERROR.test(text.slice(0, 2048));
}

interface Hit {
  faultType: 'corrupt' | 'error';
  confidence: number;
  evidence: string;
}

interface Scan {
  ascii: boolean;
  control: boolean;
  replacement: boolean;
  loneSurrogate: boolean;
  /** A UTF-8 lead byte (as Latin-1/cp1252) followed by a continuation byte: mojibake to confirm. */
  mojibakeGate: boolean;
  noise: number;
}

/**
 * One pass over the text's code units collecting every cheap signal (regexes over long two-byte strings cost several
 * times more); the expensive mojibake confirmation runs only when the gate fired.
 */
function scan(text: string, edges: boolean): Scan {
  const r: Scan = {
    ascii: true,
    control: false,
    replacement: false,
    loneSurrogate: false,
    mojibakeGate: false,
    noise: 0,
  };
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      if ((c < 0x20 && c !== 9 && c !== 10 && c !== 13) || c === 0x7f) r.control = true;
      continue;
    }
    r.ascii = false;
    if (c <= 0x9f) r.control = true;
    else if (c >= 0xc2 && c <= 0xf4 && i + 1 < n) {
      const b = byteOf(text.charCodeAt(i + 1));
      if (b >= 0x80 && b <= 0xbf) r.mojibakeGate = true;
    } else if (c === 0xfffd) r.replacement = true;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = i + 1 < n ? text.charCodeAt(i + 1) : 0;
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else r.loneSurrogate = true;
    } else if (c >= 0xdc00 && c <= 0xdfff) r.loneSurrogate = true;
    else if (isSymbolNoise(c)) {
      const before = i > 0 && isWordChar(text.charCodeAt(i - 1));
      const after = i + 1 < n && isWordChar(text.charCodeAt(i + 1));
      if ((before && after) || (edges && (before || after || n === 1))) r.noise++;
    }
  }
  return r;
}

/** Any code unit outside printable ASCII, tab, LF and CR: only such text can give `scan` anything to report. */
const NOT_PLAIN = /[^\t\n\r\x20-\x7e]/;
/** What `scan` finds in plain ASCII text (the common case, told by one native regex pass, several times faster). */
const PLAIN: Readonly<Scan> = {
  ascii: true,
  control: false,
  replacement: false,
  loneSurrogate: false,
  mojibakeGate: false,
  noise: 0,
};

function inspect(text: string, isLeaf: boolean): Hit | undefined {
  if (text.length === 0) return undefined;
  const s = NOT_PLAIN.test(text) ? scan(text, isLeaf) : PLAIN;
  if (!s.ascii) {
    const runs = s.mojibakeGate ? mojibakeRuns(text) : [];
    if (runs.length > 0) {
      // Where, not what: the evidence is recorded on spans, where text appears only with content capture on.
      const at = text.indexOf(runs[0]!);
      return {
        faultType: 'corrupt',
        confidence: 0.95,
        evidence: `mojibake (UTF-8 read as Latin-1/cp1252): ${runs.length} run${runs.length === 1 ? '' : 's'}, the first at character ${at}`,
      };
    }
    if (s.replacement) return { faultType: 'corrupt', confidence: 0.8, evidence: 'U+FFFD replacement characters' };
    if (s.loneSurrogate) return { faultType: 'corrupt', confidence: 0.85, evidence: 'lone surrogate code units' };
    if (s.noise >= (isLeaf ? 1 : 2))
      return {
        faultType: 'corrupt',
        confidence: s.noise >= 2 ? 0.9 : 0.75,
        evidence: `${s.noise} symbol characters inside words`,
      };
  }
  if (s.control) return { faultType: 'corrupt', confidence: 0.85, evidence: 'control characters in text' };
  if (!isLeaf && htmlErrorPage(text))
    return { faultType: 'error', confidence: 0.9, evidence: 'an HTML error page where text or JSON was expected' };
  return undefined;
}

function finding(hit: Hit, spanId: string | undefined, field: string, index?: number): Finding {
  return {
    detector: 'encoding',
    faultType: hit.faultType,
    severity: 'error',
    confidence: hit.confidence,
    evidence: hit.evidence,
    location: index === undefined ? { spanId, field } : { spanId, field, index },
  };
}

export const encodingDetector: Detector = {
  name: 'encoding',
  applies: (obs) => obs.hasContent && (obs.kind === 'message' || !failedCall(obs)),
  detect(obs: Observation): Finding[] {
    const out: Finding[] = [];
    if (obs.kind === 'llm') {
      const r = (obs as LlmObservation).response;
      const h = inspect(r.text, false);
      if (h) out.push(finding(h, obs.spanId, 'content'));
      if (r.unparsedBody !== undefined && htmlErrorPage(r.unparsedBody)) {
        out.push(
          finding(
            { faultType: 'error', confidence: 0.95, evidence: 'the response body is an HTML error page' },
            obs.spanId,
            'body',
          ),
        );
      }
      r.toolCalls.forEach((tc, index) => {
        const args = argumentsValue(tc);
        let hit: Hit | undefined;
        let where = 'arguments';
        if (args === undefined) hit = inspect(tc.arguments, true);
        else
          forEachString(args, (s, path) => {
            if (hit) return;
            hit = inspect(s, true);
            if (hit) where = `arguments${path.slice(1)}`;
          });
        if (hit) out.push(finding(hit, obs.spanId, `tool_calls[${index}].${where}`, index));
      });
      return out;
    }
    const m = obs as MessageObservation;
    m.delivered.forEach((msg, index) => {
      let hit: Hit | undefined;
      let where = 'payload';
      forEachString(msg.payload, (s, path) => {
        if (hit) return;
        hit = inspect(s, typeof msg.payload !== 'string');
        if (hit) where = `payload${path.slice(1)}`;
      });
      if (hit) out.push(finding(hit, obs.spanId, where, index));
    });
    return out;
  },
};
