/**
 * Message-fault rules: the signals of one inter-agent message step (non-delivery, duplicates, stale deliveries,
 * changes in transit), and the detector readings its own facts contradict. The rule diagnoser (rules.ts) calls
 * `messageSignals(step, ctx)` for every message step and `reviewMessages(trace, verdicts)` once every span's signals
 * are in; the facts come from the layer (src/traces/view/message.ts).
 *
 * This module is the `messages` helper's (message-fault diagnosis).
 */
import type { TraceRecord } from '../traces/model';
import type { MessageStep, TraceView } from '../traces/view';
import type { SpanVerdict } from './rules';
import { looksLikeTimeout } from '../traces/view';
import { durationMs, failureSignal, guardEvents, type Signal } from './signals';

export interface MessageContext {
  view: TraceView;
  /** The task the trace runs under (faultline.task.id of the nearest ancestor), when known. */
  taskId: string | undefined;
  /** Median duration of the trace's other message steps. */
  medianOthersMs: number | undefined;
  /** Payload hashes of the messages sent before this one (a later delivery of one of them is a replay). */
  earlierHashes: ReadonlySet<string>;
}

export function messageSignals(msg: MessageStep, ctx: MessageContext): Signal[] {
  const out: Signal[] = [];
  const span = msg.span;
  const facts = msg.facts;
  const delivered = facts.deliveredCount;
  const failure = failureSignal(ctx.view.failureOf(span), span);
  const guards = guardEvents(span);
  // A receiver-side guard that withheld a changed copy: the message arrived (changed), it was not lost.
  const withheld = guards.some((g) => g.action === 'drop' || g.action === 'reject') && (facts.changes?.length ?? 0) > 0;
  if (delivered === 0 && !withheld) {
    const d = durationMs(span);
    // A drop is immediate; a delivery that waited for a deadline and then delivered nothing timed out.
    const waited = d >= 250 && d >= 5 * Math.max(ctx.medianOthersMs ?? 0, 1);
    const timeout = ctx.view.failureOf(span)?.timeout === true || waited;
    out.push({
      faultType: timeout ? 'timeout' : 'non_delivery',
      confidence: 0.95,
      evidence: timeout ? `message not delivered before its deadline (waited ${Math.round(d)} ms)` : 'message not delivered (0 copies)',
      source: 'metadata',
    });
  } else if (failure) {
    out.push(failure);
  }
  // A copy carrying another message id is another message (a replay or a reordered older one), not a duplicate —
  // except a guard's readback: a fresh message the guard fetched, crossing the channel after the copy it replaced.
  const readbacks = guards.filter((g) => g.action === 'reacquire').length;
  const ids = facts.ids?.slice(0, Math.max(0, facts.ids.length - readbacks));
  const foreign = ids && facts.sentId !== undefined ? ids.filter((id) => id !== facts.sentId) : [];
  const copies = ids && facts.sentId !== undefined ? ids.length - foreign.length : delivered;
  if (copies !== undefined && copies > 1) {
    out.push({ faultType: 'duplicate', confidence: 0.92, evidence: `message delivered ${copies} times`, source: 'metadata' });
  }
  out.push(...replaySignals(msg, foreign, ctx));
  const sent = facts.payloadHash;
  const got = facts.deliveredHashes;
  if (sent !== undefined && got && got.length > 0 && got.some((h) => h !== sent)) {
    out.push({ faultType: 'corrupt', confidence: 0.6, evidence: 'delivered payload differs from the payload sent', source: 'metadata' });
  }
  if (facts.changes && facts.changes.length > 0) out.push(changeSignal(facts.changes));
  if (ctx.taskId !== undefined && facts.taskId !== undefined && facts.taskId !== ctx.taskId) {
    out.push({ faultType: 'stale', confidence: 0.85, evidence: `message bound to task ${facts.taskId.slice(0, 40)}, not ${ctx.taskId.slice(0, 40)}`, source: 'metadata' });
  }
  out.push(...guardSignals(msg));
  return out;
}

/**
 * A delivered copy that is another message: bound to another task or session, a version behind the one sent, another
 * message id, or a payload an earlier message of this trace carried. All are stale deliveries (a replay, a reordered
 * older message); the envelope decides before the payload changes it implies.
 */
function replaySignals(msg: MessageStep, foreign: string[], ctx: MessageContext): Signal[] {
  const out: Signal[] = [];
  const facts = msg.facts;
  const expectTask = facts.taskId ?? ctx.taskId;
  const otherTask = facts.taskIds?.find((t) => t !== '' && t !== expectTask);
  if (otherTask !== undefined) {
    out.push({ faultType: 'stale', confidence: 0.93, evidence: `delivered a message bound to task ${otherTask.slice(0, 40)}, not ${(expectTask ?? '?').slice(0, 40)}`, source: 'metadata' });
  }
  const otherSession = facts.sessionIds?.find((t) => t !== '' && t !== facts.sentSession);
  if (otherSession !== undefined && facts.sentSession !== undefined) {
    out.push({ faultType: 'stale', confidence: 0.93, evidence: `delivered a message of session ${otherSession.slice(0, 40)}, not ${facts.sentSession.slice(0, 40)}`, source: 'metadata' });
  }
  const behind = facts.sentVersion === undefined ? undefined : facts.versions?.find((v) => v !== undefined && v < facts.sentVersion!);
  if (behind !== undefined) {
    out.push({ faultType: 'stale', confidence: 0.93, evidence: `delivered version ${behind}, behind the version ${facts.sentVersion} sent`, source: 'metadata' });
  }
  const replayed = (facts.deliveredHashes ?? []).find((h) => h !== '' && h !== facts.payloadHash && ctx.earlierHashes.has(h));
  if (replayed !== undefined) {
    out.push({ faultType: 'stale', confidence: 0.9, evidence: 'delivered the payload of an earlier message of this trace', source: 'metadata' });
  }
  if (foreign.length > 0) {
    out.push({ faultType: 'stale', confidence: 0.9, evidence: `delivered another message (${foreign[0]!.slice(0, 40)}) in place of or besides the one sent`, source: 'metadata' });
  }
  return out;
}

/** Keys naming the message's binding inside the payload: a changed value means the payload belongs elsewhere. */
const BINDING_KEY = /^(task_?id|session_?id|context_?id|conversation_?id|thread_?id|run_?id|state_?version|version)$/i;
/** Keys naming an entity (sku, product_id, entity ids) or the evidence a message carries. */
const ENTITY_KEY = /^(id|sku|uuid|urn|isbn|asin|gtin|ean|upc)$|(_id|Id|_ids|Ids|_sku|_key)$/;
const EVIDENCE_KEY = /evidence/i;

function lastKey(path: string): string {
  const segs = path.replace(/\[\]/g, '').split('.');
  return segs[segs.length - 1] ?? path;
}

/**
 * How the first changed copy differs from what was sent, from the structural changes (key paths only): keys only
 * removed, the message otherwise intact → partial; keys renamed or value types changed → schema; the payload's own
 * binding (task/session/version) changed → stale; same shape with an entity id or the evidence block changed →
 * semantic; any other change of content → corrupt.
 */
function changeSignal(changes: readonly string[]): Signal {
  const ops = changes.map((c) => {
    const i = c.indexOf(':');
    return { op: c.slice(0, i), path: c.slice(i + 1) };
  });
  const paths = (op: string): string[] => ops.filter((o) => o.op === op).map((o) => o.path);
  const removed = paths('removed');
  const added = paths('added');
  const retyped = paths('type');
  const values = paths('value');
  const lengths = paths('length');
  const list = (xs: string[]): string => xs.slice(0, 4).join(', ');
  const sig = (faultType: Signal['faultType'], confidence: number, evidence: string): Signal => ({ faultType, confidence, evidence, source: 'metadata' });
  if (retyped.length > 0 || (removed.length > 0 && added.length > 0)) {
    return sig('schema', 0.85, retyped.length > 0 ? `value type changed in transit: ${list(retyped)}` : `keys renamed in transit: ${list(removed)} → ${list(added)}`);
  }
  if (removed.length > 0 && values.length === 0) {
    return sig('partial', 0.85, `delivered payload lacks ${list(removed)}${lengths.length > 0 ? ` (and ${list(lengths)} shortened)` : ''}`);
  }
  if (added.length > 0 && values.length === 0 && removed.length === 0) return sig('schema', 0.7, `keys added in transit: ${list(added)}`);
  const changed = [...values, ...lengths, ...removed];
  const binding = changed.filter((p) => BINDING_KEY.test(lastKey(p)));
  if (binding.length > 0) return sig('stale', 0.85, `the payload's binding changed in transit: ${list(binding)}`);
  const meaning = changed.filter((p) => ENTITY_KEY.test(lastKey(p)) || p.split('.').some((k) => EVIDENCE_KEY.test(k)));
  if (meaning.length > 0) return sig('semantic', 0.85, `same shape, entity / evidence values changed in transit: ${list(meaning)}`);
  return sig('corrupt', 0.7, `content changed in transit: ${list(changed)}`);
}

/** What a guard's action on a message says happened. Only actions with one meaning; the others accompany detections. */
function guardSignals(msg: MessageStep): Signal[] {
  const out: Signal[] = [];
  for (const g of guardEvents(msg.span)) {
    const why = g.reason.slice(0, 120);
    if (g.action === 'resubmit') {
      out.push({ faultType: looksLikeTimeout(g.reason) ? 'timeout' : 'non_delivery', confidence: 0.9, evidence: `guard resubmitted: ${why}`, source: 'guard' });
    } else if (g.action === 'duplicate_suppressed' || g.action === 'receipt_replayed') {
      out.push({ faultType: 'duplicate', confidence: 0.9, evidence: `guard suppressed a duplicate: ${why}`, source: 'guard' });
    }
  }
  return out;
}

/**
 * Drop detector readings of a message that its own delivered-copy facts contradict (known detector gaps):
 * `non_delivery` when copies were delivered (offline, a finding built from uncaptured content cannot say otherwise),
 * `partial` when the "missing" keys reappear under other names (a rename is schema drift), and `duplicate` when the
 * extra copy carries another message id (an older message delivered again is a stale delivery, not a duplicate).
 */
function dropContradicted(msg: MessageStep, signals: Signal[]): void {
  const facts = msg.facts;
  const changes = facts.changes ?? [];
  const renamed = changes.some((c) => c.startsWith('removed:')) && changes.some((c) => c.startsWith('added:') || c.startsWith('type:'));
  const sameIdCopies = facts.ids && facts.sentId !== undefined ? facts.ids.filter((id) => id === facts.sentId).length : undefined;
  const delivered = facts.deliveredCount !== undefined && facts.deliveredCount > 0;
  const drop = (s: Signal): boolean =>
    (s.source === 'detector' && delivered && s.faultType === 'non_delivery') ||
    ((s.source === 'detection' || s.source === 'detector') && ((renamed && s.faultType === 'partial') || (sameIdCopies !== undefined && sameIdCopies <= 1 && s.faultType === 'duplicate')));
  for (let i = signals.length - 1; i >= 0; i--) if (drop(signals[i]!)) signals.splice(i, 1);
}

/** Once every span's signals are in: drop, on each message step, the detector readings its facts contradict. */
export function reviewMessages(_trace: TraceRecord, verdicts: SpanVerdict[]): void {
  for (const v of verdicts) if (v.step?.kind === 'message') dropContradicted(v.step, v.signals);
}
