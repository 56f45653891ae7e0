/**
 * Selector globs match in linear time: a glob with many stars against a long value answers at once (a glob compiled
 * to a backtracking regular expression blocked the event loop for seconds), and still means what it says.
 */
import { describe, expect, it } from 'vitest';
import { ATTR_GEN_AI_REQUEST_MODEL, ATTR_URL_FULL } from '../../instrumentation/semconv';
import { compileSelector, globMatcher } from '../../src/plan/select';

describe('selector globs', () => {
  it('match the classic cases', () => {
    const cases: Array<[string, string, boolean]> = [
      ['*', '', true],
      ['*', 'gpt-4o', true],
      ['gpt-*', 'gpt-4o', true],
      ['gpt-*', 'xgpt-4o', false],
      ['*-mini', 'gpt-4o-mini', true],
      ['*4o*', 'gpt-4o-mini', true],
      ['g*t*o', 'gpt-4o', true],
      ['g*t*o', 'gpt-4om', false],
      ['a*a', 'a', false],
      ['a**b', 'ab', true],
      ['*.*', 'a.b', true],
      ['*.*', 'ab', false],
      ['(x)*', '(x)y', true],
    ];
    for (const [glob, value, want] of cases) expect(globMatcher(glob)(value), `${glob} ~ ${value}`).toBe(want);
  });

  it('20 stars against a 40-character model and a long URL answer within 50 ms', () => {
    const glob = `${'*a'.repeat(20)}*b`;
    const model = compileSelector({ model: glob });
    const url = compileSelector({ url: `http://*${'*a'.repeat(20)}*b` });
    const t0 = performance.now();
    expect(model({ [ATTR_GEN_AI_REQUEST_MODEL]: 'a'.repeat(40) })).toBe(false);
    expect(model({ [ATTR_GEN_AI_REQUEST_MODEL]: `${'a'.repeat(40)}b` })).toBe(true);
    expect(url({ [ATTR_URL_FULL]: `http://h/${'a'.repeat(2000)}` })).toBe(false);
    expect(performance.now() - t0).toBeLessThan(50);
  });
});
