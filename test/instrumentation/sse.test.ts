/** The incremental SSE parser: chunk boundaries anywhere, CRLF/CR/LF, comments, multi-line data, [DONE]. */
import { describe, expect, it } from 'vitest';
import { SseParser, type SseEvent } from '../../src/wire/sse';
import { loadCorpus } from '../support/corpus';

function parse(chunks: Array<string | Uint8Array>): SseEvent[] {
  const events: SseEvent[] = [];
  const p = new SseParser((e) => events.push(e));
  for (const c of chunks) p.push(typeof c === 'string' ? Buffer.from(c) : c);
  p.end();
  return events;
}

describe('SseParser', () => {
  it('parses fields, comments, multi-line data and defaults the event name', () => {
    expect(
      parse([': keep-alive\n\nevent: ping\ndata: {"a":1}\n\ndata: line1\ndata: line2\n\ndata:[DONE]\n\n']),
    ).toEqual([
      { event: 'ping', data: '{"a":1}' },
      { event: 'message', data: 'line1\nline2' },
      { event: 'message', data: '[DONE]' },
    ]);
  });

  it('handles CRLF and bare CR, also split between chunks', () => {
    expect(parse(['data: a\r', '\n\r', '\ndata: b\r\r'])).toEqual([
      { event: 'message', data: 'a' },
      { event: 'message', data: 'b' },
    ]);
  });

  it('drops an unterminated last event', () => {
    expect(parse(['data: a\n\ndata: partial'])).toEqual([{ event: 'message', data: 'a' }]);
  });

  it('gives the same events for every corpus stream split at every possible byte boundary class', () => {
    const records = [
      ...loadCorpus('openai-chat-stream.jsonl'),
      ...loadCorpus('anthropic-messages.jsonl').filter((r) => r.sse),
    ];
    for (const rec of records) {
      const bytes = Buffer.from(rec.sse as string);
      const whole = parse([bytes]);
      expect(whole.length).toBeGreaterThan(0);
      for (const size of [1, 2, 3, 7, 64]) {
        const chunks: Uint8Array[] = [];
        for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
        expect(parse(chunks), `${rec.id} split by ${size}`).toEqual(whole);
      }
      if (rec.endpoint.includes('chat/completions')) expect(whole.at(-1)?.data).toBe('[DONE]');
    }
  });

  it('ignores a byte order mark at the start of the stream, also when split across chunks', () => {
    const bytes = Buffer.from('\ufeffdata: a\n\n');
    expect(parse([bytes])).toEqual([{ event: 'message', data: 'a' }]);
    expect(parse([bytes.subarray(0, 1), bytes.subarray(1, 2), bytes.subarray(2)])).toEqual([
      { event: 'message', data: 'a' },
    ]);
  });

  it('decodes UTF-8 split inside a multi-byte character', () => {
    const bytes = Buffer.from('data: héllo ✓\n\n');
    const chunks = [...bytes].map((b) => Uint8Array.of(b));
    expect(parse(chunks)).toEqual([{ event: 'message', data: 'héllo ✓' }]);
  });
});

describe('SseParser on long lines', () => {
  // One event whose data line is 20 MB, arriving in 64 KB chunks as a socket delivers it: the carried-over start of
  // the line must not be searched or copied again on every chunk (that made it 10.7 s, quadratic in the length).
  it('parses a single 20 MB line in linear time', () => {
    const payload = JSON.stringify({ text: 'y'.repeat(20 * 1024 * 1024) });
    const bytes = Buffer.from(`data: ${payload}\n\n`);
    const events: SseEvent[] = [];
    const p = new SseParser((e) => events.push(e));
    const t0 = performance.now();
    for (let i = 0; i < bytes.length; i += 65_536) p.push(bytes.subarray(i, i + 65_536));
    const ms = performance.now() - t0;
    expect(events).toHaveLength(1);
    expect(events[0]?.data.length).toBe(payload.length);
    // Linear takes a few hundred ms here even on a loaded machine; quadratic took over 10 s.
    expect(ms).toBeLessThan(3000);
  });

  it('drops a line longer than 32 M characters instead of keeping it', () => {
    const events: SseEvent[] = [];
    const p = new SseParser((e) => events.push(e));
    const piece = Buffer.alloc(1024 * 1024, 0x61);
    p.push(Buffer.from('data: '));
    for (let i = 0; i < 33; i++) p.push(piece);
    p.push(Buffer.from('\n\ndata: next\n\n'));
    expect(events).toEqual([{ event: 'message', data: 'next' }]);
  });
});
