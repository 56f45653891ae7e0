/**
 * Agent messages as span attributes: the content-free facts recorded on every message span (id, route, boundary,
 * task/session, version, top-level keys, payload size and hash), plus the payload itself only when content capture
 * is on. Shared by the in-process channel and the A2A / MCP modules, so a message looks the same wherever it went.
 */
import { randomUUID } from 'node:crypto';
import type { Attributes } from '@opentelemetry/api';
import {
  ATTR_FL_MESSAGE_BOUNDARY,
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
} from '../semconv';
import type { AgentMessage } from '../types';
import { payloadShape } from './shape';
import { sha256Hex16 } from '../../src/hash';

export function newMessageId(): string {
  return randomUUID();
}

/**
 * JSON with object keys sorted at every level, so equal payloads hash equally whatever order their keys were built
 * in. Undefined for values JSON cannot represent (a cycle, a BigInt): such payloads get no hash instead of an error.
 */
export function canonicalJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(sortKeys(value, new Set()));
  } catch {
    return undefined;
  }
}

function sortKeys(value: unknown, seen: Set<object>): unknown {
  if (value === null || typeof value !== 'object') return value;
  // toJSON first (Dates, Buffers), as JSON.stringify would.
  const json = (value as { toJSON?: () => unknown }).toJSON;
  if (typeof json === 'function') return sortKeys(json.call(value), seen);
  if (seen.has(value)) throw new TypeError('cycle');
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((v) => sortKeys(v, seen));
  } else {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key], seen);
    out = sorted;
  }
  seen.delete(value);
  return out;
}

/** sha256 hex of the canonical JSON, first 16 characters: enough to tell payloads apart, short on a span. */
export function payloadHash(payload: unknown): string | undefined {
  const json = canonicalJson(payload);
  return json === undefined ? undefined : sha256Hex16(json);
}

/** Top-level keys of an object payload, sorted; empty for anything else. */
export function payloadKeys(payload: unknown): string[] {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return [];
  return Object.keys(payload).sort();
}

/**
 * The faultline.message.* attributes of a message as one end saw it (`side`: the sender's span, or a receiver's):
 * envelope, keys, size, hash and content-free shape. The payload JSON is included only when `captureContent`.
 */
export function messageAttributes(
  message: AgentMessage,
  captureContent: boolean,
  side: 'send' | 'receive' = 'send',
): Attributes {
  const attrs: Attributes = { [ATTR_FL_MESSAGE_SIDE]: side };
  setString(attrs, ATTR_FL_MESSAGE_ID, message.id);
  setString(attrs, ATTR_FL_MESSAGE_SOURCE, message.source);
  setString(attrs, ATTR_FL_MESSAGE_TARGET, message.target);
  setString(attrs, ATTR_FL_MESSAGE_BOUNDARY, message.boundary);
  setString(attrs, ATTR_FL_MESSAGE_TASK_ID, message.taskId);
  setString(attrs, ATTR_FL_MESSAGE_SESSION_ID, message.sessionId);
  if (typeof message.version === 'number' && Number.isFinite(message.version)) {
    attrs[ATTR_FL_MESSAGE_VERSION] = message.version;
  }
  if (typeof message.sentAt === 'number' && Number.isFinite(message.sentAt))
    attrs[ATTR_FL_MESSAGE_SENT_AT] = message.sentAt;
  attrs[ATTR_FL_MESSAGE_KEYS] = payloadKeys(message.payload);
  attrs[ATTR_FL_MESSAGE_SHAPE] = payloadShape(message.payload);
  const json = canonicalJson(message.payload);
  if (json !== undefined) {
    attrs[ATTR_FL_MESSAGE_PAYLOAD_BYTES] = Buffer.byteLength(json);
    attrs[ATTR_FL_MESSAGE_PAYLOAD_HASH] = sha256Hex16(json);
    if (captureContent) attrs[ATTR_FL_MESSAGE_PAYLOAD] = json;
  }
  return attrs;
}

/**
 * What the receiver got, as attributes of the handoff span: the count and payload hashes of every copy the receiver
 * got (`delivered`), and — only when a copy that crossed the channel (`wire`, default `delivered`: it differs when a
 * receiver-side guard replaced or withheld a copy) is not the message as sent (another payload, id, task, session or
 * version) — the envelope facts of each copy on the wire, the top-level keys and structural changes of the first
 * one whose payload differs, and with `captureContent` their payloads. A clean handoff costs one hash, as before.
 */
export function deliveredAttributes(
  original: AgentMessage,
  delivered: readonly AgentMessage[],
  captureContent: boolean,
  wire: readonly AgentMessage[] = delivered,
): Attributes {
  const sentHash = payloadHash(original.payload);
  const hashOf = (m: AgentMessage): string =>
    (m.payload === original.payload ? sentHash : payloadHash(m.payload)) ?? '';
  const attrs: Attributes = {
    [ATTR_FL_MESSAGE_DELIVERED_COUNT]: delivered.length,
    [ATTR_FL_MESSAGE_DELIVERED_HASHES]: delivered.map(hashOf),
  };
  const hashes = wire === delivered ? (attrs[ATTR_FL_MESSAGE_DELIVERED_HASHES] as string[]) : wire.map(hashOf);
  const sameId = wire.every((m) => m.id === original.id);
  const sameTask = wire.every((m) => m.taskId === original.taskId);
  const sameSession = wire.every((m) => m.sessionId === original.sessionId);
  const sameVersion = wire.every((m) => m.version === original.version);
  const changedAt = hashes.findIndex((h) => h !== (sentHash ?? ''));
  if (sameId && sameTask && sameSession && sameVersion && changedAt < 0) return attrs;
  if (!sameId) attrs[ATTR_FL_MESSAGE_DELIVERED_IDS] = wire.map((m) => (typeof m.id === 'string' ? m.id : ''));
  if (!sameTask) attrs[ATTR_FL_MESSAGE_DELIVERED_TASK_IDS] = wire.map((m) => m.taskId ?? '');
  if (!sameSession) attrs[ATTR_FL_MESSAGE_DELIVERED_SESSION_IDS] = wire.map((m) => m.sessionId ?? '');
  if (!sameVersion)
    attrs[ATTR_FL_MESSAGE_DELIVERED_VERSIONS] = wire.map((m) =>
      typeof m.version === 'number' ? String(m.version) : '',
    );
  if (changedAt >= 0) {
    const changed = wire[changedAt]!.payload;
    attrs[ATTR_FL_MESSAGE_DELIVERED_KEYS] = payloadKeys(changed);
    attrs[ATTR_FL_MESSAGE_DELIVERED_CHANGES] = payloadChanges(original.payload, changed);
    attrs[ATTR_FL_MESSAGE_DELIVERED_SHAPE] = payloadShape(changed);
  }
  if (captureContent) attrs[ATTR_FL_MESSAGE_DELIVERED_PAYLOADS] = wire.map((m) => canonicalJson(m.payload) ?? '');
  return attrs;
}

/** At most this many change entries per message: enough to classify a change, bounded on the span. */
const MAX_CHANGES = 32;
const MAX_DEPTH = 8;

/**
 * The structural difference between two JSON values, content-free: key paths only, never values. Entries are
 * `removed:<path>` (a key the sent object had), `added:<path>`, `type:<path>` (the JSON kind changed), `length:<path>`
 * (an array got shorter or longer) and `value:<path>` (a primitive changed). Paths join keys with dots; array
 * elements are `[]` (index-free, so a changed list of rows is one entry); the whole payload is `$`. Sorted, at most
 * 32 entries. Empty when the values are equal.
 */
export function payloadChanges(sent: unknown, got: unknown): string[] {
  const out = new Set<string>();
  diff(sent, got, '', 0, out);
  return [...out].sort();
}

function jsonKind(v: unknown): string {
  return v === null || v === undefined ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

function diff(a: unknown, b: unknown, path: string, depth: number, out: Set<string>): void {
  if (out.size >= MAX_CHANGES || a === b) return;
  const at = path === '' ? '$' : path;
  const ka = jsonKind(a);
  if (ka !== jsonKind(b)) {
    out.add(`type:${at}`);
    return;
  }
  if (ka === 'array') {
    const xa = a as unknown[];
    const xb = b as unknown[];
    if (xa.length !== xb.length) out.add(`length:${at}`);
    if (depth >= MAX_DEPTH) return;
    for (let i = 0; i < Math.min(xa.length, xb.length) && out.size < MAX_CHANGES; i++)
      diff(xa[i], xb[i], `${path}[]`, depth + 1, out);
    return;
  }
  if (ka === 'object') {
    const oa = a as Record<string, unknown>;
    const ob = b as Record<string, unknown>;
    const key = (k: string): string => (path === '' ? k : `${path}.${k}`);
    for (const k of Object.keys(oa)) if (!(k in ob) && oa[k] !== undefined) out.add(`removed:${key(k)}`);
    for (const k of Object.keys(ob)) if (!(k in oa) && ob[k] !== undefined) out.add(`added:${key(k)}`);
    if (depth >= MAX_DEPTH) {
      if (canonicalJson(a) !== canonicalJson(b)) out.add(`value:${at}`);
      return;
    }
    for (const k of Object.keys(oa)) if (k in ob && out.size < MAX_CHANGES) diff(oa[k], ob[k], key(k), depth + 1, out);
    return;
  }
  if (a !== b && !(Number.isNaN(a) && Number.isNaN(b))) out.add(`value:${at}`);
}

/** Set a string attribute only when there is something to say (an empty source is "unknown", not a value). */
export function setString(attrs: Attributes, key: string, value: string | undefined): void {
  if (typeof value === 'string' && value !== '') attrs[key] = value;
}

/**
 * A request header's value, trimmed; undefined when absent or blank. `name` is lower case; the lookup is
 * case-insensitive (the interceptor may hand headers over in the application's own spelling).
 */
export function header(headers: Record<string, string>, name: string): string | undefined {
  let value: string | undefined = headers[name];
  if (value === undefined) {
    const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : headers[key];
  }
  const trimmed = typeof value === 'string' ? value.trim() : undefined;
  return trimmed === '' ? undefined : trimmed;
}
