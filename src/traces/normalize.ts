/**
 * Value normalisation shared by every trace reader: ids, times, span kinds, status codes and attribute values,
 * whatever flavour of the "same" data a producer wrote (backends.md §2.5). Bad values throw a `TraceDataError`
 * naming the field; the reader adds the file and the place.
 */
import type { AttrScalar, AttrValue, Attributes, SpanKindName, StatusCodeName } from './model';

/** A value a reader cannot normalise. `path` is the JSON path (or protobuf field path) of the value. */
export class TraceDataError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
    this.name = 'TraceDataError';
  }
}

const HEX = /^[0-9a-fA-F]+$/;
const LOWER_HEX = /^[0-9a-f]+$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

function describe(v: unknown): string {
  if (nestedDeeper(v, MAX_VALUE_DEPTH)) return `a value nested deeper than ${MAX_VALUE_DEPTH} levels`;
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}…` : s;
}

/**
 * An id of `bytes` bytes as lowercase hex: hex of any case (the OTLP/JSON spec), base64 (Tempo's gogo JSON), or
 * shorter hex left-padded with zeros (Jaeger writes 16-character trace ids when the high half is zero).
 * Returns undefined for an absent id (missing, empty).
 */
export function normId(v: unknown, bytes: 8 | 16, path: string): string | undefined {
  if (typeof v === 'string' && v.length === bytes * 2 && LOWER_HEX.test(v)) return v; // the spec's form, as is
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new TraceDataError(path, `expected an id string, got ${describe(v)}`);
  const hexLen = bytes * 2;
  // Hex of the exact length, or shorter hex (Jaeger's short form) padded. Base64 of 8/16 bytes always has `=` padding
  // or a non-hex character in practice, so hex wins the rare ambiguous case.
  if (v.length <= hexLen && HEX.test(v)) return v.toLowerCase().padStart(hexLen, '0');
  if (BASE64.test(v)) {
    const buf = Buffer.from(v, v.includes('-') || v.includes('_') ? 'base64url' : 'base64');
    if (buf.length === bytes) return buf.toString('hex');
  }
  throw new TraceDataError(path, `expected ${hexLen} hex characters or base64 of ${bytes} bytes, got ${describe(v)}`);
}

/** Like normId, but an all-zero id (some producers' "no parent") is absent too. */
export function normParentId(v: unknown, path: string): string | undefined {
  const id = normId(v, 8, path);
  return id === undefined || /^0+$/.test(id) ? undefined : id;
}

/**
 * Unix nanoseconds (a decimal string or a number) → epoch milliseconds, keeping microsecond precision: the
 * microseconds of a 2020s timestamp (~1.8e15) are exact in a double, the nanoseconds (~1.8e18) are not.
 */
export function nanosToMs(v: unknown, path: string): number {
  if (v === undefined || v === null || v === '') return 0;
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v < 0) throw new TraceDataError(path, `expected unix nanoseconds, got ${describe(v)}`);
    return Math.round(v / 1000) / 1000;
  }
  if (typeof v === 'string') {
    // Digits only; the microseconds summed as they are checked (twice per span: no regex, no substring to convert).
    // While the sum stays a safe integer every partial sum was exact, so it equals Number() of those digits.
    const micros = v.length - 3;
    let n = 0;
    for (let i = 0; i < v.length; i++) {
      const d = v.charCodeAt(i) - 48;
      if (d < 0 || d > 9)
        throw new TraceDataError(path, `expected unix nanoseconds as a decimal string or number, got ${describe(v)}`);
      if (i < micros) n = n * 10 + d;
    }
    if (micros <= 0) return 0;
    return (n <= Number.MAX_SAFE_INTEGER ? n : Number(v.slice(0, micros))) / 1000;
  }
  throw new TraceDataError(path, `expected unix nanoseconds as a decimal string or number, got ${describe(v)}`);
}

/** Epoch microseconds (Jaeger) → epoch milliseconds. */
export function microsToMs(v: unknown, path: string): number {
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n))
    throw new TraceDataError(path, `expected microseconds, got ${describe(v)}`);
  return n / 1000;
}

const KINDS: readonly SpanKindName[] = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];
const STATUSES: readonly StatusCodeName[] = ['UNSET', 'OK', 'ERROR'];

/** Span kind from an integer (OTLP/JSON spec), an enum name (`SPAN_KIND_CLIENT`) or a bare name (`client`). */
export function normKind(v: unknown): SpanKindName {
  if (typeof v === 'number') return KINDS[v] ?? 'UNSPECIFIED';
  if (typeof v === 'string') {
    const name = v.toUpperCase().replace(/^SPAN_KIND_/, '');
    if ((KINDS as readonly string[]).includes(name)) return name as SpanKindName;
    if (/^\d+$/.test(v)) return KINDS[Number(v)] ?? 'UNSPECIFIED';
  }
  // Unknown enum values are kept as "unspecified" rather than rejected: newer producers may add values.
  return 'UNSPECIFIED';
}

/** Status code from an integer, an enum name (`STATUS_CODE_ERROR`) or a bare name (`ERROR`, `Ok`). */
export function normStatusCode(v: unknown): StatusCodeName {
  if (typeof v === 'number') return STATUSES[v] ?? 'UNSET';
  if (typeof v === 'string') {
    const name = v.toUpperCase().replace(/^STATUS_CODE_/, '');
    if ((STATUSES as readonly string[]).includes(name)) return name as StatusCodeName;
    if (/^\d+$/.test(v)) return STATUSES[Number(v)] ?? 'UNSET';
  }
  return 'UNSET';
}

/** An int64 (JSON number or decimal string) as a number when it is exactly representable, else its decimal string. */
export function normInt64(v: unknown, path: string): number | string {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : v.trim();
  }
  throw new TraceDataError(path, `expected a 64-bit integer, got ${describe(v)}`);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Sets `key` as an own property, `__proto__` included: a plain assignment of `__proto__` would set the prototype
 * (or, for a primitive, be ignored), and an attribute named so is still an attribute.
 */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

/**
 * A TraceDataError raised inside a nested value, with `prefix` (the path of that value) in front of its path.
 * Readers build paths only when something is wrong: the hot path passes relative paths and prefixes on the way out.
 */
export function under(prefix: string, err: unknown): unknown {
  return err instanceof TraceDataError ? new TraceDataError(prefix + err.path, err.problem) : err;
}

/**
 * How deep a value read from a trace may nest. Readers never recurse on the input's depth unbounded (a line nested
 * 50,000 deep would overflow the stack and cost the whole file): past this the value is refused with its path, and
 * only its line or document is lost. Real attribute values and log bodies nest a few levels; 128 leaves room.
 */
export const MAX_VALUE_DEPTH = 128;

function tooDeep(path: string): TraceDataError {
  return new TraceDataError(path, `value nested deeper than ${MAX_VALUE_DEPTH} levels`);
}

/** Whether plain JSON data nests deeper than `max` levels, walked with an explicit stack (no recursion). */
export function nestedDeeper(v: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[v, 0]];
  while (stack.length > 0) {
    const [x, d] = stack.pop() as [unknown, number];
    if (typeof x !== 'object' || x === null) continue;
    if (d >= max) return true;
    for (const c of Array.isArray(x) ? x : Object.values(x))
      if (typeof c === 'object' && c !== null) stack.push([c, d + 1]);
  }
  return false;
}

/** An OTLP AnyValue as plain JSON data (used inside kvlists and nested arrays, which become JSON text). */
export function anyValuePlain(v: unknown, path: string, depth = 0, top = path): unknown {
  if (!isRecord(v)) return null;
  if (depth >= MAX_VALUE_DEPTH) throw tooDeep(top); // the value's own path, not one 128 levels long
  if ('stringValue' in v) return String(v.stringValue);
  if ('boolValue' in v) return v.boolValue === true || v.boolValue === 'true';
  if ('intValue' in v) return normInt64(v.intValue, `${path}.intValue`);
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('bytesValue' in v) return String(v.bytesValue);
  if ('arrayValue' in v) {
    const values = isRecord(v.arrayValue) && Array.isArray(v.arrayValue.values) ? v.arrayValue.values : [];
    return values.map((x, i) => anyValuePlain(x, `${path}.arrayValue.values[${i}]`, depth + 1, top));
  }
  if ('kvlistValue' in v) {
    const values = isRecord(v.kvlistValue) && Array.isArray(v.kvlistValue.values) ? v.kvlistValue.values : [];
    const out: Record<string, unknown> = {};
    values.forEach((kv, i) => {
      if (isRecord(kv) && typeof kv.key === 'string')
        setOwn(out, kv.key, anyValuePlain(kv.value, `${path}.kvlistValue.values[${i}].value`, depth + 1, top));
    });
    return out;
  }
  return null;
}

/** Plain JSON data → an attribute value: scalars stay, arrays of scalars stay, anything else becomes JSON text. */
export function plainToAttr(v: unknown): AttrValue | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (Array.isArray(v) && v.every((x) => typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean')) {
    return v as AttrScalar[];
  }
  return JSON.stringify(v);
}

/**
 * An OTLP AnyValue (`{stringValue}`, `{intValue}`, `{arrayValue:{values}}`, …) → an attribute value. int64 stays a
 * number when safe (else its decimal string), bytes stay base64 text, kvlists and nested arrays become JSON text.
 * An empty AnyValue (no field set) is undefined: the attribute is dropped.
 */
export function anyValueToAttr(v: unknown, path: string): AttrValue | undefined {
  if (!isRecord(v)) return undefined;
  if ('stringValue' in v) return String(v.stringValue);
  if ('intValue' in v) return normInt64(v.intValue, `${path}.intValue`);
  return plainToAttr(anyValuePlain(v, path));
}

/**
 * What anyValueToAttr makes of an AnyValue holding only an `intValue` of up to 15 digits (a decimal string, exact in
 * a double, or a finite number) or only a number `doubleValue`; undefined for anything else, which it reads.
 */
function plainNumber(v: unknown): number | string | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || 'stringValue' in v) return undefined;
  const o = v as { intValue?: unknown; boolValue?: unknown; doubleValue?: unknown };
  if ('intValue' in o) {
    const i = o.intValue;
    if (typeof i === 'number') return Number.isFinite(i) ? i : undefined;
    return typeof i === 'string' ? shortDecimal(i) : undefined;
  }
  if ('boolValue' in o || typeof o.doubleValue !== 'number') return undefined;
  return Number.isFinite(o.doubleValue) ? o.doubleValue : String(o.doubleValue);
}

/** A decimal integer of 1 to 15 digits (optionally negative), no spaces: its value; else undefined. */
function shortDecimal(s: string): number | undefined {
  const neg = s.charCodeAt(0) === 45; // -
  const from = neg ? 1 : 0;
  if (s.length === from || s.length - from > 15) return undefined;
  let n = 0;
  for (let i = from; i < s.length; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return undefined;
    n = n * 10 + d;
  }
  return neg ? -n : n;
}

/** OTLP `[{key, value: AnyValue}]` → attributes. Later duplicates win, as in the SDK. */
export function keyValuesToAttrs(list: unknown, path: string): Attributes {
  const out: Attributes = {};
  if (list === undefined || list === null) return out;
  if (!Array.isArray(list)) throw new TraceDataError(path, `expected a list of {key, value}, got ${describe(list)}`);
  for (let i = 0; i < list.length; i++) {
    const kv = list[i] as { key?: unknown; value?: unknown } | null;
    if (typeof kv !== 'object' || kv === null || Array.isArray(kv) || typeof kv.key !== 'string') {
      throw new TraceDataError(`${path}[${i}]`, `expected {key, value}, got ${describe(kv)}`);
    }
    const v = kv.value as { stringValue?: unknown } | null | undefined;
    // Most attributes are strings, and most others a token count or a parameter: read those without building the
    // value's path (anyValueToAttr gives the same for them).
    let value: AttrValue | undefined;
    if (typeof v === 'object' && v !== null && typeof v.stringValue === 'string') value = v.stringValue;
    else if ((value = plainNumber(v)) === undefined) {
      try {
        value = anyValueToAttr(v, '');
      } catch (err) {
        throw under(`${path}[${i}].value`, err);
      }
    }
    if (value === undefined) continue;
    if (kv.key === '__proto__') setOwn(out, kv.key, value);
    else out[kv.key] = value;
  }
  return out;
}

/** A plain attribute object (Tempo's LLM format, faultline span lines) → attributes. */
export function plainObjectToAttrs(obj: unknown, path: string): Attributes {
  const out: Attributes = {};
  if (obj === undefined || obj === null) return out;
  if (!isRecord(obj)) throw new TraceDataError(path, `expected an attribute object, got ${describe(obj)}`);
  for (const [k, v] of Object.entries(obj)) {
    if (nestedDeeper(v, MAX_VALUE_DEPTH)) throw tooDeep(`${path}.${k}`);
    const value = plainToAttr(v);
    if (value !== undefined) setOwn(out, k, value);
  }
  return out;
}

export { isRecord, describe };
