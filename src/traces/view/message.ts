/**
 * Message spans in the one reading of a trace: which spans carry an inter-agent message (faultline's channel
 * handoffs, A2A client calls, MCP tool calls), and what each says about the message and its delivery.
 *
 * This file is the `messages` helper's (message-fault diagnosis, receiver-side spans): the layer (index.ts) calls
 * `isMessageSpan` and `readMessage`, the detectors' observation builder calls `messageObservation`; everything a
 * message span says is read here and nowhere else.
 */
import {
  ATTR_A2A_METHOD_NAME,
  ATTR_FL_MESSAGE_BOUNDARY,
  ATTR_FL_MESSAGE_DELIVERED_CHANGES,
  ATTR_FL_MESSAGE_DELIVERED_COUNT,
  ATTR_FL_MESSAGE_DELIVERED_HASHES,
  ATTR_FL_MESSAGE_DELIVERED_IDS,
  ATTR_FL_MESSAGE_DELIVERED_PAYLOADS,
  ATTR_FL_MESSAGE_DELIVERED_SESSION_IDS,
  ATTR_FL_MESSAGE_DELIVERED_TASK_IDS,
  ATTR_FL_MESSAGE_DELIVERED_VERSIONS,
  ATTR_FL_MESSAGE_ID,
  ATTR_FL_MESSAGE_KEYS,
  ATTR_FL_MESSAGE_PAYLOAD,
  ATTR_FL_MESSAGE_PAYLOAD_BYTES,
  ATTR_FL_MESSAGE_PAYLOAD_HASH,
  ATTR_FL_MESSAGE_SESSION_ID,
  ATTR_FL_MESSAGE_SOURCE,
  ATTR_FL_MESSAGE_TARGET,
  ATTR_FL_MESSAGE_TASK_ID,
  ATTR_FL_MESSAGE_VERSION,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_MCP_METHOD_NAME,
} from '../../../instrumentation/semconv';
import { payloadChanges } from '../../../instrumentation/agents/message';
import type { AgentMessage } from '../../../instrumentation/types';
import type { MessageObservation } from '../../../detectors/types';
import type { Attributes, SpanRecord } from '../model';
import { num, str } from './llm';

/**
 * A message span: an in-process handoff through faultline's channel, an A2A client call, or an MCP tool call.
 * These are the spans inter-agent message faults land on.
 */
export function isMessageSpan(span: SpanRecord): boolean {
  const a = span.attributes;
  if (a[ATTR_FL_MESSAGE_BOUNDARY] !== undefined || a[ATTR_FL_MESSAGE_ID] !== undefined) return true;
  if (span.kind === 'CLIENT' && (a[ATTR_A2A_METHOD_NAME] !== undefined || a[ATTR_MCP_METHOD_NAME] !== undefined)) return true;
  return false;
}

function strList(a: Attributes, key: string): string[] | undefined {
  const v = a[key];
  if (Array.isArray(v)) return v.map(String);
  if (typeof v === 'string') {
    if (v.startsWith('[')) {
      try {
        const parsed: unknown = JSON.parse(v);
        if (Array.isArray(parsed)) return parsed.map(String);
      } catch {
        /* fall through */
      }
    }
    return [v];
  }
  return undefined;
}

/** What a message span says about the message and what the receiver got. */
export interface MessageFacts {
  source?: string;
  target?: string;
  boundary?: string;
  taskId?: string;
  /** The payload as sent, when content was captured (JSON text). */
  payload?: string;
  payloadHash?: string;
  /** Copies the receiver got, and their hashes. */
  deliveredCount?: number;
  deliveredHashes?: string[];
  /** The message id as sent, and per delivered copy (only when some copy carries another id). */
  sentId?: string;
  ids?: string[];
  sentSession?: string;
  sessionIds?: string[];
  sentVersion?: number;
  versions?: (number | undefined)[];
  /** Per delivered copy (only when some copy is bound to another task than the message as sent). */
  taskIds?: string[];
  /** Structural changes of the first copy whose payload differs (`op:path`), recorded or computed from content. */
  changes?: string[];
}

function parseJson(text: string | undefined): { ok: boolean; value?: unknown } {
  if (text === undefined || text === '') return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/**
 * The facts of a message span. The content-free `delivered_changes` when recorded; else, when content was captured
 * (`payload` and `delivered_payloads`), the same changes computed from the content.
 */
export function readMessage(span: SpanRecord): MessageFacts {
  const a = span.attributes;
  const facts: MessageFacts = {};
  const set = <K extends keyof MessageFacts>(k: K, v: MessageFacts[K] | undefined): void => {
    if (v !== undefined) facts[k] = v;
  };
  set('source', str(a, ATTR_FL_MESSAGE_SOURCE));
  set('target', str(a, ATTR_FL_MESSAGE_TARGET));
  set('boundary', str(a, ATTR_FL_MESSAGE_BOUNDARY));
  set('taskId', str(a, ATTR_FL_MESSAGE_TASK_ID));
  set('payload', str(a, ATTR_FL_MESSAGE_PAYLOAD));
  set('payloadHash', str(a, ATTR_FL_MESSAGE_PAYLOAD_HASH));
  set('deliveredCount', num(a, ATTR_FL_MESSAGE_DELIVERED_COUNT));
  set('deliveredHashes', strList(a, ATTR_FL_MESSAGE_DELIVERED_HASHES));
  set('sentId', str(a, ATTR_FL_MESSAGE_ID));
  set('ids', strList(a, ATTR_FL_MESSAGE_DELIVERED_IDS));
  set('sentSession', str(a, ATTR_FL_MESSAGE_SESSION_ID));
  set('sessionIds', strList(a, ATTR_FL_MESSAGE_DELIVERED_SESSION_IDS));
  set('taskIds', strList(a, ATTR_FL_MESSAGE_DELIVERED_TASK_IDS));
  set('sentVersion', num(a, ATTR_FL_MESSAGE_VERSION));
  const versions = strList(a, ATTR_FL_MESSAGE_DELIVERED_VERSIONS);
  if (versions) facts.versions = versions.map((v) => (v === '' || !Number.isFinite(Number(v)) ? undefined : Number(v)));
  const changes = strList(a, ATTR_FL_MESSAGE_DELIVERED_CHANGES);
  if (changes) {
    facts.changes = changes;
  } else {
    const sent = parseJson(facts.payload);
    const got = strList(a, ATTR_FL_MESSAGE_DELIVERED_PAYLOADS);
    if (sent.ok && got) {
      for (const text of got) {
        const d = parseJson(text);
        if (!d.ok) continue;
        const c = payloadChanges(sent.value, d.value);
        if (c.length > 0) {
          facts.changes = c;
          break;
        }
      }
    }
  }
  return facts;
}

/** The detectors' observation of a message span. The delivered copies are known only by their hashes unless the
 * payload was captured; copies whose hash matches the payload's are the payload. */
export function messageObservation(span: SpanRecord, facts: MessageFacts = readMessage(span)): MessageObservation {
  const a = span.attributes;
  let payload: unknown;
  let hasContent = false;
  if (facts.payload !== undefined) {
    try {
      payload = JSON.parse(facts.payload) as unknown;
      hasContent = true;
    } catch {
      payload = facts.payload;
    }
  }
  const message: AgentMessage = {
    id: facts.sentId ?? str(a, 'a2a.message.id') ?? span.spanId,
    source: facts.source ?? '',
    target: facts.target ?? str(a, 'gen_ai.agent.name') ?? str(a, 'gen_ai.tool.name') ?? '',
    payload,
  };
  if (facts.boundary !== undefined) message.boundary = facts.boundary;
  if (facts.taskId !== undefined) message.taskId = facts.taskId;
  const session = facts.sentSession ?? str(a, ATTR_GEN_AI_CONVERSATION_ID);
  if (session !== undefined) message.sessionId = session;
  if (facts.sentVersion !== undefined) message.version = facts.sentVersion;

  const delivered: AgentMessage[] = [];
  if (hasContent && facts.deliveredHashes) for (const h of facts.deliveredHashes) if (h === facts.payloadHash) delivered.push(message);
  const obsFacts: NonNullable<MessageObservation['facts']> = {};
  const keys = strList(a, ATTR_FL_MESSAGE_KEYS);
  const bytes = num(a, ATTR_FL_MESSAGE_PAYLOAD_BYTES);
  if (keys !== undefined) obsFacts.keys = keys;
  if (facts.payloadHash !== undefined) obsFacts.payloadHash = facts.payloadHash;
  if (bytes !== undefined) obsFacts.payloadBytes = bytes;
  if (facts.deliveredCount !== undefined) obsFacts.deliveredCount = facts.deliveredCount;
  if (facts.deliveredHashes !== undefined) obsFacts.deliveredHashes = facts.deliveredHashes;
  // Offline the original is only known when its content was captured; compare by hash otherwise.
  const obs: MessageObservation = {
    kind: 'message',
    spanId: span.spanId,
    delivered,
    hasContent: hasContent && delivered.length === (facts.deliveredCount ?? delivered.length),
    facts: obsFacts,
    latencyMs: Math.max(0, span.end - span.start),
  };
  if (hasContent) obs.original = message;
  return obs;
}
