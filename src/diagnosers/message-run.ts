/**
 * What the messages of one trace establish for judging each of them (messages.ts): the bindings most of them agree
 * on, the timing baselines of the others, and — built message by message in causal order — the identities and
 * payloads the run has seen so far.
 */
import { str, type TraceRecord } from '../traces/model';
import { ATTR_FL_MESSAGE_SIDE, ATTR_FL_TASK_ID } from '../../instrumentation/semconv';
import { stringFormat } from '../../instrumentation/agents/shape';
import { transitOf, type Logical } from './message-record';
import { durationMs } from './signals';

/** The most common value among `values` when it has a strict majority of at least two; else undefined. */
export function consensus(values: readonly (string | undefined)[]): string | undefined {
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

/** What the trace's messages as a whole set as the reference for each of them; built once per trace. */
export class RunBaselines {
  /** The trace's first span start (NaN when a start is unknown). */
  readonly traceStart: number;
  /** The task most messages are bound to (by their senders; else by their receivers), else the run's one task scope. */
  readonly taskConsensus: string | undefined;
  readonly sessionConsensus: string | undefined;
  /** Per message, its transit: exact (send → receive) or a round trip. */
  readonly transits = new Map<Logical, { ms: number; exact: boolean }>();
  /** The durations of the sender spans. */
  readonly sendDurations: number[];
  readonly #messages: readonly Logical[];
  readonly #scopeTask: string | undefined;
  readonly #withReceives: readonly Logical[];

  constructor(trace: TraceRecord, messages: readonly Logical[]) {
    this.#messages = messages;
    let traceStart = Infinity; // Math.min without spreading every span start (NaN wins, as there)
    for (const s of trace.spans) if (s.start < traceStart || Number.isNaN(s.start)) traceStart = s.start;
    this.traceStart = traceStart;
    const scopeTasks = trace.spans
      .map((s) => str(s.attributes, ATTR_FL_TASK_ID))
      .filter((t): t is string => t !== undefined);
    this.#scopeTask = new Set(scopeTasks).size === 1 ? scopeTasks[0] : undefined;
    const sentTasks = messages.map((l) => l.send?.taskId);
    this.taskConsensus =
      consensus([
        ...sentTasks,
        ...(sentTasks.some((t) => t !== undefined) ? [] : messages.map((l) => l.receives[0]?.taskId)),
      ]) ?? this.#scopeTask;
    this.sessionConsensus = consensus(messages.map((l) => l.send?.sessionId ?? l.receives[0]?.sessionId));
    this.#withReceives = messages.filter((l) => l.receives.length > 0);
    for (const l of messages) {
      const t = transitOf(l, traceStart);
      if (t) this.transits.set(l, t);
    }
    this.sendDurations = messages.filter((l) => l.send).map((l) => durationMs(l.send!.span));
  }

  /** The task a message should be bound to: what the run's other messages agree on, else the run's task scope. */
  taskReference(l: Logical): string | undefined {
    const others = this.#messages.filter((o) => o !== l).map((o) => o.send?.taskId);
    if (others.some((t) => t !== undefined)) return consensus(others);
    return this.#scopeTask;
  }

  /**
   * Whether the receiving end of `l` records its deliveries, so that no receive span means nothing arrived: the
   * channel records every delivery wherever it emits sender spans that say which end they are; a server does when
   * another message to it (the same agent, the same MCP session) has its receive span in this trace.
   */
  receiverSeen(l: Logical): boolean {
    return (
      l.receives.length > 0 ||
      (l.system === 'channel' && l.send?.span.attributes[ATTR_FL_MESSAGE_SIDE] === 'send') ||
      this.#withReceives.some(
        (o) =>
          o.system === l.system &&
          (l.system === 'channel' ||
            (o.target !== undefined && o.target === l.target) ||
            (l.system === 'mcp' && o.send?.sessionId !== undefined && o.send.sessionId === l.send?.sessionId)),
      )
    );
  }
}

/**
 * The values of a payload that name something particular, by their last key, every value each key has (list
 * elements and JSON text inside the payload included): identifiers (a SKU, an order id, a UUID — no spaces, letters
 * and digits). Amounts, measurements, scores and dates are attributes, not identities: an agent that decides its own
 * value of a key of the same name (its own confidence, a new date, a figure it computed) contradicts nothing.
 */
export function identities(
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

/** What the run has established so far, message by message in causal order. */
export class RunMemory {
  /** The payload hashes of the messages sent so far. */
  readonly sentHashes: string[] = [];
  /** Per edge, the highest message version delivered so far. */
  readonly versionsSeen = new Map<string, number>();
  /** Per identity key, the values the run's earlier messages (and the replies to its calls) carried, and in how
   * many of them each value appeared. */
  readonly pins = new Map<string, Map<string, number>>();
  /** Per agent, the identities it received (messages addressed to it, replies to its calls). */
  readonly received = new Map<string, Map<string, Set<string>>>();

  /** Record the identities of a message (or a reply) that `receiver` got. */
  pin(ids: Map<string, Set<string>>, receiver: string | undefined): void {
    for (const [k, vs] of ids) {
      const m = this.pins.get(k) ?? new Map<string, number>();
      for (const v of vs) m.set(v, (m.get(v) ?? 0) + 1);
      this.pins.set(k, m);
      if (receiver === undefined || receiver === '') continue;
      const r = this.received.get(receiver) ?? new Map<string, Set<string>>();
      r.set(k, new Set([...(r.get(k) ?? []), ...vs]));
      this.received.set(receiver, r);
    }
  }

  /** Whether any earlier message carried `value` under any key. */
  seenAnywhere(value: string): boolean {
    for (const m of this.pins.values()) if (m.has(value)) return true;
    return false;
  }
}
