/**
 * The OpenAI chat reader takes most stream chunks (a text or tool-call-argument delta in OpenAI's compact shape) with
 * a bounded scan instead of a JSON.parse of the chunk. What the span and the outcome say must not depend on that:
 * project-written streams (text, parallel tool calls, with and without the usage chunk) are served twice, compact
 * (the scan reads their deltas) and with each chunk's JSON re-serialised with whitespace (which no scan accepts:
 * every chunk is parsed), and the two spans agree on every attribute but the byte count; so do streams edited to
 * carry what the scan must leave to the parser (escapes, a raw control character, a second choice, a finish reason, a
 * new tool call). Every recorded stream of the corpus: sse-plain-deltas-corpus.test.ts (conformance tier).
 */
import { describe, expect, it } from 'vitest';
import { chatCompletionStream, type AnswerSpec } from '../support/openai-wire';
import { exchange } from '../support/wire-text';
import { sseEvents } from '../support/wire-record';
import { useScanVsParse } from './support/scan-vs-parse';

const { read, spaced } = useScanVsParse();

const request = {
  model: 'gpt-4o',
  messages: [{ role: 'user', content: 'Plan a day in Lisbon, then look up the weather.' }],
  stream: true,
  stream_options: { include_usage: true },
};
const TEXT: AnswerSpec = {
  model: 'gpt-4o-2024-08-06',
  text: 'Start at the Alfama before the heat, take tram 28 to Estrela, have lunch in Príncipe Real, watch the sunset from the Miradouro da Senhora do Monte and end with dinner in Bairro Alto.',
};
const TOOLS: AnswerSpec = {
  model: 'gpt-4o-2024-08-06',
  toolCalls: [
    { name: 'get_weather', arguments: '{"city":"Lisbon","unit":"celsius"}' },
    { name: 'get_events', arguments: '{"city":"Lisbon","date":"2026-06-13"}' },
  ],
};
const streams = [
  ['text, usage chunk', exchange({ endpoint: '/v1/chat/completions', request, sse: chatCompletionStream(TEXT) })],
  [
    'text, no usage chunk',
    exchange({ endpoint: '/v1/chat/completions', request, sse: chatCompletionStream(TEXT, { usage: false }) }),
  ],
  ['parallel tool calls', exchange({ endpoint: '/v1/chat/completions', request, sse: chatCompletionStream(TOOLS) })],
] as const;

describe('OpenAI chat stream deltas read without parsing their chunk', () => {
  it('the streams are in the compact shape the scan reads', () => {
    for (const [, r] of streams) expect(r.sse).toMatch(/"choices":\[\{"index":0,"delta":\{("content"|"tool_calls")/);
  });

  it.each(streams)('%s: the same span and outcome as when every chunk is parsed', async (_what, rec) => {
    const events = sseEvents(rec.sse as string);
    const scanned = await read(rec, events);
    const parsed = await read(rec, spaced(events));
    expect(scanned).toEqual(parsed);
  });

  it('edited chunks the scan must leave to the parser, or read exactly as the parser would', async () => {
    const rec = streams[0][1];
    const events = sseEvents(rec.sse as string);
    const texts = events
      .map((e, i) => ({ e, i }))
      .filter(({ e }) => e.includes('"delta":{"content":"') && !e.includes('"role"'));
    expect(texts.length).toBeGreaterThan(5);
    const edit = (i: number, f: (e: string) => string) => (events[i] = f(events[i] as string));
    const [a, b, c, d, e, f] = texts.map((t) => t.i) as [number, number, number, number, number, number];
    edit(a, (s) => s.replace('"content":"', '"content":"\\"quoted\\" \\u00e9\\n\\\\'));
    edit(b, (s) => s.replace('"content":"', '"content":"raw\u0001control'));
    edit(c, (s) => s.replace('"index":0,', '"index":1,'));
    edit(d, (s) => s.replace('"finish_reason":null', '"finish_reason":"length"'));
    edit(e, (s) =>
      s.replace(
        '"delta":{"content":"',
        '"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{}"}}],"content":"',
      ),
    );
    edit(f, (s) => s.replace('"content":"', '"content":"\\"x\\\\\\"y\\\\'));
    const scanned = await read(rec, events);
    const parsed = await read(rec, spaced(events));
    expect(scanned).toEqual(parsed);
    expect(scanned.attributes['gen_ai.output.messages']).toContain('\\"x\\\\\\"y\\\\');
    expect(scanned.attributes['faultline.response.malformed_events']).toBe(1);
  });
});
