/**
 * The content-free shape of a message payload: every key path with its JSON kind, the format class of its value and
 * its size — never a value. Both ends of a message record it (the sender's span and the receiver's), so a diagnoser
 * can tell, without content, how a delivered copy differs from the one sent: keys gone, keys renamed, a type changed,
 * a value that no longer has its format (garbled text, a broken JSON string, a date that is no longer a date) or a
 * value that changed but kept its type and format (another entity, another number). With content captured the
 * diagnosers compute the same shape from the payload itself: one definition of a value's format for both.
 *
 * Entries are `path=kind` with kind one of `obj:<keys>`, `arr:<length>`, `str:<format>:<length>`, `num:int`,
 * `num:dec`, `bool`, `null`. Paths join keys with dots (`$` is the whole payload); the elements of an array are
 * summarised under `path[]`: every key path any of its first 16 elements has, with the first element's kind — `mixed`
 * when elements disagree on the JSON type, and a string format of `garbled` / `broken_json` when any element's is.
 * At most 64 entries, 8 levels deep, in walk order.
 */

/** Format classes of a string value, content-free. */
export type StringFormat =
  | 'empty'
  | 'garbled'
  | 'int'
  | 'dec'
  | 'bool'
  | 'uuid'
  | 'hex'
  | 'date'
  | 'datetime'
  | 'url'
  | 'email'
  | 'json'
  | 'broken_json'
  | 'word'
  | 'ident'
  | 'text';

/**
 * Structured formats: a value of one of these that is delivered as anything else (but empty) no longer has its
 * format. The free-text family (word, ident, text) is not: an answer that grew from one word to a sentence is still
 * a valid answer.
 */
const STRUCTURED: ReadonlySet<StringFormat> = new Set([
  'int',
  'dec',
  'bool',
  'uuid',
  'hex',
  'date',
  'datetime',
  'url',
  'email',
  'json',
]);

export function isStructuredFormat(f: string): boolean {
  return STRUCTURED.has(f as StringFormat);
}

/** Numeric strings are one family: "3" → "3.5" is another number, not a broken one. */
export function sameFormatFamily(a: string, b: string): boolean {
  if (a === b) return true;
  const num = (f: string): boolean => f === 'int' || f === 'dec';
  const free = (f: string): boolean => f === 'word' || f === 'ident' || f === 'text';
  return (
    (num(a) && num(b)) ||
    (free(a) && free(b)) ||
    (a === 'date' && b === 'datetime') ||
    (a === 'datetime' && b === 'date')
  );
}

// Mojibake: UTF-8 bytes read as Latin-1 / Windows-1252 ("Ã©", "â€™", "Â "), the replacement character, C0/C1 control
// characters other than tab and newlines, lone surrogates, private-use characters, and a symbol of the U+2600–U+26FF
// block inside a word (legitimate text puts ☀ between words, not between letters).
const MOJIBAKE =
  /[ÃÂ][\u0080-\u00BF]|â€[\u0080-\u00BF\u2018-\u201E\u2020-\u2022\u2026\u2030\u2039\u203A\u20AC\u2122]|ï¿½/;
const BAD_CHARS =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this looks for
  /[\uFFFD\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\uE000-\uF8FF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const SYMBOL_IN_WORD =
  /[\p{L}\p{N}][\u2600-\u26FF]|[\u2600-\u26FF][\p{L}\p{N}]|[!-/:-@[-`{-~][\u2600-\u26FF][!-/:-@[-`{-~]/u;

/** Whether a text is garbled (mis-decoded, control characters, symbol noise inside words). */
export function isGarbled(s: string): boolean {
  return BAD_CHARS.test(s) || MOJIBAKE.test(s) || SYMBOL_IN_WORD.test(s);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEX = /^(0x)?[0-9a-f]{8,}$/i;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;
const URL_RE = /^[a-z][a-z0-9+.-]*:\/\/[^\s/$.?#][^\s]*$/i;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const INT = /^[+-]?\d+$/;
const DEC = /^[+-]?(\d+\.\d*|\.\d+|\d+(\.\d+)?[eE][+-]?\d+)$/;
const WORD = /^\p{L}+$/u;
// Text that starts like a JSON document (`{"`, `[{`, `["`, `[1`, `[]`): parsed, so a cut or broken one is told apart
// from prose that merely starts with a bracket ("[INFO] done", "{draft}").
const JSON_LIKE = /^(\{\s*("|\})|\[\s*([[{"\]]|-?\d))/;
const IDENT = /^[\p{L}\p{N}_.:/#@+~-]+$/u;

/** Strings longer than this are classified from their head and tail (a long text is text). */
const SCAN_LIMIT = 4096;

/** Printable ASCII (space to tilde, tab, newlines) only: nothing in it can be mis-decoded or symbol noise. */
function plainAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7e || (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d)) return false;
  }
  return true;
}

const WORD_ASCII = /^[A-Za-z]+$/;
const IDENT_ASCII = /^[\w.:/#@+~-]+$/;

/** The format class of a string. */
export function stringFormat(s: string): StringFormat {
  if (s === '') return 'empty';
  const probe = s.length > SCAN_LIMIT ? s.slice(0, SCAN_LIMIT / 2) + s.slice(-SCAN_LIMIT / 2) : s;
  const ascii = plainAscii(probe);
  if (!ascii && isGarbled(probe)) return 'garbled';
  const t = s.trim();
  if (t === '') return 'text';
  if (JSON_LIKE.test(t) && s.length <= 1 << 20) {
    try {
      JSON.parse(t);
      return 'json';
    } catch {
      return 'broken_json';
    }
  }
  if (t.length > 256) return /\s/.test(t) ? 'text' : 'ident';
  const c0 = t.charCodeAt(0);
  const digitOrSign = (c0 >= 0x30 && c0 <= 0x39) || c0 === 0x2b || c0 === 0x2d || c0 === 0x2e;
  if (!digitOrSign && !/\d/.test(t)) {
    // No digit: none of the numeric, date, UUID or hex formats; a URL, an e-mail, a flag or free text.
    if (t === 'true' || t === 'false') return 'bool';
    if (URL_RE.test(t)) return 'url';
    if (EMAIL.test(t)) return 'email';
    if (/\s/.test(t)) return 'text';
    if (ascii ? WORD_ASCII.test(t) : WORD.test(t)) return 'word';
    if (ascii ? IDENT_ASCII.test(t) : IDENT.test(t)) return 'ident';
    return 'text';
  }
  if (INT.test(t)) return 'int';
  if (DEC.test(t)) return 'dec';
  if (t === 'true' || t === 'false') return 'bool';
  if (UUID.test(t)) return 'uuid';
  if (DATE.test(t)) return 'date';
  if (DATETIME.test(t)) return 'datetime';
  if (URL_RE.test(t)) return 'url';
  if (EMAIL.test(t)) return 'email';
  if (HEX.test(t) && /\d/.test(t)) return 'hex';
  if (/\s/.test(t)) return 'text';
  if (ascii ? WORD_ASCII.test(t) : WORD.test(t)) return 'word';
  if (ascii ? IDENT_ASCII.test(t) : IDENT.test(t)) return 'ident';
  return 'text';
}

/** The kind token of one value: `obj:<n>`, `arr:<n>`, `str:<format>:<len>`, `num:int|dec`, `bool`, `null`. */
export function valueKind(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'num:int' : 'num:dec';
  if (typeof v === 'string') return `str:${stringFormat(v)}:${v.length}`;
  if (Array.isArray(v)) return `arr:${v.length}`;
  if (typeof v === 'object') return `obj:${Object.keys(v).length}`;
  return 'null';
}

const MAX_ENTRIES = 64;
const MAX_DEPTH = 8;

const MAX_ELEMENTS = 16;

function typeToken(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'arr';
  const t = typeof v;
  return t === 'string' ? 'str' : t === 'number' ? 'num' : t === 'boolean' ? 'bool' : t === 'object' ? 'obj' : 'null';
}

/**
 * Fold a further array element into the first element's entry for the same path: `mixed` when the JSON types differ;
 * a string element that is garbled or broken JSON marks the entry so. (Cheap: most elements change nothing.)
 */
function merge(first: string, v: unknown): string {
  const colon = first.indexOf(':');
  const type = colon < 0 ? first : first.slice(0, colon);
  if (type !== typeToken(v)) return 'mixed';
  if (type !== 'str' || typeof v !== 'string') return first;
  if (plainAscii(v) && !JSON_LIKE.test(v.trimStart())) return first;
  const f = stringFormat(v);
  if (f !== 'garbled' && f !== 'broken_json') return first;
  const had = first.slice(colon + 1, first.indexOf(':', colon + 1));
  return had === f ? first : `str:${f}${first.slice(first.indexOf(':', colon + 1))}`;
}

/** The shape of a payload (see the module comment). Never throws; cycles end the walk. */
export function payloadShape(payload: unknown): string[] {
  const entries = new Map<string, string>();
  const seen = new Set<object>();
  const walk = (v: unknown, path: string, depth: number, element: boolean): void => {
    const json = v !== null && typeof v === 'object' ? (v as { toJSON?: () => unknown }).toJSON : undefined;
    if (typeof json === 'function') v = json.call(v);
    const at = path === '' ? '$' : path;
    const had = entries.get(at);
    if (had === undefined) {
      if (entries.size >= MAX_ENTRIES) return;
      entries.set(at, valueKind(v));
    } else if (element && had !== 'mixed') {
      entries.set(at, merge(had, v));
    }
    if (v === null || typeof v !== 'object' || depth >= MAX_DEPTH || seen.has(v)) return;
    seen.add(v);
    if (Array.isArray(v)) {
      const inner = `${at}[]`;
      const n = Math.min(v.length, MAX_ELEMENTS);
      for (let i = 0; i < n; i++) walk(v[i], inner, depth + 1, true);
    } else {
      for (const k of Object.keys(v)) {
        const child = (v as Record<string, unknown>)[k];
        if (child === undefined || typeof child === 'function') continue;
        walk(child, path === '' ? k : `${path}.${k}`, depth + 1, element);
      }
    }
    seen.delete(v);
  };
  try {
    walk(payload, '', 0, false);
  } catch {
    /* a getter that throws: keep what was walked */
  }
  const out: string[] = [];
  for (const [path, kind] of entries) out.push(`${path}=${kind}`);
  return out;
}

/** A key path's JSON type alone, one object per type (payloadTypes allocates none per entry). */
export interface TypeEntry {
  readonly type: string;
}
const TYPE_ENTRIES = new Map<string, TypeEntry>(
  ['obj', 'arr', 'str', 'num', 'bool', 'null', 'mixed'].map((type) => [type, { type }]),
);

/**
 * The JSON type of each key path of a parsed JSON value: its shape without formats and sizes, for comparing structure
 * alone (paths, limits and array elements as payloadShape has them; elements of differing types are `mixed`). A
 * fraction of payloadShape's cost: no string is classified.
 */
export function payloadTypes(value: unknown): Map<string, TypeEntry> {
  const out = new Map<string, TypeEntry>();
  const walk = (v: unknown, path: string, depth: number): void => {
    const at = path === '' ? '$' : path;
    const type = typeToken(v);
    const had = out.get(at);
    if (had === undefined) {
      if (out.size >= MAX_ENTRIES) return;
      out.set(at, TYPE_ENTRIES.get(type)!);
    } else if (had.type !== type) out.set(at, TYPE_ENTRIES.get('mixed')!);
    if (v === null || typeof v !== 'object' || depth >= MAX_DEPTH) return;
    if (Array.isArray(v)) {
      const n = Math.min(v.length, MAX_ELEMENTS);
      for (let i = 0; i < n; i++) walk(v[i], `${at}[]`, depth + 1);
    } else
      for (const k of Object.keys(v)) {
        const child = (v as Record<string, unknown>)[k];
        if (child !== undefined) walk(child, path === '' ? k : `${path}.${k}`, depth + 1);
      }
  };
  walk(value, '', 0);
  return out;
}

/** One parsed shape entry. */
export interface ShapeEntry {
  path: string;
  /** obj | arr | str | num | bool | null */
  type: string;
  /** String format, `int` / `dec` for numbers; '' otherwise. */
  format: string;
  /** String length, array length or key count; undefined when not recorded. */
  size?: number;
}

export function parseShapeEntry(entry: string): ShapeEntry | undefined {
  const eq = entry.lastIndexOf('=');
  if (eq <= 0) return undefined;
  const path = entry.slice(0, eq);
  const [type = '', a, b] = entry.slice(eq + 1).split(':');
  if (type === 'str')
    return { path, type, format: a ?? '', ...(b !== undefined && b !== '' ? { size: Number(b) } : {}) };
  if (type === 'num') return { path, type, format: a ?? '' };
  if (type === 'arr' || type === 'obj')
    return { path, type, format: '', ...(a !== undefined && a !== '' ? { size: Number(a) } : {}) };
  return { path, type, format: '' };
}

export function parseShape(entries: readonly string[]): Map<string, ShapeEntry> {
  const out = new Map<string, ShapeEntry>();
  for (const e of entries) {
    const p = parseShapeEntry(e);
    if (p && !out.has(p.path)) out.set(p.path, p);
  }
  return out;
}
