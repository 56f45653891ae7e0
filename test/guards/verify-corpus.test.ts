/**
 * The default safety rules of ARCF's verification pipeline pass every recorded answer of the corpus: false positives
 * counted on real outputs (the conformance tier of verify.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_SAFETY_RULES } from '../../detectors/guards/verify';
import { loadCorpus } from '../support/corpus';

describe('tier 2: safety rules on the corpus', () => {
  it('passes every recorded answer of the corpus (false positives counted on real outputs)', () => {
    const texts: string[] = [];
    for (const file of [
      'openai-chat.jsonl',
      'anthropic-messages.jsonl',
      'openai-responses.jsonl',
      'gemini.jsonl',
    ] as const) {
      for (const r of loadCorpus(file))
        if (r.status === 200 && r.response !== undefined) texts.push(JSON.stringify(r.response));
    }
    const flagged = texts.filter((t) => DEFAULT_SAFETY_RULES.some((rule) => rule.check(t) !== undefined));
    expect(texts.length).toBeGreaterThan(300);
    expect(flagged).toEqual([]);
  });
});
