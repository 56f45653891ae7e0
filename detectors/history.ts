/**
 * What a task's earlier observations are remembered as. Detectors compare a call with the earlier ones of its task
 * (a replayed answer, a duplicate message, a route's latency and clock), but never need their text: an answer is
 * remembered by its fingerprint, a request by the fingerprint of what tells two requests apart, a large message
 * payload by its fingerprint and its top-level scalar fields (what identity pins read). So online detection's memory
 * is bounded by the number of calls it keeps, not by how large the answers were.
 *
 * The `*Print` functions are the one way detectors compare content across observations, remembered or not.
 */
import { contentHash } from '../instrumentation/providers/content';
import type { AgentMessage, LlmRequestSummary } from '../instrumentation/types';
import type { LlmObservation, MessageObservation, Observation } from './types';
import { ObjectMemo } from '../src/memo';

/** Earlier observations of a task the detectors look back on, online and offline alike: a replay or a duplicate is
 * recognised within the last few dozen calls, and looking back further would make long tasks quadratic. */
export const HISTORY_WINDOW = 32;

/** Payloads up to this size (as JSON) are remembered whole. */
const SMALL_PAYLOAD_CHARS = 1024;
/** Bookkeeping bytes counted per remembered observation besides its strings. */
const OVERHEAD_BYTES = 256;

const contentPrints = new ObjectMemo<LlmObservation, string>('faultline.contentPrint');
const requestPrints = new ObjectMemo<LlmObservation, string>('faultline.requestPrint');
// An application's message object: not written to (ObjectMemo would), so a WeakMap.
// eslint-disable-next-line no-restricted-syntax
const payloadPrints = new WeakMap<AgentMessage, string>();

/** Fingerprint of an answer's text and tool calls (the recorded content hash when the content was not captured). */
export function contentPrint(o: LlmObservation): string | undefined {
  const known = contentPrints.get(o) ?? o.facts?.contentHash;
  if (known !== undefined || !o.hasContent) return known;
  const print = contentHash(o.response.text, o.response.toolCalls);
  contentPrints.set(o, print);
  return print;
}

/** Fingerprint of what tells two requests apart (model, history length, the last message): equal for a retry. */
export function requestPrint(o: LlmObservation): string | undefined {
  const known = requestPrints.get(o);
  if (known !== undefined) return known;
  const req: LlmRequestSummary | undefined = o.request;
  if (!req) return undefined;
  const last = req.messages[req.messages.length - 1];
  const print = contentHash(
    `${req.model ?? ''}|${req.messages.length}|${last ? JSON.stringify(last).slice(0, 2000) : ''}`,
    [],
  );
  requestPrints.set(o, print);
  return print;
}

/** Whether `requestPrint` tells this request apart from others: it was remembered, or its messages are at hand (an
 * offline call recorded without content has none, and every such request would print alike). */
export function knowsRequest(o: LlmObservation): boolean {
  return requestPrints.get(o) !== undefined || (o.request !== undefined && o.request.messages.length > 0);
}

/** Fingerprints of an answer's tool calls, one per call (name and arguments). */
export function toolCallPrints(o: LlmObservation): string[] {
  return o.facts?.toolCallPrints ?? o.response.toolCalls.map((c) => contentHash('', [c]));
}

/** Fingerprint of a message's payload. */
export function payloadPrint(m: AgentMessage): string {
  let print = payloadPrints.get(m);
  if (print === undefined) {
    print = contentHash(JSON.stringify(m.payload) ?? '', []);
    payloadPrints.set(m, print);
  }
  return print;
}

/** The compact form of an observation to keep as a task's history, and about how many bytes it holds. */
export function remember(obs: Observation): { obs: Observation; bytes: number } {
  return obs.kind === 'llm' ? rememberLlm(obs) : rememberMessage(obs);
}

function rememberLlm(o: LlmObservation): { obs: Observation; bytes: number } {
  const r = o.response;
  const content = contentPrint(o);
  const request = requestPrint(o);
  const kept: LlmObservation = {
    kind: 'llm',
    hasContent: false,
    response: { ...r, text: '', toolCalls: [] },
    facts: {
      ...o.facts,
      outputChars: o.facts?.outputChars ?? r.text.length,
      toolCallCount: o.facts?.toolCallCount ?? r.toolCalls.length,
      ...(content !== undefined ? { contentHash: content } : {}),
      ...(o.facts?.messageCount !== undefined || o.request
        ? { messageCount: o.facts?.messageCount ?? o.request?.messages.length }
        : {}),
      toolCallPrints: o.facts?.toolCallPrints ?? toolCallPrints(o),
    },
  };
  if (o.scope) kept.scope = o.scope;
  delete kept.response.unparsedBody;
  if (o.spanId !== undefined) kept.spanId = o.spanId;
  if (o.request) {
    const { provider, operation, model, stream, time } = o.request;
    kept.request = {
      provider,
      operation,
      stream,
      time,
      messages: [],
      tools: [],
      ...(model !== undefined ? { model } : {}),
    };
  }
  if (request !== undefined) requestPrints.set(kept, request);
  return { obs: kept, bytes: OVERHEAD_BYTES + (r.id?.length ?? 0) + (r.model?.length ?? 0) };
}

function rememberMessage(m: MessageObservation): { obs: Observation; bytes: number } {
  let bytes = OVERHEAD_BYTES;
  const delivered = m.delivered.map((d) => {
    const json = JSON.stringify(d.payload) ?? '';
    const print = payloadPrint(d);
    let kept: AgentMessage = d;
    if (json.length > SMALL_PAYLOAD_CHARS) {
      kept = { ...d, payload: scalarFields(d.payload) };
      payloadPrints.set(kept, print);
      bytes += OVERHEAD_BYTES;
    } else {
      bytes += json.length * 2;
    }
    return kept;
  });
  const { original: _original, ...rest } = m;
  return { obs: { ...rest, delivered }, bytes };
}

/** The top-level scalar fields of an object payload (identity fields such as `sku`, `order_id`), short ones only. */
function scalarFields(payload: unknown): unknown {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(payload)) {
    if (typeof v === 'number' || typeof v === 'boolean' || (typeof v === 'string' && v.length <= 128)) out[k] = v;
  }
  return out;
}
