/**
 * How a delivered message differs from a reference — the copy that was sent, the receiver's contract, the other
 * messages of the run — judged from the value changes themselves, never from key names:
 *
 *  - corrupt:  a value is no longer valid — garbled text (mis-decoded, control characters, symbol noise), a JSON
 *              string that no longer parses, a structured value (number, date, id, URL, …) that lost its format, a
 *              value cut short, or a payload that stopped being the structure it was;
 *  - schema:   keys renamed, a value's type changed (the same value as a string, a list around it), keys added;
 *  - partial:  keys gone, values emptied or lists shortened, the rest intact;
 *  - semantic: values changed to other valid values of the same type and format (another entity, another number).
 *
 * The same verdict comes from content (both copies captured), from the content-free shapes both ends record, or from
 * the older content-free change list of a handoff span, each as exact as its input allows.
 */
import {
  isStructuredFormat,
  parseShape,
  sameFormatFamily,
  stringFormat,
  type ShapeEntry,
} from '../../instrumentation/agents/shape';
import { canonicalJson } from '../../instrumentation/agents/message';
import { consensusBreaks, parentPath } from './consensus-shape';

export type ChangeType = 'corrupt' | 'schema' | 'partial' | 'semantic';

export interface ChangeVerdict {
  faultType: ChangeType;
  confidence: number;
  evidence: string;
}

/** What differs, by kind, as key paths. */
interface Diff {
  removed: string[];
  added: string[];
  /** A removed key's value reappears under an added key of the same object. */
  moved: string[];
  retyped: string[];
  corrupt: string[];
  emptied: string[];
  shortened: string[];
  changed: string[];
}

const newDiff = (): Diff => ({
  removed: [],
  added: [],
  moved: [],
  retyped: [],
  corrupt: [],
  emptied: [],
  shortened: [],
  changed: [],
});
const MAX_PATHS = 32;
const MAX_DEPTH = 12;

function kindOf(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'arr';
  if (typeof v === 'number') return 'num';
  if (typeof v === 'string') return 'str';
  if (typeof v === 'boolean') return 'bool';
  return typeof v === 'object' ? 'obj' : 'null';
}

function same(a: unknown, b: unknown): boolean {
  return a === b || canonicalJson(a) === canonicalJson(b);
}

const at = (path: string): string => (path === '' ? '$' : path);
const join = (path: string, key: string): string => (path === '' ? key : `${path}.${key}`);
const add = (list: string[], path: string, why?: string): void => {
  if (list.length < MAX_PATHS) list.push(why === undefined ? at(path) : `${at(path)} (${why})`);
};

function parsedJson(s: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return undefined;
  }
}

/** A string value that changed: corrupt, emptied, or changed (semantic), or recursed into when both are JSON. */
function diffStrings(a: string, b: string, path: string, depth: number, d: Diff): void {
  const fa = stringFormat(a);
  const fb = stringFormat(b);
  if (fb === 'garbled' && fa !== 'garbled') return add(d.corrupt, path, 'garbled text');
  if (fb === 'broken_json') return add(d.corrupt, path, 'JSON text that no longer parses');
  if (fb === 'empty') return add(d.emptied, path);
  if (fa === 'json' && fb === 'json') {
    // JSON text inside the payload (a mirror of its fields, an embedded document) is a value of the message: another
    // valid document there is another value, whatever its own keys; only a value inside it that broke is corrupt.
    const inner = newDiff();
    diffValues(parsedJson(a), parsedJson(b), `${at(path)}{}`, depth + 1, inner);
    if (inner.corrupt.length > 0)
      for (const p of inner.corrupt) add(d.corrupt, p.replace(/ \(.*\)$/, ''), p.match(/\((.*)\)$/)?.[1]);
    else add(d.changed, path);
    return;
  }
  if (isStructuredFormat(fa) && !sameFormatFamily(fa, fb)) return add(d.corrupt, path, `no longer a ${fa} value`);
  if (b.length < a.length && a.startsWith(b) && b.length > 0)
    return add(d.corrupt, path, `cut to ${b.length} of ${a.length} characters`);
  add(d.changed, path);
}

function diffValues(a: unknown, b: unknown, path: string, depth: number, d: Diff): void {
  if (same(a, b)) return;
  const ka = kindOf(a);
  const kb = kindOf(b);
  if (ka !== kb) {
    if (kb === 'null') return add(d.emptied, path);
    if (ka === 'null') return add(d.changed, path);
    if (kb === 'str') {
      const s = b as string;
      const fb = stringFormat(s);
      if (fb === 'garbled') return add(d.corrupt, path, 'garbled text');
      if (fb === 'broken_json') return add(d.corrupt, path, 'JSON text that no longer parses');
      if ((ka === 'num' || ka === 'bool') && String(a) === s.trim())
        return add(d.retyped, path, `${ka} sent as a string`);
      if ((ka === 'obj' || ka === 'arr') && fb === 'json' && same(parsedJson(s), a))
        return add(d.retyped, path, `${ka === 'obj' ? 'object' : 'list'} sent as JSON text`);
      if (path === '' || ka === 'obj' || ka === 'arr')
        return add(
          d.corrupt,
          path,
          `${ka === 'obj' ? 'an object' : ka === 'arr' ? 'a list' : 'the payload'} became text`,
        );
      return add(d.retyped, path, `${ka} became a string`);
    }
    if (path === '' && (kb === 'num' || kb === 'bool')) return add(d.corrupt, path, 'the payload became a scalar');
    return add(d.retyped, path, `${ka} became ${kb}`);
  }
  if (depth >= MAX_DEPTH) return add(d.changed, path);
  switch (ka) {
    case 'str':
      return diffStrings(a as string, b as string, path, depth, d);
    case 'num':
    case 'bool':
      return add(d.changed, path);
    case 'arr': {
      const xa = a as unknown[];
      const xb = b as unknown[];
      const n = Math.min(xa.length, xb.length);
      if (xb.length < xa.length) {
        if (xb.length === 0) add(d.emptied, path);
        else add(d.shortened, path, `${xb.length} of ${xa.length} items`);
      } else if (xb.length > xa.length) {
        add(d.changed, path, `${xb.length} items, ${xa.length} sent`);
      }
      for (let i = 0; i < n; i++) diffValues(xa[i], xb[i], `${at(path)}[]`, depth + 1, d);
      return;
    }
    case 'obj': {
      const oa = a as Record<string, unknown>;
      const ob = b as Record<string, unknown>;
      const removed = Object.keys(oa).filter((k) => !(k in ob) && oa[k] !== undefined);
      const added = Object.keys(ob).filter((k) => !(k in oa) && ob[k] !== undefined);
      for (const k of removed) {
        const to = added.find((k2) => same(oa[k], ob[k2]));
        if (to !== undefined) add(d.moved, join(path, k), `now ${to}`);
        else add(d.removed, join(path, k));
      }
      for (const k of added) if (!removed.some((k1) => same(oa[k1], ob[k]))) add(d.added, join(path, k));
      for (const k of Object.keys(oa)) if (k in ob) diffValues(oa[k], ob[k], join(path, k), depth + 1, d);
      return;
    }
  }
}

const list = (xs: string[]): string => xs.slice(0, 3).join(', ') + (xs.length > 3 ? `, … (${xs.length})` : '');

/** The verdict of a diff (undefined when nothing differs). `base` scales the confidence of what the input can show. */
function verdictOf(d: Diff, base: number, sameShapeEvidence?: string): ChangeVerdict | undefined {
  const v = (faultType: ChangeType, confidence: number, evidence: string): ChangeVerdict => ({
    faultType,
    confidence: Math.round(confidence * 1000) / 1000,
    evidence,
  });
  if (d.corrupt.length > 0) return v('corrupt', base, `delivered value no longer valid: ${list(d.corrupt)}`);
  if (d.moved.length > 0 || (d.removed.length > 0 && d.added.length > 0)) {
    return v(
      'schema',
      base,
      d.moved.length > 0
        ? `keys renamed in transit: ${list(d.moved)}`
        : `keys renamed in transit: ${list(d.removed)} → ${list(d.added)}`,
    );
  }
  if (d.retyped.length > 0) return v('schema', base, `value type changed in transit: ${list(d.retyped)}`);
  if (d.changed.length > 0)
    return v('semantic', base, `same types and formats, values changed in transit: ${list(d.changed)}`);
  if (d.removed.length > 0 || d.emptied.length > 0 || d.shortened.length > 0) {
    const parts = [
      d.removed.length > 0 ? `lacks ${list(d.removed)}` : '',
      d.emptied.length > 0 ? `emptied ${list(d.emptied)}` : '',
      d.shortened.length > 0 ? `shortened ${list(d.shortened)}` : '',
    ].filter((p) => p !== '');
    return v('partial', base, `delivered payload ${parts.join('; ')}, the rest intact`);
  }
  if (d.added.length > 0) return v('schema', base - 0.15, `keys added in transit: ${list(d.added)}`);
  return sameShapeEvidence === undefined ? undefined : v('semantic', base - 0.1, sameShapeEvidence);
}

/** Both copies' content: the most exact reading. Undefined when they are equal. */
export function compareContent(sent: unknown, got: unknown): ChangeVerdict | undefined {
  const d = newDiff();
  diffValues(sent, got, '', 0, d);
  return verdictOf(d, 0.9);
}

/** The entry of the nearest ancestor array of `path` in `shape` that is shorter in `other`, if any. */
function underShortenedArray(path: string, a: Map<string, ShapeEntry>, b: Map<string, ShapeEntry>): boolean {
  for (let i = path.lastIndexOf('[]'); i > 0; i = path.lastIndexOf('[]', i - 1)) {
    const arr = path.slice(0, i);
    const ea = a.get(arr);
    const eb = b.get(arr);
    if (ea?.type === 'arr' && eb?.type === 'arr' && (eb.size ?? 0) < (ea.size ?? 0)) return true;
  }
  return false;
}

/**
 * Two content-free shapes of a message whose payload hashes differ. What the shapes show is classified as content
 * would be; when they show nothing, some value changed keeping its type and format (semantic).
 */
export function compareShapes(sent: readonly string[], got: readonly string[]): ChangeVerdict {
  const a = parseShape(sent);
  const b = parseShape(got);
  const d = newDiff();
  const removedPaths = new Set<string>();
  for (const [path, ea] of a) {
    const eb = b.get(path);
    if (eb === undefined) {
      if (underShortenedArray(path, a, b) || removedPaths.has(parentPath(path))) {
        removedPaths.add(path);
        continue;
      }
      removedPaths.add(path);
      // A key whose parent is still there, of the same kind as a key the parent gained: a rename.
      const parent = parentPath(path);
      const gained = [...b.values()].find(
        (x) =>
          !a.has(x.path) &&
          parentPath(x.path) === parent &&
          x.type === ea.type &&
          (x.type !== 'str' || x.format === ea.format),
      );
      if (gained !== undefined && path !== '$') add(d.moved, path, `now ${gained.path}`);
      else add(d.removed, path);
      continue;
    }
    if (ea.type !== eb.type) {
      if (eb.type === 'null') add(d.emptied, path);
      else if (eb.type === 'mixed') add(d.retyped, path, 'list elements of another type');
      else if (eb.type === 'str' && (eb.format === 'garbled' || eb.format === 'broken_json'))
        add(d.corrupt, path, eb.format === 'garbled' ? 'garbled text' : 'JSON text that no longer parses');
      else if (path === '$') add(d.corrupt, path, `the payload became ${eb.type}`);
      else if (ea.type === 'null') add(d.changed, path);
      else add(d.retyped, path, `${ea.type} became ${eb.type}`);
      continue;
    }
    if (ea.type === 'str') {
      if (eb.format === ea.format) {
        if (ea.size !== undefined && eb.size !== undefined && ea.size !== eb.size) add(d.changed, path);
      } else if (eb.format === 'garbled' || eb.format === 'broken_json') {
        add(d.corrupt, path, eb.format === 'garbled' ? 'garbled text' : 'JSON text that no longer parses');
      } else if (eb.format === 'empty') {
        add(d.emptied, path);
      } else if (isStructuredFormat(ea.format) && !sameFormatFamily(ea.format, eb.format)) {
        add(d.corrupt, path, `no longer a ${ea.format} value`);
      } else {
        add(d.changed, path);
      }
    } else if (ea.type === 'arr' && ea.size !== undefined && eb.size !== undefined && ea.size !== eb.size) {
      if (eb.size === 0) add(d.emptied, path);
      else if (eb.size < ea.size) add(d.shortened, path, `${eb.size} of ${ea.size} items`);
      else add(d.changed, path, `${eb.size} items, ${ea.size} sent`);
    } else if (ea.type === 'num' && ea.format !== eb.format) {
      add(d.changed, path);
    }
  }
  for (const [path] of b) {
    if (a.has(path) || d.moved.some((m) => m.includes(`now ${path})`))) continue;
    const parent = parentPath(path);
    if (path !== '$' && !a.has(parent) && parent !== '') continue; // under an added or retyped key: counted there
    if (!underShortenedArray(path, b, a)) add(d.added, path);
  }
  return verdictOf(d, 0.85, 'same shape (keys, types, formats), payload hash differs: values changed in transit')!;
}

/** The content-free change list (`removed:a.b`, `added:…`, `type:…`, `value:…`, `length:…`) of older handoff spans. */
export function classifyChanges(changes: readonly string[]): ChangeVerdict | undefined {
  const d = newDiff();
  for (const c of changes) {
    const i = c.indexOf(':');
    const op = c.slice(0, i);
    const path = c.slice(i + 1);
    if (op === 'removed') add(d.removed, path);
    else if (op === 'added') add(d.added, path);
    else if (op === 'type') {
      if (path === '$') add(d.corrupt, '', 'the payload changed type');
      else add(d.retyped, path);
    } else if (op === 'value') add(d.changed, path);
    else if (op === 'length') add(d.shortened, path);
  }
  // A list whose length changed, with values changed too, is another list (not a shortened one).
  if (d.changed.length > 0 && d.shortened.length > 0) d.changed.push(...d.shortened.splice(0));
  return verdictOf(d, 0.75);
}

/** The receiver's contract issues (`missing:`, `type:`, `extra:`, `value:`), classified. */
export function contractVerdict(issues: readonly string[]): ChangeVerdict | undefined {
  const d = newDiff();
  for (const i of issues) {
    const k = i.indexOf(':');
    const kind = i.slice(0, k);
    const path = i.slice(k + 1);
    if (kind === 'missing') add(d.removed, path);
    else if (kind === 'extra') add(d.added, path);
    else if (kind === 'type') add(d.retyped, path);
    else add(d.corrupt, path, 'breaks the contract');
  }
  const v = verdictOf(d, 0.85);
  return v === undefined ? undefined : { ...v, evidence: `against the receiver's contract: ${v.evidence}` };
}

/** Values that are invalid in themselves, whatever was sent: garbled text, JSON text that does not parse. */
export function intrinsicVerdict(
  content: { ok: boolean; value?: unknown; text: string } | undefined,
  shape: readonly string[] | undefined,
): ChangeVerdict | undefined {
  const bad: string[] = [];
  if (content !== undefined) {
    if (!content.ok) {
      const f = stringFormat(content.text);
      if (f === 'broken_json' || f === 'garbled')
        bad.push(`$ (${f === 'garbled' ? 'garbled text' : 'JSON text that does not parse'})`);
    } else {
      walkStrings(content.value, '', 0, (s, path) => {
        const f = stringFormat(s);
        if (f === 'garbled' || f === 'broken_json')
          bad.push(`${at(path)} (${f === 'garbled' ? 'garbled text' : 'JSON text that does not parse'})`);
      });
    }
  } else if (shape !== undefined) {
    for (const e of parseShape(shape).values()) {
      if (e.type === 'str' && (e.format === 'garbled' || e.format === 'broken_json'))
        bad.push(`${e.path} (${e.format === 'garbled' ? 'garbled text' : 'JSON text that does not parse'})`);
    }
  }
  if (bad.length === 0) return undefined;
  return {
    faultType: 'corrupt',
    confidence: 0.75,
    evidence: `the delivered payload carries invalid values: ${list(bad)}`,
  };
}

function walkStrings(v: unknown, path: string, depth: number, f: (s: string, path: string) => void): void {
  if (depth > MAX_DEPTH) return;
  if (typeof v === 'string') f(v, path);
  else if (Array.isArray(v)) v.slice(0, 64).forEach((x) => walkStrings(x, `${at(path)}[]`, depth + 1, f));
  else if (v !== null && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) walkStrings(x, join(path, k), depth + 1, f);
}

/**
 * A delivered message against the other messages of the same edge (its siblings): only what a sibling cannot
 * legitimately differ in — keys every sibling has that this one lacks while the rest matches, a key of another type,
 * a value that lost the format every sibling gives it. Values are expected to differ between messages.
 */
export function compareToSiblings(
  shape: readonly string[],
  siblings: readonly (readonly string[])[],
): ChangeVerdict | undefined {
  const mine = parseShape(shape);
  const top = (m: Map<string, ShapeEntry>): Set<string> =>
    new Set([...m.keys()].filter((p) => p !== '$' && !p.includes('.') && !p.includes('[')));
  const myTop = top(mine);
  const parsed = siblings.map(parseShape).filter((s) => {
    const t = top(s);
    const inter = [...t].filter((k) => myTop.has(k)).length;
    const union = new Set([...t, ...myTop]).size;
    return union > 0 && inter / union >= 0.75;
  });
  if (parsed.length === 0) return undefined;
  const d = newDiff();
  const everywhere = (path: string, pred: (e: ShapeEntry) => boolean): boolean =>
    parsed.every((s) => {
      const e = s.get(path);
      return e !== undefined && pred(e);
    });
  const breaks = consensusBreaks(mine, parsed);
  for (const path of breaks.missing) add(d.removed, path);
  for (const r of breaks.retyped) add(d.retyped, r.replace(' elsewhere,', ' in the other messages,'));
  for (const [path, e] of parsed[0]!) {
    if (path === '$' || path.includes('[]')) continue;
    const m = mine.get(path);
    if (m === undefined || m.type !== 'str' || e.type !== 'str') continue;
    if (m.format === 'garbled' || m.format === 'broken_json') {
      add(d.corrupt, path, m.format === 'garbled' ? 'garbled text' : 'JSON text that does not parse');
    } else if (
      isStructuredFormat(e.format) &&
      !sameFormatFamily(e.format, m.format) &&
      m.format !== 'empty' &&
      everywhere(path, (x) => sameFormatFamily(x.format, e.format))
    ) {
      add(d.corrupt, path, `a ${e.format} value in the other messages, not here`);
    }
  }
  // Keys this message has that no sibling has are not judged on their own (optional fields); a rename shows as one
  // removed here and one added here.
  for (const path of breaks.extra) add(d.added, path);
  if (d.removed.length === 0 && d.retyped.length === 0 && d.corrupt.length === 0) return undefined;
  const v = verdictOf(d, 0.7);
  return v === undefined ? undefined : { ...v, evidence: `against the other messages of this edge: ${v.evidence}` };
}
