/**
 * A message's working record for the message rules (messages.ts): the layer's joined ends of one message, what the
 * rules find out about it, and the copies of it that reached the receiver — from its receive spans, else from the
 * sender span's own account of what it delivered.
 */
import type { FaultType } from '../taxonomy';
import type { Content, MessageExchange, MessageFacts, PayloadFacts } from '../traces/view';
import { durationMs, type Signal } from './signals';
import { CLOCK_SLACK_MS } from './thresholds';

/** Fault types a detector may read into a message's content or delivery; the message's two ends can overrule them. */
export const CONTENT_TYPES: ReadonlySet<FaultType> = new Set([
  'partial',
  'schema',
  'semantic',
  'corrupt',
  'truncate',
  'empty',
]);
export const DELIVERY_TYPES: ReadonlySet<FaultType> = new Set([
  'stale',
  'duplicate',
  'non_delivery',
  'delay',
  'timeout',
]);

/** One copy that reached the receiver, from a receive span or from the sender span's delivered facts. */
export interface Copy {
  view?: MessageFacts;
  id?: string;
  taskId?: string;
  sessionId?: string;
  version?: number;
  sentAt?: number;
  hash?: string;
  payload?: PayloadFacts;
  /** A guard's readback (a fresh message it fetched), not a copy of this send. */
  readback: boolean;
}

/** A message (the layer's joined ends) and what the rules find out about it. */
export interface Logical extends MessageExchange {
  signals: Signal[];
  /** Both ends agree: delivered once, as sent. */
  intact: boolean;
  /** The content verdict from both ends, when there was one (detector readings of another type are overruled). */
  changeType?: FaultType;
  renamed: boolean;
  sameIdCopies?: number;
  delivered?: number;
  recovered?: string;
}

/** An identifier or text cut to 40 characters for evidence. */
export const short = (s: string): string => (s.length > 40 ? `${s.slice(0, 40)}…` : s);

/**
 * A message's working record, every field present from the start (undefined until known): one object shape for every
 * message, where spreading the exchange and adding fields later gave each its own (measured: a tenth of the rules'
 * time). Nothing enumerates these records' keys.
 */
export function logical(x: MessageExchange): Logical {
  return {
    send: x.send,
    receives: x.receives,
    step: x.step,
    start: x.start,
    system: x.system,
    source: x.source,
    target: x.target,
    depth: x.depth,
    replayOf: x.replayOf,
    signals: [],
    intact: false,
    changeType: undefined,
    renamed: false,
    sameIdCopies: undefined,
    delivered: undefined,
    recovered: undefined,
  };
}

export function copiesOf(l: Logical, from: 'receiver' | 'wire' = 'receiver'): Copy[] {
  const readbacks = l.send ? l.send.guards.filter((g) => g.action === 'reacquire').length : 0;
  if (l.receives.length > 0 && from === 'receiver') {
    const copies: Copy[] = l.receives.map((r) => ({
      view: r,
      ...(r.id !== undefined ? { id: r.id } : {}),
      ...(r.taskId !== undefined ? { taskId: r.taskId } : {}),
      ...(r.sessionId !== undefined ? { sessionId: r.sessionId } : {}),
      ...(r.version !== undefined ? { version: r.version } : {}),
      ...(r.sentAt !== undefined ? { sentAt: r.sentAt } : {}),
      ...(r.payload?.hash !== undefined ? { hash: r.payload.hash } : {}),
      ...(r.payload !== undefined ? { payload: r.payload } : {}),
      readback: false,
    }));
    for (let i = copies.length - readbacks; i < copies.length; i++) if (i >= 0) copies[i]!.readback = true;
    return copies;
  }
  const d = l.send?.delivered;
  if (!d) {
    // A span that does not say which end it records, with the message's facts and no delivered-copy facts (a plain
    // receiver-side record): the message it records is the copy to judge.
    const v = l.send;
    if (v === undefined || v.side !== 'unknown' || v.payload === undefined) return [];
    const c: Copy = { view: v, readback: false };
    if (v.id !== undefined) c.id = v.id;
    if (v.taskId !== undefined) c.taskId = v.taskId;
    if (v.sessionId !== undefined) c.sessionId = v.sessionId;
    if (v.version !== undefined) c.version = v.version;
    if (v.sentAt !== undefined) c.sentAt = v.sentAt;
    if (v.payload.hash !== undefined) c.hash = v.payload.hash;
    c.payload = v.payload;
    return [c];
  }
  // The envelope lists describe what crossed the channel (before a receiver-side guard replaced or withheld a copy);
  // count and hashes what the receiver got. Without lists the two are the same copies.
  const lists = [d.ids, d.taskIds, d.sessionIds, d.versions].filter((x) => x !== undefined);
  let n = lists.length > 0 ? Math.max(...lists.map((x) => x.length)) : (d.count ?? d.hashes?.length ?? 0);
  if (n === 0 && (d.changes?.length ?? 0) > 0) n = 1; // a changed copy crossed and a guard withheld it
  const hashesAligned = lists.length === 0 || d.hashes?.length === n;
  const copies: Copy[] = [];
  for (let i = 0; i < n; i++) {
    const c: Copy = { readback: i >= n - readbacks };
    const id = d.ids?.[i];
    if (id !== undefined && id !== '') c.id = id;
    else if (l.send?.id !== undefined && d.ids === undefined) c.id = l.send.id;
    const task = d.taskIds?.[i];
    if (task !== undefined && task !== '') c.taskId = task;
    else if (d.taskIds === undefined && l.send?.taskId !== undefined) c.taskId = l.send.taskId;
    const session = d.sessionIds?.[i];
    if (session !== undefined && session !== '') c.sessionId = session;
    else if (d.sessionIds === undefined && l.send?.sessionId !== undefined) c.sessionId = l.send.sessionId;
    const version = d.versions?.[i];
    if (version !== undefined) c.version = version;
    else if (d.versions === undefined && l.send?.version !== undefined) c.version = l.send.version;
    const hash = hashesAligned ? d.hashes?.[i] : undefined;
    if (hash !== undefined && hash !== '') c.hash = hash;
    copies.push(c);
  }
  return copies;
}

/** The first captured delivered payload that is not the one sent. */
export function changedPayload(payloads: readonly string[], sent: Content | undefined): Content | undefined {
  for (const text of payloads) {
    if (text === '' || text === sent?.text) continue;
    try {
      return { ok: true, value: JSON.parse(text) as unknown, text };
    } catch {
      return { ok: false, text };
    }
  }
  return undefined;
}

/** The content of a copy when captured: a receive span's payload, or the sender span's delivered payload. */
export function copyContent(l: Logical, c: Copy, index: number): Content | undefined {
  if (c.payload?.content) return c.payload.content;
  const text = l.send?.delivered?.payloads?.[index];
  if (text === undefined || text === '') return undefined;
  try {
    return { ok: true, value: JSON.parse(text) as unknown, text };
  } catch {
    return { ok: false, text };
  }
}

export function copyShape(l: Logical, c: Copy): readonly string[] | undefined {
  return c.payload?.shape ?? (c.view === undefined ? l.send?.delivered?.shape : undefined);
}

/** When the message reached the receiver, against when it was sent: the transit this trace can measure. */
export function transitOf(l: Logical, traceStart: number): { ms: number; exact: boolean } | undefined {
  const r = l.receives[0];
  if (l.send && r) return { ms: Math.max(0, r.start - l.send.start), exact: true };
  // A handoff span (or a plain record of one) lasts as long as the delivery itself.
  if (l.send?.delivered || (l.send?.side === 'unknown' && l.system === 'channel'))
    return { ms: durationMs(l.send.span), exact: true };
  if (r?.sentAt !== undefined && r.sentAt >= traceStart - CLOCK_SLACK_MS)
    return { ms: Math.max(0, r.start - r.sentAt), exact: true };
  if (l.send) return { ms: durationMs(l.send.span), exact: false };
  return undefined;
}
