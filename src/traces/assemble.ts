/**
 * Assembling traces from spans as they arrive (the collector's online path), the way tail sampling does: a trace
 * is complete once no span of it arrived for `idleMs` (the tail-sampling processor's `decision_wait`). Spans of one
 * trace may come in any number of batches, in any order, from several processes.
 *
 * Bounded: at most `maxSpans` spans are held; past that the traces idle longest are completed early (reported as
 * `full`). Exactly once: the ids of recently completed traces are remembered (`rememberTraces`), so a span that
 * arrives after its trace was completed is counted as late and does not start a second diagnosis of the trace.
 *
 * Across a graceful restart: `save(file)` writes the open traces and the remembered ids (atomically, by rename);
 * `load(file)` takes them back (the caller removes the file once it runs, so the state is taken once). Loaded traces
 * start a fresh idle period, so that the spans the exporters queued while this process was away still join them.
 */
import { promises as fsp } from 'node:fs';
import { sortSpans, type SpanRecord, type TraceRecord } from './model';

export type CompletedBy = 'idle' | 'full' | 'drain';

export interface AssemblerOptions {
  /** A trace is complete this long after its last span arrived (default 30 s, tail sampling's decision_wait). */
  idleMs?: number;
  /** Spans held across the open traces (default 200,000). */
  maxSpans?: number;
  /** Ids of completed traces remembered to refuse a second diagnosis (default 100,000). */
  rememberTraces?: number;
  /** Called with each completed trace (spans sorted by start time). */
  onTrace(trace: TraceRecord, by: CompletedBy): void;
  /** Clock (ms), for tests. */
  now?: () => number;
}

export interface AssemblerStats {
  openTraces: number;
  heldSpans: number;
  completed: number;
  /** Traces completed early because `maxSpans` was reached. */
  forced: number;
  /** Spans that arrived after their trace was completed (stored, not diagnosed again). */
  late: number;
}

interface Open {
  spans: SpanRecord[];
  lastSeen: number;
}

const STATE_FORMAT = 'faultline-collect-state';

export class TraceAssembler {
  readonly idleMs: number;
  private readonly maxSpans: number;
  private readonly remember: number;
  private readonly now: () => number;
  /** Insertion order = order of last activity (re-inserted on each batch): the first entry is the one idle longest. */
  private readonly open = new Map<string, Open>();
  private readonly done = new Set<string>();
  private held = 0;
  private timer: NodeJS.Timeout | undefined;
  readonly stats: AssemblerStats = { openTraces: 0, heldSpans: 0, completed: 0, forced: 0, late: 0 };

  constructor(private readonly options: AssemblerOptions) {
    this.idleMs = options.idleMs ?? 30_000;
    this.maxSpans = options.maxSpans ?? 200_000;
    this.remember = options.rememberTraces ?? 100_000;
    this.now = options.now ?? Date.now;
  }

  /** Check for idle traces periodically (a quarter of the idle time, at least every 25 ms). */
  start(): void {
    this.timer ??= setInterval(() => this.tick(), Math.max(25, Math.min(1000, this.idleMs / 4)));
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The spans of one accepted request. */
  add(spans: readonly SpanRecord[]): void {
    const t = this.now();
    for (const span of spans) {
      if (this.done.has(span.traceId)) {
        this.stats.late++;
        continue;
      }
      let o = this.open.get(span.traceId);
      if (o === undefined) o = { spans: [], lastSeen: t };
      else this.open.delete(span.traceId);
      o.spans.push(span);
      o.lastSeen = t;
      this.open.set(span.traceId, o);
      this.held++;
    }
    while (this.held > this.maxSpans && this.open.size > 0)
      this.complete(this.open.keys().next().value as string, 'full');
    this.sync();
  }

  /** Complete every trace idle for `idleMs` or more. */
  tick(): void {
    const t = this.now();
    for (const [id, o] of this.open) {
      if (t - o.lastSeen < this.idleMs) break;
      this.complete(id, 'idle');
    }
    this.sync();
  }

  /** Complete every open trace now (a final shutdown without a state file). */
  drain(): void {
    for (const id of [...this.open.keys()]) this.complete(id, 'drain');
    this.sync();
  }

  private complete(id: string, by: CompletedBy): void {
    const o = this.open.get(id) as Open;
    this.open.delete(id);
    this.held -= o.spans.length;
    this.done.add(id);
    if (this.done.size > this.remember) this.done.delete(this.done.values().next().value as string);
    this.stats.completed++;
    if (by === 'full') this.stats.forced++;
    this.options.onTrace({ traceId: id, spans: sortSpans(o.spans) }, by);
  }

  private sync(): void {
    this.stats.openTraces = this.open.size;
    this.stats.heldSpans = this.held;
  }

  /** Write the open traces and the remembered ids to `file` (JSON lines; written to a temporary file, then renamed). */
  async save(file: string): Promise<void> {
    const tmp = `${file}.${process.pid}.tmp`;
    const fh = await fsp.open(tmp, 'w');
    try {
      await fh.write(
        `${JSON.stringify({ format: STATE_FORMAT, version: 1, savedAt: this.now(), openTraces: this.open.size, heldSpans: this.held })}\n`,
      );
      for (const [traceId, o] of this.open) await fh.write(`${JSON.stringify({ traceId, spans: o.spans })}\n`);
      await fh.write(`${JSON.stringify({ completed: [...this.done] })}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, file);
  }

  /**
   * Take back what `save` wrote, if `file` exists. Returns how many traces and spans came back. Throws (naming the
   * file) when it is not a state file.
   */
  async load(file: string): Promise<{ traces: number; spans: number }> {
    let text: string;
    try {
      text = await fsp.readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { traces: 0, spans: 0 };
      throw err;
    }
    const lines = text.split('\n').filter((l) => l !== '');
    const head = lines.length > 0 ? (JSON.parse(lines[0] as string) as { format?: unknown }) : undefined;
    if (head?.format !== STATE_FORMAT) throw new Error(`${file} is not a faultline collect state file`);
    const t = this.now();
    let traces = 0;
    let spans = 0;
    for (const line of lines.slice(1)) {
      const rec = JSON.parse(line) as { traceId?: string; spans?: SpanRecord[]; completed?: string[] };
      if (rec.completed !== undefined) {
        for (const id of rec.completed) this.done.add(id);
        continue;
      }
      if (typeof rec.traceId !== 'string' || !Array.isArray(rec.spans)) continue;
      const o = this.open.get(rec.traceId) ?? { spans: [], lastSeen: t };
      o.spans.push(...rec.spans);
      o.lastSeen = t;
      this.open.set(rec.traceId, o);
      this.held += rec.spans.length;
      traces++;
      spans += rec.spans.length;
    }
    this.sync();
    return { traces, spans };
  }
}
