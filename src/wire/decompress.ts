/**
 * The one decompressor: a streaming decoder for an HTTP `Content-Encoding` list (gzip, x-gzip, deflate, br, and zstd
 * where the Node line has it), with a bound on what it produces. Whatever reads an encoded body — the span layer's
 * response reader, a fault or guard that rewrites a compressed stream, the collector's request bodies — decodes it
 * here, chunk by chunk, as the bytes arrive: nothing keeps the compressed copy, and a bomb (3 MB that inflates to
 * 3 GiB) costs at most `maxOutputBytes` before the decoder stops and reports `overflow`.
 *
 * Decoding runs on zlib's thread pool, so output arrives asynchronously: `end()` resolves once every byte of output
 * has been handed to `onData` (or the decoder stopped). A body cut short (a truncated gzip stream) decodes as far as it
 * goes instead of failing, as fetch's own decoder does for the bytes it got.
 */
import * as zlib from 'node:zlib';
import type { Transform } from 'node:stream';

export interface DecoderOptions {
  /** Stop (and report `overflow`) once this many decoded bytes were produced. Default: unbounded. */
  maxOutputBytes?: number;
}

type Coding = 'gzip' | 'deflate' | 'br' | 'zstd';

const zstd = (zlib as unknown as { createZstdDecompress?: (o?: object) => Transform }).createZstdDecompress;

/** The codings of a Content-Encoding value in the order to undo them, or undefined when one is not supported. */
export function codingsToUndo(encoding: string | undefined): Coding[] | undefined {
  if (encoding === undefined) return [];
  const out: Coding[] = [];
  for (const raw of encoding.split(',')) {
    const coding = raw.trim().toLowerCase();
    if (coding === '' || coding === 'identity') continue;
    if (coding === 'gzip' || coding === 'x-gzip') out.push('gzip');
    else if (coding === 'deflate') out.push('deflate');
    else if (coding === 'br') out.push('br');
    else if (coding === 'zstd' && zstd !== undefined) out.push('zstd');
    else return undefined;
  }
  // Codings are listed in the order they were applied: undo them last first.
  return out.reverse();
}

/**
 * The decoded size a gzip body declares in its trailer (ISIZE, the last member's size modulo 2^32), given the body's
 * first bytes (the gzip magic) and its last 4; undefined unless `encoding` is gzip alone and the body starts as gzip.
 * For a well-formed body the true size is at least this, so a body declaring more than a limit is over it: a bomb can
 * be refused before it is decoded. (The trailer of a cut-short body is arbitrary bytes; such a body, a truncated
 * document, was not going to be taken either.)
 */
export function declaredGzipSize(encoding: string | undefined, head: Uint8Array, tail: Uint8Array): number | undefined {
  const codings = codingsToUndo(encoding);
  if (codings?.length !== 1 || codings[0] !== 'gzip') return undefined;
  if (head.byteLength < 3 || head[0] !== 0x1f || head[1] !== 0x8b || head[2] !== 8 || tail.byteLength < 4)
    return undefined;
  const at = tail.byteLength - 4;
  return (
    ((tail[at] as number) | ((tail[at + 1] as number) << 8) | ((tail[at + 2] as number) << 16)) +
    (tail[at + 3] as number) * 0x1000000
  );
}

/** True when `encoding` names no coding at all (absent, empty or identity). */
export function isIdentity(encoding: string | undefined): boolean {
  const codings = codingsToUndo(encoding);
  return codings !== undefined && codings.length === 0;
}

/** True when every coding of `encoding` can be decoded here. */
export function canDecode(encoding: string | undefined): boolean {
  return codingsToUndo(encoding) !== undefined;
}

function stage(coding: Exclude<Coding, 'deflate'>, options: StreamOptions = {}): Transform {
  const size = options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize };
  switch (coding) {
    case 'gzip':
      // Z_SYNC_FLUSH at the end: a truncated stream yields what it holds instead of "unexpected end of file".
      return zlib.createGunzip(options.complete ? size : { finishFlush: zlib.constants.Z_SYNC_FLUSH, ...size });
    case 'br':
      return zlib.createBrotliDecompress(
        options.complete ? size : { finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH, ...size },
      );
    case 'zstd':
      return (zstd as (o?: object) => Transform)();
  }
}

export interface StreamOptions {
  /** zlib's output chunk size. */
  chunkSize?: number;
  /**
   * The encoded stream must end as its format says: a cut-short or damaged one is an error (a file), instead of
   * yielding what it holds (an HTTP body, decoded as fetch does).
   */
  complete?: boolean;
}

/**
 * The decoder of one coding as a Transform stream, for a source read with backpressure (a gzip trace file), without
 * an output bound (the reader of the decoded stream bounds what it holds).
 */
export function decodingStream(coding: 'gzip' | 'br', options: StreamOptions = {}): Transform {
  return stage(coding, options);
}

/**
 * "deflate" is zlib-wrapped per RFC 9110, but some servers send raw deflate (fetch accepts both): the first two bytes
 * tell which (a zlib header has compression method 8 and a checksum that is a multiple of 31).
 */
function deflateStage(first: Buffer): Transform {
  const wrapped =
    first.length >= 2 &&
    ((first[0] as number) & 0x0f) === 8 &&
    (((first[0] as number) << 8) | (first[1] as number)) % 31 === 0;
  const flush = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  return wrapped ? zlib.createInflate(flush) : zlib.createInflateRaw(flush);
}

export class BodyDecoder {
  /** The decoded output went past `maxOutputBytes`: decoding stopped there. */
  overflow = false;
  /** The encoded bytes were not valid for their coding: decoding stopped at the first error. */
  error: Error | undefined;
  /** Decoded bytes handed to `onData` so far. */
  outputBytes = 0;

  readonly #codings: Coding[];
  readonly #onData: (chunk: Buffer) => void;
  readonly #max: number;
  #stages: Transform[] | undefined;
  #head: Buffer | undefined;
  #done: Promise<void> | undefined;
  #finish: (() => void) | undefined;
  #stopped = false;

  private constructor(codings: Coding[], onData: (chunk: Buffer) => void, options: DecoderOptions) {
    this.#codings = codings;
    this.#onData = onData;
    this.#max = options.maxOutputBytes ?? Number.POSITIVE_INFINITY;
  }

  /**
   * A decoder for `encoding`, calling `onData` with each piece of decoded output; undefined when the encoding is
   * identity (nothing to decode) or names a coding this Node line cannot decode (see `canDecode`).
   */
  static create(
    encoding: string | undefined,
    onData: (chunk: Buffer) => void,
    options: DecoderOptions = {},
  ): BodyDecoder | undefined {
    const codings = codingsToUndo(encoding);
    if (codings === undefined || codings.length === 0) return undefined;
    return new BodyDecoder(codings, onData, options);
  }

  /** Feed encoded bytes (copied: the caller may reuse its buffer). Ignored after the decoder stopped or ended. */
  write(chunk: Uint8Array): void {
    if (this.#stopped || this.#done !== undefined) return;
    if (chunk.byteLength === 0) return;
    let copy = Buffer.from(chunk);
    if (this.#stages === undefined) {
      // deflate is told apart by its first two bytes: hold a lone first byte until the second arrives.
      if (this.#head !== undefined) copy = Buffer.concat([this.#head, copy]);
      if (copy.length < 2 && this.#codings[0] === 'deflate') {
        this.#head = copy;
        return;
      }
      this.#head = undefined;
      this.#stages = this.#build(copy);
    }
    (this.#stages[0] as Transform).write(copy);
  }

  /** No more input: resolves once all output was delivered, the decoder stopped, or it failed. Never rejects. */
  end(): Promise<void> {
    if (this.#done !== undefined) return this.#done;
    if (this.#stages === undefined && this.#head !== undefined) this.#stages = this.#build(this.#head);
    if (this.#stages === undefined) return (this.#done = Promise.resolve());
    this.#done = new Promise<void>((resolve) => {
      this.#finish = resolve;
    });
    const head = this.#head;
    this.#head = undefined;
    if (this.#stopped) this.#settle();
    else (this.#stages[0] as Transform).end(head);
    return this.#done;
  }

  /** Stop decoding now (the body was abandoned); output already delivered stays delivered. */
  destroy(): void {
    this.#stop();
  }

  #build(first: Buffer): Transform[] {
    const stages = this.#codings.map((c) => (c === 'deflate' ? deflateStage(first) : stage(c)));
    for (let i = 0; i + 1 < stages.length; i++) {
      const from = stages[i] as Transform;
      const to = stages[i + 1] as Transform;
      from.on('data', (b: Buffer) => {
        if (!this.#stopped) to.write(b);
      });
      from.on('end', () => to.end());
    }
    const last = stages[stages.length - 1] as Transform;
    last.on('data', (b: Buffer) => this.#output(b));
    last.on('end', () => this.#settle());
    for (const s of stages) {
      s.on('error', (err: Error) => {
        this.error ??= err;
        this.#stop();
      });
    }
    return stages;
  }

  #output(b: Buffer): void {
    if (this.#stopped) return;
    const room = this.#max - this.outputBytes;
    if (b.length > room) {
      if (room > 0) {
        this.outputBytes += room;
        this.#deliver(b.subarray(0, room));
      }
      this.overflow = true;
      this.#stop();
      return;
    }
    this.outputBytes += b.length;
    this.#deliver(b);
  }

  #deliver(b: Buffer): void {
    try {
      this.#onData(b);
    } catch (err) {
      this.error ??= err as Error;
      this.#stop();
    }
  }

  #stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const s of this.#stages ?? []) s.destroy();
    this.#settle();
  }

  #settle(): void {
    const finish = this.#finish;
    if (finish === undefined) return;
    this.#finish = undefined;
    finish();
  }
}

/** Decode a whole encoded buffer through the same decoder (bounded): for bodies that arrive in one piece. */
export async function decodeAll(
  encoded: Buffer,
  encoding: string | undefined,
  options: DecoderOptions = {},
): Promise<{ body: Buffer; overflow: boolean; error?: Error }> {
  const parts: Buffer[] = [];
  const decoder = BodyDecoder.create(encoding, (b) => parts.push(b), options);
  if (decoder === undefined) return { body: encoded, overflow: false };
  decoder.write(encoded);
  await decoder.end();
  const body = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  return decoder.error
    ? { body, overflow: decoder.overflow, error: decoder.error }
    : { body, overflow: decoder.overflow };
}
