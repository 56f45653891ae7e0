/**
 * The AWS event-stream framing (instrumentation/providers/eventstream.ts) against the AWS SDK's own codec
 * (@smithy/core's EventStreamCodec): frames the SDK encodes are read whole however the bytes are cut, frames faultline
 * encodes are read by the SDK, and a corrupt frame is counted instead of read.
 */
import { EventStreamCodec } from '@smithy/core/event-streams';
import { describe, expect, it } from 'vitest';
import {
  crc32,
  crc32Fallback,
  encodeMessage,
  EventStreamParser,
  type EventStreamMessage,
} from '../../instrumentation/providers/eventstream';
import { eventFrame, textStream, toolStream } from '../support/bedrock';

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (s) => new Uint8Array(Buffer.from(s, 'utf8')),
);

function parseAll(chunks: Buffer[]): { messages: EventStreamMessage[]; parser: EventStreamParser } {
  const messages: EventStreamMessage[] = [];
  const parser = new EventStreamParser((m) => messages.push(m));
  for (const c of chunks) parser.push(c);
  return { messages, parser };
}

describe('event-stream framing', () => {
  it('the CRC32 fallback (Node < 20.15) agrees with zlib on every length up to 300 bytes', () => {
    const data = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37 + 11) & 0xff));
    for (let n = 0; n <= data.length; n++) expect(crc32Fallback(data.subarray(0, n))).toBe(crc32(data.subarray(0, n)));
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926); // the CRC-32/IEEE check value
    expect(crc32Fallback(Buffer.from('123456789'))).toBe(0xcbf43926);
  });

  it('reads the frames the AWS codec wrote, cut at every byte boundary', () => {
    const frames = [...textStream(['a', 'bé', 'c']), ...toolStream()];
    const all = Buffer.concat(frames);
    const expected = frames.map((f) => {
      const m = codec.decode(new Uint8Array(f));
      return { type: m.headers[':event-type']?.value, payload: Buffer.from(m.body).toString('utf8') };
    });
    for (const size of [1, 2, 3, 11, 12, 13, 64, all.length]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < all.length; i += size) chunks.push(all.subarray(i, i + size));
      const { messages, parser } = parseAll(chunks);
      expect(messages.map((m) => ({ type: m.headers[':event-type'], payload: m.payload.toString('utf8') }))).toEqual(
        expected,
      );
      expect(parser.malformed).toBe(0);
      expect(parser.pending).toBe(0);
    }
  });

  it('a frame faultline encodes is read by the AWS codec, headers and payload', () => {
    const frame = encodeMessage(
      { ':event-type': 'contentBlockDelta', ':content-type': 'application/json', ':message-type': 'event' },
      Buffer.from('{"delta":{"text":"x"}}'),
    );
    const m = codec.decode(new Uint8Array(frame));
    expect(m.headers[':event-type']).toEqual({ type: 'string', value: 'contentBlockDelta' });
    expect(Buffer.from(m.body).toString()).toBe('{"delta":{"text":"x"}}');
  });

  it('a frame with a wrong message CRC is counted and skipped; a wrong prelude CRC stops the reading', () => {
    const [a, b, c] = [
      eventFrame('messageStart', { role: 'assistant' }),
      eventFrame('contentBlockDelta', { delta: { text: 'x' } }),
      eventFrame('messageStop', { stopReason: 'end_turn' }),
    ];
    const badBody = Buffer.from(b);
    badBody[badBody.length - 6] ^= 1;
    const skipped = parseAll([a, badBody, c]);
    expect(skipped.messages.map((m) => m.headers[':event-type'])).toEqual(['messageStart', 'messageStop']);
    expect(skipped.parser.malformed).toBe(1);

    const badPrelude = Buffer.from(b);
    badPrelude[2] ^= 1;
    const stopped = parseAll([a, badPrelude, c]);
    expect(stopped.messages.map((m) => m.headers[':event-type'])).toEqual(['messageStart']);
    expect(stopped.parser.malformed).toBe(1);
  });
});
