/**
 * Opening a trace file: existence and size checks, a head for format sniffing, transparent gunzip (`.gz` files
 * or any file starting with the gzip magic), and a fresh byte stream for the reader.
 */
import { createReadStream, promises as fsp } from 'node:fs';
import type { Readable } from 'node:stream';
import { FaultlineInputError } from '../errors';
import { decodingStream } from '../wire/decompress';

export const HEAD_BYTES = 64 * 1024;

export interface Source {
  file: string;
  /** Size on disk (compressed size for gzip). */
  size: number;
  gzip: boolean;
  /** The first HEAD_BYTES (decompressed) bytes. */
  head: Buffer;
  /** Whether `head` is the whole (decompressed) content. */
  headIsAll: boolean;
  /**
   * The first non-blank character after the first line break ('' when no line follows), read past the head when the
   * first line is longer than it: whether a file is one document or JSON lines is decided by its content (a second
   * line that starts a new object), not by the first line's size.
   */
  nextLineStart: string;
  /** A new stream of the (decompressed) bytes. */
  open(highWaterMark?: number): Readable;
}

export async function openSource(file: string): Promise<Source> {
  let size: number;
  try {
    const st = await fsp.stat(file);
    if (st.isDirectory())
      throw new FaultlineInputError('FAULTLINE_FILE_NOT_FOUND', `${file}: is a directory, not a trace file`);
    size = st.size;
  } catch (err) {
    if (err instanceof FaultlineInputError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new FaultlineInputError(
      'FAULTLINE_FILE_NOT_FOUND',
      `${file}: ${code === 'ENOENT' ? 'no such file' : `cannot read (${code ?? String(err)})`}`,
      { cause: err },
    );
  }
  const raw = Buffer.alloc(Math.min(size, HEAD_BYTES));
  const fh = await fsp.open(file, 'r');
  try {
    await fh.read(raw, 0, raw.length, 0);
  } finally {
    await fh.close();
  }
  const gzip = raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b;
  const open = (highWaterMark = 1 << 20): Readable => {
    const s = createReadStream(file, { highWaterMark });
    if (!gzip) return s;
    const gunzip = decodingStream('gzip', { chunkSize: highWaterMark, complete: true });
    s.on('error', (e) => gunzip.destroy(e));
    return s.pipe(gunzip);
  };
  if (!gzip) {
    const headIsAll = raw.length === size;
    return { file, size, gzip, head: raw, headIsAll, nextLineStart: await nextLineStart(raw, headIsAll, open), open };
  }
  // The decompressed head: read until HEAD_BYTES or the end.
  const parts: Buffer[] = [];
  let total = 0;
  let all = true;
  const stream = open(HEAD_BYTES);
  try {
    for await (const chunk of stream) {
      parts.push(chunk as Buffer);
      total += (chunk as Buffer).length;
      if (total >= HEAD_BYTES) {
        all = false;
        break;
      }
    }
  } catch (err) {
    throw new FaultlineInputError(
      'FAULTLINE_TRACE_MALFORMED',
      `${file}: damaged gzip data (${(err as Error).message})`,
      { cause: err },
    );
  } finally {
    stream.destroy();
  }
  const whole = Buffer.concat(parts);
  const head = all ? whole : whole.subarray(0, HEAD_BYTES);
  return { file, size, gzip, head, headIsAll: all, nextLineStart: await nextLineStart(head, all, open), open };
}

const BLANK = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** The first non-blank byte after the first line break, as a character (carried over chunks by `state`); empty for none yet. */
function afterFirstBreak(bytes: Buffer, state: { broke: boolean }): string {
  let i = 0;
  if (!state.broke) {
    const nl = bytes.indexOf(10);
    if (nl < 0) return '';
    state.broke = true;
    i = nl + 1;
  }
  for (; i < bytes.length; i++) if (!BLANK.has(bytes[i] as number)) return String.fromCharCode(bytes[i] as number);
  return '';
}

/** See Source.nextLineStart: from the head when it holds the answer, else by scanning the bytes (nothing is kept). */
async function nextLineStart(
  head: Buffer,
  headIsAll: boolean,
  open: (highWaterMark?: number) => Readable,
): Promise<string> {
  const fromHead = afterFirstBreak(head, { broke: false });
  if (fromHead !== '' || headIsAll) return fromHead;
  const state = { broke: false };
  const stream = open();
  try {
    for await (const chunk of stream) {
      const c = afterFirstBreak(chunk as Buffer, state);
      if (c !== '') return c;
    }
  } catch {
    // Damage past the head is reported by the reader that meets it.
  } finally {
    stream.destroy();
  }
  return '';
}
