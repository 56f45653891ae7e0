/**
 * A receiver's declared contract, checked against what it got. The contract is a zod schema (`safeParse`), any
 * Standard Schema (`~standard.validate`, synchronous results) or a plain JSON Schema object. The issues are reduced to
 * content-free `kind:path` entries, so they can ride on the receive span whatever the schema library puts in its
 * messages (which may quote values):
 *
 *   missing:<path>  a required key is absent (or undefined)
 *   type:<path>     a value of the wrong JSON type
 *   extra:<path>    a key the contract does not allow
 *   value:<path>    a value of the right type that breaks a constraint (pattern, format, enum, range, length)
 */
import { validateJsonSchema } from '../../detectors/json-schema';

/** At most this many issues on a span. */
const MAX_ISSUES = 16;

type Path = readonly PropertyKey[];

interface ZodLikeIssue {
  code?: string;
  path?: Path;
  keys?: string[];
  /** invalid_union: the issues of each option. */
  errors?: ZodLikeIssue[][];
}

function pathText(path: Path | undefined): string {
  if (!path || path.length === 0) return '$';
  return path
    .map((p, i) => {
      const key = typeof p === 'object' && p !== null && 'key' in p ? (p as { key: unknown }).key : p;
      return typeof key === 'number' ? '[]' : `${i === 0 ? '' : '.'}${String(key)}`;
    })
    .join('')
    .replace(/^\[\]/, '$[]');
}

function lookup(value: unknown, path: Path | undefined): { found: boolean; value?: unknown } {
  let cur: unknown = value;
  for (const p of path ?? []) {
    const key = typeof p === 'object' && p !== null && 'key' in p ? (p as { key: unknown }).key : p;
    if (cur === null || typeof cur !== 'object' || !(String(key) in (cur as object))) return { found: false };
    cur = (cur as Record<string, unknown>)[String(key)];
  }
  return { found: cur !== undefined, value: cur };
}

function fromZod(issues: readonly ZodLikeIssue[], value: unknown): string[] {
  const out: string[] = [];
  for (const i of issues) {
    const at = pathText(i.path);
    if (i.code === 'unrecognized_keys' && Array.isArray(i.keys)) {
      for (const k of i.keys) out.push(`extra:${at === '$' ? k : `${at}.${k}`}`);
    } else if (
      i.code === 'invalid_union' &&
      Array.isArray(i.errors) &&
      i.errors.some((e) => Array.isArray(e) && e.length > 0)
    ) {
      // The value is meant to be one of the options: judge it against the one it comes closest to.
      // Closest: an option that allows every key the value has, then the fewest issues.
      const extra = (e: ZodLikeIssue[]): number => e.filter((x) => x.code === 'unrecognized_keys').length;
      const closest = i.errors
        .filter((e) => Array.isArray(e) && e.length > 0)
        .sort((a, b) => extra(a) - extra(b) || a.length - b.length)[0]!;
      out.push(
        ...fromZod(
          closest.map((c) => ({ ...c, path: [...(i.path ?? []), ...(c.path ?? [])] })),
          value,
        ),
      );
    } else if (i.code === 'invalid_type' || i.code === 'invalid_union') {
      out.push(`${lookup(value, i.path).found ? 'type' : 'missing'}:${at}`);
    } else {
      out.push(`${lookup(value, i.path).found ? 'value' : 'missing'}:${at}`);
    }
  }
  return out;
}

const JSON_SCHEMA_KIND: Readonly<Record<string, string>> = {
  required: 'missing',
  type: 'type',
  additionalProperties: 'extra',
};

/**
 * The content-free issues of `value` against `contract`; empty when it conforms, undefined when the contract could
 * not be checked (an asynchronous Standard Schema, or a validator that threw).
 */
export function contractIssues(contract: unknown, value: unknown): string[] | undefined {
  if (contract === null || contract === undefined) return undefined;
  try {
    const s = contract as { safeParse?: unknown; '~standard'?: { validate?: unknown } };
    let out: string[];
    if (typeof s.safeParse === 'function') {
      const r = (s.safeParse as (v: unknown) => { success: boolean; error?: { issues?: ZodLikeIssue[] } }).call(
        contract,
        value,
      );
      out = r.success ? [] : fromZod(r.error?.issues ?? [{}], value);
    } else if (s['~standard'] && typeof s['~standard'].validate === 'function') {
      const r = (s['~standard'].validate as (v: unknown) => unknown)(value);
      if (r instanceof Promise) return undefined;
      const issues = (r as { issues?: { path?: Path }[] }).issues ?? [];
      out = issues.map((i) => `${lookup(value, i.path).found ? 'value' : 'missing'}:${pathText(i.path)}`);
    } else if (typeof contract === 'object') {
      out = validateJsonSchema(contract, value).map(
        (i) => `${JSON_SCHEMA_KIND[i.keyword] ?? 'value'}:${i.path.replace(/\[\d+\]/g, '[]').replace(/^\$\./, '')}`,
      );
    } else {
      return undefined;
    }
    return [...new Set(out)].slice(0, MAX_ISSUES);
  } catch {
    return undefined;
  }
}
