/**
 * The three ways a trace of the set is diagnosed, and the scoring.
 *
 *  - emitted:  message spans exactly as MessageChannel emitted them before receive spans existed — the sender's
 *              handoff span with its delivered-copy facts (A2A / MCP: the client span); receive spans removed;
 *  - receiver: receive spans only carry the payload (as delivered); sender spans are reduced to a plain send record
 *              (id, route, task, session, version, time, status) — no payload facts, no `delivered_*` facts, no
 *              detections computed from both ends;
 *  - both:     everything, as the instrumentation now emits it.
 *
 * `contentFree` removes captured content, giving the trace a run without content capture records.
 */
import { str, type SpanRecord, type TraceRecord } from '../../../src/traces/model';
import { isMessageSpan } from '../../../src/traces/steps';
import type { Diagnosis } from '../../../src/diagnosers/types';
import type { Label } from './workflows';

const CONTENT = [
  'faultline.message.payload',
  'faultline.message.delivered_payloads',
  'gen_ai.input.messages',
  'gen_ai.output.messages',
  'gen_ai.tool.call.arguments',
  'gen_ai.tool.call.result',
  'gen_ai.system_instructions',
];
const PAYLOAD_FACTS = [
  'faultline.message.keys',
  'faultline.message.shape',
  'faultline.message.payload_hash',
  'faultline.message.payload_bytes',
  'faultline.message.payload',
  'gen_ai.input.messages',
  'gen_ai.tool.call.arguments',
];

const side = (s: SpanRecord): string | undefined => str(s.attributes, 'faultline.message.side');

function copySpan(s: SpanRecord, drop: (k: string) => boolean, events = true): SpanRecord {
  return {
    ...s,
    attributes: Object.fromEntries(Object.entries(s.attributes).filter(([k]) => !drop(k))),
    events: events ? s.events : s.events.filter((e) => e.name !== 'faultline.detection'),
  };
}

export function contentFree(t: TraceRecord): TraceRecord {
  return { traceId: t.traceId, spans: t.spans.map((s) => copySpan(s, (k) => CONTENT.includes(k))) };
}

export function emitted(t: TraceRecord): TraceRecord {
  return { traceId: t.traceId, spans: t.spans.filter((s) => side(s) !== 'receive') };
}

export function receiverSide(t: TraceRecord): TraceRecord {
  const senders = new Set(t.spans.filter((s) => isMessageSpan(s) && side(s) !== 'receive').map((s) => s.spanId));
  return {
    traceId: t.traceId,
    spans: t.spans
      // Online detections that rode on a child span of a sender's span were computed from both ends too.
      .filter((s) => !(s.name === 'faultline.detection' && s.parentSpanId !== undefined && senders.has(s.parentSpanId)))
      .map((s) =>
        senders.has(s.spanId)
          ? copySpan(s, (k) => k.startsWith('faultline.message.delivered_') || PAYLOAD_FACTS.includes(k), false)
          : s,
      ),
  };
}

/**
 * One plain span per message, carrying the payload as the receiver got it (the first copy; no payload facts when
 * nothing arrived), no side, no `delivered_*` facts, no receive spans: a receiver-side record another producer might
 * write. (A duplicate's second copy is not visible in this shape.)
 */
export function plainDelivered(t: TraceRecord): TraceRecord {
  const receives = t.spans.filter((s) => side(s) === 'receive');
  const firstCopy = (send: SpanRecord): SpanRecord | undefined =>
    receives.find((r) => r.links.some((l) => l.spanId === send.spanId) || r.parentSpanId === send.spanId);
  const out: SpanRecord[] = [];
  for (const s of t.spans) {
    if (side(s) === 'receive') continue;
    if (!isMessageSpan(s)) {
      out.push(s);
      continue;
    }
    const got = firstCopy(s);
    const base = copySpan(
      s,
      (k) =>
        k === 'faultline.message.side' || k.startsWith('faultline.message.delivered_') || PAYLOAD_FACTS.includes(k),
      false,
    );
    if (got)
      for (const k of [
        ...PAYLOAD_FACTS,
        'faultline.message.id',
        'faultline.message.task_id',
        'faultline.message.session_id',
        'faultline.message.version',
        'faultline.message.sent_at',
      ]) {
        const v = got.attributes[k];
        if (v !== undefined) base.attributes[k] = v;
      }
    out.push(base);
  }
  return { traceId: t.traceId, spans: out };
}

export const VIEWS = { emitted, receiver: receiverSide, both: (t: TraceRecord) => t, plain: plainDelivered } as const;
export type ViewName = keyof typeof VIEWS;

/** The spans standing for the faulted message in a view: the k-th send, and the receive spans of that send. */
export function truthSpans(t: TraceRecord, label: Label): Set<string> {
  const out = new Set<string>();
  if (label.at === undefined) return out;
  const sends = t.spans.filter((s) => isMessageSpan(s) && side(s) !== 'receive');
  // Start order is ambiguous within a millisecond for nested sends: the fault point's own record wins.
  const send = label.spanId !== undefined ? sends.find((s) => s.spanId === label.spanId) : sends[label.at - 1];
  if (!send) return out;
  out.add(send.spanId);
  const id = str(send.attributes, 'faultline.message.id');
  for (const s of t.spans) {
    if (side(s) !== 'receive') continue;
    if (
      s.links.some((l) => l.spanId === send.spanId) ||
      s.parentSpanId === send.spanId ||
      (label.protocol === 'a2a' && id !== undefined && str(s.attributes, 'faultline.message.id') === id)
    )
      out.add(s.spanId);
  }
  return out;
}

export interface Score {
  faulty: number;
  typeOk: number;
  stepOk: number;
  clean: number;
  falsePositives: number;
  perType: Map<string, { n: number; type: number; step: number }>;
  misses: string[];
}

export function newScore(): Score {
  return { faulty: 0, typeOk: 0, stepOk: 0, clean: 0, falsePositives: 0, perType: new Map(), misses: [] };
}

export function record(score: Score, trace: TraceRecord, label: Label, d: Diagnosis): void {
  if (label.fault === 'none') {
    score.clean++;
    if (d.faultType !== 'none') {
      score.falsePositives++;
      score.misses.push(
        `${label.workflow}${label.recovered ? ' (recovered)' : ''} clean → ${d.faultType}: ${d.evidence[0] ?? ''}`,
      );
    }
    return;
  }
  score.faulty++;
  const row = score.perType.get(label.fault) ?? { n: 0, type: 0, step: 0 };
  row.n++;
  const typeOk = d.faultType === label.fault;
  const stepOk = d.spanId !== null && truthSpans(trace, label).has(d.spanId);
  if (typeOk) {
    score.typeOk++;
    row.type++;
  }
  if (stepOk) {
    score.stepOk++;
    row.step++;
  }
  if (!typeOk || !stepOk)
    score.misses.push(
      `${label.workflow} ${label.fault}@${label.at} (${label.note.slice(0, 70)}) → ${d.faultType}${stepOk ? '' : ' (wrong step)'}: ${(d.evidence[0] ?? '').slice(0, 110)}`,
    );
  score.perType.set(label.fault, row);
}

export const rate = (a: number, b: number): string => (b === 0 ? '   -  ' : (a / b).toFixed(3));
