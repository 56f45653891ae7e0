/**
 * ObjectMemo (src/memo.ts): a value per object, kept on the object where no copy, listing or serialisation sees it;
 * and the trace view, which is remembered so, built once per trace object.
 */
import { describe, expect, it } from 'vitest';
import { ObjectMemo } from '../../src/memo';
import { viewTrace } from '../../src/traces/view';
import type { TraceRecord } from '../../src/traces/model';

describe('ObjectMemo', () => {
  it('remembers a value per object, and nothing for another object', () => {
    const memo = new ObjectMemo<object, number>('test');
    const a = {};
    const b = {};
    memo.set(a, 1);
    expect(memo.get(a)).toBe(1);
    expect(memo.get(b)).toBeUndefined();
    memo.set(a, 2);
    expect(memo.get(a)).toBe(2);
  });

  it('is invisible to spread, Object.assign, keys, JSON and structured clone; copies do not inherit it', () => {
    const memo = new ObjectMemo<Record<string, unknown>, string>('test');
    const span = { name: 'chat', attributes: { 'gen_ai.operation.name': 'chat' } };
    memo.set(span, 'facts');
    expect(Object.keys(span)).toEqual(['name', 'attributes']);
    expect(JSON.stringify(span)).toBe('{"name":"chat","attributes":{"gen_ai.operation.name":"chat"}}');
    const spread = { ...span };
    const assigned = Object.assign({}, span);
    const cloned = structuredClone(span);
    for (const copy of [spread, assigned, cloned]) {
      expect(memo.get(copy)).toBeUndefined();
      expect(copy).toEqual(span);
    }
    expect(Object.getOwnPropertySymbols(spread)).toEqual([]);
  });

  it('keeps separate values for separate memos on one object', () => {
    const one = new ObjectMemo<object, string>('one');
    const two = new ObjectMemo<object, string>('two');
    const key = {};
    one.set(key, 'a');
    two.set(key, 'b');
    expect([one.get(key), two.get(key)]).toEqual(['a', 'b']);
  });

  it('works for objects that cannot take a property (frozen, sealed, non-extensible)', () => {
    const memo = new ObjectMemo<object, string>('test');
    const keys = [Object.freeze({ a: 1 }), Object.seal({ b: 2 }), Object.preventExtensions({ c: 3 })];
    keys.forEach((k, i) => memo.set(k, `v${i}`));
    expect(keys.map((k) => memo.get(k))).toEqual(['v0', 'v1', 'v2']);
    expect(memo.get({ a: 1 })).toBeUndefined();
  });
});

describe('viewTrace', () => {
  const trace = (): TraceRecord => ({
    traceId: 'a'.repeat(32),
    spans: [
      {
        traceId: 'a'.repeat(32),
        spanId: 'b'.repeat(16),
        name: 'chat gpt-4o-mini',
        kind: 'CLIENT',
        start: 1_000,
        end: 2_000,
        attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-4o-mini' },
        events: [],
        links: [],
        status: { code: 'UNSET' },
        resource: {},
        scope: { name: 'test' },
      },
    ],
  });

  it('builds a view once per trace object, and a new one for a copy of it', () => {
    const t = trace();
    const v = viewTrace(t);
    expect(v.llm).toHaveLength(1);
    expect(viewTrace(t)).toBe(v);
    const copy = { ...t };
    expect(viewTrace(copy)).not.toBe(v);
    expect(viewTrace(copy).llm).toHaveLength(1);
  });

  it('reads a frozen trace', () => {
    const t = Object.freeze(trace());
    expect(viewTrace(t)).toBe(viewTrace(t));
  });
});
