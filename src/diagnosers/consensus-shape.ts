/**
 * The run's own consensus shape: where no declared schema exists, the other instances of the same document in the
 * trace — the same tool's other calls, the same agent's other structured answers, the same edge's other messages —
 * are the reference. A document breaks their shape where it lacks a key every other instance carries, carries a key
 * none of them has, or gives a key a value of another JSON type than all of them do. Only unanimity counts: a key
 * some instances carry and others not is optional; `null` is compatible with absent; integers and decimals are one
 * type (`num`); array lengths and the elements' keys are not judged. Read from the content-free shapes of
 * instrumentation/agents/shape.ts, one definition of a value's kind for messages and calls alike.
 */
import { payloadTypes, type TypeEntry } from '../../instrumentation/agents/shape';
import { argumentsValue } from '../../detectors/text';
import type { LlmCall, TraceView } from '../traces/view';
import type { Signal } from './signals';
import { ObjectMemo } from '../memo';
import { CONSENSUS_CONFIDENCE, CONSENSUS_MIN_OTHERS } from './thresholds';

export interface ShapeBreaks {
  /** Key paths every other instance carries (not null) that this one lacks. */
  missing: string[];
  /** Top-level keys this one carries (not null) that no other instance has. */
  extra: string[];
  /** Key paths whose value is of another JSON type here than in every other instance (`path (num elsewhere, str here)`). */
  retyped: string[];
}

/** The path of a shape entry's parent ('' at the top level). */
export function parentPath(path: string): string {
  const i = Math.max(path.lastIndexOf('.'), path.endsWith('[]') ? path.length - 2 : -1);
  return i <= 0 ? '' : path.slice(0, i);
}

const topLevel = (path: string): boolean => path !== '$' && !path.includes('.') && !path.includes('[');

/** How `mine` breaks the shape all of `others` agree on (each list empty when it does not). */
export function consensusBreaks(
  mine: ReadonlyMap<string, TypeEntry>,
  others: readonly ReadonlyMap<string, TypeEntry>[],
): ShapeBreaks {
  const out: ShapeBreaks = { missing: [], extra: [], retyped: [] };
  const first = others[0];
  if (first === undefined) return out;
  const carried = (s: ReadonlyMap<string, TypeEntry>, path: string): TypeEntry | undefined => {
    const e = s.get(path);
    return e === undefined || e.type === 'null' ? undefined : e;
  };
  for (const [path, e] of first) {
    if (path === '$' || path.includes('[]') || e.type === 'null') continue;
    const m = mine.get(path);
    if (m === undefined) {
      const parent = parentPath(path);
      if ((parent === '' || mine.has(parent)) && others.every((s) => carried(s, path) !== undefined))
        out.missing.push(path);
      continue;
    }
    if (m.type === 'null' || m.type === e.type) continue;
    if (others.every((s) => carried(s, path)?.type === e.type))
      out.retyped.push(`${path} (${e.type} elsewhere, ${m.type} here)`);
  }
  for (const [path, m] of mine)
    if (topLevel(path) && m.type !== 'null' && !others.some((s) => s.has(path))) out.extra.push(path);
  return out;
}

/** A JSON object (not an array, not null), else undefined. */
function objectOf(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function structuredAnswer(call: LlmCall): Record<string, unknown> | undefined {
  if (!call.hasContent || call.toolCalls.length > 0 || call.failure) return undefined;
  const t = call.text.trim();
  if (!t.startsWith('{')) return undefined;
  try {
    return objectOf(JSON.parse(t));
  } catch {
    return undefined;
  }
}

const nonEmpty = (o: Record<string, unknown> | undefined): o is Record<string, unknown> =>
  o !== undefined && Object.keys(o).length > 0;

/**
 * One document of a trace whose shape can be judged against other instances of it: a tool call's arguments (a
 * non-empty JSON object) or a structured answer (a JSON object as the whole text, no tool call). Made once per trace.
 */
export interface ShapeDocument {
  call: LlmCall;
  kind: 'arguments' | 'answer';
  /** The tool call's index in the call (arguments); -1 for an answer. */
  index: number;
  /** The tool's name (arguments) or the agent's ('' when the trace names none). */
  name: string;
  /** A declared schema covers it (the call's definition of that tool, the request's response_format). */
  declared: boolean;
  /** The JSON type of each of its key paths (instrumentation/agents/shape.ts payloadTypes), made on first read. */
  readonly shape: ReadonlyMap<string, TypeEntry>;
}

function shapeDocument(
  call: LlmCall,
  kind: ShapeDocument['kind'],
  index: number,
  name: string,
  declared: boolean,
  value: Record<string, unknown>,
): ShapeDocument {
  let shape: ReadonlyMap<string, TypeEntry> | undefined;
  return {
    call,
    kind,
    index,
    name,
    declared,
    get shape() {
      return (shape ??= payloadTypes(value));
    },
  };
}

const documentsOf = new ObjectMemo<TraceView, ShapeDocument[]>('faultline.shapeDocuments');

/** The trace's documents, in call order (each parsed once: every call is compared with every other). */
export function shapeDocuments(view: TraceView): ShapeDocument[] {
  let docs = documentsOf.get(view);
  if (docs !== undefined) return docs;
  docs = [];
  for (const call of view.llm) {
    if (!call.hasContent || call.failure) continue;
    call.toolCalls.forEach((tc, index) => {
      const v = objectOf(argumentsValue(tc));
      if (nonEmpty(v))
        docs!.push(
          shapeDocument(
            call,
            'arguments',
            index,
            tc.name,
            call.tools.some((t) => t.name === tc.name),
            v,
          ),
        );
    });
    const answer = structuredAnswer(call);
    if (nonEmpty(answer))
      docs.push(shapeDocument(call, 'answer', -1, call.agent?.name ?? '', call.responseSchema !== undefined, answer));
  }
  documentsOf.set(view, docs);
  return docs;
}

/**
 * The trace's other instances of `doc`: the same tool's other calls (declared or not), or the same agent's other
 * undeclared answers to the same system instructions.
 */
export function otherInstances(doc: ShapeDocument, view: TraceView): ShapeDocument[] {
  return shapeDocuments(view).filter(
    (o) =>
      o !== doc &&
      o.kind === doc.kind &&
      o.name === doc.name &&
      (doc.kind === 'arguments' || (!o.declared && o.call !== doc.call && o.call.system === doc.call.system)),
  );
}

/** How a document is named in evidence. */
export function documentLabel(doc: ShapeDocument): string {
  return doc.kind === 'arguments'
    ? `the arguments of tool call ${doc.index + 1} (${doc.name})`
    : 'the structured answer';
}

/** The breaks in words, or undefined when there are none; `others` names the instances they were judged against. */
export function describeBreaks(
  b: ShapeBreaks,
  others: { all: string; none: string } = { all: 'every other carries', none: 'none of the others has' },
): string | undefined {
  const list = (xs: string[]): string => xs.slice(0, 3).join(', ') + (xs.length > 3 ? `, … (${xs.length})` : '');
  const parts = [
    b.missing.length > 0 ? `lacks ${list(b.missing)}, which ${others.all}` : '',
    b.retyped.length > 0 ? `gives ${list(b.retyped)}` : '',
    b.extra.length > 0 ? `carries ${list(b.extra)}, which ${others.none}` : '',
  ].filter((p) => p !== '');
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/**
 * Where the producer recorded no schema, the call's tool-call arguments against the same tool's other calls in the
 * trace, and its structured answer (a JSON object, no tool call) against the same agent's other answers to the same
 * instructions: `schema`, weaker than a declared schema's breach, with at least CONSENSUS_MIN_OTHERS other instances.
 * A declared schema (the tool's definition, the request's response_format) wins: the rules check against it instead.
 * Empty arguments are the empty-arguments rule's (`error`), not a shape.
 */
export function consensusSignals(call: LlmCall, view: TraceView): Signal[] {
  if (!call.hasContent || call.failure) return [];
  const out: Signal[] = [];
  for (const doc of shapeDocuments(view)) {
    if (doc.call !== call || doc.declared) continue;
    const others = otherInstances(doc, view);
    if (others.length < CONSENSUS_MIN_OTHERS) continue;
    const why = describeBreaks(
      consensusBreaks(
        doc.shape,
        others.map((o) => o.shape),
      ),
    );
    if (why)
      out.push({
        faultType: 'schema',
        confidence: CONSENSUS_CONFIDENCE,
        evidence: `${documentLabel(doc)} ${why} (against the shape its ${others.length} other instances in this trace agree on; no schema was recorded)`,
        source: 'metadata',
      });
  }
  return out;
}
