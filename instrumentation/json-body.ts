/**
 * JSON.parse of a request body, without decoding a large body into one string.
 *
 * V8 allocates a string over 128 KB (64K characters once one of them is outside Latin-1) in large-object space, and
 * allocating and dropping one per call costs 0.7 ms or more (bench/request-body.bench.mjs): more than everything else
 * the span layer does per call. An agent's chat request passes that size as its history grows, but its bulk is one array of
 * small elements (`messages`). So a large body is parsed piecewise: its top-level members are located on the bytes,
 * each top-level array's elements too, and each piece is decoded and JSON.parse'd on its own. The result equals
 * JSON.parse's; a body the byte scan does not accept is parsed whole, as before.
 */

/** Below this many bytes the body is parsed whole: its string stays small. */
const PIECEWISE_MIN_BYTES = 60 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** The body's JSON value; throws as JSON.parse does on a body that is not JSON. */
export function parseJsonBody(buf: Buffer): unknown {
  const piecewise = buf.length >= PIECEWISE_MIN_BYTES ? parsePiecewise(buf) : undefined;
  // Otherwise (small, not an object, or not JSON) JSON.parse decides, and names the error.
  return piecewise ?? JSON.parse(buf.toString('utf8'));
}

/** A body holding a JSON object, parsed piecewise at any size; undefined for any other body. */
export function parsePiecewise(buf: Buffer): Record<string, unknown> | undefined {
  try {
    return parseObjectPiecewise(buf);
  } catch {
    return undefined;
  }
}

class NotPiecewise extends Error {}

function parseObjectPiecewise(b: Buffer): Record<string, unknown> {
  let i = skipSpace(b, 0);
  expect(b, i, OPEN_OBJECT);
  const out: Record<string, unknown> = {};
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_OBJECT) return finish(b, i + 1, out);
  for (;;) {
    expect(b, i, QUOTE);
    const keyEnd = skipString(b, i);
    const key = JSON.parse(b.toString('utf8', i, keyEnd)) as string;
    i = skipSpace(b, keyEnd);
    expect(b, i, COLON);
    i = skipSpace(b, i + 1);
    let value: unknown;
    let end: number;
    if (b[i] === OPEN_ARRAY) [value, end] = parseArrayPiecewise(b, i);
    else value = parsePiece(b, i, (end = skipValue(b, i)));
    // As JSON.parse: a repeated key keeps its last value, and `__proto__` is an own property, not the prototype.
    Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
    i = skipSpace(b, end);
    if (b[i] === COMMA) {
      i = skipSpace(b, i + 1);
      continue;
    }
    expect(b, i, CLOSE_OBJECT);
    return finish(b, i + 1, out);
  }
}

/** The array starting at b[start], its elements each parsed on its own; and where it ends (exclusive). */
function parseArrayPiecewise(b: Buffer, start: number): [unknown[], number] {
  const out: unknown[] = [];
  let i = skipSpace(b, start + 1);
  if (b[i] === CLOSE_ARRAY) return [out, i + 1];
  for (;;) {
    const elementEnd = skipValue(b, i);
    out.push(parsePiece(b, i, elementEnd));
    i = skipSpace(b, elementEnd);
    if (b[i] === COMMA) {
      i = skipSpace(b, i + 1);
      continue;
    }
    expect(b, i, CLOSE_ARRAY);
    return [out, i + 1];
  }
}

function parsePiece(b: Buffer, start: number, end: number): unknown {
  return JSON.parse(b.toString('utf8', start, end));
}

function finish(b: Buffer, i: number, out: Record<string, unknown>): Record<string, unknown> {
  if (skipSpace(b, i) !== b.length) throw new NotPiecewise();
  return out;
}

function expect(b: Buffer, i: number, byte: number): void {
  if (b[i] !== byte) throw new NotPiecewise();
}

function skipSpace(b: Buffer, i: number): number {
  for (;;) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** The end (exclusive) of the string starting at b[i] (a quote). In UTF-8, no byte of a multi-byte character is a quote or a backslash. */
function skipString(b: Buffer, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, from);
    if (q < 0) throw new NotPiecewise();
    let backslashes = 0;
    while (b[q - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/**
 * The end (exclusive) of the value starting at b[i]. Only its extent is found here: what is inside is checked by the
 * JSON.parse of the piece.
 */
function skipValue(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (let j = i; j < b.length;) {
      const d = b[j];
      if (d === QUOTE) {
        j = skipString(b, j);
        continue;
      }
      if (d === OPEN_OBJECT || d === OPEN_ARRAY) depth++;
      else if (d === CLOSE_OBJECT || d === CLOSE_ARRAY) {
        depth--;
        if (depth === 0) return j + 1;
      }
      j++;
    }
    throw new NotPiecewise();
  }
  // A number, true, false or null: up to the next separator.
  let j = i;
  while (j < b.length) {
    const d = b[j];
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09)
      break;
    j++;
  }
  if (j === i) throw new NotPiecewise();
  return j;
}
