/**
 * Where a fault has no meaning in a wire format, the plan says so at start-up, once, instead of silently doing
 * nothing; a rule whose selector keeps it away from such formats says nothing.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { planGaps, planGapsMessage } from '../../src/catalog/formats';
import { createInjector } from '../../src/inject/index';
import { parsePlan } from '../../src/plan/load';

const gaps = (rules: unknown[]) => planGaps(parsePlan({ rules }));

describe('planGaps', () => {
  it('says nothing for rules that mean something wherever they can match', () => {
    expect(gaps([{ fault: 'llm_truncate_single', match: { operation: 'chat' } }])).toEqual([]);
    expect(gaps([{ fault: 'http_429' }, { fault: 'valid_partial', match: { boundary: 'I4' } }])).toEqual([]);
    expect(gaps([{ fault: 'stream_drop_done', match: { provider: 'openai' } }])).toEqual([]);
  });

  it('names the formats and the reason', () => {
    expect(gaps([{ fault: 'stream_drop_done', match: { provider: 'gcp.gemini' } }])).toEqual([
      { rule: 'stream_drop_done', gaps: [{ format: 'Gemini generateContent', reason: 'its streams have no terminal marker (the last chunk carries the finish reason)' }] },
    ]);
    expect(gaps([{ fault: 'tool_error_single', match: { url: '*/api/generate' } }])).toEqual([{ rule: 'tool_error_single', gaps: [{ format: 'Ollama /api/generate', reason: 'it has no tool calls' }] }]);
    // No operation selector: the rule can meet embeddings calls too.
    expect(gaps([{ fault: 'llm_truncate_single' }])[0]!.gaps.map((g) => g.format)).toEqual(['OpenAI-compatible embeddings', 'Gemini embeddings', 'Ollama embeddings']);
  });

  it('one message for the whole plan', () => {
    const msg = planGapsMessage(parsePlan({ rules: [{ fault: 'stream_drop_done', match: { operation: 'generate_content' } }, { fault: 'tool_empty_single', match: { operation: 'text_completion' } }] }));
    expect(msg).toBe(
      'fault plan: rule "stream_drop_done" has no meaning on Gemini generateContent (its streams have no terminal marker (the last chunk carries the finish reason)); rule "tool_empty_single" has no meaning on Ollama /api/generate (it has no tool calls). Such calls pass through untouched and `faultline verify` lists the rule as not applicable there.',
    );
  });
});

describe('createInjector', () => {
  afterEach(() => vi.restoreAllMocks());

  it('writes the message to stderr once, at start-up; nothing for a plan without gaps', () => {
    const writes: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => {
      writes.push(String(s));
      return true;
    });
    createInjector({ rules: [{ fault: 'stream_drop_done', match: { provider: 'gcp.gemini', operation: 'generate_content' } }] });
    createInjector({ rules: [{ fault: 'llm_truncate_single', match: { operation: 'chat' } }] });
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatch(/^faultline: fault plan: rule "stream_drop_done" has no meaning on Gemini generateContent/);
  });
});
