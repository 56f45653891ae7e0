/**
 * Opening a trace file: existence and size checks, a head for format sniffing, transparent gunzip (`.gz` files
 * or any file starting with the gzip magic), and a fresh byte stream for the reader.
 */
import { createReadStream, promises as fsp } from 'node:fs';
import type { Readable } from 'node:stream';
import { FaultlineInputError } from '../errors';
import { decodingStream } from '../../instrumentation/decompress';

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
  /** A new stream of the (decompressed) bytes. */
  open(highWaterMark?: number): Readable;
}

export async function openSource(file: string): Promise<Source> {
  let size: number;
  try {
    const st = await fsp.stat(file);
    if (st.isDirectory()) throw new FaultlineInputError('FAULTLINE_FILE_NOT_FOUND', `${file}: is a directory, not a trace file`);
    size = st.size;
  } catch (err) {
    if (err instanceof FaultlineInputError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new FaultlineInputError('FAULTLINE_FILE_NOT_FOUND', `${file}: ${code === 'ENOENT' ? 'no such file' : `cannot read (${code ?? String(err)})`}`, { cause: err });
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
  if (!gzip) return { file, size, gzip, head: raw, headIsAll: raw.length === size, open };
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
    throw new FaultlineInputError('FAULTLINE_TRACE_MALFORMED', `${file}: damaged gzip data (${(err as Error).message})`, { cause: err });
  } finally {
    stream.destroy();
  }
  const head = Buffer.concat(parts);
  return { file, size, gzip, head: all ? head : head.subarray(0, HEAD_BYTES), headIsAll: all, open };
}
