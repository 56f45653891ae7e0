import { describe, expect, it } from 'vitest';
import { PyRandom } from '../../src/plan/rng';

describe('PyRandom (CPython MT19937)', () => {
  it('reproduces random.Random(42).random() (catalog §1.12)', () => {
    const r = new PyRandom(42);
    const got = Array.from({ length: 10 }, () => Number(r.random().toFixed(6)));
    expect(got).toEqual([
      0.639427, 0.025011, 0.275029, 0.223211, 0.736471, 0.676699, 0.89218, 0.086939, 0.421922, 0.029797,
    ]);
  });
  // Expected values computed with CPython 3 `random.Random`.
  it('reproduces randint via _randbelow, and multi-word and zero seeds', () => {
    const r = new PyRandom(42);
    expect(Array.from({ length: 5 }, () => r.randint(0x2600, 0x26ff))).toEqual([9785, 9740, 9868, 9853, 9842]);
    const big = new PyRandom(2 ** 40 + 7);
    expect(big.random()).toBe(0.6137037779936511);
    expect(big.randint(0, 99)).toBe(81);
    expect(new PyRandom(0).random()).toBe(0.8444218515250481);
  });
});
