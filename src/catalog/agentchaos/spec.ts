/**
 * AgentChaos's FaultSpec and its engine loop (floritange/AgentChaos agentchaos/fault_engine.py, as described in
 * docs/fault-catalog.md): specs run in declaration order on the progressively modified body; the target-field guard
 * runs before any count or RNG draw; `tryFire` is `max → probability → count++ → min`.
 */
import type { PyRandom } from '../../plan/rng';
import { clone, jpGet, jpSet, pyDumps } from '../json';

export type SpecAction = 'set' | 'truncate' | 'corrupt' | 'error' | 'delay' | 'drop' | 'duplicate';

export interface FaultSpec {
  readonly action: SpecAction;
  /** JSON path into an OpenAI chat-completion body (`$` = the whole body). */
  readonly target: string;
  readonly value?: unknown;
  /** 0 = unlimited. */
  readonly maxCount: number;
  readonly minCount: number;
  readonly probability: number;
  readonly skipGuard?: boolean;
}

/** Mutable per-task state of one spec list (one rule). */
export interface SpecState {
  counts: number[];
}

export const CONTENT_PATH = '$.choices[0].message.content';
export const TOOL_CALLS_PATH = '$.choices[0].message.tool_calls';
export const TOOL_ARGS_PATH = '$.choices[0].message.tool_calls[0].function.arguments';
export const FINISH_REASON_PATH = '$.choices[0].finish_reason';
const MESSAGE_PATH = '$.choices[0].message';

export const TIMEOUT_DROP_TEXT = '[TIMEOUT] Connection dropped. The server did not respond.';

/** The target-field guard: content specs skip tool-call responses; tool-call specs need a tool call. */
export function guardAllows(spec: FaultSpec, body: unknown): boolean {
  if (spec.skipGuard) return true;
  const toolCalls = jpGet(body, TOOL_CALLS_PATH);
  const hasTools = Array.isArray(toolCalls) && toolCalls.length > 0;
  if (spec.target.startsWith(CONTENT_PATH)) return !hasTools;
  if (spec.target.startsWith(TOOL_CALLS_PATH)) return hasTools;
  return true;
}

/** `_try_fire`, in AgentChaos's order: max → probability → count++ → min. */
export function tryFire(spec: FaultSpec, state: SpecState, index: number, rng: PyRandom): boolean {
  const count = state.counts[index] ?? 0;
  if (spec.maxCount > 0 && count >= spec.maxCount) return false;
  if (spec.probability < 1 && rng.random() > spec.probability) return false;
  state.counts[index] = count + 1;
  if (spec.minCount > 0 && count + 1 <= spec.minCount) return false;
  return true;
}

/** Whether any spec can still fire (AgentChaos's `has_active_faults`). */
export function specsActive(specs: readonly FaultSpec[], state: SpecState): boolean {
  return specs.some((s, i) => s.maxCount <= 0 || (state.counts[i] ?? 0) < s.maxCount);
}

export interface ApplyContext {
  rng: PyRandom;
  /** The previous body delivered to the application in this task (for `duplicate`). */
  lastResponse?: unknown;
}

export interface ApplyResult {
  body: unknown;
  /** Specs that fired (indices), in order. */
  fired: number[];
  delayMs: number;
}

/** Run the specs over `body` (never mutated); returns the new body, which fired and the accumulated delay. */
export function applySpecs(
  specs: readonly FaultSpec[],
  body: unknown,
  state: SpecState,
  ctx: ApplyContext,
): ApplyResult {
  let out = body;
  let copied = false;
  const fired: number[] = [];
  let delayMs = 0;
  specs.forEach((spec, i) => {
    if (!guardAllows(spec, out)) return;
    if (!tryFire(spec, state, i, ctx.rng)) return;
    fired.push(i);
    if (!copied) {
      out = clone(out);
      copied = true;
    }
    switch (spec.action) {
      case 'set':
        jpSet(out, spec.target, clone(spec.value));
        break;
      case 'truncate':
        truncateAt(out, spec);
        break;
      case 'corrupt':
        corruptAt(out, spec, ctx.rng);
        break;
      case 'error':
        jpSet(out, CONTENT_PATH, `[API ERROR] HTTP ${spec.value ?? 500}: AgentFault injected server error.`);
        break;
      case 'delay':
        delayMs += typeof spec.value === 'number' && spec.value ? spec.value : 2000;
        break;
      case 'drop':
        jpSet(out, `${MESSAGE_PATH}.content`, TIMEOUT_DROP_TEXT);
        jpSet(out, `${MESSAGE_PATH}.tool_calls`, []);
        break;
      case 'duplicate':
        if (ctx.lastResponse !== undefined) out = clone(ctx.lastResponse);
        break;
    }
  });
  return { body: out, fired, delayMs };
}

function ratioOf(value: unknown): number {
  return typeof value === 'number' && value > 0 && value < 1 ? value : 0.5;
}

/** Python `s[:max(1, int(len(s) * r))]` over code points. */
export function truncateText(s: string, ratio: number): string {
  const cps = Array.from(s);
  return cps.slice(0, Math.max(1, Math.floor(cps.length * ratio))).join('');
}

function truncateLeaves(v: unknown, ratio: number): unknown {
  if (typeof v === 'string') return v === '' ? v : truncateText(v, ratio);
  if (Array.isArray(v)) return v.map((x) => truncateLeaves(x, ratio));
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, truncateLeaves(x, ratio)]));
  }
  return v;
}

function truncateAt(body: unknown, spec: FaultSpec): void {
  const ratio = ratioOf(spec.value);
  const cur = jpGet(body, spec.target);
  if (cur === null || cur === undefined || cur === '') return;
  if (spec.target.includes('function.arguments') && typeof cur === 'string') {
    jpSet(
      body,
      spec.target,
      mapJsonLeaves(cur, (v) => truncateLeaves(v, ratio), '{"_fault_truncated": true}'),
    );
    return;
  }
  if (typeof cur === 'string') {
    jpSet(body, spec.target, truncateText(cur, ratio));
    if (spec.target.includes('message.content')) jpSet(body, FINISH_REASON_PATH, 'length');
  } else if (Array.isArray(cur)) {
    jpSet(body, spec.target, cur.slice(0, Math.max(1, Math.floor(cur.length * ratio))));
  }
}

function mapJsonLeaves(text: string, f: (v: unknown) => unknown, placeholder: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return placeholder;
  }
  return pyDumps(f(parsed));
}

/** UTF-8 bytes read as Latin-1: the identity on pure-ASCII text. */
export function mojibake(s: string): string {
  return Buffer.from(s, 'utf8').toString('latin1');
}

/** `_corrupt_unicode`: max(1, len//5) draws (with replacement) of a position and a U+2600–U+26FF symbol. */
export function corruptUnicode(s: string, rng: PyRandom): string {
  const chars = Array.from(s);
  if (chars.length === 0) return s; // Python would raise here; an empty leaf is left as is.
  for (let n = Math.max(1, Math.floor(chars.length / 5)); n > 0; n--) {
    const i = rng.randint(0, chars.length - 1);
    chars[i] = String.fromCodePoint(rng.randint(0x2600, 0x26ff));
  }
  return chars.join('');
}

function corruptLeaves(v: unknown, rng: PyRandom): unknown {
  if (typeof v === 'string') return corruptUnicode(v, rng);
  if (Array.isArray(v)) return v.map((x) => corruptLeaves(x, rng));
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, corruptLeaves(x, rng)]));
  }
  return v;
}

function corruptAt(body: unknown, spec: FaultSpec, rng: PyRandom): void {
  const cur = jpGet(body, spec.target);
  if (typeof cur !== 'string' || cur === '') return;
  if (spec.target.includes('function.arguments')) {
    jpSet(
      body,
      spec.target,
      mapJsonLeaves(cur, (v) => corruptLeaves(v, rng), '{"_fault_corrupted": true}'),
    );
    return;
  }
  const mode = spec.value ?? 'unicode';
  if (mode === 'mojibake') jpSet(body, spec.target, mojibake(cur));
  else if (mode === 'broken_json') jpSet(body, spec.target, truncateText(cur, 0.5) + '\x00\x00');
  else jpSet(body, spec.target, corruptUnicode(cur, rng));
}
