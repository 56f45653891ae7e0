/**
 * The OpenAI chat reader takes most stream chunks (a text or tool-call-argument delta in OpenAI's compact shape) with
 * a bounded scan instead of a JSON.parse of the chunk. What the span and the outcome say must not depend on that: every
 * recorded stream of the corpus is served twice, as recorded (compact: the scan reads its deltas) and with each
 * chunk's JSON re-serialised with whitespace (which no scan accepts: every chunk is parsed), and the two spans agree
 * on every attribute but the byte count; so do streams edited to carry what the scan must leave to the parser
 * (escapes, a raw control character, a second choice, a finish reason, a new tool call).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import type { ExchangeOutcome } from '../../instrumentation/types';
import { loadCorpus, sseEvents, type CorpusRecord } from '../support/corpus';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
const outcomes: ExchangeOutcome[] = [];

beforeAll(async () => {
  otel = setupOtel();
  inst = new FaultlineInstrumentation({ captureMessageContent: true, onExchangeEnd: (_ex, outcome) => outcomes.push(outcome) });
  inst.enable();
  server = await startLlmServer();
});

afterAll(async () => {
  inst.disable();
  await server.close();
  await otel.shutdown();
});

beforeEach(() => {
  otel.exporter.reset();
  outcomes.length = 0;
});

/** Each event's JSON data re-serialised with whitespace, one `data:` line per line (SSE joins them with LF). */
function spaced(events: string[]): string[] {
  return events.map((e) => {
    const m = /^data: (\{.*\})\n\n$/s.exec(e);
    if (!m) return e;
    let value: unknown;
    try {
      value = JSON.parse(m[1] as string);
    } catch {
      return e;
    }
    return `${JSON.stringify(value, null, 1)
      .split('\n')
      .map((l) => `data: ${l}`)
      .join('\n')}\n\n`;
  });
}

/** The span's attributes and the outcome's stream summary for one streamed call answered with `events`. */
async function read(rec: CorpusRecord, events: string[]): Promise<{ attributes: Record<string, unknown>; outcome: unknown }> {
  otel.exporter.reset();
  outcomes.length = 0;
  server.respond(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events }));
  const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rec.request) });
  expect(await res.text()).toBe(events.join(''));
  const spans = await otel.waitForSpans((s) => ours(s).length === 1);
  // What depends on the bytes and the clock, not on what the chunks say, is left out.
  const timing = /bytes|size|duration|time|Ms$|chunks/i;
  const strip = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(strip) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).filter(([k]) => !timing.test(k)).map(([k, x]) => [k, strip(x)])) : v;
  return { attributes: strip({ ...ours(spans)[0]?.attributes }) as Record<string, unknown>, outcome: strip(outcomes[0]?.response ?? null) };
}

const streams = loadCorpus('openai-chat-stream.jsonl').filter((r) => r.status === 200 && r.sse !== undefined);

describe('OpenAI chat stream deltas read without parsing their chunk', () => {
  it('the corpus has streams in the compact shape the scan reads', () => {
    const compact = streams.filter((r) => /"choices":\[\{"index":0,"delta":\{"content":"/.test(r.sse as string));
    expect(compact.length).toBeGreaterThan(5);
  });

  it.each(streams.map((r) => [r.id, r] as const))('record %s: the same span and outcome as when every chunk is parsed', async (_id, rec) => {
    const events = sseEvents(rec.sse as string);
    const scanned = await read(rec, events);
    const parsed = await read(rec, spaced(events));
    expect(scanned).toEqual(parsed);
  });

  it('edited chunks the scan must leave to the parser, or read exactly as the parser would', async () => {
    const rec = streams.find((r) => sseEvents(r.sse as string).filter((e) => e.includes('"delta":{"content":"')).length > 8 && !(r.sse as string).includes('tool_calls')) as CorpusRecord;
    const events = sseEvents(rec.sse as string);
    const texts = events.map((e, i) => ({ e, i })).filter(({ e }) => e.includes('"delta":{"content":"') && !e.includes('"role"'));
    expect(texts.length).toBeGreaterThan(5);
    const edit = (i: number, f: (e: string) => string) => (events[i] = f(events[i] as string));
    const [a, b, c, d, e, f] = texts.map((t) => t.i) as [number, number, number, number, number, number];
    edit(a, (s) => s.replace('"content":"', '"content":"\\"quoted\\" \\u00e9\\n\\\\'));
    edit(b, (s) => s.replace('"content":"', '"content":"raw\u0001control'));
    edit(c, (s) => s.replace('"index":0,', '"index":1,'));
    edit(d, (s) => s.replace('"finish_reason":null', '"finish_reason":"length"'));
    edit(e, (s) => s.replace('"delta":{"content":"', '"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{}"}}],"content":"'));
    edit(f, (s) => s.replace('"content":"', '"content":"\\"x\\\\\\"y\\\\'));
    const scanned = await read(rec, events);
    const parsed = await read(rec, spaced(events));
    expect(scanned).toEqual(parsed);
    expect(scanned.attributes['gen_ai.output.messages']).toContain('\\"x\\\\\\"y\\\\');
    expect(scanned.attributes['faultline.response.malformed_events']).toBe(1);
  });
});
