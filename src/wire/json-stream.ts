/**
 * The one reader of the two LLM streams that are not SSE: Ollama's NDJSON (one JSON object per line) and Gemini's
 * JSON-array stream (`streamGenerateContent` without `alt=sse`: `[{…}\n,\r\n{…}\n]`, flushed element by element).
 * Fed with bytes as they arrive (a chunk may end anywhere, even inside a UTF-8 sequence), it cuts them into units:
 * each element or line with the separators before it, exactly as they were on the wire, and the JSON text of the
 * element. The span layer reads elements from it; the fault step cuts, stalls and garbles streams at its unit
 * boundaries and passes every other byte on unchanged.
 *
 * It scans bytes, not characters: the structural bytes (`{ } [ ] " \ , LF`) never occur inside a multi-byte UTF-8
 * sequence, so no decoding is needed to find boundaries, and each byte is looked at once (linear in the body).
 */

export type JsonStreamFraming = 'ndjson' | 'json-array';

export interface JsonStreamUnit {
  /** The unit's bytes as received: separators (whitespace, `[`, `,`, line breaks) before the element, then it. */
  raw: Buffer;
  /** The element's JSON text; undefined for a unit that is only separators (a blank line, the closing `]`). */
  json?: string;
  /** Gemini: this unit holds the array's closing `]`. */
  closes?: boolean;
}

const LF = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === LF || b === 0x0d;
}

export class JsonStreamSplitter {
  readonly #framing: JsonStreamFraming;
  readonly #onUnit: (unit: JsonStreamUnit) => void;
  /** Bytes of the unit being read, across chunks. */
  #parts: Buffer[] = [];
  #partsLength = 0;
  /** Offset in the pending unit where the element starts (-1: not yet). */
  #elementStart = -1;
  // JSON-array state.
  #depth = 0;
  #inString = false;
  #escaped = false;
  /** A top-level primitive element (not an object or array) is being read. */
  #primitive = false;
  #closed = false;

  constructor(framing: JsonStreamFraming, onUnit: (unit: JsonStreamUnit) => void) {
    this.#framing = framing;
    this.#onUnit = onUnit;
  }

  push(chunk: Uint8Array): void {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (buf.length === 0) return;
    if (this.#framing === 'ndjson') this.#lines(buf);
    else this.#array(buf);
  }

  /** The bytes received since the last unit (a line without LF, an element cut short), taken. */
  takePending(): Buffer {
    this.#elementStart = -1;
    return this.#partsLength === 0 ? Buffer.alloc(0) : this.#take();
  }

  /** End of the body: the unterminated rest (a line without LF, an element cut short), emitted as one last unit. */
  end(): void {
    if (this.#partsLength === 0) return;
    const raw = this.#take();
    const start = this.#elementStart;
    this.#elementStart = -1;
    if (this.#framing === 'ndjson') {
      const json = raw.toString('utf8').trim();
      this.#onUnit(json === '' ? { raw } : { raw, json });
    } else {
      this.#onUnit(start >= 0 && !this.#closed ? { raw, json: raw.subarray(start).toString('utf8') } : { raw });
    }
  }

  #take(): Buffer {
    const raw = this.#parts.length === 1 ? (this.#parts[0] as Buffer) : Buffer.concat(this.#parts, this.#partsLength);
    this.#parts = [];
    this.#partsLength = 0;
    return raw;
  }

  #append(b: Buffer): void {
    if (b.length === 0) return;
    this.#parts.push(b);
    this.#partsLength += b.length;
  }

  #lines(buf: Buffer): void {
    let from = 0;
    for (;;) {
      const i = buf.indexOf(LF, from);
      if (i === -1) break;
      this.#append(buf.subarray(from, i + 1));
      const raw = this.#take();
      const json = raw.toString('utf8').trim();
      this.#onUnit(json === '' ? { raw } : { raw, json });
      from = i + 1;
    }
    this.#append(buf.subarray(from));
  }

  #array(buf: Buffer): void {
    let from = 0;
    for (let i = 0; i < buf.length; i++) {
      const b = buf[i] as number;
      if (this.#closed) break;
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (b === BACKSLASH) this.#escaped = true;
        else if (b === QUOTE) {
          this.#inString = false;
          if (this.#primitive && this.#depth === 1) this.#emitElement(buf, from, i + 1, () => (from = i + 1));
        }
        continue;
      }
      if (this.#depth === 0) {
        if (b === OPEN_BRACKET) this.#depth = 1;
        continue;
      }
      if (this.#depth === 1) {
        if (this.#primitive && (b === COMMA || b === CLOSE_BRACKET || isSpace(b))) {
          // A bare number / literal ends at the first byte that cannot be part of it.
          this.#emitElement(buf, from, i, () => (from = i));
        }
        if (b === CLOSE_BRACKET) {
          this.#append(buf.subarray(from, i + 1));
          from = i + 1;
          this.#closed = true;
          this.#elementStart = -1;
          this.#onUnit({ raw: this.#take(), closes: true });
          continue;
        }
        if (b === COMMA || isSpace(b)) continue;
        this.#elementStart = this.#partsLength + (i - from);
        if (b === OPEN_BRACE || b === OPEN_BRACKET) this.#depth = 2;
        else {
          this.#primitive = true;
          if (b === QUOTE) this.#inString = true;
        }
        continue;
      }
      if (b === QUOTE) this.#inString = true;
      else if (b === OPEN_BRACE || b === OPEN_BRACKET) this.#depth++;
      else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        this.#depth--;
        if (this.#depth === 1) this.#emitElement(buf, from, i + 1, () => (from = i + 1));
      }
    }
    // After the closing bracket, whatever follows (a trailing newline) is its own separator unit.
    this.#append(buf.subarray(from));
    if (this.#closed && this.#partsLength > 0) this.#onUnit({ raw: this.#take() });
  }

  #emitElement(buf: Buffer, from: number, to: number, advance: () => void): void {
    this.#append(buf.subarray(from, to));
    advance();
    const raw = this.#take();
    const start = this.#elementStart;
    this.#elementStart = -1;
    this.#primitive = false;
    this.#onUnit({ raw, json: raw.subarray(Math.max(0, start)).toString('utf8') });
  }
}

/**
 * Every element of a whole stream body (the span layer reads a finished body in one go), as parsed JSON;
 * elements that do not parse are counted in `malformed`.
 */
export function jsonStreamElements(
  body: Buffer | string,
  framing: JsonStreamFraming,
): { elements: unknown[]; malformed: number; closed: boolean } {
  const elements: unknown[] = [];
  let malformed = 0;
  let closed = false;
  const splitter = new JsonStreamSplitter(framing, (unit) => {
    if (unit.closes) closed = true;
    if (unit.json === undefined) return;
    try {
      elements.push(JSON.parse(unit.json));
    } catch {
      malformed++;
    }
  });
  splitter.push(typeof body === 'string' ? Buffer.from(body) : body);
  splitter.end();
  return { elements, malformed, closed };
}
