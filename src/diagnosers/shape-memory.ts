/**
 * The shape a document has across the traces of one input: where a trace holds a document only once and no schema was
 * recorded (a workflow's one structured handoff, a specialist's one tool call, under a producer that keeps neither
 * the tool definitions nor the request's response_format), the same document in the traces read before it is the
 * reference — a file exported by one system holds many runs of the same workflows.
 *
 *   trace ─▶ diagnose (rules, on any thread) ─┬─▶ Diagnosis
 *                                             └─▶ traceDocuments: the undeclared documents, as plain data
 *   in input order, on one thread:  ShapeMemory.judge(diagnosis, documents)
 *       a `none` whose document breaks what the earlier instances agree on ─▶ `schema` at that call
 *       then the documents are remembered (not those of a call the trace's own rules found faulty)
 *
 * Agreement is counted, not assumed: a key path the earlier instances carry (all but the odd one, FLEET_ODD_FROM), a JSON
 * type they give it, a top-level key only the odd few have where every key is carried by nearly all or by those few
 * (a fixed key set). Judged in input order, so the result is the same on worker threads and on one, and a trace never waits for
 * the ones after it; the first instances of each document are not judged. Only the rule and hybrid diagnosers' `none`
 * are revisited: a fault found in the trace stands. Memory is bounded (FLEET_MAX_KINDS, FLEET_MAX_PATHS).
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
  FLEET_MAX_PATHS,
  FLEET_MIN_INSTANCES,
  FLEET_ODD_FROM,
  FLEET_ODD_SHARE,
} from './thresholds';
import type { Diagnosis, DiagnosisText } from './types';

/** A document of a trace with no declared schema, as plain data (it crosses from a worker thread). */
export interface TraceDocument {
  /** What makes instances of one document across traces: the agent and the tool, or the agent and a digest of its
   * system instructions. */
  kind: string;
  /** How it is named in evidence ("the structured answer", "the arguments of tool call 1 (lookup)"). */
  label: string;
  /** Key path and JSON type of each value (array elements left out: their number and keys vary with the data). */
  entries: Array<[path: string, type: string]>;
  /** Its own trace could not judge it (fewer than CONSENSUS_MIN_OTHERS other instances there). */
  unjudged: boolean;
  spanId: string;
  step: number;
  spanName: string;
  agent: string | null;
  operation: string;
}

/** The trace's undeclared documents (the trace's view is the one its diagnosis built). */
export function traceDocuments(trace: TraceRecord): TraceDocument[] {
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
    const entries: Array<[string, string]> = [];
    for (const [path, e] of doc.shape) if (path !== '$' && !path.includes('[]')) entries.push([path, e.type]);
    out.push({
      kind:
        doc.kind === 'arguments'
          ? `arguments\u0000${agent}\u0000${doc.name}`
          : `answer\u0000${agent}\u0000${digest(doc.call.system ?? '')}`,
      label: documentLabel(doc),
      entries,
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

/** How many earlier instances carried each path, with which type, and each top-level key (null included). */
interface Tally {
  n: number;
  carried: Map<string, number>;
  typed: Map<string, Map<string, number>>;
  top: Map<string, number>;
  /** More distinct paths than FLEET_MAX_PATHS: the keys are data, never judged. */
  open: boolean;
}

const isTop = (path: string): boolean => !path.includes('.');
const EARLIER = { all: 'the earlier instances carry', none: 'the earlier instances do not have' };

/** What earlier traces' documents looked like, and the judgement of each new trace against it. */
export class ShapeMemory {
  private readonly tallies = new Map<string, Tally>();

  /**
   * `result` judged against the traces given before it, then its documents remembered. A `none` diagnosis whose
   * unjudged document breaks the earlier instances' agreement becomes `schema` at that call; anything else is
   * returned as it is.
   */
  judge<R extends Diagnosis | DiagnosisText | { error: string }>(result: R, documents: readonly TraceDocument[]): R {
    if (documents.length === 0 || 'error' in result) return result;
    const text = 'line' in result ? (result as DiagnosisText) : undefined;
    const d = text === undefined ? (result as Diagnosis) : undefined;
    const faulty = text !== undefined ? text.faulty : d!.faultType !== 'none';
    const diagnoser = d?.diagnoser;
    if (faulty || (diagnoser !== undefined && diagnoser !== 'rule' && diagnoser !== 'hybrid')) {
      this.remember(documents, faulty ? (text?.spanId ?? d?.spanId ?? undefined) : undefined);
      return result;
    }
    // Remembered whether it breaks or not: the memory cannot tell a rare fault from a key the model leaves out now
    // and then, and an omission it never remembered could not become optional (every later one would be named).
    const breach = this.firstBreach(documents);
    this.remember(documents, undefined);
    if (breach === undefined) return result;
    if (d !== undefined) return upgrade(d, breach.doc, breach.evidence) as R;
    // A line made on a worker (diagnosisLine's JSON of the diagnosis): read back, changed, made again.
    const up = upgrade(JSON.parse(text!.line) as Diagnosis, breach.doc, breach.evidence);
    return { ...text!, line: diagnosisLine(up), faulty: true, spanId: up.spanId } as R;
  }

  /** The first of the trace's unjudged documents that breaks what the earlier instances agree on, in words. */
  private firstBreach(documents: readonly TraceDocument[]): { doc: TraceDocument; evidence: string } | undefined {
    for (const doc of documents) {
      if (!doc.unjudged) continue;
      const tally = this.tallies.get(doc.kind);
      if (tally === undefined || tally.open || tally.n < FLEET_MIN_INSTANCES) continue;
      const why = describeBreaks(breaks(doc, tally), EARLIER);
      if (why !== undefined)
        return {
          doc,
          evidence: `${doc.label} ${why} (${tally.n} instances in the traces before this one; no schema was recorded)`,
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
        t = { n: 0, carried: new Map(), typed: new Map(), top: new Map(), open: false };
        this.tallies.set(doc.kind, t);
      }
      t.n++;
      if (t.open) continue;
      for (const [path, type] of doc.entries) {
        if (isTop(path)) t.top.set(path, (t.top.get(path) ?? 0) + 1);
        if (type === 'null') continue;
        t.carried.set(path, (t.carried.get(path) ?? 0) + 1);
        let types = t.typed.get(path);
        if (types === undefined) t.typed.set(path, (types = new Map()));
        types.set(type, (types.get(type) ?? 0) + 1);
      }
      if (t.carried.size > FLEET_MAX_PATHS) {
        t.open = true;
        t.carried.clear();
        t.typed.clear();
        t.top.clear();
      }
    }
  }
}

/** How `doc` breaks what nearly all of the tally's instances agree on. */
function breaks(doc: TraceDocument, t: Tally): ShapeBreaks {
  const need = t.n - (t.n < FLEET_ODD_FROM ? 0 : Math.max(1, Math.floor(t.n * FLEET_ODD_SHARE)));
  const mine = new Map(doc.entries);
  const out: ShapeBreaks = { missing: [], extra: [], retyped: [] };
  for (const [path, count] of t.carried) {
    if (count < need || mine.has(path)) continue;
    const parent = parentPath(path);
    if (parent === '' || mine.has(parent)) out.missing.push(path);
  }
  for (const [path, type] of mine) {
    if (type === 'null') continue;
    for (const [usual, count] of t.typed.get(path) ?? [])
      if (count >= need && usual !== type) out.retyped.push(`${path} (${usual} elsewhere, ${type} here)`);
  }
  // A fixed key set: every top-level key seen is carried by nearly all instances, or is one of the few odd keys that
  // together appeared no more often than the odd few instances may (keys that are data appear once per instance).
  const odd = t.n - need;
  let rare = 0;
  for (const count of t.top.values()) if (count < need) rare += count;
  if (rare <= odd)
    for (const [path, type] of mine)
      if (isTop(path) && type !== 'null' && (t.top.get(path) ?? 0) < need) out.extra.push(path);
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
