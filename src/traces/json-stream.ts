/**
 * A streaming JSON parser for trace files too big for `JSON.parse` of the whole text (an OTLP/JSON export or a
 * Jaeger download of a gigabyte). Text is fed in chunks; values are built as usual, except at the paths a
 * `select` function picks: a selected value is handed to `onSelect` as soon as it is complete and is NOT attached
 * to its parent, so memory holds one selected value (a span, a trace) plus the partly built ancestors.
 *
 * Several top-level values in a row (concatenated JSON, JSON lines) are accepted; each completed top-level value
 * goes to `onDocument` (with its selected parts already removed).
 *
 * Errors are `JsonSyntaxError`s with a line, a column and the JSON path being parsed.
 *
 * A string longer than `maxStringChars` keeps its first characters and a marker saying how many more there were;
 * the rest is scanned as it arrives and dropped, never held (a 100 MB attribute value in a trace costs its chunks,
 * not 100 MB copied at every chunk). Escapes in the dropped part are not checked.
 */

export type JsonPath = readonly (string | number)[];

export class JsonSyntaxError extends Error {
  constructor(
    readonly problem: string,
    readonly line: number,
    readonly column: number,
    readonly jsonPath: string,
  ) {
    super(`${problem} at line ${line} column ${column}${jsonPath ? ` (in ${jsonPath})` : ''}`);
    this.name = 'JsonSyntaxError';
  }
}

export interface JsonStreamHandlers {
  /**
   * Whether the object or array completed at `path` is handed out instead of kept. Called for containers only
   * (never for strings, numbers, literals). `ancestor(0)` is the document root, `ancestor(path.length - 1)` the
   * direct parent, both partly built.
   */
  select?(path: JsonPath, ancestor: (depth: number) => unknown): boolean;
  /** A selected value; `ancestors[0]` is the document root, the last one is the direct parent (partly built). */
  onSelect?(value: unknown, path: JsonPath, ancestors: readonly unknown[]): void;
  /** A completed top-level value. */
  onDocument?(value: unknown, index: number): void;
  /** A property name, as soon as it is read; `path` is the path of the object holding it. */
  onKey?(key: string, path: JsonPath): void;
}

/** Renders a path as `resourceSpans[0].scopeSpans[1].spans[7]`. */
export function formatJsonPath(path: JsonPath): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? p : `.${p}`;
  return out;
}

export interface JsonStreamOptions {
  /** Strings longer than this are cut to it, with a marker (default: kept whole). */
  maxStringChars?: number;
}

/** A string too long to keep, being scanned to its end. */
interface LongString {
  kept: string;
  /** JSON text characters dropped so far. */
  dropped: number;
  /** The last character dropped was an unpaired backslash: the next one is escaped. */
  escaping: boolean;
  isKey: boolean;
}

/** What stands for the end of a string cut at `maxStringChars`. */
export function truncationMarker(dropped: number): string {
  return `… [${dropped} more characters not read]`;
}

interface Frame {
  /** The container being built. */
  value: Record<string, unknown> | unknown[];
  isArray: boolean;
  /** Object: the key whose value is being parsed. */
  key: string | undefined;
  /** Array: index of the next element. */
  index: number;
}

// Parser states: what the next significant character may be.
const S_VALUE = 0; // a value (top level, after ':' or after ',' in an array)
const S_VALUE_OR_CLOSE = 1; // first element of an array, or ']'
const S_KEY_OR_CLOSE = 2; // first key of an object, or '}'
const S_KEY = 3; // a key (after ',' in an object)
const S_COLON = 4;
const S_COMMA_OR_CLOSE = 5; // after a value inside a container
const S_AFTER_DOC = 6; // after a top-level value: whitespace, or another top-level value

const NUMBER_CHAR = new Uint8Array(128);
for (const ch of '0123456789.eE+-') NUMBER_CHAR[ch.charCodeAt(0)] = 1;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

export class JsonStreamParser {
  private buf = '';
  private pos = 0;
  private state = S_VALUE;
  private readonly stack: Frame[] = [];
  private readonly path: (string | number)[] = [];
  private docIndex = 0;
  /** Lines fully consumed before `buf` (1-based line of buf[0] is linesBefore + 1) and the column base. */
  private linesBefore = 0;
  private colBase = 0;
  private nextBackslash = -1;
  private pendingKey: string | undefined;
  private long: LongString | undefined;
  private readonly maxStringChars: number;

  private readonly ancestor = (depth: number): unknown => this.stack[depth]?.value;

  constructor(
    private readonly handlers: JsonStreamHandlers = {},
    options: JsonStreamOptions = {},
  ) {
    this.maxStringChars = options.maxStringChars ?? Number.POSITIVE_INFINITY;
  }

  /** Feed the next chunk of text. */
  write(chunk: string): void {
    this.buf = this.pos < this.buf.length ? this.buf.slice(this.pos) + chunk : chunk;
    this.pos = 0;
    this.nextBackslash = -1;
    this.run(false);
    this.compact();
  }

  /** No more text: a value cut short is an error. */
  end(): void {
    this.run(true);
    this.skipWs();
    if (this.stack.length > 0 || (this.state !== S_AFTER_DOC && this.state !== S_VALUE) || this.pos < this.buf.length) {
      this.fail('unexpected end of file', this.buf.length);
    }
    if (this.docIndex === 0) this.fail('no JSON value (empty file)', this.buf.length);
  }

  /** Drop consumed text, remembering its line count for positions. */
  private compact(): void {
    if (this.pos === 0) return;
    const done = this.buf.slice(0, this.pos);
    const nl = done.lastIndexOf('\n');
    if (nl < 0) this.colBase += done.length;
    else {
      this.colBase = done.length - nl - 1;
      for (let i = done.indexOf('\n'); i >= 0; i = done.indexOf('\n', i + 1)) this.linesBefore++;
    }
    this.buf = this.buf.slice(this.pos);
    this.pos = 0;
    this.nextBackslash = -1;
  }

  private fail(problem: string, at: number): never {
    const before = this.buf.slice(0, Math.min(at, this.buf.length));
    const nl = before.lastIndexOf('\n');
    let lines = 0;
    for (let i = before.indexOf('\n'); i >= 0; i = before.indexOf('\n', i + 1)) lines++;
    const line = this.linesBefore + lines + 1;
    const column = (nl < 0 ? this.colBase + before.length : before.length - nl - 1) + 1;
    throw new JsonSyntaxError(problem, line, column, formatJsonPath(this.path));
  }

  private skipWs(): void {
    const b = this.buf;
    let i = this.pos;
    for (;;) {
      const c = b.charCodeAt(i);
      if (c === 32 || c === 10 || c === 13 || c === 9) i++;
      else break;
    }
    this.pos = i;
  }

  /** Deliver a completed value to its container (or as a document). */
  private complete(value: unknown, isContainer: boolean): void {
    const top = this.stack[this.stack.length - 1];
    if (isContainer && this.handlers.select?.(this.path, this.ancestor)) {
      const ancestors = this.stack.map((f) => f.value);
      this.handlers.onSelect?.(value, this.path.slice(), ancestors);
    } else if (top === undefined) {
      this.handlers.onDocument?.(value, this.docIndex);
    } else if (top.isArray) {
      (top.value as unknown[]).push(value);
    } else if (top.key === '__proto__') {
      // A key like any other (as JSON.parse makes it): an assignment would set the object's prototype instead.
      Object.defineProperty(top.value, '__proto__', { value, writable: true, enumerable: true, configurable: true });
    } else {
      (top.value as Record<string, unknown>)[top.key as string] = value;
    }
    if (top === undefined) {
      this.docIndex++;
      this.state = S_AFTER_DOC;
      return;
    }
    if (top.isArray) top.index++;
    this.path.pop();
    this.state = S_COMMA_OR_CLOSE;
  }

  private open(isArray: boolean): void {
    this.stack.push({ value: isArray ? [] : {}, isArray, key: undefined, index: 0 });
    this.state = isArray ? S_VALUE_OR_CLOSE : S_KEY_OR_CLOSE;
  }

  /** Before a value inside an array: its index joins the path. */
  private enterElement(): void {
    const top = this.stack[this.stack.length - 1];
    if (top?.isArray) this.path.push(top.index);
  }

  /** Read a string starting at `pos` (a quote). Returns undefined if it is not complete in the buffer yet. */
  private readString(): string | undefined {
    const b = this.buf;
    const start = this.pos;
    let j = start + 1;
    for (;;) {
      const q = b.indexOf('"', j);
      if (q < 0) {
        if (b.length - start - 1 > this.maxStringChars) this.startLong(start);
        return undefined;
      }
      let bs = 0;
      for (let k = q - 1; k > start && b.charCodeAt(k) === 92; k--) bs++;
      if (bs % 2 === 0) {
        if (this.nextBackslash < start) {
          this.nextBackslash = b.indexOf('\\', start);
          if (this.nextBackslash < 0) this.nextBackslash = Number.MAX_SAFE_INTEGER;
        }
        this.pos = q + 1;
        // Whole in this chunk but past the bound: cut as if it had been streamed (the same value for any chunking).
        if (q - start - 1 > this.maxStringChars) {
          const { kept, cut } = this.headOf(start, q);
          return kept + truncationMarker(q - start - 1 - cut);
        }
        if (this.nextBackslash > q) return b.slice(start + 1, q);
        try {
          return JSON.parse(b.slice(start, q + 1)) as string;
        } catch {
          this.fail('invalid escape in string', start);
        }
      }
      j = q + 1;
    }
  }

  /**
   * The decoded head of the string at `start` (a quote) whose raw text runs at least to `end`: its first
   * `maxStringChars` characters of JSON text, cut back before an escape or a surrogate pair the limit splits.
   * `cut` is how much raw text it took.
   */
  private headOf(start: number, end: number): { kept: string; cut: number } {
    const raw = this.buf.slice(start + 1, Math.min(end, start + 1 + this.maxStringChars));
    let cut = raw.length;
    for (let i = raw.indexOf('\\'); i >= 0 && i < raw.length; i = raw.indexOf('\\', i)) {
      const len = raw.charCodeAt(i + 1) === 117 /* u */ ? 6 : 2;
      if (i + len > raw.length) {
        cut = i;
        break;
      }
      i += len;
    }
    const last = raw.charCodeAt(cut - 1);
    if (last >= 0xd800 && last <= 0xdbff) cut--;
    const head = raw.slice(0, cut);
    if (!head.includes('\\')) return { kept: head, cut };
    try {
      return { kept: JSON.parse(`"${head}"`) as string, cut };
    } catch {
      this.fail('invalid escape in string', start);
    }
  }

  /** The string at `start` is too long: keep its head, drop the rest of the buffer and scan on from there. */
  private startLong(start: number): void {
    const { kept, cut } = this.headOf(start, this.buf.length);
    const isKey = this.state === S_KEY || this.state === S_KEY_OR_CLOSE;
    this.long = { kept, dropped: 0, escaping: false, isKey };
    this.pos = start + 1 + cut;
    this.continueLong(false);
  }

  /** Scan a long string on; false when the buffer ended first (more text is needed). */
  private continueLong(final: boolean): boolean {
    const long = this.long as LongString;
    const b = this.buf;
    let i = this.pos;
    if (long.escaping && i < b.length) {
      long.escaping = false;
      i++;
    }
    for (;;) {
      const q = b.indexOf('"', i);
      if (q < 0) {
        let bs = 0;
        for (let k = b.length - 1; k >= i && b.charCodeAt(k) === 92; k--) bs++;
        if (bs % 2 === 1) long.escaping = true;
        long.dropped += b.length - this.pos;
        this.pos = b.length;
        if (final) this.fail('unterminated string', b.length);
        return false;
      }
      let bs = 0;
      for (let k = q - 1; k >= i && b.charCodeAt(k) === 92; k--) bs++;
      if (bs % 2 === 0) {
        long.dropped += q - this.pos;
        this.pos = q + 1;
        break;
      }
      i = q + 1;
    }
    this.long = undefined;
    const value = long.kept + truncationMarker(long.dropped);
    if (long.isKey) {
      this.pendingKey = value;
      this.state = S_COLON;
    } else this.complete(value, false);
    return true;
  }

  private run(final: boolean): void {
    const b = this.buf;
    if (this.long !== undefined && !this.continueLong(final)) return;
    for (;;) {
      this.skipWs();
      if (this.pos >= b.length) return;
      const c = b.charCodeAt(this.pos);
      switch (this.state) {
        case S_KEY_OR_CLOSE:
        case S_KEY: {
          if (c === 125 /* } */ && this.state === S_KEY_OR_CLOSE) {
            this.pos++;
            this.closeContainer();
            continue;
          }
          if (c !== 34) this.fail(`expected a property name, got ${JSON.stringify(b[this.pos])}`, this.pos);
          const key = this.readString();
          if (key === undefined) return;
          this.pendingKey = key;
          this.state = S_COLON;
          continue;
        }
        case S_COLON: {
          if (c !== 58) this.fail(`expected ':', got ${JSON.stringify(b[this.pos])}`, this.pos);
          this.pos++;
          const top = this.stack[this.stack.length - 1] as Frame;
          top.key = this.pendingKey;
          this.handlers.onKey?.(this.pendingKey as string, this.path);
          this.path.push(this.pendingKey as string);
          this.state = S_VALUE;
          continue;
        }
        case S_COMMA_OR_CLOSE: {
          const top = this.stack[this.stack.length - 1] as Frame;
          if (c === 44 /* , */) {
            this.pos++;
            if (top.isArray) {
              this.state = S_VALUE;
              this.enterElement();
            } else this.state = S_KEY;
            continue;
          }
          if ((c === 93 && top.isArray) || (c === 125 && !top.isArray)) {
            this.pos++;
            this.closeContainer();
            continue;
          }
          this.fail(`expected ',' or '${top.isArray ? ']' : '}'}', got ${JSON.stringify(b[this.pos])}`, this.pos);
          break;
        }
        case S_VALUE_OR_CLOSE:
          if (c === 93 /* ] */) {
            this.pos++;
            this.closeContainer();
            continue;
          }
          this.enterElement();
          this.state = S_VALUE;
          if (!this.readValue(c, final)) return;
          continue;
        case S_AFTER_DOC:
        case S_VALUE:
          if (!this.readValue(c, final)) return;
          continue;
      }
    }
  }

  private closeContainer(): void {
    const frame = this.stack.pop() as Frame;
    this.complete(frame.value, true);
  }

  /** Parse a value starting with char code `c`. Returns false when more text is needed. */
  private readValue(c: number, final: boolean): boolean {
    const b = this.buf;
    if (c === 123 /* { */ || c === 91 /* [ */) {
      this.pos++;
      this.open(c === 91);
      return true;
    }
    if (c === 34) {
      const s = this.readString();
      if (s === undefined) {
        if (final) this.fail('unterminated string', this.pos);
        return false;
      }
      this.complete(s, false);
      return true;
    }
    if (c === 45 || (c >= 48 && c <= 57)) {
      if (!final) {
        // The number may continue in the next chunk if nothing but number characters follow it here.
        let k = this.pos + 1;
        while (k < b.length && NUMBER_CHAR[b.charCodeAt(k)] === 1) k++;
        if (k >= b.length) return false;
      }
      NUMBER.lastIndex = this.pos;
      const m = NUMBER.exec(b);
      if (m === null) this.fail('invalid number', this.pos);
      const endAt = this.pos + m[0].length;
      this.pos = endAt;
      this.complete(Number(m[0]), false);
      return true;
    }
    for (const [lit, val] of LITERALS) {
      if (b.startsWith(lit, this.pos)) {
        this.pos += lit.length;
        this.complete(val, false);
        return true;
      }
      if (!final && b.length - this.pos < lit.length && lit.startsWith(b.slice(this.pos))) return false;
    }
    const what =
      this.state === S_AFTER_DOC ? 'unexpected data after the end of the JSON value' : 'unexpected character';
    this.fail(`${what} ${JSON.stringify(b[this.pos])}`, this.pos);
  }
}

const LITERALS: readonly [string, unknown][] = [
  ['true', true],
  ['false', false],
  ['null', null],
];
