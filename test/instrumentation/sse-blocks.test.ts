/**
 * The SSE parser's raw blocks (what the fault step cuts and passes on): for every recorded SSE stream split at every
 * chunk size, the blocks and the pending rest put back together are the stream byte for byte, and the blocks carry
 * the same events the parser dispatches.
 */
import { describe, expect, it } from 'vitest';
import { SseParser, type SseBlock, type SseEvent } from '../../src/wire/sse';
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
        expect(
          bs.filter((b) => b.event).map((b) => b.event),
          `${r.id} / ${size}`,
        ).toEqual(events);
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

  it('a 20 MB line: parsed in linear time, given back byte for byte', () => {
    const text = `data: ${JSON.stringify({ text: 'y'.repeat(20 * 1024 * 1024) })}\n\ndata: next\n\n`;
    const t0 = performance.now();
    const { blocks: bs, events, rest } = blocks(Buffer.from(text), 65_536);
    // Linear takes a few hundred ms even on a loaded machine; quadratic took over 10 s.
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(bs.map((b) => b.raw).join('') + rest === text).toBe(true);
    expect(events.map((e) => e.data.length)).toEqual([text.indexOf('\n') - 6, 4]);
  });

  it('a line over 32 M characters passes on as it came (unparsed, not held) and the next event is read', () => {
    const piece = 'a'.repeat(1024 * 1024);
    const p = new SseParser(() => {}, { onBlock: (b) => out.push(b) });
    const out: SseBlock[] = [];
    let held = 0;
    p.push(Buffer.from('data: x\ndata: '));
    for (let i = 0; i < 33; i++) {
      p.push(Buffer.from(piece));
      held = Math.max(
        held,
        'data: x\ndata: '.length + (i + 1) * piece.length - out.reduce((n, b) => n + b.raw.length, 0),
      );
    }
    p.push(Buffer.from('tail\n\ndata: next\n\n'));
    const text = `data: x\ndata: ${piece.repeat(33)}tail\n\ndata: next\n\n`;
    expect(out.map((b) => b.raw).join('') + p.takePending() === text).toBe(true);
    expect(held).toBeLessThanOrEqual(32 * 1024 * 1024 + 16);
    expect(out.at(-1)).toEqual({ raw: 'data: next\n\n', event: { event: 'message', data: 'next' } });
  });
});
