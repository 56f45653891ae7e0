/**
 * Message-fault diagnosis: what went wrong with the inter-agent messages of one trace, from whichever ends were
 * recorded. The rule diagnoser calls it for every message span and lets it review what the detectors said.
 *
 * A message is one send and what reached the receiver. Its spans are joined into one logical message: the sender's
 * span (a handoff span, an A2A / MCP client span) and the receive spans that link to it (a channel delivery, an A2A
 * or MCP server), or, with no sender span, the receive spans of one message id. Then, per message, in causal order:
 *
 *  - delivery: nothing delivered (non_delivery; timeout when the sender waited for a deadline or says so), more than
 *    one copy (duplicate), a copy that is another message — another id, task, session, an older version, sent
 *    before the message it replaced or before the run began, the payload of an earlier message (stale);
 *  - timing: a delivery that took far longer than the trace's other deliveries (delay, against the trace's own
 *    baseline: a median of its other messages, never a fixed budget);
 *  - content, against the best reference there is: the copy sent (both ends, content or content-free shapes), else
 *    the receiver's declared contract, else what the value itself says (garbled, broken), else the run's other
 *    messages (keys every message of this edge has; an identity the run established) — see message-change.ts;
 *  - recovery: a failed or lost message the sender itself resent and got through, or a failed tool call the agent
 *    went on from, is reported as recovered, not as the run's fault.
 *
 * Every span is read, and the ends of each message joined, by the layer (src/traces/view/message.ts: `readMessage`,
 * `joinMessages`), never attribute by attribute here.
 */
import type { FaultType } from '../taxonomy';
import { str, type SpanRecord, type TraceRecord } from '../traces/model';
import {
  edgeKey,
  guardEvents,
  looksLikeTimeout,
  viewTrace,
  type Content,
  type MessageExchange,
  type MessageFacts,
  type MessageStep,
  type PayloadFacts,
  type TraceView,
} from '../traces/view';
import { ATTR_FL_MESSAGE_SIDE, ATTR_FL_TASK_ID } from '../../instrumentation/semconv';
import { stringFormat } from '../../instrumentation/agents/shape';
import {
  classifyChanges,
  compareContent,
  compareShapes,
  compareToSiblings,
  contractVerdict,
  intrinsicVerdict,
  type ChangeVerdict,
} from './message-change';
import { median as statsMedian } from '../stats';
import { durationMs, type Signal, type SpanVerdict } from './signals';
import {
  DELAY_MIN_EXTRA_MS as CALL_DELAY_EXTRA_MS,
  CALL_DELAY_EXTREME_MS,
  CLOCK_SLACK_MS,
  MESSAGE_DELAY_EXTRA_MS as DELAY_EXTRA_MS,
  MESSAGE_DELAY_RATIO as DELAY_RATIO,
  REMOTE_MESSAGE_DELAY_EXTRA_MS as REMOTE_DELAY_EXTRA_MS,
  WAITED_MS,
} from './thresholds';

/** Fault types a detector may read into a message's content or delivery; the message's two ends can overrule them. */
const CONTENT_TYPES: ReadonlySet<FaultType> = new Set([
  'partial',
  'schema',
  'semantic',
  'corrupt',
  'truncate',
  'empty',
]);
const DELIVERY_TYPES: ReadonlySet<FaultType> = new Set(['stale', 'duplicate', 'non_delivery', 'delay', 'timeout']);

/** One copy that reached the receiver, from a receive span or from the sender span's delivered facts. */
interface Copy {
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
interface Logical extends MessageExchange {
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

export interface MessageAnalysis {
  /** The signals of one message span: the message's, on the span that stands for it; none on its other ends. */
  signalsFor(span: SpanRecord): Signal[];
  /**
   * Once every span's signals are in: move detector readings of a message's other ends onto the span that stands
   * for it, drop the readings its two ends contradict, and set aside what the run recovered from.
   */
  review(verdicts: SpanVerdict[]): void;
}

const sig = (faultType: Exclude<FaultType, 'none'>, confidence: number, evidence: string): Signal => ({
  faultType,
  confidence,
  evidence,
  source: 'metadata',
});
const short = (s: string): string => (s.length > 40 ? `${s.slice(0, 40)}…` : s);

/** The median, or undefined with nothing to take it of. */
const median = (xs: readonly number[]): number | undefined => (xs.length === 0 ? undefined : statsMedian(xs));

/** Transport failures that mean the request never got through (connection reset, refused, closed). */
const LOST =
  /ECONNRESET|ECONNREFUSED|EPIPE|ENOTFOUND|EHOSTUNREACH|UND_ERR_SOCKET|UND_ERR_CLOSED|socket hang up|other side closed|fetch failed/i;

function copiesOf(l: Logical, from: 'receiver' | 'wire' = 'receiver'): Copy[] {
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
function changedPayload(payloads: readonly string[], sent: Content | undefined): Content | undefined {
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
function copyContent(l: Logical, c: Copy, index: number): Content | undefined {
  if (c.payload?.content) return c.payload.content;
  const text = l.send?.delivered?.payloads?.[index];
  if (text === undefined || text === '') return undefined;
  try {
    return { ok: true, value: JSON.parse(text) as unknown, text };
  } catch {
    return { ok: false, text };
  }
}

function copyShape(l: Logical, c: Copy): readonly string[] | undefined {
  return c.payload?.shape ?? (c.view === undefined ? l.send?.delivered?.shape : undefined);
}

/** The most common value among `values` when it has a strict majority of at least two; else undefined. */
function consensus(values: readonly (string | undefined)[]): string | undefined {
  const counts = new Map<string, number>();
  let n = 0;
  for (const v of values) {
    if (v === undefined || v === '') continue;
    n++;
    counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  let best: string | undefined;
  let bestN = 0;
  for (const [v, c] of counts) if (c > bestN) [best, bestN] = [v, c];
  return bestN >= 2 && bestN * 2 > n ? best : undefined;
}

/** When the message reached the receiver, against when it was sent: the transit this trace can measure. */
function transitOf(l: Logical, traceStart: number): { ms: number; exact: boolean } | undefined {
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

/**
 * The values of a payload that name something particular, by their last key, every value each key has (list
 * elements and JSON text inside the payload included): identifiers (a SKU, an order id, a UUID — no spaces, letters
 * and digits). Amounts, measurements, scores and dates are attributes, not identities: an agent that decides its own
 * value of a key of the same name (its own confidence, a new date, a figure it computed) contradicts nothing.
 */
function identities(
  v: unknown,
  out: Map<string, Set<string>> = new Map(),
  depth = 0,
  key = '',
): Map<string, Set<string>> {
  if (depth > 10) return out;
  const put = (value: string): void => {
    const set = out.get(key) ?? new Set<string>();
    set.add(value);
    out.set(key, set);
  };
  if (typeof v === 'string') {
    const f = stringFormat(v);
    if (f === 'json') {
      try {
        identities(JSON.parse(v) as unknown, out, depth + 1, key);
      } catch {
        /* not JSON after all */
      }
    } else if (
      key !== '' &&
      (f === 'ident' || f === 'uuid' || f === 'hex') &&
      /\d/.test(v) &&
      /\D/.test(v) &&
      v.length >= 3
    ) {
      put(v);
    }
  } else if (Array.isArray(v)) {
    for (const x of v.slice(0, 64)) identities(x, out, depth + 1, key);
  } else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) identities(x, out, depth + 1, k);
  }
  return out;
}

/** A JSON-text field that mirrors fields of its object and disagrees with them (a message at odds with itself). */
function mirrorConflict(v: unknown, depth = 0): string | undefined {
  if (depth > 8 || v === null || typeof v !== 'object') return undefined;
  if (Array.isArray(v)) {
    for (const x of v.slice(0, 32)) {
      const c = mirrorConflict(x, depth + 1);
      if (c) return c;
    }
    return undefined;
  }
  const o = v as Record<string, unknown>;
  for (const [k, x] of Object.entries(o)) {
    if (typeof x === 'string' && stringFormat(x) === 'json') {
      let inner: unknown;
      try {
        inner = JSON.parse(x);
      } catch {
        continue;
      }
      if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) continue;
      const shared = Object.keys(inner).filter((ik) => ik !== k && ik in o);
      if (shared.length < 2) continue;
      const differ = shared.filter(
        (ik) => JSON.stringify((inner as Record<string, unknown>)[ik]) !== JSON.stringify(o[ik]),
      );
      if (differ.length > 0) return `${k} disagrees with ${differ.slice(0, 3).join(', ')}`;
    }
    const c = mirrorConflict(x, depth + 1);
    if (c) return c;
  }
  return undefined;
}

/**
 * A message's working record, every field present from the start (undefined until known): one object shape for every
 * message, where spreading the exchange and adding fields later gave each its own (measured: a tenth of the rules'
 * time). Nothing enumerates these records' keys.
 */
function logical(x: MessageExchange): Logical {
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

export function analyseMessages(view: TraceView): MessageAnalysis {
  const messages: Logical[] = view.exchanges.map(logical);
  const byStep = new Map<string, Logical>();
  const ofSpan = new Map<string, Logical>();
  for (const l of messages) {
    byStep.set(l.step.spanId, l);
    if (l.send) ofSpan.set(l.send.span.spanId, l);
    for (const r of l.receives) ofSpan.set(r.span.spanId, l);
  }
  if (messages.some((l) => !envelopeOnly(l))) diagnose(view.trace, messages);
  // Messages that are envelopes only get no signal from `diagnose`, and its one record of them is that no copy with
  // their id arrived.
  else for (const l of messages) l.sameIdCopies = 0;
  return {
    signalsFor(span) {
      return byStep.get(span.spanId)?.signals ?? [];
    },
    review(verdicts) {
      review(verdicts, ofSpan);
    },
  };
}

/**
 * A message its spans record only the envelope of: a sender's span (not the channel's, whose receiving end records
 * every delivery) with no payload or delivery facts, no reply, no failure and no task binding, and no receive span —
 * what another producer's A2A or MCP client span looks like. Every check of `diagnose` compares facts of a message
 * (its copies, payloads, failure, binding) or, through its trace baselines, those of the trace's other messages; in a
 * trace whose messages are all envelopes there is nothing to compare, so none gets a signal, and the checks (most of
 * the rules' time on such traces) are skipped.
 */
function envelopeOnly(l: Logical): boolean {
  const s = l.send;
  return (
    s !== undefined &&
    s.side === 'send' &&
    l.system !== 'channel' &&
    l.receives.length === 0 &&
    l.replayOf === undefined &&
    s.payload === undefined &&
    s.delivered === undefined &&
    s.reply === undefined &&
    s.failure === undefined &&
    s.taskId === undefined
  );
}

function diagnose(trace: TraceRecord, messages: Logical[]): void {
  let traceStart = Infinity; // Math.min without spreading every span start (NaN wins, as there)
  for (const s of trace.spans) if (s.start < traceStart || Number.isNaN(s.start)) traceStart = s.start;
  const scopeTasks = trace.spans
    .map((s) => str(s.attributes, ATTR_FL_TASK_ID))
    .filter((t): t is string => t !== undefined);
  const sentTasks = messages.map((l) => l.send?.taskId);
  const taskConsensus =
    consensus([
      ...sentTasks,
      ...(sentTasks.some((t) => t !== undefined) ? [] : messages.map((l) => l.receives[0]?.taskId)),
    ]) ?? (new Set(scopeTasks).size === 1 ? scopeTasks[0] : undefined);
  const sessionConsensus = consensus(messages.map((l) => l.send?.sessionId ?? l.receives[0]?.sessionId));
  /** The task a message should be bound to: what the run's other messages agree on, else the run's task scope. */
  const taskReference = (l: Logical): string | undefined => {
    const others = messages.filter((o) => o !== l).map((o) => o.send?.taskId);
    if (others.some((t) => t !== undefined)) return consensus(others);
    return new Set(scopeTasks).size === 1 ? scopeTasks[0] : undefined;
  };
  const withReceives = messages.filter((l) => l.receives.length > 0);
  /**
   * Whether the receiving end of `l` records its deliveries, so that no receive span means nothing arrived: the
   * channel records every delivery wherever it emits sender spans that say which end they are; a server does when
   * another message to it (the same agent, the same MCP session) has its receive span in this trace.
   */
  const receiverSeen = (l: Logical): boolean =>
    l.receives.length > 0 ||
    (l.system === 'channel' && l.send?.span.attributes[ATTR_FL_MESSAGE_SIDE] === 'send') ||
    withReceives.some(
      (o) =>
        o.system === l.system &&
        (l.system === 'channel' ||
          (o.target !== undefined && o.target === l.target) ||
          (l.system === 'mcp' && o.send?.sessionId !== undefined && o.send.sessionId === l.send?.sessionId)),
    );

  // Timing baselines: the other messages' transits, exact (send → receive) and round trips apart.
  const transits = new Map<Logical, { ms: number; exact: boolean }>();
  for (const l of messages) {
    const t = transitOf(l, traceStart);
    if (t) transits.set(l, t);
  }
  const sendDurations = messages.filter((l) => l.send).map((l) => durationMs(l.send!.span));
  const sentHashes: string[] = [];
  const versionsSeen = new Map<string, number>();
  /** Per identity key, the values the run's earlier messages (and the replies to its calls) carried, and in how
   * many of them each value appeared. */
  const pins = new Map<string, Map<string, number>>();
  /** Per agent, the identities it received (messages addressed to it, replies to its calls). */
  const received = new Map<string, Map<string, Set<string>>>();
  const pin = (ids: Map<string, Set<string>>, receiver: string | undefined): void => {
    for (const [k, vs] of ids) {
      const m = pins.get(k) ?? new Map<string, number>();
      for (const v of vs) m.set(v, (m.get(v) ?? 0) + 1);
      pins.set(k, m);
      if (receiver === undefined || receiver === '') continue;
      const r = received.get(receiver) ?? new Map<string, Set<string>>();
      r.set(k, new Set([...(r.get(k) ?? []), ...vs]));
      received.set(receiver, r);
    }
  };

  for (const l of messages) {
    const out = l.signals;
    const send = l.send;
    const copies = copiesOf(l).filter((c) => !c.readback);
    // What crossed the wire, by the sender span's own account (before a receiver-side guard replaced a copy).
    const crossed = l.receives.length > 0 && send?.delivered ? copiesOf(l, 'wire').filter((c) => !c.readback) : [];
    const envelopes = [...copies, ...crossed];
    const knownCount = send?.delivered?.count ?? (receiverSeen(l) ? l.receives.length : undefined);
    // A receiver-side guard that withheld a changed copy: the message arrived (changed), it was not lost.
    const withheld =
      (send?.guards ?? []).some((g) => g.action === 'drop' || g.action === 'reject') &&
      (send?.delivered?.changes?.length ?? 0) > 0;
    if (knownCount !== undefined) l.delivered = knownCount;
    const failure = send?.failure;
    const otherDurations = sendDurations.filter((d) => d !== (send ? durationMs(send.span) : -1));
    const medOther = median(otherDurations) ?? 0;
    const waited =
      send !== undefined &&
      durationMs(send.span) >= medOther + WAITED_MS &&
      durationMs(send.span) >= 3 * Math.max(medOther, 1);

    // 1. Delivery.
    const nothingRecorded =
      send !== undefined &&
      send.side === 'unknown' &&
      send.payload === undefined &&
      messages.some((o) => o !== l && (o.send?.payload ?? o.receives[0]?.payload) !== undefined);
    if (
      ((knownCount === 0 && !withheld) || nothingRecorded) &&
      copies.length === 0 &&
      failure?.http !== undefined &&
      failure.http >= 400 &&
      !failure.timeout
    ) {
      // Answered with an error status, and the receiver never got it: the service in front of it refused the call.
      out.push(sig('error', 0.9, `HTTP ${failure.http}; the receiver never got the message`));
    } else if (((knownCount === 0 && !withheld) || nothingRecorded) && copies.length === 0) {
      // The sender gave up (its deadline), or waited far longer than its other calls took: a timeout.
      const timeout = failure?.timeout === true || waited || send?.aborted === true;
      out.push(
        sig(
          timeout ? 'timeout' : 'non_delivery',
          nothingRecorded ? 0.8 : 0.95,
          timeout
            ? `message not delivered before its deadline (the sender waited ${Math.round(durationMs(send!.span))} ms)`
            : 'message not delivered (0 copies reached the receiver)',
        ),
      );
    } else if (failure && send) {
      const lost = LOST.test(`${failure.errorType ?? ''} ${failure.message ?? ''}`);
      if (failure.timeout && l.receives.length > 0) {
        out.push(
          sig(
            'delay',
            0.9,
            `the message reached the receiver only after the sender gave up (${failure.errorType ?? failure.message ?? 'deadline'})`,
          ),
        );
      } else if (failure.timeout)
        out.push(sig('timeout', 0.95, `the call timed out (${failure.errorType ?? failure.message ?? 'deadline'})`));
      else if (lost && l.receives.length === 0)
        out.push(
          sig(
            'non_delivery',
            0.9,
            `the request never got through (${failure.errorType ?? failure.message ?? 'connection lost'})`,
          ),
        );
      else
        out.push(
          sig(
            'error',
            l.system === 'channel' ? 0.95 : 0.9,
            [
              failure.http !== undefined ? `HTTP ${failure.http}` : '',
              failure.errorType ? `error.type=${failure.errorType}` : '',
              failure.rpc ? `rpc status ${failure.rpc}` : '',
            ]
              .filter((p) => p !== '')
              .join(', ') || 'the call failed',
          ),
        );
    }

    // 2. Copies: a duplicate is the same message twice; a copy that is another message is a stale delivery. (An MCP
    // call carries no message id on the wire: the client's id is its own, not comparable with the server's.)
    // A plain record is its own copy: it has no other end to compare with.
    const selfCopy = send !== undefined && copies.length === 1 && copies[0]!.view === send;
    const sentId = l.system === 'mcp' || selfCopy ? undefined : send?.id;
    const foreign = sentId !== undefined ? envelopes.filter((c) => c.id !== undefined && c.id !== sentId) : [];
    const sameId =
      sentId !== undefined ? copies.filter((c) => c.id === undefined || c.id === sentId).length : copies.length;
    l.sameIdCopies = sameId;
    if (sameId > 1) out.push(sig('duplicate', 0.92, `message delivered ${sameId} times`));
    if (l.replayOf)
      out.push(
        sig(
          'stale',
          0.85,
          `message ${short(l.receives[0]?.id ?? '')} delivered again after newer messages on this edge`,
        ),
      );
    if (foreign.length > 0)
      out.push(
        sig('stale', 0.9, `delivered another message (${short(foreign[0]!.id!)}) in place of or besides the one sent`),
      );
    if (send && !selfCopy) {
      const reference = taskReference(l);
      if (send.taskId !== undefined && reference !== undefined && send.taskId !== reference) {
        out.push(sig('stale', 0.85, `message bound to task ${short(send.taskId)}, not the run's ${short(reference)}`));
      }
      const expectTask = send.taskId ?? taskConsensus;
      const otherTask = envelopes.find(
        (c) => c.taskId !== undefined && expectTask !== undefined && c.taskId !== expectTask,
      );
      if (otherTask)
        out.push(
          sig(
            'stale',
            0.93,
            `delivered a message bound to task ${short(otherTask.taskId!)}, not ${short(expectTask!)}`,
          ),
        );
      const otherSession = envelopes.find(
        (c) => c.sessionId !== undefined && send.sessionId !== undefined && c.sessionId !== send.sessionId,
      );
      if (otherSession)
        out.push(
          sig(
            'stale',
            0.93,
            `delivered a message of session ${short(otherSession.sessionId!)}, not ${short(send.sessionId!)}`,
          ),
        );
      const behind = envelopes.find(
        (c) => c.version !== undefined && send.version !== undefined && c.version < send.version,
      );
      if (behind)
        out.push(sig('stale', 0.93, `delivered version ${behind.version}, behind the version ${send.version} sent`));
      const older = envelopes.find(
        (c) => c.sentAt !== undefined && send.sentAt !== undefined && c.sentAt < send.sentAt,
      );
      if (older)
        out.push(
          sig(
            'stale',
            0.9,
            `delivered a message sent ${Math.round(send.sentAt! - older.sentAt!)} ms before the one it arrived for`,
          ),
        );
      const replayed = envelopes.find(
        (c) =>
          c.hash !== undefined &&
          send.payload?.hash !== undefined &&
          c.hash !== send.payload.hash &&
          sentHashes.includes(c.hash),
      );
      if (replayed) out.push(sig('stale', 0.93, 'delivered the payload of an earlier message of this trace'));
    } else {
      // Receiver side only: the run's own consensus is the reference.
      const c = copies[0];
      if (c?.taskId !== undefined && taskConsensus !== undefined && c.taskId !== taskConsensus)
        out.push(
          sig(
            'stale',
            0.85,
            `received a message bound to task ${short(c.taskId)}, while the run's messages are bound to ${short(taskConsensus)}`,
          ),
        );
      if (c?.sessionId !== undefined && sessionConsensus !== undefined && c.sessionId !== sessionConsensus)
        out.push(
          sig(
            'stale',
            0.85,
            `received a message of session ${short(c.sessionId)}, while the run's messages are of ${short(sessionConsensus)}`,
          ),
        );
    }
    const early = copies.find((c) => c.sentAt !== undefined && c.sentAt < traceStart - CLOCK_SLACK_MS);
    if (early)
      out.push(
        sig('stale', 0.9, `received a message sent ${Math.round(traceStart - early.sentAt!)} ms before this run began`),
      );
    const edge = `${l.system}|${l.source ?? ''}|${l.target ?? ''}|${copies[0]?.sessionId ?? send?.sessionId ?? ''}`;
    const lastVersion = versionsSeen.get(edge);
    const copyVersion = copies.find((c) => c.version !== undefined)?.version;
    if (!send?.version && copyVersion !== undefined && lastVersion !== undefined && copyVersion < lastVersion) {
      out.push(sig('stale', 0.8, `received version ${copyVersion} after version ${lastVersion} on this edge`));
    }
    if (copyVersion !== undefined) versionsSeen.set(edge, Math.max(lastVersion ?? copyVersion, copyVersion));
    const staleEnvelope = out.some((s) => s.faultType === 'stale');

    // 3. Content. What the receiver got (its receive spans), else the sender span's own account of what crossed the
    // wire — recorded only when a copy differed, and kept even when a receiver-side guard then replaced the copy.
    const d = send?.delivered;
    let changed = selfCopy
      ? -1
      : copies.findIndex(
          (c) => c.hash !== undefined && send?.payload?.hash !== undefined && c.hash !== send.payload.hash,
        );
    const wire = changed < 0 && d !== undefined && ((d.changes?.length ?? 0) > 0 || d.shape !== undefined);
    if (wire) changed = 0;
    if (!staleEnvelope && send?.payload !== undefined && changed >= 0) {
      const c: Copy | undefined = wire ? undefined : copies[changed];
      const sentContent = send.payload.content;
      const gotContent = wire
        ? d!.payloads !== undefined
          ? changedPayload(d!.payloads, sentContent)
          : undefined
        : copyContent(l, c!, changed);
      const gotShape = wire ? d!.shape : copyShape(l, c!);
      let v: ChangeVerdict | undefined;
      if (sentContent?.ok && gotContent?.ok) v = compareContent(sentContent.value, gotContent.value);
      else if (sentContent?.ok && gotContent && !gotContent.ok)
        v = { faultType: 'corrupt', confidence: 0.9, evidence: 'the delivered payload is no longer JSON' };
      // Shapes summarise a list by its first element; the change list covers every element: it decides when the
      // shapes show no difference.
      const changes =
        send.delivered?.changes && send.delivered.changes.length > 0
          ? classifyChanges(send.delivered.changes)
          : undefined;
      if (v === undefined && send.payload.shape && gotShape) {
        const byShape = compareShapes(send.payload.shape, gotShape);
        v =
          byShape.faultType === 'semantic' && changes !== undefined && changes.faultType !== 'semantic'
            ? changes
            : byShape;
      }
      v ??= changes;
      v ??= { faultType: 'corrupt', confidence: 0.6, evidence: 'delivered payload differs from the payload sent' };
      out.push(sig(v.faultType, v.confidence, v.evidence));
      if (v.confidence >= 0.7) l.changeType = v.faultType;
      l.renamed = v.faultType === 'schema' && /renamed/.test(v.evidence);
    } else if (
      !staleEnvelope &&
      copies.length > 0 &&
      (selfCopy || !(send?.payload?.hash !== undefined && copies.every((c) => c.hash === send.payload!.hash)))
    ) {
      // No copy sent to compare with: the receiver's contract, the values themselves, the run's other messages.
      const c = copies[0]!;
      const content = copyContent(l, c, 0);
      const shape = copyShape(l, c);
      const contract = c.view?.contract;
      if (contract && !contract.valid) {
        const v = contractVerdict(contract.issues);
        if (v) out.push(sig(v.faultType, v.confidence, v.evidence));
      }
      const intrinsic = intrinsicVerdict(content, shape);
      if (intrinsic) out.push(sig(intrinsic.faultType, intrinsic.confidence, intrinsic.evidence));
      if (shape) {
        const siblings = messages
          .filter((o) => o !== l && edgeKey(o) === edgeKey(l))
          .map((o) => copiesOf(o)[0]?.payload?.shape ?? o.send?.payload?.shape)
          .filter((s): s is string[] => s !== undefined);
        const v = siblings.length > 0 ? compareToSiblings(shape, siblings) : undefined;
        if (v) out.push(sig(v.faultType, v.confidence, v.evidence));
      }
      if (content?.ok) {
        // The identity pin of a receiver contract, from the run itself: an identity the run gave one value — two or
        // more earlier messages agree on it (so it is not a per-message id), or its sender received it (in a
        // message to it, or a reply) — now another value of the same format, never seen in this run, in a message
        // whose other identities agree with the run (it is about the same task, not another entity the run moved
        // on to).
        const ids = [...identities(content.value)].flatMap(([k, vs]) => [...vs].map((v) => [k, v] as const));
        const anchored = ids.some(([k, v]) => pins.get(k)?.has(v) === true);
        const senderGot = l.source !== undefined ? received.get(l.source) : undefined;
        const seenAnywhere = (v: string): boolean => [...pins.values()].some((m) => m.has(v));
        // A message that still carries the agreed value beside others (a list of options, one of them the one the
        // run went on with) has replaced nothing.
        const carriesAgreed = (key: string): boolean =>
          ids.some(([k, v]) => k === key && pins.get(key)?.has(v) === true);
        const swapped = ids.find(([k, v]) => {
          const seen = pins.get(k);
          if (!seen || seen.size !== 1 || seen.has(v) || seenAnywhere(v) || carriesAgreed(k)) return false;
          const [only, n] = [...seen][0]!;
          return (n >= 2 || senderGot?.get(k)?.has(only) === true) && stringFormat(only) === stringFormat(v);
        });
        if (swapped && anchored)
          out.push(
            sig(
              'semantic',
              0.7,
              `${swapped[0]} differs from the value the run's earlier messages agree on (${short([...pins.get(swapped[0])!.keys()][0]!)}), while its other identities agree`,
            ),
          );
        const mirror = mirrorConflict(content.value);
        if (mirror) out.push(sig('semantic', 0.75, `the message contradicts itself: ${mirror}`));
      }
      // What the receiver's end establishes about the content names the change; a detector's other reading of the
      // same content (a cut JSON text read as a truncated answer) is overruled, as with both ends.
      const named = out
        .filter((s) => CONTENT_TYPES.has(s.faultType) && s.confidence >= 0.7)
        .sort((a, b) => b.confidence - a.confidence)[0];
      if (named) l.changeType = named.faultType;
    } else if (
      !selfCopy &&
      send?.payload?.hash !== undefined &&
      copies.length === 1 &&
      copies[0]!.hash === send.payload.hash &&
      foreign.length === 0 &&
      !staleEnvelope
    ) {
      l.intact = true;
    }
    if (send?.payload?.hash !== undefined) sentHashes.push(send.payload.hash);
    // What this run established: the identities of its messages (the observed copy, else the one sent) and of the
    // replies to its calls — unless the message itself looks faulty.
    if (!out.some((s) => s.confidence >= 0.55)) {
      const observed = copyContent(l, copies[0] ?? { readback: false }, 0) ?? send?.payload?.content;
      if (observed?.ok) pin(identities(observed.value), l.target);
      if (send?.reply?.ok) pin(identities(send.reply.value), l.source);
    }

    // 4. Timing: a delivered message that took far longer than the trace's other deliveries.
    const t = transits.get(l);
    if (t && copies.length > 0 && !staleEnvelope) {
      const others = [...transits]
        .filter(([o, x]) => o !== l && x.exact === t.exact && (o.delivered ?? 1) > 0)
        .map(([, x]) => x.ms);
      const med = median(others);
      if (med !== undefined) {
        const extra = l.system === 'channel' ? DELAY_EXTRA_MS : REMOTE_DELAY_EXTRA_MS;
        if (t.exact && t.ms >= med + extra && t.ms >= DELAY_RATIO * Math.max(med, 2)) {
          out.push(
            sig(
              'delay',
              0.85,
              `delivered after ${Math.round(t.ms)} ms; the trace's other messages took ${Math.round(med)} ms`,
            ),
          );
        } else if (!t.exact && t.ms >= med + CALL_DELAY_EXTRA_MS && t.ms >= 3 * Math.max(med, 1)) {
          const extreme = t.ms >= med + CALL_DELAY_EXTREME_MS && t.ms >= 4 * Math.max(med, 1);
          out.push(
            sig(
              'delay',
              extreme ? 0.7 : 0.45,
              `the call took ${Math.round(t.ms)} ms; the trace's other calls took ${Math.round(med)} ms`,
            ),
          );
        }
      }
    }
    if (t && l.intact && out.some((s) => s.faultType === 'delay' && s.confidence >= 0.55)) l.intact = false;
    // What reached the receiver explains the sender's failure (a server that rejected a changed request): the failure
    // is its consequence, not the fault.
    if (out.some((s) => s.faultType !== 'error' && s.confidence >= 0.7) && copies.length > 0) {
      for (const s of out) if (s.faultType === 'error') s.confidence = Math.min(s.confidence, 0.5);
    }
  }
  recoveries(messages);
}

/**
 * A fault the run recovered from on its own: a failed or lost message the sender sent again and got through (same
 * id or payload, same edge), or a failed tool / agent call after which the caller carried on successfully. Its
 * signals are kept only as a weak note.
 */
function recoveries(messages: Logical[]): void {
  for (let i = 0; i < messages.length; i++) {
    const l = messages[i]!;
    const send = l.send;
    if (!send) continue;
    const top = l.signals.reduce<Signal | undefined>(
      (b, s) => (b === undefined || s.confidence > b.confidence ? s : b),
      undefined,
    );
    if (!top || top.confidence < 0.55 || !['error', 'timeout', 'non_delivery'].includes(top.faultType)) continue;
    // A silent drop is invisible to the sender: only a failure it saw can be recovered from on its own.
    if (top.faultType === 'non_delivery' && !send.failure) continue;
    const ok = (o: Logical): boolean =>
      o.send !== undefined &&
      o.send.failure === undefined &&
      (o.delivered ?? 1) > 0 &&
      !o.signals.some((s) => s.confidence >= 0.55);
    const applicationError =
      send.failure?.errorType === 'tool_error' || (send.failure?.rpc !== undefined && send.failure.http === undefined);
    const later = messages.slice(i + 1);
    const retry = later.find(
      (o) =>
        ok(o) &&
        edgeKey(o) === edgeKey(l) &&
        ((o.send!.id !== undefined && o.send!.id === send.id) ||
          (o.send!.payload?.hash !== undefined && o.send!.payload.hash === send.payload?.hash)),
    );
    const carriedOn = applicationError
      ? later.find((o) => ok(o) && o.source !== undefined && o.source === l.source)
      : undefined;
    const by = retry ?? carriedOn;
    if (!by) continue;
    l.recovered = retry
      ? `recovered: the same message was sent again and got through`
      : `recovered: the caller went on after the failed call`;
    l.signals.splice(0, l.signals.length, { ...top, confidence: 0.3, evidence: `${l.recovered} (${top.evidence})` });
  }
}

/**
 * Receive spans that failed (the receiver's own handler threw) for a message its sender then sent again and got
 * through: the failure, and every failed span inside that receiver's run, is one the run recovered from.
 */
function recoveredReceives(messages: Logical[]): {
  spans: Map<string, string>;
  windows: { from: number; to: number; why: string }[];
} {
  const spans = new Map<string, string>();
  const windows: { from: number; to: number; why: string }[] = [];
  for (let i = 0; i < messages.length; i++) {
    const l = messages[i]!;
    const id = l.send?.id ?? l.receives[0]?.id;
    if (id === undefined || l.system === 'mcp') continue;
    const again = messages
      .slice(i + 1)
      .find(
        (o) =>
          (o.send?.id ?? o.receives[0]?.id) === id &&
          o.target === l.target &&
          o.delivered !== 0 &&
          !o.receives.some((r) => r.span.status.code === 'ERROR') &&
          !o.signals.some((x) => x.confidence >= 0.55),
      );
    if (!again) continue;
    const why = `recovered: the receiver failed on message ${short(id)} and its sender sent it again`;
    for (const r of l.receives) if (r.span.status.code === 'ERROR') spans.set(r.span.spanId, why);
    // Without receive spans the receiver's failure shows only as failed spans between the send and the resend.
    if (l.send && again.send) windows.push({ from: l.send.start, to: again.send.start, why });
  }
  return { spans, windows };
}

function review(verdicts: SpanVerdict[], ofSpan: Map<string, Logical>): void {
  const bySpan = new Map<string, SpanVerdict>();
  for (const v of verdicts) bySpan.set(v.span.spanId, v);
  const recovered = recoveredReceives([...new Set(ofSpan.values())].sort((a, b) => a.start - b.start));
  const note = (v: SpanVerdict, why: string): void => {
    const top = v.signals.reduce<Signal | undefined>(
      (b, x) => (b === undefined || x.confidence > b.confidence ? x : b),
      undefined,
    );
    v.signals = top
      ? [{ ...top, confidence: Math.min(top.confidence, 0.3), evidence: `${why} (${top.evidence})` }]
      : [];
  };
  if (recovered.spans.size > 0 || recovered.windows.length > 0) {
    for (const v of verdicts) {
      if (v.signals.length === 0) continue;
      // The failed receive span and every span under it; without receive spans, a failed span (not a message)
      // between the send and the resend.
      let cur: SpanRecord | undefined = v.span;
      let why: string | undefined;
      for (let depth = 0; cur && depth < 64 && why === undefined; depth++) {
        why = recovered.spans.get(cur.spanId);
        cur = cur.parentSpanId ? bySpan.get(cur.parentSpanId)?.span : undefined;
      }
      if (why === undefined && v.stepKind === null) {
        why = recovered.windows.find(
          (w) =>
            v.span.start >= w.from &&
            v.span.end <= w.to + 1 &&
            v.signals.every((x) => x.faultType === 'error' || x.faultType === 'timeout'),
        )?.why;
      }
      if (why !== undefined) note(v, why);
    }
  }
  for (const v of verdicts) {
    if (v.stepKind !== 'message') continue;
    const l = ofSpan.get(v.span.spanId);
    if (!l || l.step.spanId === v.span.spanId) continue;
    // Another end of a message: what detectors said about it counts for the message, on the span standing for it.
    const step = bySpan.get(l.step.spanId);
    if (step) step.signals.push(...v.signals.filter((s) => s.source === 'detection' || s.source === 'detector'));
    v.signals = [];
  }
  const seen = new Set<Logical>();
  for (const l of ofSpan.values()) {
    if (seen.has(l)) continue;
    seen.add(l);
    const v = bySpan.get(l.step.spanId);
    if (!v) continue;
    const fromDetectors = (s: Signal): boolean => s.source === 'detection' || s.source === 'detector';
    v.signals = v.signals.filter((s) => {
      if (!fromDetectors(s)) return true;
      if (l.recovered) return false;
      // Both ends agree (delivered once, as sent): a reading of the content or the delivery is not a message fault.
      if (l.intact && (CONTENT_TYPES.has(s.faultType) || DELIVERY_TYPES.has(s.faultType))) return false;
      // The two ends say what changed: another reading of the change is overruled.
      if (l.changeType !== undefined && CONTENT_TYPES.has(s.faultType) && s.faultType !== l.changeType) return false;
      // A detector reads non-delivery into a message span that records no delivered copies; only a count this
      // module knows to be zero says so.
      if (s.faultType === 'non_delivery' && l.delivered !== 0) return false;
      if (l.renamed && s.faultType === 'partial') return false;
      if (
        l.sameIdCopies !== undefined &&
        l.sameIdCopies <= 1 &&
        l.send?.id !== undefined &&
        s.faultType === 'duplicate'
      )
        return false;
      return true;
    });
  }
}

// ------------------------------------------------------------------------------------------------ per-step hooks

const analyses = new WeakMap<TraceView, MessageAnalysis>();

/** The analysis of a trace, computed once per reading of it (the per-step hooks below share it). */
export function messageAnalysis(view: TraceView): MessageAnalysis {
  let a = analyses.get(view);
  if (!a) {
    a = analyseMessages(view);
    analyses.set(view, a);
  }
  return a;
}

/** What a guard's action on a message span says happened. Only actions with one meaning; the others accompany
 * detection events. A fault a protection recovered from is still the fault. */
function guardSignals(span: SpanRecord): Signal[] {
  const out: Signal[] = [];
  for (const g of guardEvents(span)) {
    const why = g.reason.slice(0, 120);
    if (g.action === 'resubmit') {
      out.push({
        faultType: looksLikeTimeout(g.reason) ? 'timeout' : 'non_delivery',
        confidence: 0.9,
        evidence: `guard resubmitted: ${why}`,
        source: 'guard',
      });
    } else if (g.action === 'duplicate_suppressed' || g.action === 'receipt_replayed') {
      out.push({
        faultType: 'duplicate',
        confidence: 0.9,
        evidence: `guard suppressed a duplicate: ${why}`,
        source: 'guard',
      });
    }
  }
  return out;
}

/**
 * The signals of one message step, for the rule loop (rules.ts): the message's, on the span that stands for it (none
 * on its other ends), and what a guard did on this span.
 */
export function messageSignals(msg: MessageStep, ctx: { view: TraceView }): Signal[] {
  return [...messageAnalysis(ctx.view).signalsFor(msg.span), ...guardSignals(msg.span)];
}

/** Once every span's signals are in (see `MessageAnalysis.review`). */
export function reviewMessages(trace: TraceRecord, verdicts: SpanVerdict[]): void {
  messageAnalysis(viewTrace(trace)).review(verdicts);
}
