/**
 * The OpenAI chat reader takes most stream chunks (a text or tool-call-argument delta in OpenAI's compact shape) with
 * a bounded scan instead of a JSON.parse of the chunk. What the span and the outcome say must not depend on that:
 * every recorded stream of the corpus is served twice, as recorded (compact: the scan reads its deltas) and with each
 * chunk's JSON re-serialised with whitespace (every chunk is parsed), and the two spans agree on every attribute but
 * the byte count. The conformance tier of sse-plain-deltas.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { loadCorpus, sseEvents } from '../support/corpus';
import { useScanVsParse } from './support/scan-vs-parse';

const { read, spaced } = useScanVsParse();
const streams = loadCorpus('openai-chat-stream.jsonl').filter((r) => r.status === 200 && r.sse !== undefined);

describe('OpenAI chat stream deltas read without parsing their chunk (every recorded stream)', () => {
  it('the corpus has streams in the compact shape the scan reads', () => {
    const compact = streams.filter((r) => /"choices":\[\{"index":0,"delta":\{"content":"/.test(r.sse as string));
    expect(compact.length).toBeGreaterThan(5);
  });

  it.each(streams.map((r) => [r.id, r] as const))(
    'record %s: the same span and outcome as when every chunk is parsed',
    async (_id, rec) => {
      const events = sseEvents(rec.sse as string);
      const scanned = await read(rec, events);
      const parsed = await read(rec, spaced(events));
      expect(scanned).toEqual(parsed);
    },
  );
});
