import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FaultlineInputError } from '../../src/errors';
import { injectorFromEnv } from '../../src/inject/index';
import { planJsonSchemaText } from '../../src/plan/json-schema';
import { loadPlan, parsePlan, planFromEnv } from '../../src/plan/load';
import { definePlan, FaultPlan } from '../../src/plan/schema';
import { compilePlan } from '../../src/plan/select';

const dir = mkdtempSync(join(tmpdir(), 'faultline-plan-'));
function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}
function errorOf(fn: () => unknown): FaultlineInputError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(FaultlineInputError);
    return e as FaultlineInputError;
  }
  throw new Error('expected an error');
}

describe('fault plan schema', () => {
  it('accepts the minimal form as is, with defaults', () => {
    const plan = parsePlan({ seed: 42, rules: [{ fault: 'llm_truncate_single', match: { operation: 'chat' } }] });
    expect(plan.seed).toBe(42);
    expect(plan.allowProduction).toBe(false);
    expect(plan.rules[0].params).toEqual({});
    expect(compilePlan(plan).rules[0].name).toBe('llm_truncate_single');
  });

  it('rejects an unknown fault, naming the rule and suggesting the nearest name', () => {
    const e = errorOf(() =>
      parsePlan({ rules: [{ fault: 'llm_error_single' }, { fault: 'http_429' }, { fault: 'llm_truncte_burst' }] }),
    );
    expect(e.code).toBe('FAULTLINE_PLAN_INVALID');
    expect(e.message).toMatchInlineSnapshot(`
      "invalid fault plan:
      ✖ unknown fault "llm_truncte_burst" (did you mean "llm_truncate_burst"?); see docs/fault-catalog.md for the 89 names
        → at rules[2].fault"
    `);
  });

  it('rejects bad selectors, misspelt keys, bad params, strategy on a named strategy, duplicate names', () => {
    expect(errorOf(() => parsePlan({ rules: [{ fault: 'http_503', match: { operaton: 'chat' } }] })).message).toMatch(
      /Unrecognized key: "operaton"[\s\S]*rules\[0\]\.match/,
    );
    expect(errorOf(() => parsePlan({ rules: [{ fault: 'http_503', match: { position: 0 } }] })).message).toMatch(
      /rules\[0\]\.match\.position/,
    );
    expect(errorOf(() => parsePlan({ rules: [{ fault: 'http_503', match: { url: '/([a-/' } }] })).message).toMatch(
      /invalid regular expression[\s\S]*rules\[0\]\.match\.url/,
    );
    expect(
      errorOf(() => parsePlan({ rules: [{ fault: 'slow_first_byte', params: { delayMs: -1 } }] })).message,
    ).toMatch(/slow_first_byte: .*\n.*rules\[0\]\.params\.delayMs/);
    expect(errorOf(() => parsePlan({ rules: [{ fault: 'stream_cut', params: { afterEvent: 2 } }] })).message).toMatch(
      /afterEvent[\s\S]*rules\[0\]\.params/,
    );
    expect(errorOf(() => parsePlan({ rules: [{ fault: 'llm_error_single', strategy: 'burst' }] })).message).toMatch(
      /carries its strategy[\s\S]*rules\[0\]\.strategy/,
    );
    expect(errorOf(() => parsePlan({ rules: [{ fault: 'http_500', probability: 0.5 }] })).message).toMatch(
      /intermittent/,
    );
    expect(
      errorOf(() =>
        parsePlan({
          rules: [
            { name: 'a', fault: 'http_500' },
            { name: 'a', fault: 'http_502' },
          ],
        }),
      ).message,
    ).toMatch(/duplicate rule name "a" \(also rules\[0\]\)[\s\S]*rules\[1\]\.name/);
    expect(errorOf(() => parsePlan({ rules: [] })).message).toMatch(/rules/);
    expect(errorOf(() => parsePlan({ seed: 1.5, rules: [{ fault: 'http_500' }] })).message).toMatch(/seed/);
  });

  it('refuses a duration no timer can hold (above 2^31-1 ms), naming the field', () => {
    for (const [fault, param] of [
      ['slow_first_byte', 'delayMs'],
      ['conn_reset', 'afterMs'],
      ['timeout_hang', 'stallMs'],
      ['stream_stall', 'stallMs'],
      ['delay', 'delayMs'],
      ['deadline', 'deadlineMs'],
    ] as const) {
      expect(errorOf(() => parsePlan({ rules: [{ fault, params: { [param]: 3e9 } }] })).message).toMatch(
        new RegExp(`${fault}: a duration above 2147483647 ms[\\s\\S]*rules\\[0\\]\\.params\\.${param}`),
      );
      expect(() => parsePlan({ rules: [{ fault, params: { [param]: 2 ** 31 - 1 } }] })).not.toThrow();
    }
  });

  it('names repeated faults apart and keeps strategies from the rule', () => {
    const c = compilePlan(
      parsePlan({
        rules: [
          { fault: 'http_500' },
          { fault: 'http_500', strategy: 'burst', count: 2 },
          { fault: 'delay', strategy: 'intermittent', probability: 0.5 },
        ],
      }),
    );
    expect(c.rules.map((r) => r.name)).toEqual(['http_500_1', 'http_500_2', 'delay']);
    expect(c.rules[1].specs[0]).toMatchObject({ maxCount: 2, probability: 1 });
    expect(c.rules[2].specs[0]).toMatchObject({ probability: 0.5 });
  });

  it('definePlan is typed identity', () => {
    const p = definePlan({ rules: [{ fault: 'http_429', params: { retryAfterS: 0 } }] });
    expect(FaultPlan.parse(p).rules[0].fault).toBe('http_429');
  });
});

describe('loading plans', () => {
  it('loads JSON and YAML files', () => {
    const j = loadPlan(file('p.json', JSON.stringify({ seed: 7, rules: [{ fault: 'llm_empty_single' }] })));
    expect(j.seed).toBe(7);
    const y = loadPlan(
      file(
        'p.yaml',
        'seed: 9\nrules:\n  - fault: stream_cut\n    match: { operation: chat }\n    params: { afterEvents: 3 }\n',
      ),
    );
    expect(y.rules[0].params).toEqual({ afterEvents: 3 });
  });

  it('names the file in every error', () => {
    expect(errorOf(() => loadPlan(join(dir, 'missing.json'))).code).toBe('FAULTLINE_PLAN_NOT_FOUND');
    const bad = file('bad.json', '{"rules": [');
    expect(errorOf(() => loadPlan(bad)).message).toContain(`fault plan ${bad} is not valid JSON`);
    const wrong = file('wrong.yaml', 'rules:\n  - fault: nope\n');
    expect(errorOf(() => loadPlan(wrong)).message).toContain(`invalid fault plan ${wrong}:\n✖ unknown fault "nope"`);
  });

  it('planFromEnv honours FAULTLINE_PLAN, FAULTLINE_DISABLE and NODE_ENV=production', () => {
    const p = file('env.json', JSON.stringify({ rules: [{ fault: 'http_503' }] }));
    const prod = file('prod.json', JSON.stringify({ allowProduction: true, rules: [{ fault: 'http_503' }] }));
    expect(planFromEnv({})).toBeUndefined();
    expect(planFromEnv({ FAULTLINE_PLAN: p })?.rules[0].fault).toBe('http_503');
    expect(planFromEnv({ FAULTLINE_PLAN: p, FAULTLINE_DISABLE: '1' })).toBeUndefined();
    const e = errorOf(() => planFromEnv({ FAULTLINE_PLAN: p, NODE_ENV: 'production' }));
    expect(e.code).toBe('FAULTLINE_PRODUCTION_REFUSED');
    expect(planFromEnv({ FAULTLINE_PLAN: prod, NODE_ENV: 'production' })?.allowProduction).toBe(true);
    expect(injectorFromEnv({})).toBeUndefined();
    expect(injectorFromEnv({ FAULTLINE_PLAN: p })?.enabled).toBe(true);
    expect(injectorFromEnv({ FAULTLINE_PLAN: p, FAULTLINE_DISABLE: 'true' })).toBeUndefined();
    expect(() => injectorFromEnv({ FAULTLINE_PLAN: file('bad-env.json', '{"rules":[{"fault":"http_999"}]}') })).toThrow(
      /bad-env\.json[\s\S]*unknown fault "http_999"[\s\S]*rules\[0\]\.fault/,
    );
  });
});

describe('published JSON Schema', () => {
  it('src/plan/plan.schema.json is up to date (regenerate: UPDATE_PLAN_SCHEMA=1 npx vitest run test/plan/schema.test.ts)', () => {
    const path = join(__dirname, '../../src/plan/plan.schema.json');
    const fresh = planJsonSchemaText();
    if (process.env.UPDATE_PLAN_SCHEMA === '1') writeFileSync(path, fresh);
    expect(readFileSync(path, 'utf8')).toBe(fresh);
    const schema = JSON.parse(fresh);
    expect(schema.properties.rules.items.properties.fault.examples).toContain('llm_truncate_single');
  });
});
