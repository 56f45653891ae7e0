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
 * The message record and its copies are in message-record.ts, the run's baselines and memory in message-run.ts, the
 * review of the verdicts and the recoveries in message-review.ts.
 *
 * Every span is read, and the ends of each message joined, by the layer (src/traces/view/message.ts: `readMessage`,
 * `joinMessages`), never attribute by attribute here.
 */
import type { FaultType } from '../taxonomy';
import type { SpanRecord, TraceRecord } from '../traces/model';
import {
  edgeKey,
  guardEvents,
  looksLikeTimeout,
  viewTrace,
  type MessageFacts,
  type MessageStep,
  type TraceView,
} from '../traces/view';
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
import {
  changedPayload,
  CONTENT_TYPES,
  copiesOf,
  copyContent,
  copyShape,
  logical,
  short,
  type Copy,
  type Logical,
} from './message-record';
import { recoveries, review } from './message-review';
import { identities, RunBaselines, RunMemory } from './message-run';
import { median as statsMedian } from '../stats';
import { ObjectMemo } from '../memo';
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
/** The median, or undefined with nothing to take it of. */
const median = (xs: readonly number[]): number | undefined => (xs.length === 0 ? undefined : statsMedian(xs));

/** Transport failures that mean the request never got through (connection reset, refused, closed). */
const LOST =
  /ECONNRESET|ECONNREFUSED|EPIPE|ENOTFOUND|EHOSTUNREACH|UND_ERR_SOCKET|UND_ERR_CLOSED|socket hang up|other side closed|fetch failed/i;

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

/** One message as the checks read it: its signals, its sender's end, the copies that reached the receiver. */
interface Case {
  l: Logical;
  out: Signal[];
  send: MessageFacts | undefined;
  /** What reached the receiver (guard readbacks left out). */
  copies: Copy[];
  /** The copies, and what crossed the wire by the sender span's own account (before a receiver-side guard). */
  envelopes: Copy[];
  /** A plain record is its own copy: it has no other end to compare with. */
  selfCopy: boolean;
}

/** The four checks of each message, in causal order; then what the run recovered from. */
function diagnose(trace: TraceRecord, messages: Logical[]): void {
  const run = new RunBaselines(trace, messages);
  const memory = new RunMemory();
  for (const l of messages) {
    const send = l.send;
    const copies = copiesOf(l).filter((c) => !c.readback);
    const crossed = l.receives.length > 0 && send?.delivered ? copiesOf(l, 'wire').filter((c) => !c.readback) : [];
    const selfCopy = send !== undefined && copies.length === 1 && copies[0]!.view === send;
    const c: Case = { l, out: l.signals, send, copies, envelopes: [...copies, ...crossed], selfCopy };
    checkDelivery(c, run, messages);
    const { foreign, staleEnvelope } = checkEnvelopes(c, run, memory);
    if (!staleEnvelope) checkContent(c, foreign, messages, memory);
    if (send?.payload?.hash !== undefined) memory.sentHashes.push(send.payload.hash);
    remember(c, memory);
    if (!staleEnvelope) checkTiming(c, run);
    // What reached the receiver explains the sender's failure (a server that rejected a changed request): the failure
    // is its consequence, not the fault.
    if (c.out.some((s) => s.faultType !== 'error' && s.confidence >= 0.7) && copies.length > 0) {
      for (const s of c.out) if (s.faultType === 'error') s.confidence = Math.min(s.confidence, 0.5);
    }
  }
  recoveries(messages);
}

/** 1. Delivery: nothing delivered (non_delivery, timeout, an error status that refused it), or the call failed. */
function checkDelivery({ l, out, send, copies }: Case, run: RunBaselines, messages: readonly Logical[]): void {
  const knownCount = send?.delivered?.count ?? (run.receiverSeen(l) ? l.receives.length : undefined);
  // A receiver-side guard that withheld a changed copy: the message arrived (changed), it was not lost.
  const withheld =
    (send?.guards ?? []).some((g) => g.action === 'drop' || g.action === 'reject') &&
    (send?.delivered?.changes?.length ?? 0) > 0;
  if (knownCount !== undefined) l.delivered = knownCount;
  const failure = send?.failure;
  const otherDurations = run.sendDurations.filter((d) => d !== (send ? durationMs(send.span) : -1));
  const medOther = median(otherDurations) ?? 0;
  const waited =
    send !== undefined &&
    durationMs(send.span) >= medOther + WAITED_MS &&
    durationMs(send.span) >= 3 * Math.max(medOther, 1);
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
}

/**
 * 2. Copies: a duplicate is the same message twice; a copy that is another message is a stale delivery. (An MCP call
 * carries no message id on the wire: the client's id is its own, not comparable with the server's.) Returns the
 * copies with another id, and whether the envelope already shows a stale delivery.
 */
function checkEnvelopes(
  { l, out, send, copies, envelopes, selfCopy }: Case,
  run: RunBaselines,
  memory: RunMemory,
): { foreign: Copy[]; staleEnvelope: boolean } {
  const sentId = l.system === 'mcp' || selfCopy ? undefined : send?.id;
  const foreign = sentId !== undefined ? envelopes.filter((c) => c.id !== undefined && c.id !== sentId) : [];
  const sameId =
    sentId !== undefined ? copies.filter((c) => c.id === undefined || c.id === sentId).length : copies.length;
  l.sameIdCopies = sameId;
  if (sameId > 1) out.push(sig('duplicate', 0.92, `message delivered ${sameId} times`));
  if (l.replayOf)
    out.push(
      sig('stale', 0.85, `message ${short(l.receives[0]?.id ?? '')} delivered again after newer messages on this edge`),
    );
  if (foreign.length > 0)
    out.push(
      sig('stale', 0.9, `delivered another message (${short(foreign[0]!.id!)}) in place of or besides the one sent`),
    );
  if (send && !selfCopy) {
    const reference = run.taskReference(l);
    if (send.taskId !== undefined && reference !== undefined && send.taskId !== reference) {
      out.push(sig('stale', 0.85, `message bound to task ${short(send.taskId)}, not the run's ${short(reference)}`));
    }
    const expectTask = send.taskId ?? run.taskConsensus;
    const otherTask = envelopes.find(
      (c) => c.taskId !== undefined && expectTask !== undefined && c.taskId !== expectTask,
    );
    if (otherTask)
      out.push(
        sig('stale', 0.93, `delivered a message bound to task ${short(otherTask.taskId!)}, not ${short(expectTask!)}`),
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
    const older = envelopes.find((c) => c.sentAt !== undefined && send.sentAt !== undefined && c.sentAt < send.sentAt);
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
        memory.sentHashes.includes(c.hash),
    );
    if (replayed) out.push(sig('stale', 0.93, 'delivered the payload of an earlier message of this trace'));
  } else {
    // Receiver side only: the run's own consensus is the reference.
    const c = copies[0];
    if (c?.taskId !== undefined && run.taskConsensus !== undefined && c.taskId !== run.taskConsensus)
      out.push(
        sig(
          'stale',
          0.85,
          `received a message bound to task ${short(c.taskId)}, while the run's messages are bound to ${short(run.taskConsensus)}`,
        ),
      );
    if (c?.sessionId !== undefined && run.sessionConsensus !== undefined && c.sessionId !== run.sessionConsensus)
      out.push(
        sig(
          'stale',
          0.85,
          `received a message of session ${short(c.sessionId)}, while the run's messages are of ${short(run.sessionConsensus)}`,
        ),
      );
  }
  const early = copies.find((c) => c.sentAt !== undefined && c.sentAt < run.traceStart - CLOCK_SLACK_MS);
  if (early)
    out.push(
      sig(
        'stale',
        0.9,
        `received a message sent ${Math.round(run.traceStart - early.sentAt!)} ms before this run began`,
      ),
    );
  const edge = `${l.system}|${l.source ?? ''}|${l.target ?? ''}|${copies[0]?.sessionId ?? send?.sessionId ?? ''}`;
  const lastVersion = memory.versionsSeen.get(edge);
  const copyVersion = copies.find((c) => c.version !== undefined)?.version;
  if (!send?.version && copyVersion !== undefined && lastVersion !== undefined && copyVersion < lastVersion) {
    out.push(sig('stale', 0.8, `received version ${copyVersion} after version ${lastVersion} on this edge`));
  }
  if (copyVersion !== undefined) memory.versionsSeen.set(edge, Math.max(lastVersion ?? copyVersion, copyVersion));
  return { foreign, staleEnvelope: out.some((s) => s.faultType === 'stale') };
}

/**
 * 3. Content (of a message whose envelope is its own). What the receiver got (its receive spans), else the sender
 * span's own account of what crossed the wire — recorded only when a copy differed, and kept even when a
 * receiver-side guard then replaced the copy — against the copy sent; with none, against the receiver's contract, the
 * values themselves, the run's other messages. A copy as sent leaves the message intact.
 */
function checkContent(c: Case, foreign: readonly Copy[], messages: readonly Logical[], memory: RunMemory): void {
  const { l, send, copies, selfCopy } = c;
  const d = send?.delivered;
  let changed = selfCopy
    ? -1
    : copies.findIndex(
        (x) => x.hash !== undefined && send?.payload?.hash !== undefined && x.hash !== send.payload.hash,
      );
  const wire = changed < 0 && d !== undefined && ((d.changes?.length ?? 0) > 0 || d.shape !== undefined);
  if (wire) changed = 0;
  if (send?.payload !== undefined && changed >= 0) {
    compareWithSent(c, wire ? undefined : copies[changed], changed);
  } else if (
    copies.length > 0 &&
    (selfCopy || !(send?.payload?.hash !== undefined && copies.every((x) => x.hash === send.payload!.hash)))
  ) {
    judgeUnsent(c, messages, memory);
  } else if (
    !selfCopy &&
    send?.payload?.hash !== undefined &&
    copies.length === 1 &&
    copies[0]!.hash === send.payload.hash &&
    foreign.length === 0
  ) {
    l.intact = true;
  }
}

/** A copy that differs from the one sent (`copy` undefined: the sender span's account of what crossed the wire). */
function compareWithSent({ l, out, send }: Case, copy: Copy | undefined, index: number): void {
  const d = send!.delivered;
  const payload = send!.payload!;
  const sentContent = payload.content;
  const gotContent =
    copy === undefined
      ? d!.payloads !== undefined
        ? changedPayload(d!.payloads, sentContent)
        : undefined
      : copyContent(l, copy, index);
  const gotShape = copy === undefined ? d!.shape : copyShape(l, copy);
  let v: ChangeVerdict | undefined;
  if (sentContent?.ok && gotContent?.ok) v = compareContent(sentContent.value, gotContent.value);
  else if (sentContent?.ok && gotContent && !gotContent.ok)
    v = { faultType: 'corrupt', confidence: 0.9, evidence: 'the delivered payload is no longer JSON' };
  // Shapes summarise a list by its first element; the change list covers every element: it decides when the shapes
  // show no difference.
  const changes = d?.changes && d.changes.length > 0 ? classifyChanges(d.changes) : undefined;
  if (v === undefined && payload.shape && gotShape) {
    const byShape = compareShapes(payload.shape, gotShape);
    v =
      byShape.faultType === 'semantic' && changes !== undefined && changes.faultType !== 'semantic' ? changes : byShape;
  }
  v ??= changes;
  v ??= { faultType: 'corrupt', confidence: 0.6, evidence: 'delivered payload differs from the payload sent' };
  out.push(sig(v.faultType, v.confidence, v.evidence));
  if (v.confidence >= 0.7) l.changeType = v.faultType;
  l.renamed = v.faultType === 'schema' && /renamed/.test(v.evidence);
}

/** No copy sent to compare with: the receiver's contract, the values themselves, the run's other messages. */
function judgeUnsent({ l, out, copies }: Case, messages: readonly Logical[], memory: RunMemory): void {
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
    const swap = swappedIdentity(content.value, l, memory);
    if (swap) out.push(sig('semantic', 0.7, swap));
    const mirror = mirrorConflict(content.value);
    if (mirror) out.push(sig('semantic', 0.75, `the message contradicts itself: ${mirror}`));
  }
  // What the receiver's end establishes about the content names the change; a detector's other reading of the same
  // content (a cut JSON text read as a truncated answer) is overruled, as with both ends.
  const named = out
    .filter((s) => CONTENT_TYPES.has(s.faultType) && s.confidence >= 0.7)
    .sort((a, b) => b.confidence - a.confidence)[0];
  if (named) l.changeType = named.faultType;
}

/**
 * The identity pin of a receiver contract, from the run itself: an identity the run gave one value — two or more
 * earlier messages agree on it (so it is not a per-message id), or its sender received it (in a message to it, or a
 * reply) — now another value of the same format, never seen in this run, in a message whose other identities agree
 * with the run (it is about the same task, not another entity the run moved on to). The evidence, or undefined.
 */
function swappedIdentity(value: unknown, l: Logical, memory: RunMemory): string | undefined {
  const { pins } = memory;
  const ids = [...identities(value)].flatMap(([k, vs]) => [...vs].map((v) => [k, v] as const));
  const anchored = ids.some(([k, v]) => pins.get(k)?.has(v) === true);
  if (!anchored) return undefined;
  const senderGot = l.source !== undefined ? memory.received.get(l.source) : undefined;
  // A message that still carries the agreed value beside others (a list of options, one of them the one the run went
  // on with) has replaced nothing.
  const carriesAgreed = (key: string): boolean => ids.some(([k, v]) => k === key && pins.get(key)?.has(v) === true);
  const swapped = ids.find(([k, v]) => {
    const seen = pins.get(k);
    if (!seen || seen.size !== 1 || seen.has(v) || memory.seenAnywhere(v) || carriesAgreed(k)) return false;
    const [only, n] = [...seen][0]!;
    return (n >= 2 || senderGot?.get(k)?.has(only) === true) && stringFormat(only) === stringFormat(v);
  });
  return swapped
    ? `${swapped[0]} differs from the value the run's earlier messages agree on (${short([...pins.get(swapped[0])!.keys()][0]!)}), while its other identities agree`
    : undefined;
}

/**
 * What this run established: the identities of its messages (the observed copy, else the one sent) and of the
 * replies to its calls — unless the message itself looks faulty.
 */
function remember({ l, out, send, copies }: Case, memory: RunMemory): void {
  if (out.some((s) => s.confidence >= 0.55)) return;
  const observed = copyContent(l, copies[0] ?? { readback: false }, 0) ?? send?.payload?.content;
  if (observed?.ok) memory.pin(identities(observed.value), l.target);
  if (send?.reply?.ok) memory.pin(identities(send.reply.value), l.source);
}

/** 4. Timing: a delivered message that took far longer than the trace's other deliveries. */
function checkTiming({ l, out, copies }: Case, run: RunBaselines): void {
  const t = run.transits.get(l);
  if (!t) return;
  if (copies.length > 0) {
    const others = [...run.transits]
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
  if (l.intact && out.some((s) => s.faultType === 'delay' && s.confidence >= 0.55)) l.intact = false;
}

// ------------------------------------------------------------------------------------------------ per-step hooks

const analyses = new ObjectMemo<TraceView, MessageAnalysis>('faultline.messageAnalysis');

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
