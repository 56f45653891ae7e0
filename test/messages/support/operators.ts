/**
 * The communication faults of "When Messages Go Wrong" (docs/fault-catalog.md §2) as this set makes them: written
 * for it, not faultline's injector. Each content operator takes a JSON payload and returns a changed copy, choosing
 * what to change from the payload itself (any leaf of the right kind), so it works on every workflow's messages:
 *
 *  - partial:  keys removed, a list emptied or shortened — the rest intact;
 *  - semantic: a value replaced by another valid value of the same type and format (another id of the same pattern,
 *              another number, a flipped flag, another word), or a whole entity block from another run;
 *  - corrupt:  a value no longer valid — mis-decoded text (mojibake), noise characters, a JSON text cut short, a
 *              structured value (date, URL, number string) broken;
 *  - schema:   a key renamed, a value's type changed (a number as a string, a value wrapped in a list).
 *
 * Delivery faults (drop, delay, duplicate, timeout, stale replay) are applied by the channel step or the HTTP proxy.
 */

import { randomUUID } from 'node:crypto';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Rng = () => number;

export function rng(seed: number): Rng {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

export const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
export const int = (r: Rng, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));

const clone = <T extends Json>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

interface Leaf {
  parent: Json[] | { [k: string]: Json };
  key: string | number;
  value: Json;
  path: string;
}

/** Every leaf and container slot of a value, depth first. */
function slots(v: Json, path = '', out: Leaf[] = []): Leaf[] {
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      out.push({ parent: v, key: i, value: x, path: `${path}[${i}]` });
      slots(x, `${path}[${i}]`, out);
    });
  } else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.push({ parent: v, key: k, value: x, path: path === '' ? k : `${path}.${k}` });
      slots(x, path === '' ? k : `${path}.${k}`, out);
    }
  }
  return out;
}

const set = (l: Leaf, value: Json): void => {
  (l.parent as Record<string | number, Json>)[l.key] = value;
};

const isJsonText = (s: string): boolean =>
  /^\s*[{[]/.test(s) &&
  (() => {
    try {
      JSON.parse(s);
      return true;
    } catch {
      return false;
    }
  })();

/** Another value of the same pattern: letters stay letters (upper/lower), digits stay digits, the rest is kept. */
function samePattern(r: Rng, s: string): string {
  // Hex stays hex (a UUID stays a UUID).
  const hex = /^[0-9a-fA-F-]+$/.test(s);
  const span = hex ? 6 : 26;
  for (let attempt = 0; attempt < 8; attempt++) {
    const out = [...s]
      .map((c) => {
        if (/[A-Z]/.test(c)) return String.fromCharCode(65 + int(r, 0, span - 1));
        if (/[a-z]/.test(c)) return String.fromCharCode(97 + int(r, 0, span - 1));
        if (/[0-9]/.test(c)) return String(int(r, 0, 9));
        return c;
      })
      .join('');
    if (out !== s) return out;
  }
  return s + '1';
}

const WORDS = [
  'approved',
  'rejected',
  'pending',
  'shipped',
  'cancelled',
  'critical',
  'minor',
  'verified',
  'unknown',
  'open',
  'closed',
  'resolved',
];

export function partial(r: Rng, payload: Json): Json | undefined {
  const p = clone(payload);
  const all = slots(p);
  const objects = all.filter((l) => !Array.isArray(l.parent) && Object.keys(l.parent).length >= 2);
  const lists = all.filter((l) => Array.isArray(l.value) && l.value.length >= 2);
  const how = lists.length > 0 && r() < 0.3 ? 'list' : 'keys';
  if (how === 'list') {
    const l = pick(r, lists);
    const arr = l.value as Json[];
    set(l, r() < 0.5 ? [] : arr.slice(0, Math.max(1, Math.floor(arr.length / 2))));
    return p;
  }
  if (objects.length === 0) return undefined;
  const parent = pick(r, objects).parent as Record<string, Json>;
  const keys = Object.keys(parent);
  const n = Math.min(keys.length - 1, int(r, 1, 3));
  for (let i = 0; i < n; i++) delete parent[pick(r, Object.keys(parent))];
  return p;
}

export function semantic(r: Rng, payload: Json, donor?: Json): Json | undefined {
  const p = clone(payload);
  const all = slots(p);
  if (donor !== undefined && r() < 0.35) {
    // A whole block of this message swapped for the same block of another run's message (the paper's evidence
    // poisoning): same keys, other values.
    const d = slots(clone(donor));
    // Only a block of the same structure (same keys, same list lengths): its values are what differs.
    const skeleton = (v: Json): string =>
      JSON.stringify(v, (_k, x: unknown) => (x !== null && typeof x === 'object' ? x : typeof x));
    const blocks = all.filter(
      (l) =>
        l.value !== null &&
        typeof l.value === 'object' &&
        d.some(
          (x) =>
            x.path === l.path &&
            JSON.stringify(x.value) !== JSON.stringify(l.value) &&
            typeof x.value === 'object' &&
            skeleton(x.value) === skeleton(l.value),
        ),
    );
    if (blocks.length > 0) {
      const b = pick(r, blocks);
      set(b, d.find((x) => x.path === b.path)!.value);
      return p;
    }
  }
  const leaves = all.filter((l) => {
    const v = l.value;
    if (typeof v === 'number' || typeof v === 'boolean') return true;
    if (typeof v !== 'string' || v === '' || isJsonText(v)) return false;
    return /^[\p{L}\p{N}_.:/#@+-]+$/u.test(v) || WORDS.includes(v);
  });
  if (leaves.length === 0) return undefined;
  const l = pick(r, leaves);
  const v = l.value;
  if (typeof v === 'boolean') set(l, !v);
  else if (typeof v === 'number')
    set(
      l,
      Number.isInteger(v)
        ? v + (r() < 0.5 ? -1 : 1) * int(r, 1, Math.max(1, Math.round(Math.abs(v) / 2)))
        : Math.round(v * (r() < 0.5 ? 0.7 : 1.3) * 100) / 100,
    );
  else if (WORDS.includes(v as string))
    set(
      l,
      pick(
        r,
        WORDS.filter((w) => w !== v),
      ),
    );
  else if (UUID.test(v as string)) set(l, randomUUID());
  else if (/^\d{4}-\d{2}-\d{2}/.test(v as string) && !Number.isNaN(Date.parse(v as string))) {
    // Another valid date or time, in the same notation.
    const shifted = new Date(
      Date.parse(v as string) + (r() < 0.5 ? -1 : 1) * int(r, 1, 400) * 86_400_000,
    ).toISOString();
    set(l, (v as string).length === 10 ? shifted.slice(0, 10) : shifted);
  } else if (/\d/.test(v as string)) {
    // Another id of the same kind: the digits change, the letters that say what it is stay.
    let out = v as string;
    for (let i = 0; i < 8 && out === v; i++) out = (v as string).replace(/\d/g, () => String(int(r, 0, 9)));
    set(l, out === v ? `${v}1` : out);
  } else set(l, samePattern(r, v as string));
  return p;
}

/** UTF-8 read as Latin-1: what a mis-declared charset does to text. */
function mojibake(s: string): string {
  return Buffer.from(s, 'utf8').toString('latin1');
}

export function corrupt(r: Rng, payload: Json): Json | undefined {
  const p = clone(payload);
  const strings = slots(p).filter((l) => typeof l.value === 'string' && (l.value as string).length >= 4);
  if (strings.length === 0) return undefined;
  const l = pick(r, strings);
  const s = l.value as string;
  const how = isJsonText(s)
    ? 'cut_json'
    : /[^\u0020-\u007e]/.test(s) && r() < 0.7
      ? 'mojibake'
      : pick(r, ['noise', 'replacement', 'structured', 'cut_json_like']);
  switch (how) {
    case 'cut_json':
      set(l, s.slice(0, Math.max(2, Math.floor(s.length * (0.3 + r() * 0.4)))));
      break;
    case 'mojibake':
      set(l, mojibake(s));
      break;
    case 'noise': {
      const i = int(r, 1, s.length - 1);
      set(l, s.slice(0, i) + String.fromCharCode(0x2600 + int(r, 0, 0xff)) + s.slice(i));
      break;
    }
    case 'replacement': {
      const i = int(r, 0, s.length - 1);
      set(l, s.slice(0, i) + '\ufffd\ufffd' + s.slice(i + 1));
      break;
    }
    case 'structured': {
      const i = int(r, 1, s.length - 2);
      set(l, s.slice(0, i) + '\u0000' + s.slice(i));
      break;
    }
    default:
      set(l, `{"${s.slice(0, Math.max(1, Math.floor(s.length / 2)))}`);
  }
  return p;
}

const RENAMES: Record<string, string> = {
  id: 'identifier',
  name: 'full_name',
  price: 'cost',
  quantity: 'qty',
  service: 'svc',
  status: 'state',
  text: 'body',
  sku: 'item_code',
};

function renamed(k: string): string {
  if (RENAMES[k]) return RENAMES[k];
  if (k.includes('_')) return k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
  return `${k}_value`;
}

export function schema(r: Rng, payload: Json): Json | undefined {
  const p = clone(payload);
  const all = slots(p);
  if (r() < 0.5) {
    const keyed = all.filter((l) => !Array.isArray(l.parent));
    if (keyed.length === 0) return undefined;
    const l = pick(r, keyed);
    const parent = l.parent as Record<string, Json>;
    const k = l.key as string;
    const to = renamed(k);
    if (to in parent) return undefined;
    const rebuilt: Record<string, Json> = {};
    for (const [kk, vv] of Object.entries(parent)) rebuilt[kk === k ? to : kk] = vv;
    for (const kk of Object.keys(parent)) delete parent[kk];
    Object.assign(parent, rebuilt);
    return p;
  }
  const typed = all.filter(
    (l) =>
      typeof l.value === 'number' ||
      typeof l.value === 'boolean' ||
      (typeof l.value === 'string' && !isJsonText(l.value)),
  );
  if (typed.length === 0) return undefined;
  const l = pick(r, typed);
  const v = l.value;
  set(l, typeof v === 'string' ? [v] : String(v));
  return p;
}

export type ContentFault = 'partial' | 'semantic' | 'corrupt' | 'schema';

export function applyContent(kind: ContentFault, r: Rng, payload: Json, donor?: Json): Json | undefined {
  for (let attempt = 0; attempt < 6; attempt++) {
    const out =
      kind === 'partial'
        ? partial(r, payload)
        : kind === 'semantic'
          ? semantic(r, payload, donor)
          : kind === 'corrupt'
            ? corrupt(r, payload)
            : schema(r, payload);
    if (out !== undefined && JSON.stringify(out) !== JSON.stringify(payload)) return out;
  }
  return undefined;
}
