/**
 * Messages in the one reading of a trace. Which spans carry an inter-agent message, what each says, and which spans
 * are the ends of one message:
 *
 *  - `isMessageSpan`: faultline's channel handoffs and deliveries, A2A / MCP client calls, A2A / MCP server spans
 *    faultline recorded as receive spans;
 *  - `readMessage`: whatever produced the span — faultline's handoff span (the sender's end, with what crossed the
 *    channel), a receive span (a channel delivery, an A2A / MCP server), an A2A / MCP client span, another producer's
 *    messaging span — it becomes one `MessageFacts`: which end it records, the envelope, what that end saw of the
 *    payload (hash, size, keys, content-free shape, the content when captured), the delivered-copy facts a sender span
 *    may carry, the receiver's contract check, the links to the other end, and how the exchange ended;
 *  - `joinMessages`: the spans of one message joined into a `MessageExchange` — the send and the receive spans that
 *    link to it (or carry its wire id, or arrived while the call to that agent was in flight), or, with no sender span,
 *    the receive spans of one message id — in causal order;
 *  - `messageObservation`: the detectors' observation of one message: what was sent (when known) and the copies that
 *    arrived. A receive span is a delivery, never an undelivered message.
 *
 * The layer (index.ts) and the message rules (src/diagnosers/messages.ts) read this, never the attributes directly,
 * so a new span shape means a change here only. This file is the `messages` helper's.
 */
import {
  ATTR_A2A_MESSAGE_ID,
  ATTR_A2A_METHOD_NAME,
  ATTR_FL_GUARD_ACTION,
  ATTR_FL_GUARD_REASON,
  ATTR_FL_MESSAGE_BOUNDARY,
  ATTR_FL_MESSAGE_CONTRACT,
  ATTR_FL_MESSAGE_CONTRACT_ISSUES,
  ATTR_FL_MESSAGE_COPY,
  ATTR_FL_MESSAGE_DELIVERED_CHANGES,
  ATTR_FL_MESSAGE_DELIVERED_COUNT,
  ATTR_FL_MESSAGE_DELIVERED_HASHES,
  ATTR_FL_MESSAGE_DELIVERED_IDS,
  ATTR_FL_MESSAGE_DELIVERED_KEYS,
  ATTR_FL_MESSAGE_DELIVERED_PAYLOADS,
  ATTR_FL_MESSAGE_DELIVERED_SESSION_IDS,
  ATTR_FL_MESSAGE_DELIVERED_SHAPE,
  ATTR_FL_MESSAGE_DELIVERED_TASK_IDS,
  ATTR_FL_MESSAGE_DELIVERED_VERSIONS,
  ATTR_FL_MESSAGE_ID,
  ATTR_FL_MESSAGE_KEYS,
  ATTR_FL_MESSAGE_PAYLOAD,
  ATTR_FL_MESSAGE_PAYLOAD_BYTES,
  ATTR_FL_MESSAGE_PAYLOAD_HASH,
  ATTR_FL_MESSAGE_SENT_AT,
  ATTR_FL_MESSAGE_SESSION_ID,
  ATTR_FL_MESSAGE_SHAPE,
  ATTR_FL_MESSAGE_SIDE,
  ATTR_FL_MESSAGE_SOURCE,
  ATTR_FL_MESSAGE_TARGET,
  ATTR_FL_MESSAGE_TASK_ID,
  ATTR_FL_MESSAGE_VERSION,
  ATTR_FL_RESPONSE_ABORTED,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_MESSAGE_BODY_SIZE,
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  EVENT_FL_GUARD,
} from '../../../instrumentation/semconv';
import type { AgentMessage } from '../../../instrumentation/types';
import type { MessageObservation } from '../../../detectors/types';
import { str, strList, type Attributes, type SpanRecord } from '../model';
import { ObjectMemo } from '../../memo';
import { num, spanFailure } from './failure';

/**
 * A message span: an in-process handoff or delivery through faultline's channel, an A2A client call, an MCP tool
 * call, or a receive span of an A2A / MCP server. These are the spans inter-agent message faults land on.
 */
export function isMessageSpan(span: SpanRecord): boolean {
  const a = span.attributes;
  if (a[ATTR_FL_MESSAGE_BOUNDARY] !== undefined || a[ATTR_FL_MESSAGE_ID] !== undefined) return true;
  if (span.kind === 'CLIENT' && (a[ATTR_A2A_METHOD_NAME] !== undefined || a[ATTR_MCP_METHOD_NAME] !== undefined))
    return true;
  return false;
}

export type MessageSide = 'send' | 'receive' | 'unknown';

/** Captured text, parsed when it is JSON (`ok: false`: recorded but not JSON). */
export interface Content {
  ok: boolean;
  value?: unknown;
  text: string;
}

/** What one end saw of a payload. Every field is optional: producers record different subsets. */
export interface PayloadFacts {
  hash?: string;
  bytes?: number;
  keys?: string[];
  /** Content-free shape entries (`path=kind`, instrumentation/agents/shape.ts). */
  shape?: string[];
  /** The payload itself, when content was captured. */
  content?: Content;
}

/** What a sender's span says crossed to the receiver (faultline's handoff span). */
export interface DeliveredFacts {
  count?: number;
  hashes?: string[];
  ids?: string[];
  taskIds?: string[];
  sessionIds?: string[];
  versions?: (number | undefined)[];
  keys?: string[];
  /** Content-free structural changes of the first changed copy (`op:path`). */
  changes?: string[];
  /** Shape of the first changed copy. */
  shape?: string[];
  /** Captured payloads, one per copy (JSON text). */
  payloads?: string[];
}

/** What a guard did on the span (`faultline.guard` events): a fault a protection recovered from leaves only this. */
export interface GuardEvent {
  action: string;
  reason: string;
}

/** How the exchange ended at one end, when it failed. */
export interface MessageFailure {
  errorType?: string;
  message?: string;
  http?: number;
  rpc?: string;
  timeout: boolean;
}

/** What one message span says about the message and what its end saw. */
export interface MessageFacts {
  span: SpanRecord;
  side: MessageSide;
  /** channel (faultline's in-process), a2a, mcp, or the messaging system another producer named. */
  system: string;
  id?: string;
  source?: string;
  target?: string;
  boundary?: string;
  taskId?: string;
  sessionId?: string;
  version?: number;
  /** When the message says it was sent (epoch ms): a replayed message keeps its own. */
  sentAt?: number;
  /** What this end saw of the payload; undefined when the span records no payload facts at all. */
  payload?: PayloadFacts;
  /** Sender spans only: what crossed to the receiver, when recorded. */
  delivered?: DeliveredFacts;
  /** Sender spans of a call (A2A, MCP): the reply the sender got back, when content was captured. */
  reply?: Content;
  /** Receive spans: the receiver's contract check. */
  contract?: { valid: boolean; issues: string[] };
  copy?: number;
  /** Spans this one names as its other end: links, and the parent of a receive span. */
  peers: string[];
  failure?: MessageFailure;
  /** The sender's application gave up on the call (cancelled it, typically its own deadline). */
  aborted: boolean;
  guards: GuardEvent[];
  /** MCP: the tool; A2A: the remote agent (for pairing ends across processes). */
  tool?: string;
  agent?: string;
  rpcId?: string;
  start: number;
  end: number;
}

function parseJson(text: string): { ok: boolean; value?: unknown } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

function sideOf(span: SpanRecord): MessageSide {
  const a = span.attributes;
  const side = str(a, ATTR_FL_MESSAGE_SIDE);
  if (side === 'send' || side === 'receive') return side;
  const op = str(a, ATTR_MESSAGING_OPERATION_TYPE);
  if (op === 'receive' || op === 'process' || op === 'deliver') return 'receive';
  if (op === 'send' || op === 'publish' || op === 'create') return 'send';
  if (a[ATTR_FL_MESSAGE_DELIVERED_COUNT] !== undefined) return 'send';
  if (span.kind === 'SERVER' || span.kind === 'CONSUMER') return 'receive';
  if (span.kind === 'CLIENT' || span.kind === 'PRODUCER') return 'send';
  return 'unknown';
}

function systemOf(span: SpanRecord): string {
  const a = span.attributes;
  if (a[ATTR_A2A_METHOD_NAME] !== undefined) return 'a2a';
  if (a[ATTR_MCP_METHOD_NAME] !== undefined) return 'mcp';
  const sys = str(a, ATTR_MESSAGING_SYSTEM);
  if (sys === undefined || sys === 'faultline') return 'channel';
  return sys;
}

function payloadFacts(a: Attributes): PayloadFacts | undefined {
  const facts: PayloadFacts = {};
  const hash = str(a, ATTR_FL_MESSAGE_PAYLOAD_HASH);
  if (hash !== undefined) facts.hash = hash;
  const bytes = num(a, ATTR_FL_MESSAGE_PAYLOAD_BYTES) ?? num(a, ATTR_MESSAGING_MESSAGE_BODY_SIZE);
  if (bytes !== undefined) facts.bytes = bytes;
  const keys = strList(a, ATTR_FL_MESSAGE_KEYS);
  if (keys) facts.keys = keys.filter((k) => k !== '');
  const shape = strList(a, ATTR_FL_MESSAGE_SHAPE);
  if (shape) facts.shape = shape;
  const text = str(a, ATTR_FL_MESSAGE_PAYLOAD);
  if (text !== undefined) facts.content = { ...parseJson(text), text };
  return Object.keys(facts).length > 0 ? facts : undefined;
}

function deliveredFacts(a: Attributes): DeliveredFacts | undefined {
  const count = num(a, ATTR_FL_MESSAGE_DELIVERED_COUNT);
  const hashes = strList(a, ATTR_FL_MESSAGE_DELIVERED_HASHES);
  if (count === undefined && hashes === undefined) return undefined;
  const d: DeliveredFacts = {};
  if (count !== undefined) d.count = count;
  if (hashes) d.hashes = hashes;
  const put = <K extends keyof DeliveredFacts>(k: K, v: DeliveredFacts[K] | undefined): void => {
    if (v !== undefined) d[k] = v;
  };
  put('ids', strList(a, ATTR_FL_MESSAGE_DELIVERED_IDS));
  put('taskIds', strList(a, ATTR_FL_MESSAGE_DELIVERED_TASK_IDS));
  put('sessionIds', strList(a, ATTR_FL_MESSAGE_DELIVERED_SESSION_IDS));
  const versions = strList(a, ATTR_FL_MESSAGE_DELIVERED_VERSIONS);
  if (versions) d.versions = versions.map((v) => (v === '' || !Number.isFinite(Number(v)) ? undefined : Number(v)));
  put('keys', strList(a, ATTR_FL_MESSAGE_DELIVERED_KEYS));
  put('changes', strList(a, ATTR_FL_MESSAGE_DELIVERED_CHANGES));
  put('shape', strList(a, ATTR_FL_MESSAGE_DELIVERED_SHAPE));
  put('payloads', strList(a, ATTR_FL_MESSAGE_DELIVERED_PAYLOADS));
  return d;
}

function failureOf(span: SpanRecord): MessageFailure | undefined {
  const f = spanFailure(span);
  if (!f) return undefined;
  const a = span.attributes;
  const out: MessageFailure = { timeout: f.timeout };
  if (f.errorType !== undefined) out.errorType = f.errorType;
  if (f.message !== undefined) out.message = f.message;
  // The HTTP status of a failed call whatever it is (a JSON-RPC error rides on a 200).
  const http = num(a, 'http.response.status_code') ?? num(a, 'http.status_code');
  if (http !== undefined) out.http = http;
  const rpc = a[ATTR_RPC_RESPONSE_STATUS_CODE];
  if (rpc !== undefined) out.rpc = String(rpc);
  return out;
}

/** The guards' `faultline.guard` events on a span. */
export function guardEvents(span: SpanRecord): GuardEvent[] {
  return span.events
    .filter((e) => e.name === EVENT_FL_GUARD)
    .map((e) => ({
      action: str(e.attributes, ATTR_FL_GUARD_ACTION) ?? '',
      reason: str(e.attributes, ATTR_FL_GUARD_REASON) ?? '',
    }));
}

const read = new ObjectMemo<SpanRecord, MessageFacts>('faultline.messageFacts');

/** The facts of a message span (read once per span object). */
export function readMessage(span: SpanRecord): MessageFacts {
  const cached = read.get(span);
  if (cached) return cached;
  const a = span.attributes;
  const side = sideOf(span);
  const aborted = a[ATTR_FL_RESPONSE_ABORTED] === true || a[ATTR_FL_RESPONSE_ABORTED] === 'true';
  const v: MessageFacts = {
    span,
    side,
    system: systemOf(span),
    peers: [],
    guards: guardEvents(span),
    aborted,
    start: span.start,
    end: span.end,
  };
  const set = <K extends keyof MessageFacts>(k: K, value: MessageFacts[K] | undefined): void => {
    if (value !== undefined) v[k] = value;
  };
  set('id', str(a, ATTR_FL_MESSAGE_ID) ?? str(a, ATTR_A2A_MESSAGE_ID) ?? str(a, ATTR_MESSAGING_MESSAGE_ID));
  set('source', str(a, ATTR_FL_MESSAGE_SOURCE));
  set('target', str(a, ATTR_FL_MESSAGE_TARGET) ?? str(a, ATTR_MESSAGING_DESTINATION_NAME));
  set('boundary', str(a, ATTR_FL_MESSAGE_BOUNDARY));
  set('taskId', str(a, ATTR_FL_MESSAGE_TASK_ID));
  set(
    'sessionId',
    str(a, ATTR_FL_MESSAGE_SESSION_ID) ??
      str(a, ATTR_GEN_AI_CONVERSATION_ID) ??
      str(a, ATTR_MCP_SESSION_ID) ??
      str(a, 'messaging.message.conversation_id'),
  );
  set('version', num(a, ATTR_FL_MESSAGE_VERSION));
  set('sentAt', num(a, ATTR_FL_MESSAGE_SENT_AT));
  set('payload', payloadFacts(a));
  if (side !== 'receive') {
    set('delivered', deliveredFacts(a));
    const reply =
      str(a, ATTR_GEN_AI_TOOL_CALL_RESULT) ?? (v.system === 'a2a' ? str(a, ATTR_GEN_AI_OUTPUT_MESSAGES) : undefined);
    if (reply !== undefined) v.reply = { ...parseJson(reply), text: reply };
  }
  const contract = str(a, ATTR_FL_MESSAGE_CONTRACT);
  if (contract === 'valid' || contract === 'invalid')
    v.contract = { valid: contract === 'valid', issues: strList(a, ATTR_FL_MESSAGE_CONTRACT_ISSUES) ?? [] };
  set('copy', num(a, ATTR_FL_MESSAGE_COPY));
  set('failure', failureOf(span));
  set('tool', str(a, ATTR_GEN_AI_TOOL_NAME));
  set('agent', str(a, ATTR_GEN_AI_AGENT_NAME));
  set('rpcId', str(a, ATTR_JSONRPC_REQUEST_ID));
  for (const l of span.links) if (l.traceId === span.traceId) v.peers.push(l.spanId);
  if (side === 'receive' && span.parentSpanId !== undefined) v.peers.push(span.parentSpanId);
  read.set(span, v);
  return v;
}

// ------------------------------------------------------------------------------------------------ joining the ends

/** One message: the sender's span and the receive spans of what arrived, whichever of them the trace holds. */
export interface MessageExchange {
  send?: MessageFacts;
  /** What reached the receiver, one receive span per copy, in start order. */
  receives: MessageFacts[];
  /** The span that stands for the message (the sender's, else the first receive). */
  step: SpanRecord;
  start: number;
  system: string;
  source?: string;
  /** The receiver: the target agent, the A2A agent, the MCP tool. */
  target?: string;
  /** Depth in the span tree of the end that stands for it (orders messages begun within one clock tick). */
  depth: number;
  /** A receive-only message whose id an earlier message of the edge already delivered, after other messages. */
  replayOf?: MessageExchange;
}

/** The edge a message travels: its system, sender and receiver. */
export function edgeKey(x: Pick<MessageExchange, 'source' | 'target' | 'system'>): string {
  return `${x.system}|${x.source ?? ''}|${x.target ?? ''}`;
}

/**
 * Join message spans into messages, in causal order. `depthOf` gives a span's depth in the span tree: span clocks tick
 * in milliseconds, and a fast in-process exchange sends several messages within one tick — there a message sent from
 * inside a receiver's handling (deeper in the tree) comes after.
 */
export function joinMessages(facts: readonly MessageFacts[], depthOf: (span: SpanRecord) => number): MessageExchange[] {
  const sends = new Map<string, MessageExchange>();
  const out: MessageExchange[] = [];
  // Keys set one by one, in this order (spreading conditional literals cost several times the object's building).
  const make = (v: MessageFacts): MessageExchange => {
    const target = v.target ?? v.agent ?? v.tool;
    const x = {} as MessageExchange;
    if (v.side !== 'receive') x.send = v;
    x.receives = v.side === 'receive' ? [v] : [];
    x.step = v.span;
    x.start = v.start;
    x.system = v.system;
    if (v.source !== undefined) x.source = v.source;
    if (target !== undefined) x.target = target;
    x.depth = 0;
    return x;
  };
  for (const v of facts) {
    if (v.side === 'receive') continue;
    const x = make(v);
    sends.set(v.span.spanId, x);
    out.push(x);
  }
  const sendsById = new Map<string, MessageExchange[]>();
  for (const x of out) {
    if (x.send?.id === undefined) continue;
    const list = sendsById.get(x.send.id);
    if (list === undefined) sendsById.set(x.send.id, [x]);
    else list.push(x);
  }
  /** The send of message `id` that was in flight when `r` arrived, else the latest one before it (a resend of one
   * message id is another send). */
  const sendOf = (id: string, r: MessageFacts): MessageExchange | undefined => {
    const candidates = sendsById.get(id) ?? [];
    return (
      candidates.find((x) => r.start >= x.step.start - 1 && r.start <= x.step.end + 1) ??
      [...candidates].reverse().find((x) => x.step.start <= r.start + 1) ??
      candidates[0]
    );
  };
  const orphansById = new Map<string, MessageExchange>();
  for (const r of facts) {
    if (r.side !== 'receive') continue;
    const peer = r.peers.map((p) => sends.get(p)).find((x) => x !== undefined);
    // Without a link to the sender's span (a context propagated only to the calling agent, or none): the same
    // message id names the send; else the call to the same agent or tool that was in flight when it arrived.
    const paired =
      peer ??
      (r.id !== undefined && r.system !== 'channel' ? sendOf(r.id, r) : undefined) ??
      (r.system !== 'channel'
        ? out.find(
            (x) =>
              x.send !== undefined &&
              x.system === r.system &&
              x.target !== undefined &&
              x.target === (r.target ?? r.agent ?? r.tool) &&
              r.start >= x.step.start - 1 &&
              r.start <= x.step.end + 1,
          )
        : undefined);
    if (paired !== undefined) {
      paired.receives.push(r);
      continue;
    }
    const key = r.id !== undefined ? `${r.system}|${r.target ?? ''}|${r.id}` : undefined;
    const earlier = key !== undefined ? orphansById.get(key) : undefined;
    if (earlier !== undefined) {
      const between = out.some(
        (x) => x !== earlier && x.start > earlier.start && x.start < r.start && edgeKey(x) === edgeKey(earlier),
      );
      if (!between) {
        earlier.receives.push(r);
        continue;
      }
      const x = make(r);
      x.replayOf = earlier;
      out.push(x);
      continue;
    }
    const x = make(r);
    if (key !== undefined) orphansById.set(key, x);
    out.push(x);
  }
  for (const x of out) {
    x.receives.sort((a, b) => a.start - b.start);
    if (!x.send && x.receives[0]) x.step = x.receives[0].span;
    let start = x.step.start;
    for (const r of x.receives) if (r.start < start || Number.isNaN(r.start)) start = r.start; // as Math.min: NaN wins
    x.start = start;
    x.depth = depthOf((x.send ?? x.receives[0])!.span);
    if (x.source === undefined) {
      const s = x.receives.find((r) => r.source !== undefined)?.source;
      if (s !== undefined) x.source = s;
    }
  }
  return out.sort(
    (a, b) =>
      Math.floor(a.start) - Math.floor(b.start) ||
      a.depth - b.depth ||
      a.start - b.start ||
      (a.step.spanId < b.step.spanId ? -1 : 1),
  );
}

// ------------------------------------------------------------------------------------------------ detectors

function agentMessage(f: MessageFacts, payload: unknown): AgentMessage {
  const m: AgentMessage = {
    id: f.id ?? f.span.spanId,
    source: f.source ?? '',
    target: f.target ?? f.agent ?? f.tool ?? '',
    payload,
  };
  if (f.boundary !== undefined) m.boundary = f.boundary;
  if (f.taskId !== undefined) m.taskId = f.taskId;
  if (f.sessionId !== undefined) m.sessionId = f.sessionId;
  if (f.version !== undefined) m.version = f.version;
  if (f.sentAt !== undefined) m.sentAt = f.sentAt;
  return m;
}

/** A captured payload as the detectors take it: the parsed value, or the text that did not parse. */
const payloadOf = (c: Content | undefined): unknown => (c === undefined ? undefined : c.ok ? c.value : c.text);

/**
 * The detectors' observation of one message. The copies that arrived are, in order of what is known: the receive
 * spans (each one a delivery: what the receiver got), else the sender span's own account (copies known by their
 * hashes; a copy whose hash is the payload's is the payload), else — a span that does not say which end it records —
 * the message it records. A message whose delivery nothing records is observed with no delivered count, so that no
 * detector reads it as undelivered.
 */
export function messageObservation(x: MessageExchange): MessageObservation {
  const send = x.send;
  const sent = send?.payload?.content;
  const latencyMs = Math.max(0, x.step.end - x.step.start);
  const obs: MessageObservation = {
    kind: 'message',
    spanId: x.step.spanId,
    delivered: [],
    hasContent: false,
    latencyMs,
  };
  const facts: NonNullable<MessageObservation['facts']> = {};
  const pf = send?.payload ?? x.receives[0]?.payload;
  if (pf?.keys !== undefined) facts.keys = pf.keys;
  if (pf?.hash !== undefined) facts.payloadHash = pf.hash;
  if (pf?.bytes !== undefined) facts.payloadBytes = pf.bytes;
  const original = send && sent ? agentMessage(send, payloadOf(sent)) : undefined;
  if (x.receives.length > 0 && !send?.delivered) {
    obs.delivered = x.receives.map((r) => agentMessage(r, payloadOf(r.payload?.content)));
    obs.hasContent = x.receives.every((r) => r.payload?.content !== undefined);
    facts.deliveredCount = x.receives.length;
    const hashes = x.receives.map((r) => r.payload?.hash ?? '');
    if (hashes.some((h) => h !== '')) facts.deliveredHashes = hashes;
    // The payload facts of the message are the sender's when it recorded them; the receiver's copy otherwise.
    if (original) obs.original = original;
  } else if (send?.delivered) {
    const d = send.delivered;
    if (d.count !== undefined) facts.deliveredCount = d.count;
    if (d.hashes !== undefined) facts.deliveredHashes = d.hashes;
    if (original) {
      for (const h of d.hashes ?? []) if (h === send.payload?.hash) obs.delivered.push(original);
      obs.original = original;
      // Offline the changed copies are known only by their hashes: content detectors judge only copies known whole.
      obs.hasContent = sent?.ok === true && obs.delivered.length === (d.count ?? obs.delivered.length);
    }
  } else if (send?.side === 'unknown' && send.payload !== undefined) {
    // A record of the message that does not say which end it is: the message it records is what arrived.
    obs.delivered = [agentMessage(send, payloadOf(sent))];
    obs.hasContent = sent !== undefined;
    facts.deliveredCount = 1;
  }
  // Otherwise (a client span with no delivery facts and no receive span in the trace) delivery is unknown.
  if (Object.keys(facts).length > 0) obs.facts = facts;
  return obs;
}
