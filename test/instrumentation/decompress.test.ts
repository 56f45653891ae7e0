import { describe, expect, it } from 'vitest';
import * as zlib from 'node:zlib';
import {
  BodyDecoder,
  canDecode,
  codingsToUndo,
  declaredGzipSize,
  decodeAll,
  isIdentity,
} from '../../src/wire/decompress';

const text = Buffer.from('data: {"choices":[{"delta":{"content":"héllo ✓"}}]}\n\n'.repeat(500));

async function decodeChunked(encoded: Buffer, encoding: string, size: number, max?: number) {
  const parts: Buffer[] = [];
  const d = BodyDecoder.create(encoding, (b) => parts.push(b), max !== undefined ? { maxOutputBytes: max } : {});
  if (!d) throw new Error('no decoder');
  for (let i = 0; i < encoded.length; i += size) d.write(encoded.subarray(i, i + size));
  await d.end();
  return { body: Buffer.concat(parts), d };
}

describe('decompress', () => {
  it('names the codings to undo, last applied first', () => {
    expect(codingsToUndo('gzip, br')).toEqual(['br', 'gzip']);
    expect(codingsToUndo(' identity ')).toEqual([]);
    expect(codingsToUndo('compress')).toBeUndefined();
    expect(isIdentity(undefined)).toBe(true);
    expect(canDecode('x-gzip')).toBe(true);
    expect(BodyDecoder.create('identity', () => {})).toBeUndefined();
  });

  it("reads a gzip body's declared size from its trailer, a lower bound of what it decodes to", () => {
    const size = (encoding: string | undefined, body: Buffer) =>
      declaredGzipSize(encoding, body.subarray(0, 3), body.subarray(-4));
    expect(size('gzip', zlib.gzipSync(text))).toBe(text.length);
    expect(size('x-gzip', zlib.gzipSync(Buffer.alloc(70_000_000)))).toBe(70_000_000);
    // Two members: the last one's size, less than the whole.
    expect(size('gzip', Buffer.concat([zlib.gzipSync(text), zlib.gzipSync(Buffer.from('x'))]))).toBe(1);
    expect(size('br', zlib.brotliCompressSync(text))).toBeUndefined();
    expect(size('gzip, br', zlib.gzipSync(text))).toBeUndefined();
    expect(size(undefined, zlib.gzipSync(text))).toBeUndefined();
    expect(size('gzip', Buffer.from('not gzip'))).toBeUndefined(); // no gzip magic: decoding reports the error
    expect(size('gzip', zlib.gzipSync(text).subarray(0, 3))).toBeUndefined();
  });

  it.each([
    ['gzip', zlib.gzipSync(text)],
    ['br', zlib.brotliCompressSync(text)],
    ['deflate', zlib.deflateSync(text)],
    ['deflate', zlib.deflateRawSync(text)],
    ['gzip, br', zlib.brotliCompressSync(zlib.gzipSync(text))],
  ])('decodes %s split at every size', async (encoding, encoded) => {
    for (const size of [1, 7, 100, encoded.length]) {
      const { body, d } = await decodeChunked(encoded, encoding, size);
      expect(body.equals(text)).toBe(true);
      expect(d.overflow).toBe(false);
      expect(d.error).toBeUndefined();
    }
  });

  it('decodes a truncated gzip body as far as it goes', async () => {
    const encoded = zlib.gzipSync(text);
    const { body, d } = await decodeChunked(encoded.subarray(0, Math.floor(encoded.length / 2)), 'gzip', 64);
    expect(body.length).toBeGreaterThan(0);
    expect(text.subarray(0, body.length).equals(body)).toBe(true);
    expect(d.error).toBeUndefined();
  });

  it('stops at the output bound on a bomb, without inflating it all', async () => {
    const bomb = zlib.gzipSync(Buffer.alloc(256 * 1024 * 1024)); // ~250 KB that inflates to 256 MiB
    const before = process.memoryUsage().rss;
    const { body, d } = await decodeChunked(bomb, 'gzip', 16 * 1024, 1024 * 1024);
    expect(d.overflow).toBe(true);
    expect(body.length).toBe(1024 * 1024);
    expect(process.memoryUsage().rss - before).toBeLessThan(128 * 1024 * 1024);
  });

  it('reports bad bytes as an error, never throws, and end() settles', async () => {
    const { body, d } = await decodeChunked(Buffer.from('this is not gzip at all'), 'gzip', 5);
    expect(body.length).toBe(0);
    expect(d.error).toBeInstanceOf(Error);
  });

  it('decodeAll returns the body and its state', async () => {
    expect((await decodeAll(zlib.gzipSync(text), 'gzip')).body.equals(text)).toBe(true);
    expect((await decodeAll(text, undefined)).body).toBe(text);
    const capped = await decodeAll(zlib.gzipSync(text), 'gzip', { maxOutputBytes: 10 });
    expect(capped.overflow).toBe(true);
    expect(capped.body.length).toBe(10);
  });
});
