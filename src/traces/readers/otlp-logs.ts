/**
 * OTLP log records beside the traces (`{resourceLogs:[{resource, scopeLogs:[{scope, logRecords}]}]}`, as one
 * OTLP/JSON document or as JSON lines — the OTel Collector's file exporter, an OTLP/HTTP request body), joined to
 * their spans by trace and span id. Producers that emit message content as log records
 * (`@opentelemetry/instrumentation-openai`: `gen_ai.user.message`, `gen_ai.choice`, …) are then read exactly like
 * producers that put it on span events: each record becomes a `SpanEventRecord` of its span, its body kept as
 * plain JSON data.
 *
 * `readTraces` partitions its inputs with `isLogsFile`, reads the logs files first (`LogJoin.readFile`), and attaches
 * the records to each trace as it is emitted (`LogJoin.attach`). Records are held until their trace is read, so the
 * memory is that of the logs, not of the traces; records without a span id cannot be joined and are skipped.
 */
import { createInterface } from 'node:readline';
import type { SpanEventRecord, TraceRecord } from '../model';
import { TraceDataError, anyValuePlain, isRecord, keyValuesToAttrs, nanosToMs, normId } from '../normalize';
import { openSource, type Source } from '../source';
import { sniff as sniffLines } from './jsonl';

/** Whether a source holds OTLP logs: its first document (or first JSON line) has `resourceLogs` and no spans. */
export function sniffLogs(src: Source): boolean {
  const text = src.head
    .toString('utf8', 0, Math.min(src.head.length, 8192))
    .replace(/^\uFEFF/, '')
    .trimStart();
  if (text[0] !== '{') return false;
  const logs = text.indexOf('"resourceLogs"');
  if (logs < 0) return false;
  const spans = text.indexOf('"resourceSpans"');
  return spans < 0 || spans > logs;
}

export async function isLogsFile(file: string): Promise<boolean> {
  try {
    return sniffLogs(await openSource(file));
  } catch {
    return false; // the trace reader reports the problem with the file
  }
}

function key(traceId: string, spanId: string): string {
  return `${traceId}/${spanId}`;
}

/** One OTLP LogRecord → the event it is on its span, or undefined when it names no span. */
export function logRecordEvent(
  rec: unknown,
  path: string,
): { traceId: string; spanId: string; event: SpanEventRecord } | undefined {
  if (!isRecord(rec)) throw new TraceDataError(path, 'expected a log record object');
  const traceId = normId(rec.traceId, 16, `${path}.traceId`);
  const spanId = normId(rec.spanId, 8, `${path}.spanId`);
  if (traceId === undefined || spanId === undefined || /^0+$/.test(spanId)) return undefined;
  const attributes = keyValuesToAttrs(rec.attributes, `${path}.attributes`);
  const named = typeof rec.eventName === 'string' && rec.eventName !== '' ? rec.eventName : attributes['event.name'];
  const time =
    nanosToMs(rec.timeUnixNano, `${path}.timeUnixNano`) ||
    nanosToMs(rec.observedTimeUnixNano, `${path}.observedTimeUnixNano`);
  const event: SpanEventRecord = { name: typeof named === 'string' ? named : 'log', time, attributes };
  if (rec.body !== undefined && rec.body !== null) {
    const body = anyValuePlain(rec.body, `${path}.body`);
    if (body !== null && body !== undefined) event.body = body;
  }
  return { traceId, spanId, event };
}

/** Log records of one parsed document (LogsData / ExportLogsServiceRequest). */
export function* logEventsOfDocument(
  doc: unknown,
  base = '',
): Generator<{ traceId: string; spanId: string; event: SpanEventRecord }> {
  if (!isRecord(doc)) throw new TraceDataError(base || '$', 'expected an OTLP logs object');
  const rls = doc.resourceLogs;
  if (rls === undefined) return;
  if (!Array.isArray(rls)) throw new TraceDataError(`${base}resourceLogs`, 'expected a list');
  for (let i = 0; i < rls.length; i++) {
    const rl: unknown = rls[i];
    const sls = isRecord(rl) ? (rl.scopeLogs ?? rl.instrumentationLibraryLogs) : undefined;
    if (!Array.isArray(sls)) continue;
    for (let j = 0; j < sls.length; j++) {
      const sl: unknown = sls[j];
      const recs = isRecord(sl) ? sl.logRecords : undefined;
      if (!Array.isArray(recs)) continue;
      for (let k = 0; k < recs.length; k++) {
        const e = logRecordEvent(recs[k], `${base}resourceLogs[${i}].scopeLogs[${j}].logRecords[${k}]`);
        if (e) yield e;
      }
    }
  }
}

/** Log records waiting for their spans, attached as events when the trace is read. */
export class LogJoin {
  private readonly pending = new Map<string, SpanEventRecord[]>();
  private records = 0;

  get size(): number {
    return this.records;
  }

  add(traceId: string, spanId: string, event: SpanEventRecord): void {
    const k = key(traceId, spanId);
    const list = this.pending.get(k);
    if (list) list.push(event);
    else this.pending.set(k, [event]);
    this.records++;
  }

  /**
   * Read a logs file (OTLP/JSON document or JSON lines, gzip or not). Problems are TraceDataErrors naming the place;
   * with `onLineError`, a bad JSON line is reported and the next lines are still read (as for trace files).
   */
  async readFile(file: string, onLineError?: (err: TraceDataError) => void): Promise<void> {
    const src = await openSource(file);
    // One export per line (instrumentation-openai's batch exporter, the collector), by content as for trace files.
    if (sniffLines(src.head.toString('utf8'), src.nextLineStart)) {
      let line = 0;
      const lines = createInterface({ input: src.open(), crlfDelay: Infinity });
      for await (const raw of lines) {
        line++;
        const l = line === 1 ? raw.replace(/^\uFEFF/, '') : raw;
        if (!/\S/.test(l)) continue;
        try {
          this.addDocument(parse(l, `line ${line}`), `line ${line}: `);
        } catch (err) {
          if (onLineError === undefined || !(err instanceof TraceDataError)) throw err;
          onLineError(err);
        }
      }
      return;
    }
    const parts: Buffer[] = [];
    for await (const c of src.open()) parts.push(c as Buffer);
    this.addDocument(
      parse(
        Buffer.concat(parts)
          .toString('utf8')
          .replace(/^\uFEFF/, ''),
        '',
      ),
      '',
    );
  }

  private addDocument(doc: unknown, where: string): void {
    try {
      for (const e of logEventsOfDocument(doc)) this.add(e.traceId, e.spanId, e.event);
    } catch (err) {
      if (err instanceof TraceDataError) throw new TraceDataError(`${where}${err.path}`, err.problem);
      throw err;
    }
  }

  /** The trace with its log records joined to their spans as events (in time order); returns the same object. */
  attach(trace: TraceRecord): TraceRecord {
    if (this.pending.size === 0) return trace;
    for (const span of trace.spans) {
      const k = key(span.traceId, span.spanId);
      const events = this.pending.get(k);
      if (!events) continue;
      this.pending.delete(k);
      span.events = [...span.events, ...events].sort((a, b) => a.time - b.time);
    }
    return trace;
  }
}

function parse(text: string, where: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new TraceDataError(where, `invalid JSON: ${(err as Error).message}`);
  }
}

/** Split inputs into logs files and trace files (order kept), reading the logs into a join. */
export async function readLogFiles(
  paths: readonly string[],
  onError: (file: string, err: unknown) => void,
): Promise<{ join: LogJoin; traceFiles: string[] }> {
  const join = new LogJoin();
  const traceFiles: string[] = [];
  for (const file of paths) {
    if (!(await isLogsFile(file))) {
      traceFiles.push(file);
      continue;
    }
    try {
      await join.readFile(file, (err) => onError(file, err));
    } catch (err) {
      onError(file, err);
    }
  }
  return { join, traceFiles };
}
