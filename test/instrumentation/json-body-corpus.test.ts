/**
 * parseJsonBody on the recorded requests: every fourth request of the chat and Anthropic corpus files, grown to a long
 * history, parsed piecewise with exactly JSON.parse's result. The conformance tier of json-body.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { loadCorpus } from '../support/corpus';
import { expectSameAsJsonParse, longHistory } from './support/json-parse-check';

const corpus = [
  ...loadCorpus('openai-chat.jsonl'),
  ...loadCorpus('openai-chat-stream.jsonl'),
  ...loadCorpus('anthropic-messages.jsonl'),
];
const allMessages = corpus.flatMap((r) => (Array.isArray(r.request.messages) ? (r.request.messages as unknown[]) : []));

describe('parseJsonBody on the corpus', () => {
  // Every fourth record of each file (the bodies total 90 MB for all of them: a quarter keeps the suite quick).
  it('parses corpus requests of every file, grown to a long history of 64 KB to 300 KB, exactly as JSON.parse', () => {
    const sample = corpus.filter((_, i) => i % 4 === 0);
    expect(sample.length).toBeGreaterThan(20);
    for (const [i, r] of sample.entries()) {
      const request = longHistory(r, [64, 100, 300][i % 3]! * 1024, allMessages);
      expectSameAsJsonParse(JSON.stringify(request), false);
      expectSameAsJsonParse(JSON.stringify(request, null, i % 2 ? 2 : '\t'), false); // whitespace between every token
    }
  });
});
