/**
 * A function over every trace of some files, on worker threads when the input is big enough to pay for them:
 * `mapTraces(files, task)` yields what `task` returns for each trace, in the order `readTraces` yields the traces,
 * with the same traces (the same grouping rule) and the same errors.
 *
 * Why it is built this way: parsing is most of the cost and sending parsed spans between threads costs as much as
 * parsing them, so the bytes go to the workers and only decisions and results come back. This thread cuts JSON lines
 * into blocks of whole lines and hands each block to a worker; the worker parses it, groups its spans by trace into
 * pieces and sends a summary (trace id, first and last position of each piece). Here the summaries are replayed, in
 * block order, through the rule of group.ts: a trace ends once `idleSpans` spans went by without one of its own.
 * When a trace is complete, the worker holding it runs the task on it; a trace whose pieces lie in several blocks
 * (rare in exporter output, where a trace's spans come close together) has its spans sent here and is run here.
 * Memory holds the blocks in flight and the pieces of the traces still open: bounded, whatever the file's size.
 *
 * Workers are used for JSON lines of spans only (other formats are single documents, read as they are by readTraces;
 * OTLP logs among the inputs are joined to their spans there), and only when the compiled worker script is there
 * (a TypeScript source run uses this thread).
 */
import { existsSync, promises as fsp } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { FaultlineInputError } from '../errors';
import { DEFAULT_IDLE_SPANS } from './group';
import { sortSpans, type SpanRecord, type TraceRecord } from './model';
import { detectFormat, readTraces, throwCollected, toInputError, type ReadTracesOptions } from './read';
import { openSource, type Source } from './source';
import { DEFAULT_MAX_LINE_BYTES } from './readers/jsonl';
import { sniffLogs } from './readers/otlp-logs';
import {
  deserializeProblem,
  loadTask,
  type FromWorker,
  type SummaryMessage,
  type TraceTask,
  type WorkerSetup,
} from './parallel-protocol';

export type { TraceTask } from './parallel-protocol';

export interface MapTracesOptions extends ReadTracesOptions {
  /**
   * Worker threads. 0 runs everything in this thread. Default: one per available core when the JSON-lines input
   * is at least `parallelMinBytes`, else 0.
   */
  workers?: number;
  /** Input size from which workers are used by default (default 64 MiB). */
  parallelMinBytes?: number;
  /** Bytes per block handed to a worker (default 1 MiB; blocks end on a line boundary). */
  blockBytes?: number;
}

const WORKER_SCRIPT = join(__dirname, 'parallel-worker.js');
const DEFAULT_PARALLEL_MIN = 64 * 1024 * 1024;
/**
 * A block is held parsed until its summary is replayed, and a worker has BLOCKS_PER_WORKER in flight: 1 MiB blocks
 * diagnosed the bench's 1 GB file as fast as 2 and 4 MiB ones (13.4–14.2 s against 13.6–14.2, three interleaved rounds)
 * with 25 MB less peak RSS (246–266 MB against 273–285).
 */
const DEFAULT_BLOCK = 1024 * 1024;
const READ_BYTES = 1024 * 1024;
/** Blocks a worker may have in flight (sent, not yet summarised). */
const BLOCKS_PER_WORKER = 2;
const MAX_WORKERS = 16;

/** How many workers to use: the option, else one per core for big JSON-lines input, else 0. Never throws. */
async function plan(
  paths: readonly string[],
  options: MapTracesOptions,
): Promise<{ workers: number; sources: Source[] }> {
  const none = { workers: 0, sources: [] };
  if (options.workers === 0 || paths.length === 0 || !existsSync(WORKER_SCRIPT)) return none;
  if (options.format !== undefined && options.format !== 'jsonl') return none;
  const sources: Source[] = [];
  let bytes = 0;
  for (const p of paths) {
    try {
      const src = await openSource(p);
      // Anything unusual (another format, an error) is left to readTraces, which reports it as it always does.
      if ((options.format ?? detectFormat(src)) !== 'jsonl') return none;
      // OTLP logs beside the traces are joined to their spans by readTraces (readers/otlp-logs.ts), in this thread.
      if (sniffLogs(src)) return none;
      sources.push(src);
      bytes += src.gzip ? src.size * 8 : src.size;
    } catch {
      return none;
    }
  }
  const cores = availableParallelism();
  const workers =
    options.workers ?? (bytes >= (options.parallelMinBytes ?? DEFAULT_PARALLEL_MIN) && cores > 1 ? cores : 0);
  return { workers: Math.min(Math.max(0, Math.floor(workers)), MAX_WORKERS), sources };
}

/**
 * `task` applied to every trace of `paths` (see the module comment), results in readTraces' order. Problems are
 * handled as readTraces handles them: `onError` for each, else all thrown together after the last result.
 */
export async function* mapTraces<R>(
  paths: readonly string[],
  task: TraceTask,
  options: MapTracesOptions = {},
): AsyncGenerator<R> {
  const { workers, sources } = await plan(paths, options);
  const fn = await loadTask<R>(task);
  if (workers === 0) {
    for await (const trace of readTraces(paths, options)) yield await fn(trace);
    return;
  }
  yield* new Coordinator<R>(sources, task, fn, workers, options).run();
}

interface OpenTrace {
  traceId: string;
  /** [block, piece] pairs, in block order. */
  parts: [number, number][];
  last: number;
}

interface Assembly {
  traceId: string;
  parts: (SpanRecord[] | undefined)[];
  missing: number;
}

/** A copy of `bytes` in memory of its own (a pooled or shared buffer must never be transferred). */
function own(bytes: Buffer): Buffer {
  const b = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(b);
  return b;
}

/** Every source as raw byte chunks (decompressed), each in memory of its own that can be transferred. */
async function* chunksOf(src: Source, size: number): AsyncGenerator<Buffer> {
  if (!src.gzip) {
    const fh = await fsp.open(src.file, 'r');
    try {
      for (;;) {
        const buf = Buffer.allocUnsafeSlow(size);
        const { bytesRead } = await fh.read(buf, 0, size, null);
        if (bytesRead === 0) return;
        yield buf.subarray(0, bytesRead);
      }
    } finally {
      await fh.close();
    }
  }
  for await (const c of src.open(size)) yield own(c as Buffer);
}

/**
 * Worker heaps. What a worker holds is small (its blocks in flight and the pieces of open traces: about 1 KB per
 * span of exporter output), but V8 sizes a heap by the machine, not by that: left alone, each worker's heap grows to
 * several times its live data between collections, and two of them doubled the reader's peak RSS. A smaller young
 * generation and an old-generation ceiling keep the collections frequent; 512 MB per worker is far above what
 * even a window of 20,000 spans of 20 KB each needs.
 */
const WORKER_HEAP = { maxYoungGenerationSizeMb: 16, maxOldGenerationSizeMb: 512 };

function outOfMemory(err: Error): Error {
  if ((err as NodeJS.ErrnoException).code !== 'ERR_WORKER_OUT_OF_MEMORY') return err;
  return new FaultlineInputError(
    'FAULTLINE_USAGE',
    `a trace worker ran out of memory (${WORKER_HEAP.maxOldGenerationSizeMb} MB): the open traces hold very large spans; run with --workers 0 (one thread, no heap ceiling) or a smaller idle window`,
    { cause: err },
  );
}

/** Results waiting for the consumer (or for a worker) before reading pauses: bounds memory under a slow consumer. */
const MAX_PENDING_RESULTS = 16_384;

class Coordinator<R> {
  private readonly pool: Worker[] = [];
  private readonly inFlight: number[] = [];
  private readonly idle: number;
  private readonly blockBytes: number;
  /** Block number → worker, file index. */
  private readonly blockWorker: number[] = [];
  private readonly blockFile: number[] = [];
  /** A file that failed part-way: its error is reported after the summary of its last block. */
  private readonly fileErrors = new Map<number, FaultlineInputError>();
  private readonly summaries = new Map<number, SummaryMessage>();
  private nextSummary = 0;
  private blocksRead = 0;
  private readDone = false;
  private flushed = false;
  private stopped = false;
  private seq = 0;
  private readonly linesBefore: number[];
  private readonly open = new Map<string, OpenTrace>();
  private readonly results = new Map<number, R>();
  private readonly assemblies = new Map<number, Assembly>();
  private nextSlot = 0;
  private nextYield = 0;
  private readonly errors: FaultlineInputError[] = [];
  private fatal: unknown;
  private wake: (() => void) | undefined;
  private roomWaiter: (() => void) | undefined;

  constructor(
    private readonly sources: Source[],
    task: TraceTask,
    private readonly fn: (trace: TraceRecord) => R | Promise<R>,
    workers: number,
    private readonly options: MapTracesOptions,
  ) {
    this.idle = options.idleSpans ?? DEFAULT_IDLE_SPANS;
    this.blockBytes = options.blockBytes ?? DEFAULT_BLOCK;
    this.linesBefore = sources.map(() => 0);
    const setup: WorkerSetup = {
      task,
      idleSpans: this.idle,
      maxLineBytes: options.streamThresholdBytes ?? DEFAULT_MAX_LINE_BYTES,
    };
    for (let i = 0; i < workers; i++) {
      const w = new Worker(WORKER_SCRIPT, { workerData: setup, resourceLimits: WORKER_HEAP });
      w.on('message', (m: FromWorker) => this.onMessage(m));
      w.on('error', (err) => this.fail(outOfMemory(err)));
      w.on('exit', (code) => this.fail(new Error(`trace worker exited early (code ${code})`)));
      this.pool.push(w);
      this.inFlight.push(0);
    }
  }

  async *run(): AsyncGenerator<R> {
    const reading = this.read().catch((err: unknown) => this.fail(err));
    try {
      for (;;) {
        if (this.fatal !== undefined) throw this.fatal;
        if (this.results.has(this.nextYield)) {
          const r = this.results.get(this.nextYield) as R;
          this.results.delete(this.nextYield++);
          this.signalRoom();
          yield r;
          continue;
        }
        if (this.flushed && this.nextYield === this.nextSlot) break;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
      }
      await reading;
    } finally {
      this.stopped = true;
      this.signalRoom();
      for (const w of this.pool) {
        w.removeAllListeners('exit');
        void w.terminate();
      }
    }
    if (this.options.onError === undefined) throwCollected(this.errors);
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private signalRoom(): void {
    const r = this.roomWaiter;
    this.roomWaiter = undefined;
    r?.();
  }

  private fail(err: unknown): void {
    this.fatal ??= err;
    this.notify();
    this.signalRoom();
  }

  private report(err: FaultlineInputError): void {
    if (this.options.onError !== undefined) this.options.onError(err);
    else this.errors.push(err);
  }

  /** Reads every source and hands its blocks out, pausing while the workers or the consumer are behind. */
  private async read(): Promise<void> {
    for (let f = 0; f < this.sources.length && !this.stopped; f++) {
      const src = this.sources[f] as Source;
      let block = -1;
      let bytes = 0;
      let startsFile = true;
      const send = (chunk: Buffer, final: boolean): void => {
        const first = block < 0;
        if (first) block = this.startBlock(f);
        // Only the first chunk of a block creates its parser: it carries whether the block starts the file.
        const starts = first && startsFile;
        if (first) startsFile = false;
        const w = this.pool[this.blockWorker[block] as number] as Worker;
        // Read the length first: the transfer detaches the buffer (its length becomes 0).
        const length = chunk.length;
        if (length === 0)
          w.postMessage({
            t: 'chunk',
            block,
            bytes: new ArrayBuffer(0),
            offset: 0,
            length: 0,
            final,
            startsFile: starts,
          });
        else {
          const ab = chunk.buffer as ArrayBuffer;
          w.postMessage({ t: 'chunk', block, bytes: ab, offset: chunk.byteOffset, length, final, startsFile: starts }, [
            ab,
          ]);
        }
        bytes += length;
        if (final) {
          block = -1;
          bytes = 0;
        }
      };
      try {
        for await (const chunk of chunksOf(src, Math.min(READ_BYTES, this.blockBytes))) {
          if (this.stopped) return;
          if (block < 0) await this.room();
          if (bytes + chunk.length < this.blockBytes) {
            send(chunk, false);
            continue;
          }
          const nl = chunk.lastIndexOf(10);
          if (nl < 0) {
            send(chunk, false); // a long line: the block goes on until it ends
            continue;
          }
          // The block ends at the chunk's last newline; the rest (copied: the chunk's memory moves) starts the next.
          const rest = nl + 1 < chunk.length ? own(chunk.subarray(nl + 1)) : undefined;
          send(chunk.subarray(0, nl + 1), true);
          if (rest !== undefined) {
            await this.room();
            send(rest, false);
          }
        }
      } catch (err) {
        // A file that breaks part-way (damaged gzip): what was read of it counts, and the problem is reported.
        const e = toInputError(src.file, err);
        if (block >= 0 || this.blocksRead > this.nextSummary)
          this.fileErrors.set(block >= 0 ? block : this.blocksRead - 1, e);
        else this.report(e);
      }
      if (block >= 0) send(Buffer.alloc(0), true);
    }
    this.readDone = true;
    this.finishIfDone();
  }

  private startBlock(file: number): number {
    const no = this.blocksRead++;
    let best = 0;
    for (let i = 1; i < this.pool.length; i++)
      if ((this.inFlight[i] as number) < (this.inFlight[best] as number)) best = i;
    this.inFlight[best]!++;
    this.blockWorker[no] = best;
    this.blockFile[no] = file;
    return no;
  }

  /** Until some worker can take another block and the consumer is not too far behind. */
  private async room(): Promise<void> {
    while (
      !this.stopped &&
      this.fatal === undefined &&
      (this.inFlight.every((n) => n >= BLOCKS_PER_WORKER) || this.nextSlot - this.nextYield > MAX_PENDING_RESULTS)
    ) {
      await new Promise<void>((resolve) => {
        this.roomWaiter = resolve;
      });
    }
  }

  private finishIfDone(): void {
    if (this.flushed || !this.readDone || this.nextSummary !== this.blocksRead) return;
    this.flushed = true;
    const rest = [...this.open.values()];
    this.open.clear();
    this.emit(rest);
    this.notify();
  }

  private onMessage(m: FromWorker): void {
    switch (m.t) {
      case 'summary':
        this.summaries.set(m.block, m);
        this.inFlight[this.blockWorker[m.block] as number]!--;
        while (this.summaries.has(this.nextSummary)) {
          const s = this.summaries.get(this.nextSummary) as SummaryMessage;
          this.summaries.delete(this.nextSummary++);
          this.replay(s);
        }
        this.finishIfDone();
        this.signalRoom();
        break;
      case 'results':
        for (const [slot, r] of m.results) this.results.set(slot, r as R);
        for (const [slot, part, spans] of m.parts) this.addPart(slot, part, spans);
        break;
      case 'error':
        this.fail(Object.assign(new Error(m.message), { stack: m.stack ?? m.message }));
        break;
    }
    this.notify();
  }

  /** One block's pieces through the grouping rule (group.ts), in block order. */
  private replay(s: SummaryMessage): void {
    const file = this.blockFile[s.block] as number;
    const src = this.sources[file] as Source;
    for (const p of s.problems) {
      const line = (this.linesBefore[file] as number) + p.line;
      this.report(toInputError(src.file, deserializeProblem(p.error, line), `line ${line}`));
    }
    this.linesBefore[file]! += s.lines;
    const fileError = this.fileErrors.get(s.block);
    if (fileError !== undefined) {
      this.fileErrors.delete(s.block);
      this.report(fileError);
    }
    const base = this.seq;
    const due: OpenTrace[] = [];
    for (let i = 0; i < s.ids.length; i++) {
      const id = s.ids[i] as string;
      const first = base + (s.firsts[i] as number);
      const last = base + (s.lasts[i] as number);
      const t = this.open.get(id);
      if (t !== undefined && first - t.last <= this.idle) {
        // The same trace, close enough to the part before: one trace (the rule of group.ts).
        t.parts.push([s.block, i]);
        t.last = last;
        this.open.delete(id);
        this.open.set(id, t);
        continue;
      }
      if (t !== undefined) {
        this.open.delete(id);
        due.push(t);
      }
      this.open.set(id, { traceId: id, parts: [[s.block, i]], last });
    }
    this.seq += s.spans;
    for (const [id, t] of this.open) {
      if (this.seq - t.last < this.idle) break;
      this.open.delete(id);
      due.push(t);
    }
    // group.ts emits traces in the order of their last span.
    this.emit(due.sort((a, b) => a.last - b.last));
  }

  /** Complete traces, in output order: each gets the next slot and its pieces' workers are told what to do. */
  private emit(traces: OpenTrace[]): void {
    if (traces.length === 0) return;
    const items: number[][] = this.pool.map(() => []);
    for (const t of traces) {
      const slot = this.nextSlot++;
      if (t.parts.length === 1) {
        const [block, piece] = t.parts[0] as [number, number];
        items[this.blockWorker[block] as number]!.push(block, piece, slot, 0);
        continue;
      }
      this.assemblies.set(slot, { traceId: t.traceId, parts: t.parts.map(() => undefined), missing: t.parts.length });
      t.parts.forEach(([block, piece], k) => items[this.blockWorker[block] as number]!.push(block, piece, slot, k + 1));
    }
    items.forEach((list, w) => {
      if (list.length > 0) this.pool[w]!.postMessage({ t: 'run', items: list });
    });
  }

  /** A part of a trace whose pieces lie in several blocks; the last to arrive completes it, run in this thread. */
  private addPart(slot: number, part: number, spans: SpanRecord[]): void {
    const a = this.assemblies.get(slot);
    if (a === undefined) return;
    a.parts[part] = spans;
    if (--a.missing > 0) return;
    this.assemblies.delete(slot);
    const trace: TraceRecord = { traceId: a.traceId, spans: sortSpans((a.parts as SpanRecord[][]).flat()) };
    void Promise.resolve()
      .then(() => this.fn(trace))
      .then(
        (r) => {
          this.results.set(slot, r);
          this.notify();
        },
        (err: unknown) => this.fail(err),
      );
  }
}
