/**
 * Rule-based diagnoser. Reads the one reading of the trace (src/traces/view: LLM calls, messages, tools, agents, in
 * any producer's conventions), the online detectors' `faultline.detection` events and the offline detectors'
 * findings, then walks the steps in causal (start) order and names the FIRST faulty one: a fault upstream explains
 * the symptoms downstream, and a retried LLM call's fault is still the first fault.
 *
 * Only LLM calls and messages can be "the faulty step". Tool executions, agents and other spans are considered only
 * when none of those is faulty, and only when the run did not recover: a failed tool the agent retried or handled
 * and went on from is reported under `recovered`, not as the run's fault.
 */
import { validateJsonSchema } from '../../detectors/json-schema';
import { argumentsValue, wholePrefix } from '../../detectors/text';
import type { Finding } from '../../detectors/types';
import type { FaultType } from '../taxonomy';
import { str, type SpanRecord, type TraceRecord } from '../traces/model';
import {
  looksLikeTimeout,
  viewTrace,
  type LlmCall,
  type SpanFailure,
  type Step,
  type ToolStep,
  type TraceView,
} from '../traces/view';
import { consensusSignals } from './consensus-shape';
import { messageSignals, reviewMessages } from './messages';
import { describeFault } from './summary';
import { abortedBelow, gaveUpOn, isCancel } from './gave-up';
import { answeredResend } from './resent';
import {
  ancestors,
  detectionEvents,
  durationMs,
  failureSignal,
  medianWithout,
  type Signal,
  type SpanVerdict,
} from './signals';
import {
  CHARS_PER_TOKEN,
  CUT_VALUE_MAX_CHARS,
  DELAY_CONFIDENCE,
  DELAY_HINT_CONFIDENCE,
  LLM_DELAY_NOISE_MS,
  DELAY_FAULT_RATIO,
  DELAY_MIN_RATIO,
  DOUBLED_MIN_CHARS,
  HINT_CONFIDENCE,
  ID_MAX_CHARS,
  LATENCY_MAD_FLOOR,
  LATENCY_MIN_CALLS,
  MAD_Z_SCALE,
  LATENCY_OVERHEAD_TOKENS,
  MIN_CHARS_PER_TOKEN,
  MIN_CONFIDENCE,
  OUTLIER_Z,
  REPLAY_OTHER_AGENT_MIN_CHARS,
  REPLAY_SAME_AGENT_MIN_CHARS,
} from './thresholds';
import { NOT_OBSERVABLE, noFault, type Diagnoser, type Diagnosis, type RecoveredFault } from './types';

export type { Signal, SpanVerdict } from './signals';

/** Offline detector findings per span id (detectors/from-span.ts `detectSpans`). */
export type SpanFindings = (trace: TraceRecord) => Map<string, Finding[]>;

export interface RuleDiagnoserOptions {
  /** Offline detectors run over the trace's spans. Default: none besides the recorded detection events. */
  findings?: SpanFindings;
  /** A span counts as faulty when its strongest signal reaches this confidence. Default 0.55 (thresholds.ts). */
  minConfidence?: number;
  /** A slow call is at least this many ms beyond what the trace's other calls predict... Default 250, a host's noise (thresholds.ts LLM_DELAY_NOISE_MS). */
  delayExtraMs?: number;
  /** ...and at least this many times it. Default 3 (thresholds.ts). */
  delayRatio?: number;
}

const TRUNCATE_REASONS = new Set([
  'length',
  'max_tokens',
  'max_output_tokens',
  'model_context_window_exceeded',
  'incomplete',
]);
const FILTER_REASONS = new Set([
  'content_filter',
  'content-filter',
  'refusal',
  'safety',
  'blocklist',
  'prohibited_content',
  'spii',
  'recitation',
]);
const TOOL_REASONS = new Set(['tool_calls', 'tool_call', 'tool_use', 'function_call', 'tool-calls']);

/**
 * Precedence between signals of equal confidence on one span: the most specific structural reading first
 * (a timeout is also an error; a filtered answer is also empty; a delayed answer may also be anything).
 */
const PRECEDENCE: readonly FaultType[] = [
  'timeout',
  'error',
  'non_delivery',
  'duplicate',
  'truncate',
  'empty',
  'schema',
  'corrupt',
  'stale',
  'partial',
  'semantic',
  'delay',
];

function sig(faultType: Signal['faultType'], confidence: number, evidence: string): Signal {
  return { faultType, confidence, evidence, source: 'metadata' };
}

/** Arguments that carry nothing: empty, `{}`, `null`, `[]`. */
function emptyArguments(raw: string): boolean {
  const t = raw.trim();
  return t === '' || t === '{}' || t === 'null' || t === '[]' || /^\{\s*\}$/.test(t);
}

function requiredParams(schema: unknown): string[] {
  if (typeof schema !== 'object' || schema === null) return [];
  const r = (schema as { required?: unknown }).required;
  return Array.isArray(r) ? r.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * The tool executions that ran the tool calls of an LLM call: by tool-call id when both spans carry it, else the
 * executions of a tool of that name in the same agent after the call ended and before that agent's next LLM call.
 */
function executionsOf(call: LlmCall, view: TraceView): Map<number, ToolStep[]> {
  const out = new Map<number, ToolStep[]>();
  if (call.toolCalls.length === 0 && (call.toolCallCount ?? 0) === 0) return out;
  const agent = call.agent?.span.spanId;
  const next = view.llm.find((c) => c.step > call.step && c.agent?.span.spanId === agent);
  const window = (t: ToolStep): boolean =>
    t.span.start >= call.span.end - 1 &&
    (next === undefined || t.span.start <= next.span.start) &&
    t.agent?.span.spanId === agent;
  call.toolCalls.forEach((tc, i) => {
    const byId = tc.id !== undefined ? view.tools.filter((t) => t.callId === tc.id) : [];
    out.set(i, byId.length > 0 ? byId : view.tools.filter((t) => t.name === tc.name && window(t)));
  });
  return out;
}

/**
 * A tool failure that says the arguments were rejected (not a transient, not a lookup that found nothing): an error
 * type that means a bad argument, or a generic one (`ValueError`, `Error`) whose message says an argument is
 * missing, required or invalid.
 */
const REJECTED_TYPE =
  /^(TypeError|ValidationError|SyntaxError|ZodError|SchemaError|JSONDecodeError|InvalidArgument\w*|BadRequest\w*|ArgumentError|ArgumentException)$/i;
const REJECTED_TEXT =
  /\b(must be|must look like|needs?\b|(is |are )?required|missing (required )?(argument|param\w*|field|key|property|value)|expected (a |an )?(string|number|integer|boolean|object|array)|unexpected (key|argument|param\w*|field|keyword)|unknown (argument|param\w*|field|key)|invalid (argument|param\w*|value|input|type|format|json|schema)|not a valid|malformed|cannot parse|unexpected token)/i;

function rejectedArguments(t: ToolStep): boolean {
  const f = t.failure;
  if (!f || f.timeout) return false;
  return (
    (f.errorType !== undefined && REJECTED_TYPE.test(f.errorType)) ||
    (f.message !== undefined && REJECTED_TEXT.test(f.message))
  );
}

/**
 * Tool calls whose arguments cannot be right: arguments that carry nothing where the tool needs some (its schema
 * requires parameters, the tool rejected them, or the trace's other calls of the same tool carried arguments) — the
 * call cannot run, AgentChaos's `tool_error` (catalog type `error`); and arguments the tool itself rejected as
 * invalid — a broken contract (`schema`), which the producer's missing tool definitions would otherwise hide.
 */
function toolArgumentSignals(call: LlmCall, view: TraceView): Signal[] {
  if (!call.hasContent || call.toolCalls.length === 0) return rejectedWithoutContent(call, view);
  const out: Signal[] = [];
  const runs = executionsOf(call, view);
  call.toolCalls.forEach((tc, i) => {
    // A rejection the run recovered from (the tool ran again and succeeded) is not the run's fault.
    const executions = runs.get(i) ?? [];
    const rejected = executions.find(
      (t) =>
        rejectedArguments(t) &&
        !view.tools.some((o) => o !== t && o.name === t.name && !o.failure && o.span.start >= t.span.end - 1),
    );
    const why = rejected
      ? `${rejected.failure!.errorType ?? 'error'}: ${(rejected.failure!.message ?? '').slice(0, 100)}`
      : '';
    if (emptyArguments(tc.arguments)) {
      const def = call.tools.find((t) => t.name === tc.name);
      const required = def ? requiredParams(def.parameters) : [];
      const usedElsewhere = view.llm.some(
        (c) =>
          c !== call && c.hasContent && c.toolCalls.some((o) => o.name === tc.name && !emptyArguments(o.arguments)),
      );
      if (required.length > 0 || rejected || usedElsewhere) {
        const needs =
          required.length > 0
            ? `, though it requires ${required.slice(0, 3).join(', ')}`
            : rejected
              ? `, and the tool rejected them (${why})`
              : ', though its other calls in this trace carry arguments';
        out.push(
          sig(
            'error',
            0.96,
            `the call to tool ${tc.name} came with empty arguments ${JSON.stringify(tc.arguments.trim() || '')}${needs}`,
          ),
        );
      }
    } else if (rejected) {
      out.push(sig('schema', 0.8, `tool ${tc.name} rejected the arguments the model produced (${why})`));
    }
  });
  return out;
}

/**
 * Without the call's content (capture off, or a producer that records no tool calls), the tools its answer ran say
 * what the arguments were worth: a tool execution in the call's agent between its end and that agent's next LLM call
 * that rejected its arguments, and was not run again successfully, rejected what this call produced. Only for a call
 * that may have asked for tools — its finish reason, when recorded, is a tool-call one, and its recorded tool-call
 * count, if any, is not zero.
 */
function rejectedWithoutContent(call: LlmCall, view: TraceView): Signal[] {
  if ((call.hasContent && call.toolCalls.length === 0) || call.toolCallCount === 0) return [];
  const reasons = call.finishReasons.map((r) => r.toLowerCase());
  if (reasons.length > 0 && !reasons.some((r) => TOOL_REASONS.has(r))) return [];
  const agent = call.agent?.span.spanId;
  const next = view.llm.find((c) => c.step > call.step && c.agent?.span.spanId === agent);
  const ran = view.tools.filter(
    (t) =>
      t.span.start >= call.span.end - 1 &&
      (next === undefined || t.span.start <= next.span.start) &&
      t.agent?.span.spanId === agent,
  );
  const rejected = ran.find(
    (t) =>
      rejectedArguments(t) &&
      !view.tools.some((o) => o !== t && o.name === t.name && !o.failure && o.span.start >= t.span.end - 1),
  );
  if (!rejected) return [];
  const f = rejected.failure!;
  return [
    sig(
      'schema',
      0.8,
      `tool ${rejected.name} rejected the arguments this call produced (${f.errorType ?? 'error'}: ${(f.message ?? '').slice(0, 100)}); the arguments themselves were not recorded`,
    ),
  ];
}

/** Characters that end a token of the conversation (a value the model would copy ends before one of these). */
const TOKEN_END = /[\s"'`,;()[\]{}<>|\\]/;

/**
 * Whether an argument string was cut from a value the conversation holds: every place the conversation has it, the
 * same token goes on ("Lis" of "Lisbon", "A-" of "A-10293", "retrieval-augme" of "retrieval-augmented"), and it
 * never stands there whole. A cut at a word boundary ("energy use" of "energy use of …") is not claimed: a model
 * legitimately copies the start of a phrase, as it does a short SHA or the head of a path or selector (wholePrefix).
 */
function cutFromConversation(value: string, convo: string): boolean {
  const v = value.trim();
  if (v.length < 2 || v.length > CUT_VALUE_MAX_CHARS || v !== value) return false;
  let hits = 0;
  for (let at = convo.indexOf(v); at >= 0; at = convo.indexOf(v, at + 1)) {
    const before = at > 0 ? convo[at - 1]! : ' ';
    if (!TOKEN_END.test(before) && before !== '=' && before !== ':') continue; // inside another token
    const after = convo.slice(at + v.length, at + v.length + 2);
    const whole =
      after === '' ||
      TOKEN_END.test(after[0]!) ||
      (/^[.!?:]/.test(after) && (after.length < 2 || TOKEN_END.test(after[1]!)));
    if (whole || wholePrefix(v, after)) return false;
    hits++;
  }
  return hits > 0;
}

function stringLeaves(v: unknown, path: string, out: { path: string; value: string }[]): void {
  if (typeof v === 'string') out.push({ path, value: v });
  else if (Array.isArray(v)) v.forEach((x, i) => stringLeaves(x, `${path}[${i}]`, out));
  else if (typeof v === 'object' && v !== null)
    for (const [k, x] of Object.entries(v)) stringLeaves(x, path ? `${path}.${k}` : k, out);
}

/** Pictographs and other symbols (U+2600 dingbats, emoji) inside an identifier-like value: nothing names an id so. */
const SYMBOL_IN_ID = /\p{So}/u;

/** Tool arguments garbled in transit: an identifier-like string (no spaces, short) carrying symbol characters. */
function garbledArguments(call: LlmCall): Signal | undefined {
  if (!call.hasContent) return undefined;
  for (const tc of call.toolCalls) {
    const args = argumentsValue(tc);
    if (args === undefined) continue; // not JSON
    const leaves: { path: string; value: string }[] = [];
    stringLeaves(args, '', leaves);
    const bad = leaves.find(
      (l) =>
        l.value.length <= ID_MAX_CHARS &&
        !/\s/.test(l.value.trim()) &&
        /[\p{L}\p{N}]/u.test(l.value) &&
        SYMBOL_IN_ID.test(l.value),
    );
    if (bad)
      return sig(
        'corrupt',
        0.85,
        `tool ${tc.name} argument ${bad.path}=${JSON.stringify(bad.value.slice(0, 40))} carries symbol characters no identifier has`,
      );
  }
  return undefined;
}

/** The raw text a message part carries (a tool result or tool-call arguments as written, not re-escaped). */
function partText(p: { type: string; [k: string]: unknown }): string {
  const v =
    p.type === 'text'
      ? p.content
      : p.type === 'tool_call'
        ? p.arguments
        : p.type === 'tool_call_response'
          ? (p.response ?? p.result)
          : undefined;
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v);
}

/** Tool arguments cut short: a string the model copied from the conversation, cut inside its token. */
function cutArguments(call: LlmCall): Signal | undefined {
  if (!call.hasContent || call.toolCalls.length === 0 || !call.input) return undefined;
  const convo = [call.system ?? '', ...call.input.map((m) => m.parts.map(partText).join(' '))].join('\n');
  for (const tc of call.toolCalls) {
    const args = argumentsValue(tc);
    if (args === undefined) continue; // not JSON
    const leaves: { path: string; value: string }[] = [];
    stringLeaves(args, '', leaves);
    const cut = leaves.find((l) => cutFromConversation(l.value, convo));
    if (cut)
      return sig(
        'truncate',
        0.85,
        `tool ${tc.name} argument ${cut.path}=${JSON.stringify(cut.value.slice(0, 40))} stops inside a value the conversation holds whole`,
      );
  }
  return undefined;
}

/** A call's input as one text, to tell a call asked anew from a resend of the same request. */
function inputText(call: LlmCall): string {
  return [call.system ?? '', ...(call.input ?? []).map((m) => `${m.role}:${m.parts.map(partText).join(' ')}`)].join(
    '\n',
  );
}

/**
 * An answer that is an earlier output replayed: its text is, verbatim, what an earlier call of the trace answered —
 * another agent's (whose role is another), or the same agent's own to a different input and long enough that a
 * model does not write it twice (thresholds.ts). A resend of the same request answered the same is not one.
 */
function replayedAnswer(call: LlmCall, view: TraceView): Signal | undefined {
  if (!call.hasContent || call.toolCalls.length > 0) return undefined;
  const text = call.text.trim();
  if (text.length < REPLAY_OTHER_AGENT_MIN_CHARS) return undefined;
  let input: string | undefined; // built only when an earlier answer is the same text
  for (const c of view.llm) {
    if (c.step >= call.step) break;
    if (!c.hasContent || c.span.end > call.span.start + 1 || c.text.trim() !== text) continue;
    const other = c.agent !== undefined && call.agent !== undefined && c.agent.name !== call.agent.name;
    if (other)
      return sig(
        'stale',
        0.8,
        `the answer is, verbatim, what agent ${c.agent!.name} answered at LLM call ${c.step} (${text.length} characters), not an answer of agent ${call.agent!.name}'s own`,
      );
    if (text.length >= REPLAY_SAME_AGENT_MIN_CHARS && inputText(c) !== (input ??= inputText(call)))
      return sig(
        'stale',
        0.8,
        `the answer repeats, verbatim, the answer of LLM call ${c.step} (${text.length} characters) though the call was asked something else`,
      );
  }
  return undefined;
}

/**
 * The number of copies when `text` is one passage two to four times end to end (joined directly or by whitespace),
 * the passage at least DOUBLED_MIN_CHARS long; 1 otherwise.
 */
function copiesOf(text: string): number {
  const t = text.trim();
  if (t.length < 2 * DOUBLED_MIN_CHARS || t.length > 1_000_000) return 1;
  for (let k = 2; k <= 4; k++) {
    for (const sep of ['', ' ', '\n', '\n\n']) {
      const unit = (t.length - sep.length * (k - 1)) / k;
      if (!Number.isInteger(unit) || unit < DOUBLED_MIN_CHARS) continue;
      // A second copy starts with the first one's first character: most answers fail here, before any slice.
      if (t.charCodeAt(unit + sep.length) !== t.charCodeAt(0)) continue;
      // Compared in place (no joined copy built): each further copy is the separator, then the first passage.
      const passage = t.slice(0, unit);
      let same = true;
      for (let j = 1, at = unit; same && j < k; j++, at += sep.length + unit)
        same = t.startsWith(sep, at) && t.startsWith(passage, at + sep.length);
      if (same) return k;
    }
  }
  return 1;
}

/** An answer delivered more than once into one response (a retrying proxy replaying the stream): the same passage twice. */
function deliveredTwice(call: LlmCall): Signal | undefined {
  if (!call.hasContent) return undefined;
  const k = copiesOf(call.text);
  if (k < 2) return undefined;
  return sig(
    'duplicate',
    0.85,
    `the answer is one ${Math.round(call.text.trim().length / k)}-character passage ${k} times end to end: it was delivered ${k === 2 ? 'twice' : `${k} times`}`,
  );
}

/**
 * A structured answer (the request's `response_format` JSON Schema) that is JSON and breaks that schema: a broken
 * contract, named by the first JSON-Schema keyword and path. Text that is not JSON at all is left to the detectors
 * (a cut document, prose instead of JSON).
 */
function structuredOutput(call: LlmCall): Signal | undefined {
  if (call.responseSchema === undefined || !call.hasContent || call.toolCalls.length > 0) return undefined;
  const t = call.text.trim();
  if (!t.startsWith('{') && !t.startsWith('[')) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(t);
  } catch {
    return undefined;
  }
  const issue = validateJsonSchema(call.responseSchema, doc)[0];
  if (!issue) return undefined;
  return sig(
    'schema',
    0.85,
    `the structured answer breaks the request's response_format schema: ${issue.keyword} at ${issue.path} (${issue.message})`,
  );
}

/**
 * faultline's own capture-time verdicts on the answer (instrumentation/providers/verdicts.ts), which need no content:
 * garbled characters (corrupt), tool-call arguments that are not JSON, break the declared schema or call a tool the
 * request did not declare (schema), a structured answer against its schema (schema), a blank text (empty).
 */
function verdictSignals(call: LlmCall): Signal[] {
  const fl = call.faultline;
  if (!fl) return [];
  const out: Signal[] = [];
  if (fl.garbled && fl.garbled.length > 0)
    out.push(
      sig(
        'corrupt',
        0.88,
        `the answer carries garbled characters (${fl.garbled.join(', ')}), as faultline's layer saw it`,
      ),
    );
  const parse = fl.argumentsParse ?? [];
  const schema = fl.toolSchema ?? [];
  const failed = parse.indexOf('failed');
  if (failed >= 0)
    out.push(
      sig('schema', 0.85, `the arguments of tool call ${failed + 1} are not JSON, as faultline's layer saw them`),
    );
  const invalid = schema.indexOf('invalid');
  if (invalid >= 0)
    out.push(
      sig(
        'schema',
        0.85,
        `the arguments of tool call ${invalid + 1} break the tool's declared schema: ${fl.toolSchemaIssue?.[invalid] || 'a breach'}`,
      ),
    );
  const undeclared = schema.indexOf('undeclared');
  if (undeclared >= 0)
    out.push(sig('schema', 0.8, `tool call ${undeclared + 1} names a tool the request did not declare`));
  if (fl.responseSchema === 'invalid')
    out.push(
      sig(
        'schema',
        0.85,
        `the structured answer breaks the request's response_format schema: ${fl.responseSchemaIssue ?? 'a breach'}`,
      ),
    );
  if (fl.blank === true && (fl.outputChars ?? 0) > 0 && (call.toolCallCount ?? 0) === 0 && !call.failure)
    out.push(sig('empty', 0.9, 'the answer was blank (whitespace only) and carried no tool call'));
  return out;
}

/** Whether the run ended failed: its root span (the span without a parent in the trace) records a failure. */
function runFailed(view: TraceView): boolean {
  const root = view.trace.spans.find((s) => s.parentSpanId === undefined || !view.byId.has(s.parentSpanId));
  return root !== undefined && view.failureOf(root) !== undefined;
}

/**
 * A length stop the application asked for: the request set its own max_tokens (the usage, when recorded, reached it),
 * and the run completed from there — nothing after the call failed and the run did not end failed, whether or not a
 * later step ran (a title or a subject line capped by the app is often the run's last call). A cut the app did not
 * ask for (no limit, fewer tokens than the limit) or one the run did not survive stays a truncation.
 */
function ownLimit(call: LlmCall, view: TraceView): boolean {
  const max = call.maxTokens;
  if (max === undefined || (call.usage.outputTokens !== undefined && call.usage.outputTokens < max)) return false;
  // The answer must be as long as the tokens it spent: a text cut short under a usage at the limit was cut after.
  if (call.outputChars !== undefined && call.outputChars < max * MIN_CHARS_PER_TOKEN) return false;
  if (runFailed(view)) return false;
  const after = view.trace.spans.filter((s) => s.start >= call.span.end - 1);
  return !after.some((s) => view.failureOf(s) !== undefined);
}

/**
 * The call stopped at its token limit: a length finish reason, or — where the producer records no finish reason —
 * a successful call whose recorded output tokens reached the request's max_tokens.
 */
function atOwnLimit(call: LlmCall): boolean {
  if (call.finishReasons.some((r) => TRUNCATE_REASONS.has(r.toLowerCase()))) return true;
  const out = call.usage.outputTokens;
  return (
    call.finishReasons.length === 0 &&
    !call.failure &&
    call.maxTokens !== undefined &&
    out !== undefined &&
    out >= call.maxTokens
  );
}

function llmSignals(call: LlmCall, view: TraceView, delay: Signal | undefined): Signal[] {
  const out: Signal[] = [];
  const fl = call.faultline;
  const reasons = call.finishReasons.map((r) => r.toLowerCase());
  if (fl?.aborted) {
    // The client gave up on the call: a timeout when the trace says so (gave-up.ts), else the application's cancel,
    // which is not a fault of the call (and its empty body says nothing).
    const timeout = gaveUpOn(call, view);
    return timeout ? [timeout] : out;
  }
  const streamedSomething = (fl?.chunks ?? 0) > 0 || call.text.trim() !== '' || call.toolCalls.length > 0;
  if (call.failure) {
    const f = failureSignal(call.failure, call.span)!;
    if (!call.failure.timeout && call.stream === true && streamedSomething && (fl?.done ?? false) === false) {
      // The stream broke after the answer had started: the answer the application got was cut.
      out.push(
        sig(
          'truncate',
          0.96,
          `the stream broke after ${fl?.chunks !== undefined ? `${fl.chunks} chunks` : 'part of the answer'} (${f.evidence})`,
        ),
      );
    } else {
      out.push(f);
    }
  }
  const truncReason = reasons.find((r) => TRUNCATE_REASONS.has(r));
  if (truncReason && ownLimit(call, view)) {
    // The app capped the answer itself and the run went on from it: the stop it asked for, not a fault (a hint).
    out.push(
      sig(
        'truncate',
        HINT_CONFIDENCE,
        `finish_reason=${truncReason} at the request's own max_tokens ${call.maxTokens}, and the run completed without a failure after it`,
      ),
    );
  } else if (truncReason) out.push(sig('truncate', 0.95, `finish_reason=${truncReason}`));
  const filterReason = reasons.find((r) => FILTER_REASONS.has(r));
  if (filterReason) out.push(sig('empty', 0.92, `finish_reason=${filterReason}`));
  if (!call.failure) {
    if (fl?.done === false && fl.chunks !== undefined) {
      out.push(sig('truncate', 0.85, `stream ended after ${fl.chunks} chunks without its terminal event`));
    } else if (
      reasons.length === 0 &&
      streamedSomething &&
      (call.finishReasonsRecorded ||
        (call.stream === true && view.llm.some((c) => c !== call && c.finishReasons.length > 0)))
    ) {
      // Only where the producer records finish reasons (an empty list, or its other calls carry them): a convention
      // without them (OpenInference's) says nothing by leaving them out.
      // Every complete answer carries a finish reason (a stream in its last chunk); the producer recorded none.
      out.push(
        sig(
          'truncate',
          0.85,
          `the ${call.stream === true ? 'streamed ' : ''}answer ended without a finish reason: the response stopped before its last chunk`,
        ),
      );
    }
    const toolReason = reasons.find((r) => TOOL_REASONS.has(r));
    const chars = call.outputChars;
    const toolCount = call.toolCallCount ?? (call.hasContent ? call.toolCalls.length : undefined);
    if (chars === 0 && (toolCount ?? 0) === 0 && (call.hasContent || fl?.outputChars !== undefined)) {
      const tokens = call.usage.outputTokens;
      out.push(
        sig(
          'empty',
          0.9,
          `no text and no tool calls in the response${tokens ? ` (usage reports ${tokens} output tokens)` : ''}`,
        ),
      );
    } else if (
      !call.hasContent &&
      chars === undefined &&
      call.usage.outputTokens === 0 &&
      !(toolCount && toolCount > 0)
    ) {
      // Content not captured: the provider's own count says the answer had nothing in it (a text or a tool call
      // costs at least one output token).
      out.push(
        sig(
          'empty',
          0.88,
          'the response carried 0 output tokens (usage): no text and no tool call came back; the content itself was not recorded',
        ),
      );
    } else if (toolReason && toolCount === 0) {
      // Weaker: the text that replaced the tool calls may say more (a detector names it).
      out.push(sig('empty', 0.6, `finish_reason=${toolReason} but no tool calls`));
    }
    out.push(...toolArgumentSignals(call, view));
    const cut = cutArguments(call);
    if (cut) out.push(cut);
    const garbled = garbledArguments(call);
    if (garbled) out.push(garbled);
    const replayed = replayedAnswer(call, view);
    if (replayed) out.push(replayed);
    const twice = deliveredTwice(call);
    if (twice) out.push(twice);
    const shape = structuredOutput(call);
    if (shape) out.push(shape);
    out.push(...consensusSignals(call, view));
    out.push(...verdictSignals(call));
  }
  if (delay) out.push(delay);
  return out;
}

/**
 * `list` sorted ascending, in place. A trace's few latencies are sorted by insertion: Array.prototype.sort sets up
 * its merge state on every call, whatever the length, and this runs several times per trace. Finite numbers have
 * one ascending order (equal ones are indistinguishable), so the result is the builtin's; anything else (NaN, an
 * infinity) and long lists go to the builtin.
 */
function sortAscending(list: number[]): number[] {
  if (list.length > 16 || !list.every(Number.isFinite)) return list.sort((a, b) => a - b);
  for (let i = 1; i < list.length; i++) {
    const x = list[i]!;
    let j = i - 1;
    for (; j >= 0 && list[j]! > x; j--) list[j + 1] = list[j]!;
    list[j + 1] = x;
  }
  return list;
}

/**
 * Latency against the trace's own distribution, per model. LLM latency grows with the output and varies several-fold
 * naturally, so each call's cost (its duration per output token plus a first-token overhead, or its duration when
 * usage is unknown) is compared with the other calls of the same model (of the trace when the model has too few): a
 * call is a delay when it is a robust outlier among them — modified z-score (median and MAD, the MAD floored for
 * short traces) beyond the fence — and also a multiple of what they predict and beyond a host's noise (thresholds.ts):
 * every margin relative to the run's own latency, none a fixed number of seconds. A slower call that is not an
 * outlier stays a weak hint.
 */
function delaySignals(view: TraceView, opts: { delayExtraMs: number; delayRatio: number }): Map<LlmCall, Signal> {
  const out = new Map<LlmCall, Signal>();
  const ok = view.llm.filter((c) => !c.failure && !c.faultline?.aborted);
  if (ok.length < LATENCY_MIN_CALLS) return out;
  const K = LATENCY_OVERHEAD_TOKENS;
  const tokens = (c: LlmCall): number | undefined =>
    c.usage.outputTokens ?? (c.outputChars !== undefined ? c.outputChars / CHARS_PER_TOKEN : undefined);
  const withTokens = ok.every((c) => tokens(c) !== undefined);
  const cost = (c: LlmCall): number => (withTokens ? durationMs(c.span) / (tokens(c)! + K) : durationMs(c.span));
  const model = (c: LlmCall): string => c.responseModel ?? c.requestModel ?? '';
  const costs = ok.map(cost);
  const all = sortAscending(costs.slice());
  const byModel = new Map<string, number[]>();
  for (let i = 0; i < ok.length; i++) {
    const key = model(ok[i]!);
    const list = byModel.get(key);
    if (list === undefined) byModel.set(key, [costs[i]!]);
    else list.push(costs[i]!);
  }
  // One model (the usual trace): its list is `all`, in the same order, so sorted it is `all` too.
  if (byModel.size === 1) byModel.set(model(ok[0]!), all);
  else for (const list of byModel.values()) sortAscending(list);
  for (let i = 0; i < ok.length; i++) {
    const c = ok[i]!;
    const d = durationMs(c.span);
    const x = costs[i]!;
    const own = byModel.get(model(c))!;
    const pool = own.length >= LATENCY_MIN_CALLS ? own : all;
    const m = medianWithout(pool, x);
    if (m === undefined) continue;
    const expected = withTokens ? m * (tokens(c)! + K) : m;
    const base = Math.max(expected, 1);
    if (d < expected + opts.delayExtraMs || d < opts.delayRatio * base) continue;
    const self = pool.indexOf(x);
    const deviations: number[] = [];
    for (let j = 0; j < pool.length; j++) if (j !== self) deviations.push(Math.abs(pool[j]! - m));
    sortAscending(deviations);
    const mad = Math.max(deviations[deviations.length >> 1] ?? 0, LATENCY_MAD_FLOOR * m);
    const z = mad > 0 ? (MAD_Z_SCALE * (x - m)) / mad : Infinity;
    const extreme = z >= OUTLIER_Z && d >= DELAY_FAULT_RATIO * base;
    const of =
      pool === own && byModel.size > 1
        ? `the trace's other ${model(c) || 'unnamed-model'} calls`
        : `the trace's other calls`;
    const what = withTokens ? `what ${of} take for ${Math.round(tokens(c)!)} output tokens` : `the median of ${of}`;
    out.set(c, {
      faultType: 'delay',
      confidence: extreme ? DELAY_CONFIDENCE : DELAY_HINT_CONFIDENCE,
      evidence: `took ${Math.round(d)} ms, ${Math.round(d / base)}× ${what} (${Math.round(expected)} ms; modified z ${Number.isFinite(z) ? z.toFixed(1) : '∞'})`,
      source: 'metadata',
    });
  }
  return out;
}

/** No signals: read only (a span without findings shares it). */
const NO_SIGNALS: readonly Signal[] = [];

function findingSignals(findings: readonly Finding[]): Signal[] {
  return findings
    .filter((f): f is Finding & { faultType: Exclude<FaultType, 'none'> } => f.faultType !== 'none')
    .map((f) => ({
      faultType: f.faultType,
      confidence: f.confidence,
      evidence: `${f.detector}: ${f.evidence}`.slice(0, 200),
      source: 'detector' as const,
    }));
}

function strongest(signals: readonly Signal[]): Signal | undefined {
  let best: Signal | undefined;
  for (const s of signals) {
    if (
      !best ||
      s.confidence > best.confidence + 1e-9 ||
      (Math.abs(s.confidence - best.confidence) <= 1e-9 &&
        PRECEDENCE.indexOf(s.faultType) < PRECEDENCE.indexOf(best.faultType))
    ) {
      best = s;
    }
  }
  return best;
}

/** Every signal of every span, in start order (what the rules and the LLM rendering both read). */
export function spanVerdicts(trace: TraceRecord, options: RuleDiagnoserOptions = {}): SpanVerdict[] {
  const opts = {
    delayExtraMs: options.delayExtraMs ?? LLM_DELAY_NOISE_MS,
    delayRatio: options.delayRatio ?? DELAY_MIN_RATIO,
  };
  const view = viewTrace(trace);
  let offline: Map<string, Finding[]> | undefined;
  try {
    offline = options.findings?.(trace);
  } catch {
    offline = undefined; // a detector bug must not lose the metadata diagnosis
  }
  const delays = delaySignals(view, opts);
  // Filled by loops, not built from lists of pairs: this runs per trace, and the iterable constructors cost more.
  const stepBySpan = new Map<string, Step>();
  for (const s of view.steps) stepBySpan.set(s.span.spanId, s);
  const carried = view.detectionChildren;
  let childIds: Set<string> | undefined; // most traces have no detection children
  if (carried.size > 0) {
    childIds = new Set();
    for (const list of carried.values()) for (const c of list) childIds.add(c.spanId);
  }
  const out: SpanVerdict[] = [];
  for (const span of trace.spans) {
    if (childIds?.has(span.spanId) === true) continue;
    const step = stepBySpan.get(span.spanId) ?? null;
    let signals: Signal[];
    if (step?.kind === 'llm') {
      signals = llmSignals(step, view, delays.get(step)); // a list of its own, made for this span
    } else if (step?.kind === 'message') {
      // Message faults are judged per message, from all its ends and the trace's baselines (messages.ts).
      signals = messageSignals(step, { view });
    } else {
      signals = [];
      const f = view.failureOf(span);
      // The application's record of its own cancel of a call below it is no fault (gave-up.ts).
      const failure = f !== undefined && isCancel(f) && abortedBelow(span, view) ? undefined : failureSignal(f, span);
      if (failure) signals.push(failure);
    }
    // The span's own detection events, then its detection children's (most spans have no events at all).
    const children = carried.get(span.spanId);
    if (span.events.length > 0) detectionSignals(span, signals);
    if (children !== undefined) for (const c of children) detectionSignals(c, signals);
    const found = offline?.get(span.spanId);
    let findings = found === undefined ? NO_SIGNALS : findingSignals(found);
    if (step?.kind === 'llm' && findings.length > 0) {
      if ((step.toolCallCount ?? step.toolCalls.length) > 0) {
        // A response that carried tool calls is not empty by definition, whatever a text-length heuristic says.
        findings = findings.filter((f) => f.faultType !== 'empty');
      }
      if (step.failure) {
        // A failed call's missing output is the failure, not a second fault.
        findings = findings.filter((f) => f.faultType !== 'empty' && f.faultType !== 'truncate');
      }
    }
    if (findings.length > 0) signals.push(...findings);
    if (step?.kind === 'llm') yieldRejection(signals);
    if (step !== null) yieldToGarbling(signals);
    if (step?.kind === 'llm' && atOwnLimit(step) && ownLimit(step, view)) {
      // A length stop at the app's own max_tokens (ownLimit): a detector's reading of the cut answer is that stop too.
      for (const s of signals) if (s.faultType === 'truncate') s.confidence = Math.min(s.confidence, HINT_CONFIDENCE);
    }
    if (step?.kind === 'llm') {
      // Detectors' latency findings against a baseline: the same variance caveat as our own outlier check.
      const extreme = (delays.get(step)?.confidence ?? 0) >= DELAY_CONFIDENCE;
      for (const s of signals)
        if (s.faultType === 'delay' && !extreme) s.confidence = Math.min(s.confidence, DELAY_HINT_CONFIDENCE);
    }
    let unspanned = step === null ? unspannedCall(span, view) : null;
    if (step === null && unspanned === null && view.failureOf(span) === undefined) {
      // The app handled a response body that broke off (its span is fine, its event says why) and kept what came.
      const broken = brokenBody(span);
      const at = broken ? unspannedPosition(view, span, broken.time, true) : null;
      if (broken && at !== null) {
        unspanned = at;
        if (broken.kind === 'body')
          signals.push(
            sig(
              'truncate',
              0.85,
              `the connection dropped while the answer of LLM call ${at} was arriving ("${broken.message.slice(0, 60)}", recorded on ${span.name}); the producer exported no span for that call, and the app went on with what had arrived`,
            ),
          );
        else
          signals.push(
            sig(
              broken.kind,
              0.9,
              `LLM call ${at} failed ("${broken.message.slice(0, 100)}", recorded on ${span.name}, which handled it); the producer exported no span for that call`,
            ),
          );
      }
    }
    out.push({
      span,
      step,
      stepKind: step?.kind ?? (unspanned !== null ? 'llm' : null),
      stepIndex: step?.step ?? unspanned,
      signals,
    });
  }
  reviewMessages(trace, out);
  return out;
}

/**
 * The model call an SDK threw on, where the producer exported no span for it (OpenLLMetry and OpenInference end no
 * LLM span for a call that threw): the evidence is an enclosing span's failure that is a provider call's error, and
 * the call's position is the one after the last LLM call that started before the failure (as the LLM steps count).
 */
function unspannedCall(span: SpanRecord, view: TraceView): number | null {
  const f = view.failureOf(span);
  if (f === undefined || !providerCallError(f) || isCancel(f)) return null; // a cancel is the app's decision
  // The error rose from a span below that failed with it (an agent under the workflow): that one places the call.
  const below = view.trace.spans.some(
    (o) =>
      o !== span &&
      o.start >= span.start &&
      isAncestor(view, span, o) &&
      !view.llmOf(o.spanId) &&
      (() => {
        const g = view.failureOf(o);
        return g !== undefined && providerCallError(g);
      })(),
  );
  if (below) return null;
  return unspannedPosition(view, span, span.events.find((e) => e.name === 'exception')?.time ?? span.end);
}

/**
 * An HTTP response body that broke off mid-way (or a provider call's error), as the runtime reports it — undici's "terminated" (its fetch body
 * stream cut), `ECONNRESET`, "other side closed", "socket hang up", "premature close" — recorded by the application
 * on one of its own spans as an event carrying `exception.message` (OTel's exception attributes, whatever the
 * event's name) rather than as the span's failure: the app caught it and went on.
 */
const BODY_BROKE = /^terminated$|\bECONNRESET\b|other side closed|socket hang up|premature close|UND_ERR_SOCKET/i;

function brokenBody(
  span: SpanRecord,
): { kind: 'body' | 'error' | 'timeout'; message: string; time: number } | undefined {
  for (const e of span.events) {
    const m = str(e.attributes, 'exception.message');
    if (m === undefined) continue;
    if (BODY_BROKE.test(m.trim())) return { kind: 'body', message: m, time: e.time };
    // A provider call's error the app caught (the same reading as a failed span's: providerCallError).
    const type = str(e.attributes, 'exception.type');
    const f: SpanFailure = {
      message: m,
      timeout: looksLikeTimeout(type, m),
      ...(type !== undefined ? { errorType: type } : {}),
    };
    if (providerCallError(f) && !isCancel(f))
      return { kind: f.timeout ? 'timeout' : 'error', message: m, time: e.time };
  }
  return undefined;
}

/** The LLM step an unspanned call under `span` that failed at `failedAt` stands at, or null when it has a span. */
function unspannedPosition(view: TraceView, span: SpanRecord, failedAt: number, settled = false): number | null {
  // When the call started: after the last LLM call or tool below the span that had ended by then (else the span's
  // start); the calls that started before it come before it (other agents' calls running in parallel included).
  let startedAt = span.start;
  for (const c of view.llm)
    if (c.span.end <= failedAt && c.span.end > startedAt && isAncestor(view, span, c.span)) startedAt = c.span.end;
  for (const t of view.tools)
    if (t.span.end <= failedAt && t.span.end > startedAt && isAncestor(view, span, t.span)) startedAt = t.span.end;
  let before = 0;
  for (const c of view.llm) {
    if (c.span.start > failedAt) continue;
    if (c.span.start >= startedAt && !isAncestor(view, span, c.span)) continue; // started after the failed call
    // `settled`: the failure is known only as a moment the app recorded after the fact (an event): a call outside
    // the span still running then is another agent's that started after it (start times are often whole ms).
    if (settled && c.span.end > failedAt && !isAncestor(view, span, c.span)) continue;
    // The failed call has its own span (instrumentation-openai ends one; faultline's records the abort of a call the
    // client gave up on): that span is the step, not this one.
    if ((c.failure !== undefined || c.faultline?.aborted === true) && c.span.start >= span.start) return null;
    if (c.step > before) before = c.step;
  }
  return before + 1;
}

/**
 * Whether a failure is a model API call's, by the SDKs' documented error classes and messages: openai-node's
 * `APIConnectionTimeoutError` ("Request timed out."), `APIConnectionError` ("Connection error."), `RateLimitError`,
 * `InternalServerError`, the 4xx classes (`BadRequestError`, `NotFoundError`, …) and the `APIError` message form
 * "<status> <provider message>" — for a 4xx, with the provider's snake_case error code as the type, as producers
 * record it from the exception's `code`; the Anthropic SDK's error types (`overloaded_error`,
 * `rate_limit_error`, `api_error`). Not any HTTP status: a tool's own HTTP call fails too.
 */
const PROVIDER_ERROR =
  /\b(APIConnectionTimeoutError|APIConnectionError|APIUserAbortError|RateLimitError|InternalServerError|APIError|AuthenticationError|PermissionDeniedError|BadRequestError|NotFoundError|UnprocessableEntityError|ConflictError|overloaded_error|rate_limit_error|api_error)\b|^Request timed out\.?$|^Connection error\.?$|^(408|409|429|5\d\d)\b/;
/** openai-node's APIError message, "<status> <provider message>", for a 4xx of the API. */
const API_ERROR_MESSAGE = /^4\d\d [A-Z]/;
/** A provider's error code as an SDK's exception carries it (`exception.type` / `error.type` from `err.code`):
 * a snake_case identifier. */
const ERROR_CODE = /^[a-z]+(_[a-z]+)+$/;

export function providerCallError(f: SpanFailure): boolean {
  if ([f.errorType, f.message].some((t) => t !== undefined && PROVIDER_ERROR.test(t.trim()))) return true;
  // A 4xx of the API: the SDK's message form together with the provider's error code as the type.
  return (
    f.errorType !== undefined &&
    ERROR_CODE.test(f.errorType) &&
    f.message !== undefined &&
    API_ERROR_MESSAGE.test(f.message.trim())
  );
}

function detectionSignals(span: SpanRecord, signals: Signal[]): void {
  for (const d of detectionEvents(span)) {
    signals.push({
      faultType: d.faultType as Exclude<FaultType, 'none'>,
      confidence: d.confidence,
      evidence: `${d.detector}: ${d.evidence}`.slice(0, 200),
      source: 'detection',
    });
  }
}

/**
 * A tool's rejection of the arguments says that they were wrong, not how: when the call's own content says how (cut,
 * garbled, emptied, a wrong entity), that names the fault and the rejection is its consequence.
 */
function yieldRejection(signals: Signal[]): void {
  const i = signals.findIndex(
    (s) => s.faultType === 'schema' && s.source === 'metadata' && s.evidence.includes('rejected the arguments'),
  );
  if (i < 0) return;
  const how = signals.some(
    (s, j) =>
      j !== i &&
      s.confidence >= MIN_CONFIDENCE &&
      (s.faultType === 'truncate' ||
        s.faultType === 'corrupt' ||
        s.faultType === 'error' ||
        s.faultType === 'semantic'),
  );
  if (how) signals.splice(i, 1);
}

/**
 * A value garbled in transit (a U+FFFD where bytes were lost, mojibake, symbol noise inside an id) also breaks its
 * declared schema and gets rejected: the garbling names the fault (`corrupt`), the schema breach is its consequence.
 */
function yieldToGarbling(signals: Signal[]): void {
  const garbled = signals.some(
    (s) =>
      s.faultType === 'corrupt' &&
      s.confidence >= MIN_CONFIDENCE &&
      ((s.source === 'detector' && s.evidence.startsWith('encoding:')) ||
        (s.source === 'metadata' &&
          (s.evidence.includes('symbol characters') || s.evidence.includes('garbled characters')))),
  );
  if (!garbled) return;
  for (let i = signals.length - 1; i >= 0; i--) if (signals[i]!.faultType === 'schema') signals.splice(i, 1);
}

/**
 * Failures of spans that are not steps (tools, agents, HTTP) which the run recovered from: a later execution of the
 * same tool succeeded, or the error was contained — no span above it failed with it — and the run did not end failed.
 */
function recoveries(
  view: TraceView,
  verdicts: readonly SpanVerdict[],
  min: number,
): { recovered: RecoveredFault[]; unrecovered: SpanVerdict[] } {
  const failedRun = runFailed(view);
  const recovered: RecoveredFault[] = [];
  const unrecovered: SpanVerdict[] = [];
  const failed = verdicts.filter((v) => v.stepKind === null && (strongest(v.signals)?.confidence ?? 0) >= min);
  for (const v of failed) {
    const span = v.span;
    const tool = view.tools.find((t) => t.span === span);
    const retried =
      tool !== undefined &&
      view.tools.some((t) => t !== tool && t.name === tool.name && t.span.start >= span.end - 1 && !t.failure);
    // An ancestor of a failed span failed because of it: judge the deepest one.
    if (failed.some((o) => o !== v && isAncestor(view, span, o.span))) continue;
    // Contained: no span above it failed (the agent handled the error instead of failing with it).
    const contained = !ancestors(view, span).some((a) => view.failureOf(a) !== undefined);
    // A tool that rejected the model's arguments and never ran: the agent gave up on what it needed, whatever the
    // run did next (it answered without the tool); handled is not recovered.
    const gaveUp = tool !== undefined && !retried && rejectedArguments(tool);
    if (retried || (contained && !failedRun && !gaveUp)) {
      const best = strongest(v.signals)!;
      const agent = view.agentOf(span);
      recovered.push({
        spanId: span.spanId,
        spanName: span.name,
        ...(agent ? { agent: agent.name } : {}),
        faultType: best.faultType,
        evidence: best.evidence,
        how: retried ? `${tool!.name} was run again and succeeded` : 'the run handled it and completed',
      });
    } else {
      unrecovered.push(v);
    }
  }
  return { recovered, unrecovered };
}

function isAncestor(view: TraceView, a: SpanRecord, b: SpanRecord): boolean {
  let p = b.parentSpanId ? view.byId.get(b.parentSpanId) : undefined;
  for (let depth = 0; p && depth < 64; depth++) {
    if (p === a) return true;
    p = p.parentSpanId ? view.byId.get(p.parentSpanId) : undefined;
  }
  return false;
}

/**
 * Whether the run's failure lies in content the trace does not hold: the application's own code (an agent, a
 * workflow, not a tool and not the provider's API) failed after LLM calls whose output was not recorded (content
 * capture off), so what the model returned — cut, garbled, in the wrong shape, empty — cannot be told from the app's
 * bug. Answers the LLM call the failure followed, or undefined when the trace can name the fault.
 */
function hiddenCause(view: TraceView, v: SpanVerdict): LlmCall | undefined {
  const f = view.failureOf(v.span);
  if (f === undefined || f.timeout || providerCallError(f) || isCancel(f)) return undefined;
  if (view.tools.some((t) => t.span === v.span)) return undefined;
  const failedAt = v.span.events.find((e) => e.name === 'exception')?.time ?? v.span.end;
  const before = view.llm.filter(
    (c) => c.span.end <= failedAt + 1 && (isAncestor(view, v.span, c.span) || c.agent?.span === v.span),
  );
  const calls = before.length > 0 ? before : view.llm.filter((c) => c.span.end <= failedAt + 1);
  if (calls.length === 0 || calls.some((c) => c.hasContent)) return undefined;
  return calls[calls.length - 1];
}

function notObservable(
  view: TraceView,
  v: SpanVerdict,
  after: LlmCall,
  name: string,
  recovered: RecoveredFault[],
): Diagnosis {
  const f = view.failureOf(v.span)!;
  const failed = `${f.errorType ?? 'error'}${f.message ? `: ${f.message.slice(0, 100)}` : ''}`;
  const evidence = `${v.span.name} failed (${failed}) after LLM call ${after.step} "${after.span.name}", whose output was not recorded (content capture off): whether the model's answer caused it, and how, is not in the trace`;
  const agent = view.agentOf(v.span)?.name ?? view.agents.find((a) => a.span === v.span)?.name;
  const d: Diagnosis = {
    traceId: view.trace.traceId,
    faultType: NOT_OBSERVABLE,
    spanId: v.span.spanId,
    step: null,
    stepKind: null,
    confidence: 0.5,
    evidence: [evidence],
    diagnoser: name,
    agent: agent ?? null,
    spanName: v.span.name,
    operation: str(v.span.attributes, 'gen_ai.operation.name') ?? null,
    recovered,
  };
  d.summary = describeFault(d, evidence);
  return d;
}

function toDiagnosis(
  view: TraceView,
  v: SpanVerdict,
  best: Signal,
  name: string,
  recovered: RecoveredFault[],
): Diagnosis {
  const evidence = [
    best.evidence,
    ...v.signals
      .filter((s) => s !== best)
      .sort((a, b) => b.confidence - a.confidence)
      .map((s) => `${s.faultType}: ${s.evidence}`),
  ]
    .filter((e) => e !== '')
    .slice(0, 4);
  const agent = v.step?.agent?.name ?? view.agentOf(v.span)?.name;
  const operation =
    v.step?.kind === 'llm'
      ? v.step.operation
      : v.step?.kind === 'message'
        ? 'message'
        : str(v.span.attributes, 'gen_ai.operation.name');
  const d: Diagnosis = {
    traceId: view.trace.traceId,
    faultType: best.faultType,
    spanId: v.span.spanId,
    step: v.stepIndex,
    stepKind: v.stepKind,
    confidence: Math.round(best.confidence * 1000) / 1000,
    evidence,
    diagnoser: name,
    agent: agent ?? null,
    spanName: v.span.name,
    operation: operation ?? null,
    recovered,
  };
  d.summary = describeFault(d, best.evidence);
  return d;
}

/** The rule-based diagnosis of one trace (synchronous; pure). */
export function diagnoseByRules(trace: TraceRecord, options: RuleDiagnoserOptions = {}, name = 'rule'): Diagnosis {
  const min = options.minConfidence ?? MIN_CONFIDENCE;
  const view = viewTrace(trace);
  const verdicts = spanVerdicts(trace, options);
  const { recovered, unrecovered } = recoveries(view, verdicts, min);
  // 1. The first faulty LLM call or message, in start order; a failed attempt the SDK's retry recovered, in a run
  // that completed, is reported as recovered (resent.ts).
  const completed = !runFailed(view);
  for (const v of verdicts) {
    if (v.stepKind === null) continue;
    const best = strongest(v.signals);
    if (!best || best.confidence < min) continue;
    const resend =
      completed && v.step?.kind === 'llm' && (best.faultType === 'error' || best.faultType === 'timeout')
        ? answeredResend(v.step, view)
        : undefined;
    if (resend === undefined) return toDiagnosis(view, v, best, name, recovered);
    const agent = v.step?.agent?.name;
    recovered.push({
      spanId: v.span.spanId,
      spanName: v.span.name,
      ...(agent ? { agent } : {}),
      faultType: best.faultType,
      evidence: best.evidence,
      how: `the SDK sent the request again and it was answered (call ${resend.step})`,
    });
  }
  // 2. Otherwise the earliest failed span the run did not recover from that has no failed descendant.
  if (unrecovered.length > 0) {
    const leaf =
      unrecovered.find((v) => !unrecovered.some((o) => o !== v && isAncestor(view, v.span, o.span))) ?? unrecovered[0]!;
    const hidden = hiddenCause(view, leaf);
    if (hidden !== undefined) return notObservable(view, leaf, hidden, name, recovered);
    return toDiagnosis(view, leaf, strongest(leaf.signals)!, name, recovered);
  }
  const weak: string[] = [];
  for (const v of verdicts) {
    for (const s of v.signals)
      if (s.confidence < min && weak.length < 3)
        weak.push(`weak ${s.faultType} (${s.confidence}) at ${v.span.name}: ${s.evidence}`);
    if (weak.length >= 3) break;
  }
  const d = noFault(
    trace,
    name,
    weak.length > 0 ? weak : ['no span shows a fault signal'],
    weak.length > 0 ? 0.7 : 0.9,
  );
  d.recovered = recovered;
  d.summary = describeFault(d, '');
  return d;
}

export function createRuleDiagnoser(options: RuleDiagnoserOptions = {}): Diagnoser {
  return {
    name: 'rule',
    diagnose: (trace) => Promise.resolve(diagnoseByRules(trace, options)),
  };
}
