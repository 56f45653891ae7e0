/**
 * The one reading of a message span: whatever produced it — faultline's handoff span (the sender's end, with what
 * crossed the channel), a receive span (a channel delivery, an A2A / MCP server), an A2A / MCP client span, another
 * producer's messaging span — it becomes one `MessageView`: which end it records, the envelope, what that end saw of
 * the payload (hash, size, keys, content-free shape, the content when captured), the delivered-copy facts a sender
 * span may carry, the receiver's contract check, the links to the other end, and how the exchange ended.
 *
 * Every message rule reads this, never the attributes directly, so a new span shape means a change here only.
 */
import {
  ATTR_A2A_MESSAGE_ID,
  ATTR_A2A_METHOD_NAME,
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
} from '../../instrumentation/semconv';
import { num, str, strList, type SpanRecord } from '../traces/model';
import { errorType, guardEvents, httpStatus, looksLikeTimeout, rpcStatus, type GuardEvent } from './span-facts';

export type MessageSide = 'send' | 'receive' | 'unknown';

/** What one end saw of a payload. Every field is optional: producers record different subsets. */
export interface PayloadFacts {
  hash?: string;
  bytes?: number;
  keys?: string[];
  /** Content-free shape entries (`path=kind`, instrumentation/agents/shape.ts). */
  shape?: string[];
  /** The payload itself, when content was captured (`ok: false`: recorded but not JSON). */
  content?: { ok: boolean; value?: unknown; text: string };
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

export interface MessageView {
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
  reply?: { ok: boolean; value?: unknown; text: string };
  /** Receive spans: the receiver's contract check. */
  contract?: { valid: boolean; issues: string[] };
  copy?: number;
  /** Spans this one names as its other end: links, and the parent of a receive span. */
  peers: string[];
  /** How the exchange ended at this end, when it failed. */
  failure?: { errorType?: string; message?: string; http?: number; rpc?: string; timeout: boolean };
  /** The sender's application gave up on the call (cancelled it, typically its own deadline). */
  aborted: boolean;
  /** Depth in the span tree (root 0): orders messages begun within one clock tick (a receiver's sends are deeper). */
  depth: number;
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

function payloadFacts(span: SpanRecord): PayloadFacts | undefined {
  const a = span.attributes;
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

function deliveredFacts(span: SpanRecord): DeliveredFacts | undefined {
  const a = span.attributes;
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

function failureOf(span: SpanRecord): MessageView['failure'] {
  const et = errorType(span);
  const http = httpStatus(span);
  const failed = span.status.code === 'ERROR' || et !== undefined || (http !== undefined && http >= 400);
  if (!failed) return undefined;
  const rpc = rpcStatus(span);
  const f: NonNullable<MessageView['failure']> = {
    timeout: looksLikeTimeout(et, span.status.message, http !== undefined ? String(http) : undefined),
  };
  if (et !== undefined) f.errorType = et;
  if (span.status.message) f.message = span.status.message;
  if (http !== undefined) f.http = http;
  if (rpc !== undefined) f.rpc = rpc;
  return f;
}

const views = new WeakMap<SpanRecord, MessageView>();

/** The message view of a span (cached per span object); `byId` lets it measure the span's depth. */
export function readMessageSpan(span: SpanRecord, byId?: ReadonlyMap<string, SpanRecord>): MessageView {
  const cached = views.get(span);
  if (cached) return cached;
  const a = span.attributes;
  const side = sideOf(span);
  const aborted = a[ATTR_FL_RESPONSE_ABORTED] === true || a[ATTR_FL_RESPONSE_ABORTED] === 'true';
  const v: MessageView = { span, side, system: systemOf(span), peers: [], guards: guardEvents(span), aborted, depth: 0, start: span.start, end: span.end };
  const set = <K extends keyof MessageView>(k: K, value: MessageView[K] | undefined): void => {
    if (value !== undefined) v[k] = value;
  };
  set('id', str(a, ATTR_FL_MESSAGE_ID) ?? str(a, ATTR_A2A_MESSAGE_ID) ?? str(a, ATTR_MESSAGING_MESSAGE_ID));
  set('source', str(a, ATTR_FL_MESSAGE_SOURCE));
  set('target', str(a, ATTR_FL_MESSAGE_TARGET) ?? str(a, ATTR_MESSAGING_DESTINATION_NAME));
  set('boundary', str(a, ATTR_FL_MESSAGE_BOUNDARY));
  set('taskId', str(a, ATTR_FL_MESSAGE_TASK_ID));
  set('sessionId', str(a, ATTR_FL_MESSAGE_SESSION_ID) ?? str(a, ATTR_GEN_AI_CONVERSATION_ID) ?? str(a, ATTR_MCP_SESSION_ID) ?? str(a, 'messaging.message.conversation_id'));
  set('version', num(a, ATTR_FL_MESSAGE_VERSION));
  set('sentAt', num(a, ATTR_FL_MESSAGE_SENT_AT));
  set('payload', payloadFacts(span));
  if (side !== 'receive') {
    set('delivered', deliveredFacts(span));
    const reply = str(a, ATTR_GEN_AI_TOOL_CALL_RESULT) ?? (v.system === 'a2a' ? str(a, ATTR_GEN_AI_OUTPUT_MESSAGES) : undefined);
    if (reply !== undefined) v.reply = { ...parseJson(reply), text: reply };
  }
  const contract = str(a, ATTR_FL_MESSAGE_CONTRACT);
  if (contract === 'valid' || contract === 'invalid') v.contract = { valid: contract === 'valid', issues: strList(a, ATTR_FL_MESSAGE_CONTRACT_ISSUES) ?? [] };
  set('copy', num(a, ATTR_FL_MESSAGE_COPY));
  set('failure', failureOf(span));
  set('tool', str(a, ATTR_GEN_AI_TOOL_NAME));
  set('agent', str(a, ATTR_GEN_AI_AGENT_NAME));
  set('rpcId', str(a, ATTR_JSONRPC_REQUEST_ID));
  for (const l of span.links) if (l.traceId === span.traceId) v.peers.push(l.spanId);
  if (side === 'receive' && span.parentSpanId !== undefined) v.peers.push(span.parentSpanId);
  for (let p = span.parentSpanId; p !== undefined && byId && v.depth < 256; p = byId.get(p)?.parentSpanId) v.depth++;
  views.set(span, v);
  return v;
}
