/**
 * The SSE parser's raw blocks (what the fault step cuts and passes on): for every recorded SSE stream split at every
 * chunk size, the blocks and the pending rest put back together are the stream byte for byte, and the blocks carry
 * the same events the parser dispatches.
 */
import { describe, expect, it } from 'vitest';
import { SseParser, type SseBlock, type SseEvent } from '../../instrumentation/providers/sse';
import { loadCorpus } from '../support/corpus';

function blocks(bytes: Buffer, size: number): { blocks: SseBlock[]; events: SseEvent[]; rest: string } {
  const out: SseBlock[] = [];
  const events: SseEvent[] = [];
  const p = new SseParser((e) => events.push(e), { onBlock: (b) => out.push(b) });
  for (let i = 0; i < bytes.length; i += size) p.push(bytes.subarray(i, i + size));
  return { blocks: out, events, rest: p.takePending() };
}

describe('SseParser blocks', () => {
  const streams = [
    ...loadCorpus('openai-chat-stream.jsonl'),
    ...loadCorpus('anthropic-messages.jsonl'),
    ...loadCorpus('openai-responses.jsonl'),
    ...loadCorpus('gemini.jsonl'),
  ].filter((r) => r.sse !== undefined);

  it(`give back every recorded stream byte for byte at every chunk size (${streams.length} streams)`, () => {
    for (const r of streams) {
      const bytes = Buffer.from(r.sse!);
      // Byte by byte for the shorter streams; every size crosses CRLF pairs and UTF-8 sequences somewhere.
      for (const size of bytes.length < 16_384 ? [1, 2, 3, 7, 64, 4096] : [3, 7, 4096]) {
        const { blocks: bs, events, rest } = blocks(bytes, size);
        expect(bs.map((b) => b.raw).join('') + rest, `${r.id} / ${size}`).toBe(r.sse);
        expect(bs.filter((b) => b.event).map((b) => b.event), `${r.id} / ${size}`).toEqual(events);
      }
    }
  });

  it('keep comments, a BOM, CRLF split across chunks and an unterminated last event', () => {
    const text = '\ufeff: keep-alive\r\n\r\ndata: a\r\n\r\ndata: partial';
    for (const size of [1, 2, 5, 100]) {
      const { blocks: bs, rest } = blocks(Buffer.from(text), size);
      expect(bs.map((b) => b.raw).join('') + rest).toBe(text);
      expect(bs.map((b) => b.event?.data)).toEqual([undefined, 'a']);
      expect(rest.endsWith('data: partial')).toBe(true);
    }
  });
});
