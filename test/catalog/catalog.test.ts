import { describe, expect, it } from 'vitest';
import { applySpecs, corruptUnicode, mojibake, type SpecState } from '../../src/catalog/agentchaos/spec';
import { LLM_ERROR_TEXT, LLM_SCHEMA_TEXT, LLM_TIMEOUT_TEXT } from '../../src/catalog/agentchaos/experiments';
import { FAULT_NAMES, getFault, listFaults, nearestFaultName } from '../../src/catalog/index';
import type { ContentFault } from '../../src/catalog/types';
import { PyRandom } from '../../src/plan/rng';

type Body = {
  choices: Array<{
    message: { content: string | null; tool_calls?: Array<{ function: { name: string; arguments: string } }> };
    finish_reason: string;
  }>;
};

const text = (content: string): Body => ({ choices: [{ message: { content }, finish_reason: 'stop' }] });
const tool = (args: string): Body => ({
  choices: [
    {
      message: { content: null, tool_calls: [{ function: { name: 'calc', arguments: args } }] },
      finish_reason: 'tool_calls',
    },
  ],
});

function run(name: string, bodies: Body[], seed = 42): { out: Body[]; fired: boolean[]; delays: number[] } {
  const f = getFault(name) as ContentFault;
  const state: SpecState = { counts: [] };
  const rng = new PyRandom(seed);
  let last: unknown;
  const out: Body[] = [];
  const fired: boolean[] = [];
  const delays: number[] = [];
  for (const b of bodies) {
    const r = applySpecs(f.specs, b, state, { rng, lastResponse: last });
    last = r.body;
    out.push(r.body as Body);
    fired.push(r.fired.length > 0);
    delays.push(r.delayMs);
  }
  return { out, fired, delays };
}

describe('the AgentChaos catalog', () => {
  it('has all 65 configurations by name, built from 12 bases', () => {
    const ac = listFaults().filter((f) => f.mode === 'content');
    expect(ac).toHaveLength(65);
    const bases = [
      'llm_error',
      'llm_timeout',
      'llm_empty',
      'llm_truncate',
      'llm_corrupt',
      'llm_schema',
      'tool_error',
      'tool_timeout',
      'tool_empty',
      'tool_truncate',
      'tool_corrupt',
      'tool_schema',
    ];
    for (const b of bases)
      for (const s of ['single', 'persistent', 'intermittent', 'burst']) expect(FAULT_NAMES).toContain(`${b}_${s}`);
    for (const b of ['llm_error', 'llm_timeout', 'llm_schema'])
      for (const p of ['early', 'mid', 'late']) expect(FAULT_NAMES).toContain(`${b}_pos_${p}`);
    for (const c of [
      'api_degradation',
      'content_filter',
      'max_tokens',
      'proxy_html',
      'stale_cache',
      'stale_data',
      'wrong_entity',
      'slow_response',
    ])
      expect(FAULT_NAMES).toContain(`compound_${c}`);
    expect(new Set(FAULT_NAMES).size).toBe(FAULT_NAMES.length);
  });

  it('suggests the nearest name', () => {
    expect(nearestFaultName('llm_truncte_single')).toBe('llm_truncate_single');
    expect(nearestFaultName('http_592')).toMatch(/^http_5/);
    expect(nearestFaultName('completely_unrelated_words_here')).toBeUndefined();
  });
});

describe('golden vectors (docs/fault-catalog.md §1.12)', () => {
  it('llm_truncate: 58 chars → the first 17, finish_reason length', () => {
    const { out } = run('llm_truncate_single', [text('The answer is 42 because six times seven equals forty-two.')]);
    expect(out[0].choices[0].message.content).toBe('The answer is 42 ');
    expect(out[0].choices[0].finish_reason).toBe('length');
  });

  it('tool_truncate cuts every string leaf, JSON kept valid with Python spacing', () => {
    const { out } = run('tool_truncate_single', [tool('{"expression": "17 * 23 + 42", "n": 3}')]);
    expect(out[0].choices[0].message.tool_calls![0].function.arguments).toBe('{"expression": "17 ", "n": 3}');
  });

  it('tool_corrupt (seed 42) replaces 2 characters with U+2600–U+26FF symbols', () => {
    const { out } = run('tool_corrupt_single', [tool('{"expression": "17 * 23 + 42", "n": 3}')]);
    expect(out[0].choices[0].message.tool_calls![0].function.arguments).toBe(
      '{"expression": "\u268c7 * 23 + \u26392", "n": 3}',
    );
  });

  it('invalid tool arguments become the placeholders', () => {
    expect(
      run('tool_truncate_single', [tool('{not json')]).out[0].choices[0].message.tool_calls![0].function.arguments,
    ).toBe('{"_fault_truncated": true}');
    expect(
      run('tool_corrupt_single', [tool('{not json')]).out[0].choices[0].message.tool_calls![0].function.arguments,
    ).toBe('{"_fault_corrupted": true}');
  });

  it('mojibake: UTF-8 read as Latin-1, identity on ASCII', () => {
    expect(mojibake('Café – naïve “quote”')).toBe('CafÃ© â\x80\x93 naÃ¯ve â\x80\x9cquoteâ\x80\x9d');
    expect(mojibake('plain ascii')).toBe('plain ascii');
    const r = new PyRandom(1);
    expect(corruptUnicode('', r)).toBe('');
  });

  it('llm_error_intermittent over 10 eligible calls fires on calls 2, 3, 4, 8, 10', () => {
    const { fired, out } = run(
      'llm_error_intermittent',
      Array.from({ length: 10 }, () => text('ok')),
    );
    expect(fired.flatMap((f, i) => (f ? [i + 1] : []))).toEqual([2, 3, 4, 8, 10]);
    expect(out[1].choices[0].message.content).toBe(LLM_ERROR_TEXT);
    expect(out[0].choices[0].message.content).toBe('ok');
  });
});

describe('strategies, the target-field guard and positions', () => {
  const firesOn = (name: string, bodies: Body[]) => run(name, bodies).fired.flatMap((f, i) => (f ? [i + 1] : []));
  const T = (n: number) => Array.from({ length: n }, () => text('hello world, this is text'));
  const K = (n: number) => Array.from({ length: n }, () => tool('{"city": "Paris"}'));

  it('single / persistent / burst count only eligible calls', () => {
    expect(firesOn('llm_empty_single', [...K(2), ...T(3)])).toEqual([3]);
    expect(firesOn('llm_empty_persistent', [...T(2), ...K(1), ...T(2)])).toEqual([1, 2, 4, 5]);
    expect(firesOn('llm_empty_burst', [...T(1), ...K(1), ...T(4)])).toEqual([1, 3, 4]);
    expect(firesOn('tool_empty_burst', [...T(1), ...K(4)])).toEqual([2, 3, 4]);
  });

  it('guard-skipped calls consume neither count nor RNG draws', () => {
    // Same fires as the 10-text-call golden vector, with tool calls interleaved (not eligible for a content fault).
    const bodies = T(10).flatMap((b) => [b, tool('{}')]);
    expect(firesOn('llm_error_intermittent', bodies)).toEqual([2, 3, 4, 8, 10].map((i) => 2 * i - 1));
  });

  it('positional faults hit exactly the 1st / 2nd / 3rd call, guard off', () => {
    const mixed = [...K(1), ...T(1), ...K(1), ...T(2)];
    expect(firesOn('llm_error_pos_early', mixed)).toEqual([1]);
    expect(firesOn('llm_timeout_pos_mid', mixed)).toEqual([2]);
    expect(firesOn('llm_schema_pos_late', mixed)).toEqual([3]);
    const out = run('llm_schema_pos_late', mixed).out;
    expect(out[2].choices[0].message.content).toBe(LLM_SCHEMA_TEXT);
    expect(out[2].choices[0].message.tool_calls).toHaveLength(1); // content set alongside the tool call
  });

  it('the base effects', () => {
    const t = (n: string) => run(n, [text('hello world')]).out[0].choices[0];
    const k = (n: string) => run(n, [tool('{"city": "Paris"}')]).out[0].choices[0];
    expect(t('llm_error_single').message.content).toBe(LLM_ERROR_TEXT);
    expect(t('llm_timeout_single').message.content).toBe(LLM_TIMEOUT_TEXT);
    expect(t('llm_empty_single').message.content).toBe('');
    expect(t('llm_schema_single').message.content).toBe(LLM_SCHEMA_TEXT);
    expect(t('llm_corrupt_single').message.content).toBe('hello world');
    expect(k('tool_error_single').message.tool_calls![0].function.arguments).toBe('{}');
    expect(k('tool_timeout_single').message).toEqual({
      content: '[TIMEOUT] Connection dropped. The server did not respond.',
      tool_calls: [],
    });
    expect(k('tool_empty_single').message.tool_calls).toEqual([]);
    expect(k('tool_schema_single').message.tool_calls![0].function.arguments).toBe(
      '{"wrong_param": "unexpected_value"}',
    );
  });
});

describe('compound scenarios', () => {
  it('content filter strips tool calls first, then the guard lets content and finish_reason fire', () => {
    const r = run('compound_content_filter', [tool('{"a": 1}'), text('x')]);
    expect(r.out[0].choices[0]).toEqual({
      message: {
        content: '[CONTENT FILTERED] This response has been blocked by the content safety filter.',
        tool_calls: [],
      },
      finish_reason: 'content_filter',
    });
    expect(r.fired).toEqual([true, false]);
    const r2 = run('compound_content_filter', [text('x'), tool('{"a": 1}')]);
    expect(r2.out[1].choices[0].message.tool_calls).toEqual([]); // the strip stayed armed for the first tool call
  });

  it('max tokens sets finish_reason on a tool call and truncates the first text call at 50%', () => {
    const r = run('compound_max_tokens', [tool('{"a": 1}'), text('abcdefghij')]);
    expect(r.out[0].choices[0].finish_reason).toBe('length');
    expect(r.out[0].choices[0].message.tool_calls).toHaveLength(1);
    expect(r.out[1].choices[0].message.content).toBe('abcde');
  });

  it('stale cache delivers the previous delivered body on the 2nd call', () => {
    const r = run('compound_stale_cache', [text('first'), text('second'), text('third')]);
    expect(r.out.map((b) => b.choices[0].message.content)).toEqual(['first', 'first', 'third']);
  });

  it('api degradation and slow response delay; stale data and wrong entity set arguments', () => {
    const d = run('compound_api_degradation', [tool('{}'), text('x')]);
    expect(d.delays).toEqual([3000, 0]);
    expect(d.out[1].choices[0].message.content).toBe(
      '[SERVICE UNAVAILABLE] HTTP 503: The server is temporarily unable to handle the request.',
    );
    expect(run('compound_slow_response', [text('x'), text('y')]).delays).toEqual([5000, 0]);
    expect(
      run('compound_stale_data', [text('x'), tool('{"city": "Paris"}')]).out[1].choices[0].message.tool_calls![0]
        .function.arguments,
    ).toBe('{"city": "Pyongyang"}');
    expect(
      run('compound_wrong_entity', [tool('{"city": "Paris"}')]).out[0].choices[0].message.tool_calls![0].function
        .arguments,
    ).toBe('{"city": "Springfield"}');
    expect(run('compound_proxy_html', [text('x')]).out[0].choices[0].message.content).toMatch(
      /^<!DOCTYPE html>\n.*502 Bad Gateway.*nginx\/1\.24\.0/s,
    );
  });
});
