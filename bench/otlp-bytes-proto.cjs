// A MEASUREMENT, not product code: how much could a byte-level reader of OTLP/JSON trace lines save over today's path
// (JSON.parse of each line, then spansOfDocument normalising the parsed tree into SpanRecords)?
//
// The prototype below goes from a line's bytes (a range of a Buffer) straight to the SpanRecords spansOfDocument
// would make, without the intermediate JSON tree: it scans the bytes, decodes only the strings and numbers a record
// keeps and skips unknown members. Whatever it does not read natively it hands to today's code, so the records stay
// the same whatever the line:
//   - an AnyValue other than a single-member {stringValue | intValue | doubleValue | boolValue} or an arrayValue of
//     such scalars (a kvlistValue, a bytesValue, nested arrays, several members, odd member types) is skipped over,
//     JSON.parse'd alone (just that AnyValue) and converted by dist's keyValuesToAttrs / anyValuePlain;
//   - a string token holding a backslash is decoded by JSON.parse of that token alone;
//   - anything else it does not expect (other top-level keys: Tempo's batches / trace wrappers, Jaeger, span-record
//     lines; instrumentationLibrarySpans / instrumentationLibrary; duplicated structural keys; ids that are not
//     lowercase hex of the right length (base64, upper case, short Jaeger ids); bad values, which today's path
//     reports as errors; a BOM; trailing garbage) makes the whole line fall back to JSON.parse + spansOfDocument.
//     The fallbacks are counted.
// What it does NOT do that JSON.parse does: validate the grammar of the bytes it skips or of long strings (a raw
// control character inside a string found by indexOf, or malformed JSON inside a skipped unknown member, is not
// rejected, where JSON.parse would reject the line).
//
// Usage:
//   node bench/otlp-bytes-proto.cjs FILE [--verify-mb 64] [--time-mb 32] [--rounds 7] [--only proto|parse|spans]
//   node --cpu-prof --cpu-prof-dir=DIR bench/otlp-bytes-proto.cjs FILE --only proto --rounds 5
//   node bench/otlp-bytes-proto.cjs --profile-summary DIR/xxx.cpuprofile
'use strict';
const { openSync, readSync, closeSync, readFileSync } = require('node:fs');
const { join } = require('node:path');
const { isDeepStrictEqual } = require('node:util');
const { PerformanceObserver } = require('node:perf_hooks');
const { setImmediate } = require('node:timers');

const dist = join(__dirname, '..', 'dist');
const { spansOfDocument, appendSpansOfDocument } = require(join(dist, 'src', 'traces', 'readers', 'document.js'));
const { normId, nanosToMs, normKind, normStatusCode, normInt64, keyValuesToAttrs, setOwn } = require(
  join(dist, 'src', 'traces', 'normalize.js'),
);

// ---------------------------------------------------------------------------------------------------------------
// The prototype reader.

let B = null; // the buffer
let P = 0; // position
let END = 0; // end of the line
let useCache = true; // intern short ASCII strings by their bytes
const BAIL = { bail: true }; // thrown (no stack) when the line must go the slow way
function bail() {
  throw BAIL;
}
const stats = { fallbacks: 0, genericValues: 0, escapedStrings: 0 };

// Known member names → ids.
const KEYS = [
  'resourceSpans',
  'resource',
  'attributes',
  'scopeSpans',
  'scope',
  'name',
  'version',
  'spans',
  'traceId',
  'spanId',
  'parentSpanId',
  'kind',
  'startTimeUnixNano',
  'endTimeUnixNano',
  'events',
  'links',
  'status',
  'code',
  'message',
  'timeUnixNano',
  'key',
  'value',
  'stringValue',
  'intValue',
  'doubleValue',
  'boolValue',
  'arrayValue',
  'kvlistValue',
  'bytesValue',
  'values',
  'instrumentationLibrarySpans',
  'instrumentationLibrary',
];
const K = Object.fromEntries(KEYS.map((k, i) => [k, i]));
const UNKNOWN = -1;
const BYLEN = [];
for (let i = 0; i < KEYS.length; i++) {
  const k = KEYS[i];
  (BYLEN[k.length] ??= []).push(Buffer.from(k, 'latin1'), i);
}
const KEY_OF_STRING = new Map(KEYS.map((k, i) => [k, i]));

/** Next non-blank byte (P left on it), or -1 at the end of the line. */
function peek() {
  while (P < END) {
    const c = B[P];
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return c;
    P++;
  }
  return -1;
}

function expect(c) {
  if (peek() !== c) bail();
  P++;
}

/** After a member or element: true if another follows (a comma eaten), false at the closing `close`. */
function more(close) {
  const c = peek();
  if (c === 44) {
    P++;
    return true;
  }
  if (c === close) {
    P++;
    return false;
  }
  return bail();
}

/** Opens an object or array (P at `{` / `[`): false if it is empty (and closed). */
function open(openC, close) {
  if (peek() !== openC) bail();
  P++;
  if (peek() === close) {
    P++;
    return false;
  }
  return true;
}

/** A member name and its colon → its id in KEYS (UNKNOWN for others). */
function keyId() {
  if (peek() !== 34) bail();
  const b = B;
  const end = END;
  const s = ++P;
  let c;
  while (P < end && (c = b[P]) !== 34) {
    if (c === 92) {
      // escaped name: decode it the slow way
      const e = stringEnd(s - 1);
      const name = JSON.parse(B.utf8Slice(s - 1, e));
      P = e;
      expect(58);
      const id = KEY_OF_STRING.get(name);
      return id === undefined ? UNKNOWN : id;
    }
    P++;
  }
  if (P >= END) bail();
  const len = P - s;
  P++;
  expect(58);
  const cands = BYLEN[len];
  if (cands === undefined) return UNKNOWN;
  outer: for (let j = 0; j < cands.length; j += 2) {
    const kb = cands[j];
    for (let i = 0; i < len; i++) if (kb[i] !== b[s + i]) continue outer;
    return cands[j + 1];
  }
  return UNKNOWN;
}

/** The end (just past the closing quote) of the string token opening at q, escapes honoured. */
function stringEnd(q) {
  const b = B;
  let from = q + 1;
  for (;;) {
    const e = b.indexOf(34, from);
    if (e < 0 || e >= END) bail();
    let k = e - 1;
    while (b[k] === 92) k--;
    if (((e - 1 - k) & 1) === 0) return e + 1; // an even run of backslashes before it: the closing quote
    from = e + 1;
  }
}

// Interning of short ASCII strings by their bytes (attribute keys and most attribute values repeat).
const CACHE_BITS = 12;
const CACHE_MASK = (1 << CACHE_BITS) - 1;
const cacheStr = new Array(1 << CACHE_BITS).fill('');
const cacheLen = new Int32Array(1 << CACHE_BITS).fill(-1);
const SHORT = 24;

/** A string token at P (P at the opening quote) → its value; P past it. */
let strByIndexOf = false;
function str() {
  if (strByIndexOf) return strIdx();
  const b = B;
  const q = P;
  const s = q + 1;
  let i = s;
  let h = 0;
  let ascii = true;
  // Short strings: a loop that also hashes; long ones: indexOf for the quote and for a backslash.
  const lim = s + SHORT < END ? s + SHORT : END;
  for (; i < lim; i++) {
    const c = b[i];
    if (c === 34) {
      P = i + 1;
      const len = i - s;
      if (!ascii || !useCache) return b.utf8Slice(s, i);
      const slot = (h ^ (h >>> 13) ^ len) & CACHE_MASK;
      if (cacheLen[slot] === len) {
        const t = cacheStr[slot];
        let j = 0;
        while (j < len && t.charCodeAt(j) === b[s + j]) j++;
        if (j === len) return t;
      }
      const v = b.latin1Slice(s, i);
      cacheStr[slot] = v;
      cacheLen[slot] = len;
      return v;
    }
    if (c === 92) return escaped(q);
    if (c < 32) bail();
    if (c > 127) ascii = false;
    h = (Math.imul(h, 31) + c) | 0;
  }
  const e = b.indexOf(34, i);
  if (e < 0 || e >= END) bail();
  if (backslashAt(i) < e) return escaped(q);
  P = e + 1;
  return b.utf8Slice(s, e);
}

/** str() with the closing quote found by indexOf for every string; short ones interned by a hash of a few bytes. */
function strIdx() {
  const b = B;
  const s = P + 1;
  const e = b.indexOf(34, s);
  if (e < 0 || e >= END) bail();
  if (backslashAt(s) < e) return escaped(P);
  P = e + 1;
  const len = e - s;
  if (len > SHORT || len < 2 || !useCache) return b.utf8Slice(s, e);
  const slot = (len * 977 + b[s] * 131 + b[s + 1] * 31 + b[e - 1] * 7 + b[e - 2] + b[s + (len >> 1)] * 17) & CACHE_MASK;
  if (cacheLen[slot] === len) {
    const t = cacheStr[slot];
    let j = 0;
    while (j < len && t.charCodeAt(j) === b[s + j]) j++;
    if (j === len) return t;
  }
  const v = b.utf8Slice(s, e);
  cacheStr[slot] = v;
  cacheLen[slot] = len;
  return v;
}

// The next backslash at or after a position, searched once per stretch of the buffer (not once per string).
let bsBuf = null;
let bsFrom = 0;
let bsAt = -1;
function backslashAt(p) {
  if (bsBuf !== B || p < bsFrom || (bsAt !== -1 && bsAt < p)) {
    bsBuf = B;
    bsFrom = p;
    bsAt = B.indexOf(92, p);
  }
  return bsAt === -1 ? Infinity : bsAt;
}

function escaped(q) {
  stats.escapedStrings++;
  const e = stringEnd(q);
  P = e;
  return JSON.parse(B.utf8Slice(q, e));
}

/** The end of the string token at P without decoding it; P past it. */
function skipString() {
  const s = P + 1;
  const e = B.indexOf(34, s);
  if (e < 0 || e >= END) bail();
  if (backslashAt(s) < e) P = stringEnd(P);
  else P = e + 1;
}

const NUM = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
/** A number token at P → its value (what JSON.parse gives); P past it. */
function num() {
  const s = P;
  let c = B[P];
  const neg = c === 45;
  if (neg) P++;
  let n = 0;
  const d0 = P;
  while (P < END && (c = B[P]) >= 48 && c <= 57) {
    n = n * 10 + (c - 48);
    P++;
  }
  const digits = P - d0;
  if (P < END && (c === 46 || c === 101 || c === 69)) {
    while (P < END && (((c = B[P]) >= 48 && c <= 57) || c === 46 || c === 101 || c === 69 || c === 43 || c === 45)) P++;
    const t = B.latin1Slice(s, P);
    if (!NUM.test(t)) bail();
    return Number(t);
  }
  if (digits === 0 || (digits > 1 && B[d0] === 48)) bail();
  if (digits > 15) return Number(B.latin1Slice(s, P));
  return neg ? -n : n;
}

function lit(bytes, value) {
  for (let i = 0; i < bytes.length; i++) if (B[P + i] !== bytes[i]) bail();
  if (P + bytes.length > END) bail();
  P += bytes.length;
  return value;
}
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');

/** Skips any value at P (depth-bounded). */
function skipValue(depth) {
  const c = peek();
  if (c === 34) return skipString();
  if (c === 123 || c === 91) {
    if (depth > 128) bail();
    const close = c === 123 ? 125 : 93;
    P++;
    if (peek() === close) {
      P++;
      return;
    }
    do {
      if (close === 125) {
        if (peek() !== 34) bail();
        skipString();
        expect(58);
      }
      skipValue(depth + 1);
    } while (more(close));
    return;
  }
  if (c === 116) return lit(TRUE, true);
  if (c === 102) return lit(FALSE, false);
  if (c === 110) return lit(NULL, null);
  if (c === 45 || (c >= 48 && c <= 57)) return num();
  return bail();
}

/** Any value at P as JSON.parse gives it (skipped, then that slice parsed). */
function generic() {
  stats.genericValues++;
  peek();
  const s = P;
  skipValue(0);
  return JSON.parse(B.utf8Slice(s, P));
}

/** A scalar token at P (string, number, true/false/null) or, for anything else, the generic value. */
function scalar() {
  const c = peek();
  if (c === 34) return str();
  if (c === 45 || (c >= 48 && c <= 57)) return num();
  if (c === 116) return lit(TRUE, true);
  if (c === 102) return lit(FALSE, false);
  if (c === 110) return lit(NULL, null);
  return generic();
}

/** An id string at P: lowercase hex of `hexLen` characters sliced directly, else normId of its value. */
function id(bytes) {
  const hexLen = bytes * 2;
  if (peek() === 34) {
    const s = P + 1;
    const e = s + hexLen;
    if (e < END && B[e] === 34) {
      let i = s;
      for (; i < e; i++) {
        const c = B[i];
        if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) break;
      }
      if (i === e) {
        P = e + 1;
        return B.latin1Slice(s, e);
      }
    }
  }
  const v = scalar();
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') bail(); // today's path reports it
  return normId(v, bytes, '');
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** Unix nanoseconds at P → epoch ms, as nanosToMs. */
function nanos() {
  if (peek() === 34) {
    const s = P + 1;
    let i = s;
    let n = 0;
    let c;
    while (i < END && (c = B[i]) >= 48 && c <= 57) i++;
    if (i < END && c === 34) {
      const len = i - s;
      const m = len - 3;
      for (let j = 0; j < m; j++) n = n * 10 + (B[s + j] - 48);
      P = i + 1;
      if (m <= 0) return 0;
      return (n <= MAX_SAFE ? n : Number(B.latin1Slice(s, s + m))) / 1000;
    }
  }
  return nanosToMs(scalar(), '');
}

function shortDecimalBytes(s, e) {
  // a decimal integer of 1 to 15 digits, optionally negative: its value; else undefined
  const neg = B[s] === 45;
  const from = neg ? s + 1 : s;
  if (e === from || e - from > 15) return undefined;
  let n = 0;
  for (let i = from; i < e; i++) {
    const d = B[i] - 48;
    if (d < 0 || d > 9) return undefined;
    n = n * 10 + d;
  }
  return neg ? -n : n;
}

/**
 * One AnyValue at P (an attribute's value) → what keyValuesToAttrs keeps (undefined: the attribute is dropped).
 * Read natively: a single-member {stringValue|intValue|doubleValue|boolValue} with a plain token, and an arrayValue
 * of such scalars. Anything else: JSON.parse of this AnyValue alone and dist's conversion.
 */
function attrValue() {
  const c = peek();
  if (c !== 123) {
    skipValue(0);
    return undefined; // not an object: keyValuesToAttrs drops it
  }
  const start = P;
  P++;
  if (peek() === 34) {
    const k = keyId();
    const t = peek();
    let v;
    let ok = true;
    if (k === K.stringValue && t === 34) v = str();
    else if (k === K.intValue && t === 34) {
      const s = P + 1;
      const sv = str();
      const n = P - 1 - s === sv.length ? shortDecimalBytes(s, P - 1) : undefined;
      v = n !== undefined ? n : normInt64(sv, '');
    } else if (k === K.intValue && (t === 45 || (t >= 48 && t <= 57))) v = num();
    else if (k === K.doubleValue && (t === 45 || (t >= 48 && t <= 57))) {
      v = num();
      if (!Number.isFinite(v)) v = String(v);
    } else if (k === K.boolValue && (t === 116 || t === 102)) v = t === 116 ? lit(TRUE, true) : lit(FALSE, false);
    else if (k === K.arrayValue && t === 123) v = scalarArray();
    else ok = false;
    if (ok && v !== undefined && peek() === 125) {
      P++;
      return v;
    }
  }
  // the general case
  P = start;
  const av = generic();
  const o = keyValuesToAttrs([{ key: 'v', value: av }], '');
  return o.v;
}

/** `{"values":[scalar AnyValues]}` at P → the plain array (anyValuePlain + plainToAttr of scalars), else undefined. */
function scalarArray() {
  P++;
  if (peek() !== 34 || keyId() !== K.values) return undefined;
  const out = [];
  if (open(91, 93)) {
    do {
      if (peek() !== 123) return undefined;
      P++;
      if (peek() !== 34) return undefined;
      const k = keyId();
      const t = peek();
      let v;
      if (k === K.stringValue && t === 34) v = str();
      else if (k === K.intValue && t === 34) v = normInt64(str(), '');
      else if (k === K.intValue && (t === 45 || (t >= 48 && t <= 57))) v = num();
      else if (k === K.doubleValue && (t === 45 || (t >= 48 && t <= 57))) v = num();
      else if (k === K.boolValue && (t === 116 || t === 102)) v = t === 116 ? lit(TRUE, true) : lit(FALSE, false);
      else return undefined;
      if (typeof v === 'number' && !Number.isFinite(v)) return undefined;
      if (peek() !== 125) return undefined;
      P++;
      out.push(v);
    } while (more(93));
  }
  if (peek() !== 125) return undefined;
  P++;
  return out;
}

/** `[{key, value}]` at P → attributes (keyValuesToAttrs). */
function attrs() {
  const out = {};
  const c = peek();
  if (c === 110) {
    lit(NULL, null);
    return out;
  }
  if (!open(91, 93)) return out;
  do {
    if (!open(123, 125)) bail(); // {} has no key: today's path reports it
    let key;
    let value;
    let hasValue = false;
    do {
      const k = keyId();
      if (k === K.key) {
        if (peek() !== 34) bail();
        key = str();
      } else if (k === K.value) {
        value = attrValue();
        hasValue = true;
      } else skipValue(0);
    } while (more(125));
    if (key === undefined) bail();
    if (!hasValue || value === undefined) continue;
    if (key === '__proto__') setOwn(out, key, value);
    else out[key] = value;
  } while (more(93));
  return out;
}

function events() {
  const c = peek();
  if (c === 110) {
    lit(NULL, null);
    return [];
  }
  if (!open(91, 93)) return [];
  const out = [];
  do {
    let name = '';
    let time = 0;
    let attributes;
    if (open(123, 125)) {
      do {
        const k = keyId();
        if (k === K.name) name = peek() === 34 ? str() : (skipValue(0), '');
        else if (k === K.timeUnixNano) time = nanos();
        else if (k === K.attributes) attributes = attrs();
        else skipValue(0);
      } while (more(125));
    }
    out.push({ name, time, attributes: attributes ?? {} });
  } while (more(93));
  return out;
}

function links() {
  const c = peek();
  if (c === 110) {
    lit(NULL, null);
    return [];
  }
  if (!open(91, 93)) return [];
  const out = [];
  do {
    let traceId;
    let spanId;
    let attributes;
    if (open(123, 125)) {
      do {
        const k = keyId();
        if (k === K.traceId) traceId = id(16);
        else if (k === K.spanId) spanId = id(8);
        else if (k === K.attributes) attributes = attrs();
        else skipValue(0);
      } while (more(125));
    }
    out.push({ traceId: traceId ?? '', spanId: spanId ?? '', attributes: attributes ?? {} });
  } while (more(93));
  return out;
}

const KINDS = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];
const STATUSES = ['UNSET', 'OK', 'ERROR'];
const ZERO16 = '0000000000000000';

function span(resource, scope) {
  if (peek() !== 123) bail();
  let traceId;
  let spanId;
  let parentSpanId;
  let name = '';
  let kind = 'UNSPECIFIED';
  let start = 0;
  let end = 0;
  let attributes;
  let evs;
  let lks;
  let code = 'UNSET';
  let message;
  if (open(123, 125)) {
    do {
      switch (keyId()) {
        case K.traceId:
          traceId = id(16);
          break;
        case K.spanId:
          spanId = id(8);
          break;
        case K.parentSpanId:
          parentSpanId = id(8);
          if (parentSpanId === ZERO16) parentSpanId = undefined; // normId gives 16 hex characters
          break;
        case K.name:
          name = peek() === 34 ? str() : (skipValue(0), '');
          break;
        case K.kind: {
          const v = scalar();
          kind = typeof v === 'number' ? (KINDS[v] ?? 'UNSPECIFIED') : normKind(v);
          break;
        }
        case K.startTimeUnixNano:
          start = nanos();
          break;
        case K.endTimeUnixNano:
          end = nanos();
          break;
        case K.attributes:
          attributes = attrs();
          break;
        case K.events:
          evs = events();
          break;
        case K.links:
          lks = links();
          break;
        case K.status:
          code = 'UNSET';
          message = undefined;
          if (peek() === 123) {
            if (open(123, 125)) {
              do {
                const k = keyId();
                if (k === K.code) {
                  const v = scalar();
                  code = typeof v === 'number' ? (STATUSES[v] ?? 'UNSET') : normStatusCode(v);
                } else if (k === K.message) message = peek() === 34 ? str() : (skipValue(0), undefined);
                else skipValue(0);
              } while (more(125));
            }
          } else skipValue(0);
          break;
        default:
          skipValue(0);
      }
    } while (more(125));
  }
  if (traceId === undefined || spanId === undefined) bail(); // "missing": today's path reports it
  attributes ??= {};
  evs ??= [];
  lks ??= [];
  const rec =
    parentSpanId === undefined
      ? {
          traceId,
          spanId,
          name,
          kind,
          start,
          end,
          attributes,
          events: evs,
          links: lks,
          status: { code },
          resource,
          scope,
        }
      : {
          traceId,
          spanId,
          name,
          kind,
          start,
          end,
          attributes,
          events: evs,
          links: lks,
          status: { code },
          resource,
          scope,
          parentSpanId,
        };
  if (message !== undefined && message !== '') rec.status.message = message;
  return rec;
}

function scopeValue() {
  if (peek() !== 123) {
    skipValue(0);
    return { name: '' };
  }
  let name = '';
  let version;
  if (open(123, 125)) {
    do {
      const k = keyId();
      if (k === K.name) name = peek() === 34 ? str() : (skipValue(0), '');
      else if (k === K.version) version = peek() === 34 ? str() : (skipValue(0), undefined);
      else skipValue(0);
    } while (more(125));
  }
  const sc = { name };
  if (version !== undefined && version !== '') sc.version = version;
  return sc;
}

function scopeSpans(out, rsFirst, resource) {
  // resource: the ResourceSpans' attributes if already read, else null (patched by the caller)
  const first = out.length;
  let scope = null;
  let sawSpans = false;
  if (open(123, 125)) {
    do {
      const k = keyId();
      if (k === K.scope) {
        if (scope !== null) bail();
        scope = scopeValue();
      } else if (k === K.spans) {
        if (sawSpans) bail();
        sawSpans = true;
        if (peek() === 110) lit(NULL, null);
        else if (open(91, 93)) {
          do out.push(span(resource, scope));
          while (more(93));
        }
      } else if (k === K.instrumentationLibrary) bail();
      else skipValue(0);
    } while (more(125));
  }
  if (scope === null) scope = { name: '' };
  for (let i = first; i < out.length; i++) if (out[i].scope === null) out[i].scope = scope;
  void rsFirst;
}

function resourceSpans(out) {
  const first = out.length;
  let resource = null;
  let sawSS = false;
  if (open(123, 125)) {
    do {
      const k = keyId();
      if (k === K.resource) {
        if (resource !== null) bail();
        if (peek() === 123) {
          let a;
          if (open(123, 125)) {
            do {
              if (keyId() === K.attributes) {
                if (a !== undefined) bail();
                a = attrs();
              } else skipValue(0);
            } while (more(125));
          }
          resource = a ?? {};
        } else {
          skipValue(0);
          resource = {};
        }
      } else if (k === K.scopeSpans) {
        if (sawSS) bail();
        sawSS = true;
        if (peek() === 110) lit(NULL, null);
        else if (open(91, 93)) {
          do scopeSpans(out, first, resource);
          while (more(93));
        }
      } else if (k === K.instrumentationLibrarySpans) bail();
      else skipValue(0);
    } while (more(125));
  }
  if (resource === null) resource = {};
  for (let i = first; i < out.length; i++) if (out[i].resource === null) out[i].resource = resource;
}

function fastDoc(out) {
  if (!open(123, 125)) {
    if (peek() !== -1) bail();
    return; // {}: no spans
  }
  let saw = false;
  do {
    if (keyId() !== K.resourceSpans || saw) bail();
    saw = true;
    if (peek() === 110) lit(NULL, null);
    else if (open(91, 93)) {
      do resourceSpans(out);
      while (more(93));
    }
  } while (more(125));
  if (peek() !== -1) bail();
}

/** The prototype: the SpanRecords of the line buf[a, b) appended to out. */
function protoLine(buf, a, b, out) {
  B = buf;
  P = a;
  END = b;
  const before = out.length;
  try {
    fastDoc(out);
  } catch (err) {
    out.length = before;
    stats.fallbacks++;
    if (process.env.PROTO_DEBUG && stats.fallbacks <= 3)
      console.error(
        'fallback at',
        P - a,
        err === BAIL ? 'BAIL' : err,
        buf.latin1Slice(Math.max(a, P - 60), Math.min(b, P + 40)),
      );
    for (const s of spansOfDocument(JSON.parse(buf.utf8Slice(a, b)))) out.push(s);
  }
}

/** Today's path (as the brief states it). */
function currentLine(buf, a, b, out) {
  for (const s of spansOfDocument(JSON.parse(buf.utf8Slice(a, b)))) out.push(s);
}
/** Today's JSON-lines reader's call (jsonl.ts): appendSpansOfDocument, which also shares equal strings. */
function readerLine(buf, a, b, out) {
  appendSpansOfDocument(JSON.parse(buf.utf8Slice(a, b)), out);
}
let _sink; // keeps the parsed tree reachable, as a reader's caller would
function parseOnly(buf, a, b) {
  _sink = JSON.parse(buf.utf8Slice(a, b));
}

module.exports = { protoLine, currentLine, stats };

// ---------------------------------------------------------------------------------------------------------------
// The measurement.

function lineRanges(buf, n) {
  const out = [];
  let from = 0;
  for (let nl = buf.indexOf(10, 0); nl >= 0 && nl < n; nl = buf.indexOf(10, from)) {
    if (nl > from) out.push(from, nl);
    from = nl + 1;
  }
  return out;
}

function sortedStringify(v) {
  return JSON.stringify(v, (k, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((key) => [key, x[key]]),
        )
      : x,
  );
}

function verify(buf, ranges) {
  let mismatches = 0;
  let spans = 0;
  let firstDiff;
  const a = [];
  const b = [];
  for (let i = 0; i < ranges.length; i += 2) {
    a.length = 0;
    b.length = 0;
    currentLine(buf, ranges[i], ranges[i + 1], a);
    protoLine(buf, ranges[i], ranges[i + 1], b);
    spans += a.length;
    if (!isDeepStrictEqual(a, b)) {
      mismatches++;
      if (firstDiff === undefined) {
        const j = a.findIndex((x, k) => !isDeepStrictEqual(x, b[k]));
        firstDiff = { line: i / 2 + 1, span: j, current: sortedStringify(a[j]), proto: sortedStringify(b[j]) };
      }
    }
  }
  return { lines: ranges.length / 2, spans, mismatches, firstDiff };
}

/** Synthetic lines: the AnyValue kinds, escapes and shapes the bench file lacks, checked the same way. */
function syntheticLines() {
  const kv = (key, value) => ({ key, value });
  const spanOf = (extra) => ({
    traceId: '99e1ef7c72c32b8ada3b32c0ab73b0ad',
    spanId: '2cc09a8a86cec4d3',
    name: 'x',
    kind: 1,
    startTimeUnixNano: '1793491200000000000',
    // eslint-disable-next-line no-loss-of-precision -- a producer writing the time as a JSON number loses it too
    endTimeUnixNano: 1793491200000123456,
    ...extra,
  });
  const docs = [
    {
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                spanOf({
                  attributes: [
                    kv('b', { boolValue: true }),
                    kv('bs', { boolValue: 'true' }),
                    kv('i', { intValue: 5 }),
                    kv('ibig', { intValue: '12345678901234567890' }),
                    kv('ineg', { intValue: '-42' }),
                    kv('i16', { intValue: '1234567890123456' }),
                    kv('d', { doubleValue: 1.5e300 }),
                    kv('dinf', { doubleValue: 'Infinity' }),
                    kv('dstr', { doubleValue: '2.5' }),
                    kv('y', { bytesValue: 'AAEC' }),
                    kv('a', { arrayValue: { values: [{ intValue: '1' }, { boolValue: false }, { doubleValue: 2 }] } }),
                    kv('anest', { arrayValue: { values: [{ arrayValue: { values: [{ stringValue: 'x' }] } }] } }),
                    kv('kv', {
                      kvlistValue: { values: [kv('p', { stringValue: 'q' }), kv('__proto__', { intValue: 1 })] },
                    }),
                    kv('empty', {}),
                    kv('null', null),
                    kv('two', { stringValue: 's', intValue: '3' }),
                    kv('esc', { stringValue: 'a"b\\c\u00e9\ud83d\ude00\n' }),
                    kv('k\u00e9y', { stringValue: 'caf\u00e9' }),
                    kv('__proto__', { stringValue: 'p' }),
                    kv('dup', { stringValue: 'first' }),
                    kv('dup', { stringValue: 'second' }),
                  ],
                  events: [
                    {
                      name: 'exception',
                      timeUnixNano: '1793491200000500000',
                      attributes: [kv('exception.type', { stringValue: 'E' })],
                    },
                    { name: 7 },
                  ],
                  links: [
                    { traceId: '99e1ef7c72c32b8ada3b32c0ab73b0ad', spanId: '2cc09a8a86cec4d3', attributes: [] },
                    { traceId: 'mOHvfHLDK4raOzLAq3Owrg==', spanId: 'LMCaiobOxNM=' },
                  ],
                  status: { code: 'STATUS_CODE_ERROR', message: 'boom' },
                  parentSpanId: '0000000000000000',
                }),
                spanOf({
                  kind: 'SPAN_KIND_CLIENT',
                  parentSpanId: 'ABCDEF0123456789',
                  status: { code: 2, message: '' },
                }),
              ],
            },
          ],
          resource: { attributes: [kv('service.name', { stringValue: 'late' })] },
        },
      ],
    },
    {},
    { resourceSpans: [] },
    { resourceSpans: [{ scopeSpans: [{ spans: [spanOf({})], scope: { name: 's', version: '' } }] }] },
  ];
  const texts = docs.map((d) => JSON.stringify(d));
  texts.push(' { "resourceSpans" : [ { "scopeSpans" : [ { "spans" : [ ' + JSON.stringify(spanOf({})) + ' ] } ] } ] } ');
  texts.push(
    '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"\\u0039' +
      '9e1ef7c72c32b8ada3b32c0ab73b0ad","spanId":"2cc09a8a86cec4d3"}]}]}]}',
  );
  return texts;
}

function verifySynthetic() {
  const texts = syntheticLines();
  const buf = Buffer.from(texts.join('\n') + '\n');
  const r = verify(buf, lineRanges(buf, buf.length));
  return r;
}

function summarizeProfile(file) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = prof.timeDeltas;
  let total = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    const n = byId.get(prof.samples[i]);
    const f = n.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
    const d = dt[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + d);
    total += d;
  }
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 25);
  for (const [k, v] of top)
    console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}`);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : dflt;
  };
  if (opt('--profile-summary')) return summarizeProfile(opt('--profile-summary'));
  const file = args[0];
  const verifyMb = Number(opt('--verify-mb', 64));
  const timeMb = Number(opt('--time-mb', 32));
  const rounds = Number(opt('--rounds', 7));
  const only = opt('--only');
  useCache = !args.includes('--no-cache');

  const fd = openSync(file, 'r');
  const buf = Buffer.alloc(verifyMb * 1024 * 1024);
  const n = readSync(fd, buf, 0, buf.length, 0);
  closeSync(fd);
  const all = lineRanges(buf, n);

  const result = {};
  if (!only) {
    strByIndexOf = true;
    result.syntheticIndexOf = verifySynthetic();
    result.equivalenceIndexOf = verify(buf, all);
    strByIndexOf = false;
    result.synthetic = verifySynthetic();
    stats.fallbacks = 0;
    result.equivalence = verify(buf, all);
    result.equivalence.fallbacks = stats.fallbacks;
    result.equivalence.escapedStrings = stats.escapedStrings;
    result.equivalence.genericValues = stats.genericValues;
  }

  const timeBytes = timeMb * 1024 * 1024;
  const ranges = [];
  for (let i = 0; i < all.length && all[i + 1] <= timeBytes; i += 2) ranges.push(all[i], all[i + 1]);
  let spans = 0;
  {
    const o = [];
    for (let i = 0; i < ranges.length; i += 2) currentLine(buf, ranges[i], ranges[i + 1], o);
    spans = o.length;
  }

  // Records are kept in batches of 64 lines (~400 spans), as a reader hands a chunk's spans on, then dropped.
  const BATCH = 128;
  const sections = {
    'parse+spansOfDocument': () => {
      let out = [];
      for (let i = 0; i < ranges.length; i += 2) {
        currentLine(buf, ranges[i], ranges[i + 1], out);
        if (i % BATCH === BATCH - 2) out = [];
      }
    },
    'parse+appendSpansOfDocument': () => {
      let out = [];
      for (let i = 0; i < ranges.length; i += 2) {
        readerLine(buf, ranges[i], ranges[i + 1], out);
        if (i % BATCH === BATCH - 2) out = [];
      }
    },
    'JSON.parse only': () => {
      for (let i = 0; i < ranges.length; i += 2) parseOnly(buf, ranges[i], ranges[i + 1]);
    },
    prototype: () => {
      useCache = true;
      let out = [];
      for (let i = 0; i < ranges.length; i += 2) {
        protoLine(buf, ranges[i], ranges[i + 1], out);
        if (i % BATCH === BATCH - 2) out = [];
      }
    },
    'prototype (indexOf strings)': () => {
      strByIndexOf = true;
      let out = [];
      for (let i = 0; i < ranges.length; i += 2) {
        protoLine(buf, ranges[i], ranges[i + 1], out);
        if (i % BATCH === BATCH - 2) out = [];
      }
      strByIndexOf = false;
    },
    'prototype (no string cache)': () => {
      useCache = false;
      let out = [];
      for (let i = 0; i < ranges.length; i += 2) {
        protoLine(buf, ranges[i], ranges[i + 1], out);
        if (i % BATCH === BATCH - 2) out = [];
      }
      useCache = true;
    },
  };
  const names = Object.keys(sections).filter(
    (k) =>
      !only ||
      (only === 'proto' && k === 'prototype') ||
      (only === 'proto-indexof' && k === 'prototype (indexOf strings)') ||
      (only === 'parse' && k === 'JSON.parse only') ||
      (only === 'spans' && k === 'parse+spansOfDocument'),
  );

  const gcEntries = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      gcEntries.push({ start: e.startTime, duration: e.duration, kind: e.detail?.kind });
  });
  obs.observe({ entryTypes: ['gc'] });
  const intervals = []; // {name, round, t0, t1}
  const times = Object.fromEntries(names.map((k) => [k, []]));
  stats.fallbacks = 0;
  for (let r = -1; r < rounds; r++) {
    const order = r % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const t0 = performance.now();
      sections[name]();
      const t1 = performance.now();
      if (r >= 0) {
        times[name].push(((t1 - t0) * 1000) / spans);
        intervals.push({ name, t0, t1 });
      }
      await new Promise((res) => setImmediate(res)); // lets the gc entries of the section arrive
    }
  }
  await new Promise((res) => setTimeout(res, 100));
  obs.disconnect();
  const gcMs = Object.fromEntries(names.map((k) => [k, 0]));
  const gcCount = Object.fromEntries(names.map((k) => [k, 0]));
  for (const g of gcEntries) {
    const iv = intervals.find((x) => g.start >= x.t0 && g.start < x.t1);
    if (iv) {
      gcMs[iv.name] += g.duration;
      gcCount[iv.name]++;
    }
  }
  result.timing = {
    spans,
    lines: ranges.length / 2,
    bytes: ranges[ranges.length - 1],
    rounds,
    fallbacksWhileTiming: stats.fallbacks,
    usPerSpan: Object.fromEntries(
      names.map((k) => {
        const xs = times[k];
        const total = xs.reduce((a, b) => a + b, 0);
        const gcUs = (gcMs[k] * 1000) / spans / rounds;
        return [
          k,
          {
            median: +median(xs).toFixed(3),
            min: +Math.min(...xs).toFixed(3),
            max: +Math.max(...xs).toFixed(3),
            gcUsPerSpan: +gcUs.toFixed(3),
            gcShare: +((gcUs * rounds) / total).toFixed(3),
            gcPausesPerRound: +(gcCount[k] / rounds).toFixed(1),
          },
        ];
      }),
    ),
  };
  console.log(JSON.stringify(result, null, 2));
}

if (require.main === module) main();
