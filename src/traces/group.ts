/**
 * Grouping a stream of spans into traces with bounded memory.
 *
 * The rule: a trace is open while its spans keep arriving. It is emitted once `idleSpans` spans in a row have been
 * read without one of its own (default 20,000), or when the input ends. Files written by exporters and collectors
 * hold a trace's spans close together (a batch is flushed within seconds), so in practice every trace is emitted
 * whole; memory holds the open traces only, at most about `idleSpans` spans plus the traces still growing. A span
 * arriving after its trace was emitted starts a new TraceRecord with the same traceId (raise `idleSpans` for files
 * that interleave traces over long stretches).
 */
import { sortSpans, type SpanRecord, type TraceRecord } from './model';

export const DEFAULT_IDLE_SPANS = 20_000;

interface Open {
  spans: SpanRecord[];
  /** Sequence number of its last span. */
  last: number;
}

export class TraceGrouper {
  // Insertion order = order of last activity: a trace is deleted and re-inserted on each span, so the first entry is
  // always the one idle longest.
  private readonly open = new Map<string, Open>();
  private seq = 0;
  /** The trace touched last: it is already the map's last entry, so a run of its spans skips the re-insertion. */
  private latest: Open | undefined;
  private latestId = '';
  /**
   * No trace can be idle before this sequence number: the first entry's last span plus `idleSpans`, or less (when
   * the first entry was touched since, the new first entry is idle later still). Below it the idle check is skipped.
   */
  private due = Number.POSITIVE_INFINITY;

  constructor(private readonly idleSpans = DEFAULT_IDLE_SPANS) {}

  /** Add a span; returns the traces that became idle (usually none). */
  add(span: SpanRecord): TraceRecord[] {
    const n = ++this.seq;
    if (this.latest !== undefined && span.traceId === this.latestId) {
      // Spans of one trace usually come in runs (an exporter batch): it is the map's last entry already.
      this.latest.spans.push(span);
      this.latest.last = n;
    } else {
      let t = this.open.get(span.traceId);
      if (t === undefined) t = { spans: [], last: n };
      else this.open.delete(span.traceId);
      t.spans.push(span);
      t.last = n;
      this.open.set(span.traceId, t);
      if (this.open.size === 1) this.due = n + this.idleSpans;
      this.latest = t;
      this.latestId = span.traceId;
    }
    if (n < this.due) return NONE;
    let out: TraceRecord[] | undefined;
    this.due = Number.POSITIVE_INFINITY;
    for (const [id, o] of this.open) {
      if (n - o.last < this.idleSpans) {
        this.due = o.last + this.idleSpans;
        break;
      }
      this.open.delete(id);
      if (o === this.latest) this.latest = undefined;
      (out ??= []).push({ traceId: id, spans: sortSpans(o.spans) });
    }
    return out ?? NONE;
  }

  /** Emit every open trace (end of input), oldest activity first. */
  flush(): TraceRecord[] {
    const out: TraceRecord[] = [];
    for (const [id, o] of this.open) out.push({ traceId: id, spans: sortSpans(o.spans) });
    this.open.clear();
    this.latest = undefined;
    this.due = Number.POSITIVE_INFINITY;
    return out;
  }
}

const NONE: TraceRecord[] = [];
