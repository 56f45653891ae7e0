/**
 * Small text and JSON helpers shared by the detectors: the structural JSON scanner, string-leaf walking and the
 * conversation text an argument can be grounded in. Pure and allocation-light: detectors run on every call.
 */
import type { GenAiMessage, LlmRequestSummary } from '../instrumentation/types';
import type { LlmObservation } from './types';
import { ObjectMemo } from '../src/memo';

export type JsonShape = 'complete' | 'incomplete' | 'malformed';

/**
 * Classify JSON-looking text without parsing it: `incomplete` when the text ends inside a string or with unclosed
 * brackets (a cut), `malformed` when brackets mismatch or garbage follows, `complete` when it is balanced. Cheap
 * enough to run before JSON.parse; the caller still parses `complete` text to be sure.
 */
export function scanJson(text: string): JsonShape {
  const stack: string[] = [];
  let closedTop = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 10 || c === 13 || c === 9) continue;
    if (closedTop) return 'malformed';
    if (c === 34 /* " */) {
      // A string ends at the next quote not escaped (an even run of backslashes before it): found by indexOf, not
      // character by character — JSON text is mostly strings, and this scan runs on every JSON-looking answer.
      const end = stringEnd(text, i);
      if (end < 0) return 'incomplete';
      i = end;
    } else if (c === 123 /* { */) stack.push('}');
    else if (c === 91 /* [ */) stack.push(']');
    else if (c === 125 || c === 93) {
      if (stack.pop() !== String.fromCharCode(c)) return 'malformed';
      if (stack.length === 0) closedTop = true;
    } else if (stack.length === 0) {
      // A bare scalar at top level: only complete if it parses.
      return safeParse(text) === undefined ? 'malformed' : 'complete';
    }
  }
  if (stack.length > 0) return 'incomplete';
  return 'complete';
}

/** The index of the quote closing the string opened at `open`, or -1 when the text ends inside it. */
function stringEnd(text: string, open: number): number {
  for (let q = text.indexOf('"', open + 1); q >= 0; q = text.indexOf('"', q + 1)) {
    let k = q - 1;
    while (k > open && text.charCodeAt(k) === 92 /* \ */) k--;
    if ((q - 1 - k) % 2 === 0) return q;
  }
  return -1;
}

/** JSON.parse that returns undefined instead of throwing. */
export function safeParse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const parsedArguments = new ObjectMemo<object, { text: string; value: unknown }>('faultline.parsedArguments');

/**
 * A tool call's arguments parsed (undefined when they are not JSON), once per tool-call object and text: the
 * encoding, truncation and grounding detectors and the rules all read the same arguments of the same call, and none
 * of them changes what it reads. Kept with the text it was parsed from, so a call whose arguments grew since (online,
 * while a stream is read) is parsed again.
 */
export function argumentsValue(tc: { readonly arguments: string }): unknown {
  const hit = parsedArguments.get(tc);
  if (hit !== undefined && hit.text === tc.arguments) return hit.value;
  const value = safeParse(tc.arguments);
  parsedArguments.set(tc, { text: tc.arguments, value });
  return value;
}

/** True when the text looks like it is meant to be JSON (starts with `{` or `[` after whitespace). */
export function looksLikeJson(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 10 || c === 13 || c === 9) continue;
    return c === 123 || c === 91;
  }
  return false;
}

/** Call `fn` for every string leaf of a parsed JSON value, with its path. Stops descending past depth 16. */
export function forEachString(value: unknown, fn: (s: string, path: string) => void, path = '$', depth = 0): void {
  if (typeof value === 'string') fn(value, path);
  else if (depth > 16 || typeof value !== 'object' || value === null) return;
  else if (Array.isArray(value)) value.forEach((v, i) => forEachString(v, fn, `${path}[${i}]`, depth + 1));
  else for (const [k, v] of Object.entries(value)) forEachString(v, fn, `${path}.${k}`, depth + 1);
}

/** Number of unclosed ``` / ~~~ fences (0 when balanced). */
export function unclosedFence(text: string): boolean {
  if (text.indexOf('```') < 0 && text.indexOf('~~~') < 0) return false;
  let open: string | undefined;
  for (const line of text.split('\n')) {
    const t = line.trimStart();
    const m = /^(`{3,}|~{3,})/.exec(t);
    if (!m) continue;
    const fence = m[1]!;
    if (open === undefined) open = fence;
    else if (fence[0] === open[0] && fence.length >= open.length && t.slice(fence.length).trim() === '')
      open = undefined;
  }
  return open !== undefined;
}

function partsText(m: GenAiMessage, out: string[]): void {
  for (const p of m.parts) {
    if (p.type === 'text' && typeof p.content === 'string') out.push(p.content);
    else if (p.type === 'tool_call') out.push(stringify((p as { arguments?: unknown }).arguments));
    else if (p.type === 'tool_call_response') {
      const r = p as { response?: unknown; result?: unknown };
      out.push(stringify(r.response ?? r.result));
    } else {
      for (const v of Object.values(p)) if (typeof v === 'string') out.push(v);
    }
  }
}

function stringify(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined) return '';
  try {
    return JSON.stringify(v);
  } catch {
    return '';
  }
}

const parametersTexts = new ObjectMemo<object, string>('faultline.parametersText');

/** A tool's parameter schema as JSON text, once per schema object (the calls of an agent share their definitions). */
function parametersText(p: unknown): string {
  if (typeof p !== 'object' || p === null) return stringify(p);
  let text = parametersTexts.get(p);
  if (text === undefined) {
    text = stringify(p);
    parametersTexts.set(p, text);
  }
  return text;
}

const conversationCache = new ObjectMemo<LlmRequestSummary, { raw: string; lower: string }>('faultline.conversation');

function conversation(req: LlmRequestSummary): { raw: string; lower: string } {
  let c = conversationCache.get(req);
  if (c === undefined) {
    const out: string[] = [];
    if (req.systemInstructions) out.push(req.systemInstructions);
    for (const m of req.messages) partsText(m, out);
    for (const t of req.tools) out.push(t.name, t.description ?? '', parametersText(t.parameters));
    const raw = out.join('\n');
    c = { raw, lower: raw.toLowerCase() };
    conversationCache.set(req, c);
  }
  return c;
}

/** Everything the model was given, lower-cased: messages, system instructions, tool definitions. Cached. */
export function conversationText(req: LlmRequestSummary): string {
  return conversation(req).lower;
}

/** The same, in its original case. */
export function conversationRaw(req: LlmRequestSummary): string {
  return conversation(req).raw;
}

/** The visible output of an LLM observation: text plus tool-call arguments. */
export function outputLength(obs: LlmObservation): number {
  if (!obs.hasContent) return obs.facts?.outputChars ?? 0;
  let n = obs.response.text.length;
  for (const t of obs.response.toolCalls) n += t.arguments.length + t.name.length;
  return n;
}

/** Is the request / response exchange a failed call at the HTTP level (then content detectors stay quiet)? */
export function failedCall(obs: LlmObservation): boolean {
  const r = obs.response;
  return (r.status !== undefined && r.status >= 400) || r.errorType !== undefined || r.aborted === true;
}

/**
 * Whether a value the conversation continues (`next`: the characters that follow it there) is nevertheless whole as
 * a model legitimately copies it: an abbreviated hex id (git's short SHA is 7 or more hex digits of the 40, as
 * `git rev-parse --short` prints it; container and build ids are shortened the same way), or a leading segment of a
 * structured value that stops before one of its separators — a parent directory of a path, a selector without its
 * modifier (`div.card` of `div.card-title`), a dotted or namespaced name's head. A value that ends in a separator
 * itself (`A-` of `A-10293`) or inside a run of letters (`Lis` of `Lisbon`) is not whole.
 */
export function wholePrefix(value: string, next: string): boolean {
  if (next === '') return true;
  if (/^[0-9a-f]{7,}$/i.test(value) && /\d/.test(value) && /[a-f]/i.test(value) && /^[0-9a-f]/i.test(next)) return true;
  return /[\p{L}\p{N}]$/u.test(value) && /^[/\\.\-_:#?&=@+]/.test(next);
}
