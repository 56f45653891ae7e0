/**
 * The shape a document has across the traces of one input: where a trace holds a document only once and no schema was
 * recorded (a workflow's one structured handoff, a specialist's one tool call, under a producer that keeps neither
 * the tool definitions nor the request's response_format), the same document in the input's other traces is the
 * reference — a file exported by one system holds many runs of the same workflows.
 *
 *   trace ─▶ diagnose (rules, on any thread) ─┬─▶ Diagnosis (or its JSON line)
 *                                             └─▶ traceDocuments: the undeclared documents, as plain data
 *   in input order, on one thread:  ShapeMemory.add(outcome, documents) ─▶ the outcomes now final, in input order
 *       every trace's documents are remembered (not those of a call its own rules found faulty)
 *       a rules' `none` with a document too few others can judge yet waits (FLEET_WAIT_TRACES at most), then:
 *       a document breaking what the other instances agree on ─▶ `schema` at that call
 *
 * Agreement is counted, not assumed: a key path the other instances carry (all of them; one odd instance from five
 * on), a JSON type they give it, a top-level key outside a fixed key set. Fed in input order, so the result is the
 * same on worker threads and on one. A fault found in the trace stands. Memory is bounded (FLEET_MAX_KINDS,
 * FLEET_MAX_SHAPES, the waiting outcomes).
 */
import { sha256Hex16 } from '../hash';
import { viewTrace } from '../traces/view';
import type { TraceRecord } from '../traces/model';
import { describeBreaks, documentLabel, otherInstances, parentPath, shapeDocuments } from './consensus-shape';
import type { ShapeBreaks } from './consensus-shape';
import { diagnosisLine } from '../report/diagnoses';
import { describeFault } from './summary';
import {
  CONSENSUS_MIN_OTHERS,
  FLEET_CONFIDENCE,
  FLEET_MAX_KINDS,
  FLEET_MAX_SHAPES,
  FLEET_MIN_INSTANCES,
  FLEET_ODD_FROM,
  FLEET_ODD_SHARE,
  FLEET_WAIT_TRACES,
} from './thresholds';
import type { Diagnosis, DiagnosisText } from './types';

/** A document of a trace with no declared schema, as plain data (it crosses from a worker thread). */
export interface TraceDocument {
  /** What makes instances of one document across traces: the agent and the tool, or the agent and a digest of its
   * system instructions. */
  kind: string;
  /** How it is named in evidence ("the structured answer", "the arguments of tool call 1 (lookup)"). */
  label: string;
  /** Its shape as one string: each key path and the JSON type of its value (array elements left out: their number and
   * keys vary with the data), `path` U+0000 `type`, entries joined by U+0001. One string crosses threads cheaply, and
   * the instances of a document mostly share it: the memory counts shapes, and reads one's entries once. */
  shape: string;
  /** Its own trace could not judge it (fewer than CONSENSUS_MIN_OTHERS other instances there). */
  unjudged: boolean;
  spanId: string;
  step: number;
  spanName: string;
  agent: string | null;
  operation: string;
}

/**
 * The trace's undeclared documents (the trace's view is the one its diagnosis built), for the memory across traces.
 * None for the LLM diagnoser's traces (the memory revisits only the rules'), and none when reading them failed: the
 * diagnosis stands without that judgement. Never throws.
 */
export function traceDocuments(trace: TraceRecord, diagnoser = 'rule'): TraceDocument[] {
  if (diagnoser === 'llm') return [];
  try {
    return readDocuments(trace);
  } catch {
    return [];
  }
}

function readDocuments(trace: TraceRecord): TraceDocument[] {
  const view = viewTrace(trace);
  const out: TraceDocument[] = [];
  const digests = new Map<string, string>(); // a trace's calls of one agent share their instructions
  const digest = (system: string): string => {
    let d = digests.get(system);
    if (d === undefined) digests.set(system, (d = sha256Hex16(system)));
    return d;
  };
  for (const doc of shapeDocuments(view)) {
    if (doc.declared) continue;
    const agent = doc.call.agent?.name ?? '';
    const entries: string[] = [];
    for (const [path, e] of doc.shape) if (path !== '$' && !path.includes('[]')) entries.push(`${path}\u0000${e.type}`);
    out.push({
      kind:
        doc.kind === 'arguments'
          ? `arguments\u0000${agent}\u0000${doc.name}`
          : `answer\u0000${agent}\u0000${digest(doc.call.system ?? '')}`,
      label: documentLabel(doc),
      shape: entries.join('\u0001'),
      unjudged: otherInstances(doc, view).length < CONSENSUS_MIN_OTHERS,
      spanId: doc.call.span.spanId,
      step: doc.call.step,
      spanName: doc.call.span.name,
      agent: doc.call.agent?.name ?? null,
      operation: doc.call.operation,
    });
  }
  return out;
}

/** The instances of one document kind: how many have each shape, and how many carry each path, with which type, and
 * each top-level key (null included). */
interface Tally {
  n: number;
  shapes: Map<string, { count: number; entries: ReadonlyMap<string, string> }>;
  carried: Map<string, number>;
  typed: Map<string, Map<string, number>>;
  top: Map<string, number>;
  /** More distinct shapes than FLEET_MAX_SHAPES: the keys are data, never judged. */
  keysAreData: boolean;
}

const entriesOf = (shape: string): Map<string, string> =>
  new Map(shape === '' ? [] : shape.split('\u0001').map((e) => e.split('\u0000') as [string, string]));

const isTop = (path: string): boolean => !path.includes('.');
const OTHERS = { all: 'the other instances carry', none: 'the other instances do not have' };

/** What the memory judges: a diagnosis, the JSON line of one, or a trace that could not be diagnosed. */
export type Outcome = Diagnosis | DiagnosisText | { error: string };

interface Waiting<R, T> {
  result: R;
  tag: T;
  documents: readonly TraceDocument[];
  /** A `none` of the rules with a document its trace could not judge: the memory may still change it. */
  open: boolean;
}

/**
 * The documents of the traces seen, and the judgement of each trace against the others. A trace the memory may
 * change waits until every document it could not judge has FLEET_MIN_INSTANCES other instances, or `wait` traces
 * came after it, or the input ends (end()): then it is judged against every other instance seen, before it and
 * after. Outcomes come out in the order they went in, each with its tag.
 */
export class ShapeMemory<R extends Outcome, T = undefined> {
  private readonly tallies = new Map<string, Tally>();
  private readonly queue: Waiting<R, T>[] = [];

  /** `wait`: how many later traces a trace may wait for (0: judged at once, against the traces before it). */
  constructor(private readonly wait: number = FLEET_WAIT_TRACES) {}

  /** One trace's outcome and documents, in input order; returns the outcomes now final, in input order. */
  add(result: R, documents: readonly TraceDocument[], tag: T): Array<{ result: R; tag: T }> {
    this.queue.push({ result, tag, documents, open: this.take(result, documents) });
    return this.release(false);
  }

  /** The input ended: every outcome still waiting, judged against all that was seen. */
  end(): Array<{ result: R; tag: T }> {
    return this.release(true);
  }

  /** Remember the trace's documents; whether the memory may still change its outcome. */
  private take(result: R, documents: readonly TraceDocument[]): boolean {
    if (documents.length === 0 || 'error' in result) return false;
    const text = 'line' in result ? (result as DiagnosisText) : undefined;
    const d = text === undefined ? (result as Diagnosis) : undefined;
    const faulty = text !== undefined ? text.faulty : d!.faultType !== 'none';
    if (faulty) {
      this.remember(documents, text?.spanId ?? d?.spanId ?? undefined); // not the faulty call's: known bad
      return false;
    }
    // Remembered whether it breaks or not: the memory cannot tell a rare fault from a key the model leaves out now
    // and then, and an omission it never remembered could not become optional (every later one would be named).
    this.remember(documents, undefined);
    return (d === undefined || d.diagnoser === 'rule' || d.diagnoser === 'hybrid') && documents.some((x) => x.unjudged);
  }

  private release(ending: boolean): Array<{ result: R; tag: T }> {
    const out: Array<{ result: R; tag: T }> = [];
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      if (head.open && !ending && this.queue.length <= this.wait && !this.ready(head.documents)) break;
      this.queue.shift();
      out.push({ result: head.open ? this.judge(head.result, head.documents) : head.result, tag: head.tag });
    }
    return out;
  }

  /** Every unjudged document has enough other instances to be judged (or never will be: its keys are data). */
  private ready(documents: readonly TraceDocument[]): boolean {
    return documents.every((doc) => {
      const t = this.tallies.get(doc.kind);
      return !doc.unjudged || t === undefined || t.keysAreData || t.n - 1 >= FLEET_MIN_INSTANCES;
    });
  }

  /** A `none` whose unjudged document breaks what the other instances agree on becomes `schema` at that call. */
  private judge(result: R, documents: readonly TraceDocument[]): R {
    const breach = this.firstBreach(documents);
    if (breach === undefined) return result;
    if (!('line' in result)) return upgrade(result as Diagnosis, breach.doc, breach.evidence) as R;
    // A line made on a worker (diagnosisLine's JSON of the diagnosis): read back, changed, made again.
    const text = result as DiagnosisText;
    const up = upgrade(JSON.parse(text.line) as Diagnosis, breach.doc, breach.evidence);
    return { ...text, line: diagnosisLine(up), faulty: true, spanId: up.spanId } as R;
  }

  /** The first of the trace's unjudged documents that breaks what the other instances agree on, in words. */
  private firstBreach(documents: readonly TraceDocument[]): { doc: TraceDocument; evidence: string } | undefined {
    for (const doc of documents) {
      if (!doc.unjudged) continue;
      const tally = this.tallies.get(doc.kind);
      if (tally === undefined || tally.keysAreData) continue;
      const n = tally.n - 1; // the others: not itself (remembered when it came in)
      const why = n >= FLEET_MIN_INSTANCES ? describeBreaks(breaks(doc, tally), OTHERS) : undefined;
      if (why !== undefined)
        return {
          doc,
          evidence: `${doc.label} ${why} (${n} instances in the other traces of the input; no schema was recorded)`,
        };
    }
    return undefined;
  }

  private remember(documents: readonly TraceDocument[], faultySpan: string | undefined): void {
    for (const doc of documents) {
      if (doc.spanId === faultySpan) continue;
      let t = this.tallies.get(doc.kind);
      if (t === undefined) {
        if (this.tallies.size >= FLEET_MAX_KINDS) continue;
        t = { n: 0, shapes: new Map(), carried: new Map(), typed: new Map(), top: new Map(), keysAreData: false };
        this.tallies.set(doc.kind, t);
      }
      t.n++;
      if (!t.keysAreData) count(t, doc.shape);
    }
  }
}

/** One more instance of `shape` in the tally (its entries read once per distinct shape). */
function count(t: Tally, shape: string): void {
  let s = t.shapes.get(shape);
  if (s === undefined) {
    if (t.shapes.size >= FLEET_MAX_SHAPES) {
      t.keysAreData = true;
      t.shapes.clear();
      t.carried.clear();
      t.typed.clear();
      t.top.clear();
      return;
    }
    t.shapes.set(shape, (s = { count: 0, entries: entriesOf(shape) }));
  }
  s.count++;
  const bump = (m: Map<string, number>, key: string): void => void m.set(key, (m.get(key) ?? 0) + 1);
  for (const [path, type] of s.entries) {
    if (isTop(path)) bump(t.top, path);
    if (type === 'null') continue;
    bump(t.carried, path);
    let types = t.typed.get(path);
    if (types === undefined) t.typed.set(path, (types = new Map()));
    bump(types, type);
  }
}

/** How `doc` (one of the tally's instances) breaks what nearly all of the others agree on. */
function breaks(doc: TraceDocument, t: Tally): ShapeBreaks {
  const out: ShapeBreaks = { missing: [], extra: [], retyped: [] };
  const n = t.n - 1;
  const need = n - (n < FLEET_ODD_FROM ? 0 : Math.max(1, Math.floor(n * FLEET_ODD_SHARE)));
  const own = t.shapes.get(doc.shape);
  if (own === undefined) return out;
  // Most instances share one shape: when enough others have exactly this one, nothing they agree on (more than half
  // of them) can be missing, retyped or new here.
  if (own.count - 1 >= need) return out;
  const mine = own.entries;
  // The counts are of every instance; this one's own is taken out where it counted (a path it carries, a type it gives).
  for (const [path, c] of t.carried) {
    if (c < need || mine.has(path)) continue;
    const parent = parentPath(path);
    if (parent === '' || mine.has(parent)) out.missing.push(path);
  }
  for (const [path, type] of mine) {
    if (type === 'null') continue;
    for (const [usual, c] of t.typed.get(path) ?? [])
      if (c >= need && usual !== type) out.retyped.push(`${path} (${usual} elsewhere, ${type} here)`);
  }
  // A fixed key set: every top-level key seen is carried by nearly all instances, or is one of the few odd keys that
  // together appeared no more often than the odd few instances may (keys that are data appear once per instance).
  const others = (path: string, c: number): number => c - (mine.has(path) ? 1 : 0);
  const odd = n - need;
  let rare = 0;
  for (const [path, c] of t.top) if (others(path, c) < need) rare += others(path, c);
  if (rare <= odd)
    for (const [path, type] of mine)
      if (isTop(path) && type !== 'null' && others(path, t.top.get(path) ?? 0) < need) out.extra.push(path);
  return out;
}

function upgrade(d: Diagnosis, doc: TraceDocument, evidence: string): Diagnosis {
  const out: Diagnosis = {
    ...d,
    faultType: 'schema',
    spanId: doc.spanId,
    step: doc.step,
    stepKind: 'llm',
    confidence: FLEET_CONFIDENCE,
    evidence: [evidence, ...d.evidence.filter((e) => e.startsWith('weak '))].slice(0, 4),
    agent: doc.agent,
    spanName: doc.spanName,
    operation: doc.operation,
  };
  out.summary = describeFault(out, evidence);
  return out;
}

/**
 * Every item of `source` through one memory, in order: each outcome as it becomes final, the waiting ones when the
 * source ends — or, before an error of the source goes on, what had been diagnosed (nothing is lost with it).
 */
export async function* inInputOrder<I, R extends Outcome, T>(
  source: AsyncIterable<I>,
  outcomeOf: (item: I) => { result: R; documents: readonly TraceDocument[]; tag: T },
  memory: ShapeMemory<R, T> = new ShapeMemory<R, T>(),
): AsyncGenerator<{ result: R; tag: T }> {
  try {
    for await (const item of source) {
      const { result, documents, tag } = outcomeOf(item);
      yield* memory.add(result, documents, tag);
    }
  } catch (err) {
    yield* memory.end();
    throw err;
  }
  yield* memory.end();
}
