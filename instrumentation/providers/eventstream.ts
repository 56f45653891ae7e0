/**
 * AWS event-stream framing (`application/vnd.amazon.eventstream`), what Bedrock's streaming answers (ConverseStream,
 * InvokeModelWithResponseStream) are made of. Each message is binary:
 *
 *     total length (u32) | headers length (u32) | prelude CRC32 (of the 8 bytes before) | headers | payload | message CRC32
 *
 * and each header is `name length (u8) | name | value type (u8) | value` (AWS's "Event Stream Encoding" reference).
 * The parser is incremental: it is handed the response's chunks as they arrive, a message split anywhere across
 * chunks is reassembled, and it never holds a chunk back from anyone (it reads copies of the references it is given).
 * A message whose message CRC is wrong is counted (`malformed`) and skipped: its length is known. A wrong prelude CRC
 * means the lengths themselves cannot be trusted: the rest of the stream is not read.
 *
 * The encoder writes a message with valid CRCs, for faults that rewrite a frame so that the SDK reads a stream that is
 * broken the way a real one is (a cut after a whole frame, a changed delta), not a framing error of ours.
 *
 * CRC32 is zlib's (`zlib.crc32`, Node ≥ 20.15 / 22.2), with a table fallback for the older Node 20 faultline supports.
 */
import zlib from 'node:zlib';

export type HeaderValue = string | number | boolean | bigint | Buffer | Date;

export interface EventStreamMessage {
  headers: Record<string, HeaderValue>;
  payload: Buffer;
}

const PRELUDE = 12;
const TRAILER = 4;
/** The largest message AWS's framing allows (16 MB): a bigger length is a broken prelude. */
const MAX_MESSAGE = 16 * 1024 * 1024;

export function isEventStream(contentType: string | undefined): boolean {
  return contentType?.toLowerCase().includes('application/vnd.amazon.eventstream') === true;
}

// ------------------------------------------------------------------------------------------------ CRC32

let table: Int32Array | undefined;

function tableCrc32(buf: Uint8Array): number {
  if (table === undefined) {
    table = new Int32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c;
    }
  }
  let crc = -1;
  for (let i = 0; i < buf.length; i++) crc = (table[(crc ^ (buf[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}

const native = (zlib as unknown as { crc32?: (data: Uint8Array) => number }).crc32;

/** CRC-32 (IEEE, the one event-stream uses) of `buf`, unsigned. */
export const crc32: (buf: Uint8Array) => number = native !== undefined ? (buf) => native(buf) : tableCrc32;

/** For tests: the fallback used on Node versions without zlib.crc32. */
export const crc32Fallback = tableCrc32;

// ------------------------------------------------------------------------------------------------ parsing

/** Reads event-stream messages out of a byte stream cut into chunks anywhere. */
export class EventStreamParser {
  /** Messages skipped for a wrong CRC (and 1 for a broken prelude, after which nothing more is read). */
  malformed = 0;
  /** Whole messages read. */
  messages = 0;
  #chunks: Buffer[] = [];
  #length = 0;
  #broken = false;

  /**
   * `onMessage` gets each whole message with its frame's bytes; `onMalformed`, a frame whose message CRC or headers are
   * wrong (its length was right).
   */
  constructor(
    private readonly onMessage: (m: EventStreamMessage, frame: Buffer) => void,
    private readonly onMalformed?: (frame: Buffer) => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.#broken || chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    while (this.#length >= PRELUDE && !this.#broken) {
      const head = this.#peek(PRELUDE);
      const total = head.readUInt32BE(0);
      if (crc32(head.subarray(0, 8)) !== head.readUInt32BE(8) || total < PRELUDE + TRAILER || total > MAX_MESSAGE) {
        this.malformed++;
        this.#broken = true;
        return;
      }
      if (this.#length < total) return;
      const frame = this.#take(total);
      const message = decodeFrame(frame);
      if (message === undefined) {
        this.malformed++;
        this.onMalformed?.(frame);
      } else {
        this.messages++;
        this.onMessage(message, frame);
      }
    }
  }

  /** The prelude of the next message was broken: nothing more is read (`takePending` has what was held). */
  get broken(): boolean {
    return this.#broken;
  }

  /** The bytes held (a message begun but not finished, or all since a broken prelude), handed over and forgotten. */
  takePending(): Buffer {
    const out = Buffer.concat(this.#chunks);
    this.#chunks = [];
    this.#length = 0;
    return out;
  }

  /** Bytes of a message begun but not finished (a stream cut mid-frame ends with some). */
  get pending(): number {
    return this.#length;
  }

  /** The first `n` buffered bytes (n ≤ length), concatenated only when they span chunks. */
  #peek(n: number): Buffer {
    const first = this.#chunks[0] as Buffer;
    if (first.length >= n) return first;
    const joined = Buffer.concat(this.#chunks);
    this.#chunks = [joined];
    return joined;
  }

  #take(n: number): Buffer {
    const all = this.#peek(n);
    const frame = all.subarray(0, n);
    const rest = all.subarray(n);
    this.#chunks = rest.length > 0 ? [rest, ...this.#chunks.slice(1)] : this.#chunks.slice(1);
    this.#length -= n;
    return frame;
  }
}

/** One whole frame (prelude checked) → its message; undefined when its message CRC or headers are wrong. */
export function decodeFrame(frame: Buffer): EventStreamMessage | undefined {
  const total = frame.length;
  if (crc32(frame.subarray(0, total - TRAILER)) !== frame.readUInt32BE(total - TRAILER)) return undefined;
  const headersLength = frame.readUInt32BE(4);
  if (PRELUDE + headersLength > total - TRAILER) return undefined;
  const headers = decodeHeaders(frame.subarray(PRELUDE, PRELUDE + headersLength));
  if (headers === undefined) return undefined;
  return { headers, payload: frame.subarray(PRELUDE + headersLength, total - TRAILER) };
}

function decodeHeaders(buf: Buffer): Record<string, HeaderValue> | undefined {
  const out: Record<string, HeaderValue> = {};
  let i = 0;
  try {
    while (i < buf.length) {
      const nameLength = buf.readUInt8(i);
      const name = buf.toString('utf8', i + 1, i + 1 + nameLength);
      i += 1 + nameLength;
      const type = buf.readUInt8(i++);
      switch (type) {
        case 0:
        case 1:
          out[name] = type === 0;
          break;
        case 2:
          out[name] = buf.readInt8(i);
          i += 1;
          break;
        case 3:
          out[name] = buf.readInt16BE(i);
          i += 2;
          break;
        case 4:
          out[name] = buf.readInt32BE(i);
          i += 4;
          break;
        case 5:
          out[name] = buf.readBigInt64BE(i);
          i += 8;
          break;
        case 6:
        case 7: {
          const n = buf.readUInt16BE(i);
          const value = buf.subarray(i + 2, i + 2 + n);
          if (value.length !== n) return undefined;
          out[name] = type === 7 ? value.toString('utf8') : Buffer.from(value);
          i += 2 + n;
          break;
        }
        case 8:
          out[name] = new Date(Number(buf.readBigInt64BE(i)));
          i += 8;
          break;
        case 9:
          out[name] = Buffer.from(buf.subarray(i, i + 16));
          i += 16;
          break;
        default:
          return undefined;
      }
    }
  } catch {
    return undefined; // a header running past its block
  }
  return i === buf.length ? out : undefined;
}

// ------------------------------------------------------------------------------------------------ encoding

/** A message with string headers (all Bedrock's are) and `payload`, framed with valid CRCs. */
export function encodeMessage(headers: Record<string, string>, payload: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const n = Buffer.from(name, 'utf8');
    const v = Buffer.from(value, 'utf8');
    const h = Buffer.alloc(1 + n.length + 1 + 2 + v.length);
    h.writeUInt8(n.length, 0);
    n.copy(h, 1);
    h.writeUInt8(7, 1 + n.length);
    h.writeUInt16BE(v.length, 2 + n.length);
    v.copy(h, 4 + n.length);
    parts.push(h);
  }
  const headerBytes = Buffer.concat(parts);
  const total = PRELUDE + headerBytes.length + payload.length + TRAILER;
  const out = Buffer.alloc(total);
  out.writeUInt32BE(total, 0);
  out.writeUInt32BE(headerBytes.length, 4);
  out.writeUInt32BE(crc32(out.subarray(0, 8)), 8);
  headerBytes.copy(out, PRELUDE);
  payload.copy(out, PRELUDE + headerBytes.length);
  out.writeUInt32BE(crc32(out.subarray(0, total - TRAILER)), total - TRAILER);
  return out;
}

/** String headers of a decoded message (what `encodeMessage` takes back), non-string values left out. */
export function stringHeaders(m: EventStreamMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers)) if (typeof v === 'string') out[k] = v;
  return out;
}
