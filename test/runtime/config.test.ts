/**
 * One configuration, read once (issue 17 Build 5; switches of issue 13 Build 10): faultline.config.{json,yaml} or
 * FAULTLINE_CONFIG, validated with zod and published as a JSON Schema, the variables overriding it, the start()
 * options overriding both; switches accepted as users write them and refused otherwise.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { parse as parseYaml } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import * as config from '../../src/config';
import * as schema from '../../src/config-schema';
import { runNode } from '../support/child';
import { ROOT } from '../support/dist';

let dir: string;

const plan = { seed: 7, rules: [{ fault: 'http_503', match: { operation: 'chat' } }] };

function errorOf(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected an error');
}

function folder(files: Record<string, string>): string {
  const d = mkdtempSync(join(dir, 'cfg-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
  return d;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'faultline-config-'));
});

describe('resolveConfig', () => {
  it('defaults: no plan, no guards, online detection and HTTP spans off, spans to ./faultline-traces.jsonl', () => {
    const cwd = folder({});
    const c = config.resolveConfig({ env: {}, cwd });
    expect(c.plan).toBeUndefined();
    expect(c.guards).toBeUndefined();
    expect(c.injectionDisabled).toBe(false);
    expect(c.detect).toBe(false);
    expect(c.httpSpans).toBe(false);
    expect(c.captureContent).toBe(false);
    expect(c.export.traces).toEqual(['file']);
    expect(c.export.file).toBe(join(cwd, 'faultline-traces.jsonl'));
  });

  it('reads faultline.config.yaml: plan and guards by path relative to the file, detection, export', () => {
    const cwd = folder({
      'faultline.config.yaml': [
        'plan: plans/p.json',
        'guards: { routes: [{ match: { provider: openai }, retry: { maxRetries: 1 } }] }',
        'detect: false',
        'captureContent: true',
        'httpSpans: false',
        'export: { traces: [otlp, file], file: out/t.jsonl, otlp: { endpoint: "http://127.0.0.1:4318", protocol: http/json, headers: { x-tenant: a } } }',
      ].join('\n'),
    });
    const sub = join(cwd, 'plans');
    require('node:fs').mkdirSync(sub);
    writeFileSync(join(sub, 'p.json'), JSON.stringify(plan));
    const c = config.resolveConfig({ env: {}, cwd });
    expect(c.file).toBe(join(cwd, 'faultline.config.yaml'));
    expect(c.plan?.plan.seed).toBe(7);
    expect(c.plan?.where).toBe('fault plan plans/p.json');
    expect(c.guards?.config.routes[0]?.retry).toEqual({ maxRetries: 1 });
    expect(c.detect).toBe(false);
    expect(c.captureContent).toBe(true);
    expect(c.httpSpans).toBe(false);
    expect(c.export.traces).toEqual(['otlp', 'file']);
    expect(c.export.file).toBe(join(cwd, 'out/t.jsonl'));
    expect(c.export.otlp).toMatchObject({
      protocol: 'http/json',
      tracesUrl: 'http://127.0.0.1:4318/v1/traces',
      headers: { 'x-tenant': 'a' },
    });
  });

  it('the variables override the file, and start() options override both', () => {
    const cwd = folder({
      'faultline.config.json': JSON.stringify({
        plan,
        detect: true,
        export: { otlp: { endpoint: 'http://file-host:4318' } },
      }),
      'env-plan.json': JSON.stringify({ seed: 9, rules: [{ fault: 'http_429' }] }),
    });
    const env = {
      FAULTLINE_PLAN: join(cwd, 'env-plan.json'),
      FAULTLINE_DETECT: 'off',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env-host:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    };
    const c = config.resolveConfig({ env, cwd });
    expect(c.plan?.plan.seed).toBe(9);
    expect(c.detect).toBe(false);
    // The exporter reads the variable itself: no URL is passed over it.
    expect(c.export.otlp.tracesUrl).toBeUndefined();
    expect(c.export.otlp.protocol).toBe('http/json');
    expect(c.export.traces).toEqual(['otlp']);
    const o = config.resolveConfig({
      env,
      cwd,
      overrides: { plan: { seed: 11, rules: [{ fault: 'http_500' }] }, detect: true },
    });
    expect(o.plan?.plan.seed).toBe(11);
    expect(o.plan?.where).toBe('start({ plan })');
    expect(o.detect).toBe(true);
  });

  it('FAULTLINE_CONFIG names the file; an inline plan in it is validated like a plan file', () => {
    const cwd = folder({ 'mine.yml': `plan:\n  seed: 3\n  rules:\n    - fault: llm_truncate_singel\n` });
    const e = errorOf(() => config.resolveConfig({ env: { FAULTLINE_CONFIG: 'mine.yml' }, cwd }));
    expect(e.code).toBe('FAULTLINE_CONFIG_INVALID');
    expect(e.message).toContain(join(cwd, 'mine.yml'));
    expect(e.message).toContain('llm_truncate_single');
    expect(e.message).toContain('plan.rules[0].fault');
    const missing = errorOf(() => config.resolveConfig({ env: { FAULTLINE_CONFIG: 'nope.yaml' }, cwd }));
    expect(missing.message).toBe('FAULTLINE_CONFIG names nope.yaml, which does not exist');
  });

  it('refuses a misspelt key, bad YAML and two configuration files, naming the file', () => {
    const typo = folder({ 'faultline.config.json': JSON.stringify({ detekt: false }) });
    expect(errorOf(() => config.resolveConfig({ env: {}, cwd: typo })).message).toMatch(
      /faultline\.config\.json:\n✖ Unrecognized key: "detekt"/,
    );
    const bad = folder({ 'faultline.config.yaml': 'plan: [unclosed' });
    expect(errorOf(() => config.resolveConfig({ env: {}, cwd: bad })).message).toMatch(
      /faultline\.config\.yaml is not valid YAML/,
    );
    const two = folder({ 'faultline.config.json': '{}', 'faultline.config.yaml': '' });
    expect(errorOf(() => config.resolveConfig({ env: {}, cwd: two })).message).toMatch(
      /two configuration files .*faultline\.config\.json and faultline\.config\.yaml/,
    );
  });

  it('OTEL_TRACES_EXPORTER, FAULTLINE_TRACES_FILE and an unsupported exporter name', () => {
    const cwd = folder({});
    expect(config.resolveConfig({ env: { OTEL_TRACES_EXPORTER: 'console' }, cwd }).export.traces).toEqual(['console']);
    expect(config.resolveConfig({ env: { OTEL_TRACES_EXPORTER: 'none' }, cwd }).export.traces).toEqual([]);
    const named = config.resolveConfig({
      env: { OTEL_TRACES_EXPORTER: 'otlp', FAULTLINE_TRACES_FILE: 't.jsonl' },
      cwd,
    }).export;
    expect(named.traces).toEqual(['otlp', 'file']);
    expect(named.file).toBe(join(cwd, 't.jsonl'));
    expect(
      config.resolveConfig({
        env: { OTEL_NODE_DISABLED_INSTRUMENTATIONS: '@opentelemetry/instrumentation-undici' },
        cwd,
      }).httpSpans,
    ).toBe(false);
    expect(config.resolveConfig({ env: { OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http' }, cwd }).httpSpans).toBe(false);
    expect(
      config.resolveConfig({ env: { OTEL_NODE_RESOURCE_DETECTORS: 'all' }, cwd }).export.resourceDetectors,
    ).toEqual(['env', 'host', 'os', 'process', 'serviceinstance']);
    expect(config.resolveConfig({ env: { OTEL_PROPAGATORS: 'none' }, cwd }).export.propagators).toEqual([]);
  });
});

describe('switches as users write them', () => {
  it('FAULTLINE_DISABLE: any truthy spelling turns injection off; anything else is refused with a message', () => {
    const cwd = folder({ 'p.json': JSON.stringify(plan) });
    for (const v of ['1', 'true', 'TRUE', 'yes', 'Yes', ' on ', 'y']) {
      const c = config.resolveConfig({ env: { FAULTLINE_PLAN: join(cwd, 'p.json'), FAULTLINE_DISABLE: v }, cwd });
      expect(c.injectionDisabled, v).toBe(true);
      expect(c.plan, v).toBeUndefined();
    }
    for (const v of ['0', 'false', 'No', 'off', '']) {
      expect(
        config.resolveConfig({ env: { FAULTLINE_PLAN: join(cwd, 'p.json'), FAULTLINE_DISABLE: v }, cwd }).plan,
        v,
      ).toBeDefined();
    }
    const e = errorOf(() =>
      config.resolveConfig({ env: { FAULTLINE_PLAN: join(cwd, 'p.json'), FAULTLINE_DISABLE: 'maybe' }, cwd }),
    );
    expect(e.code).toBe('FAULTLINE_CONFIG_INVALID');
    expect(e.message).toBe('FAULTLINE_DISABLE="maybe" is not a switch: use 1, true, yes or on (or 0, false, no, off)');
  });

  it('NODE_ENV is trimmed and case-folded for the production refusal', () => {
    const cwd = folder({
      'p.json': JSON.stringify(plan),
      'ok.json': JSON.stringify({ ...plan, allowProduction: true }),
    });
    for (const v of ['production', 'production ', 'Production', ' PRODUCTION\n']) {
      const e = errorOf(() => config.resolveConfig({ env: { FAULTLINE_PLAN: join(cwd, 'p.json'), NODE_ENV: v }, cwd }));
      expect(e.code, JSON.stringify(v)).toBe('FAULTLINE_PRODUCTION_REFUSED');
      expect(
        config.resolveConfig({ env: { FAULTLINE_PLAN: join(cwd, 'ok.json'), NODE_ENV: v }, cwd }).plan,
      ).toBeDefined();
    }
    expect(
      config.resolveConfig({ env: { FAULTLINE_PLAN: join(cwd, 'p.json'), NODE_ENV: 'productionish' }, cwd }).plan,
    ).toBeDefined();
  });
});

describe('the published JSON Schema', () => {
  it('src/config.schema.json is up to date (regenerate: node -e "process.stdout.write(require(\'./dist/src/config-schema.js\').configJsonSchemaText())" > src/config.schema.json)', () => {
    expect(readFileSync(join(ROOT, 'src/config.schema.json'), 'utf8')).toBe(schema.configJsonSchemaText());
  });

  it('accepts and refuses the same files as the zod schema (Ajv, draft 2020-12)', () => {
    const validate = new Ajv2020({ strict: false, validateFormats: false }).compile(
      JSON.parse(readFileSync(join(ROOT, 'src/config.schema.json'), 'utf8')),
    );
    const docs = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
    const example = parseYaml(/```yaml\n# faultline\.config\.yaml\n([\s\S]*?)```/.exec(docs)![1]!) as unknown;
    const cases: unknown[] = [
      example,
      {},
      { plan: 'plan.yaml', guards: 'guards.yaml' },
      { plan, export: { traces: ['otlp'], otlp: { endpoint: 'https://collector:4318' } } },
      { detekt: true },
      { plan: { rules: [] } },
      { export: { traces: ['zipkin'] } },
      { export: { otlp: { endpoint: 'not a url' } } },
      { detect: 'yes' },
    ];
    for (const c of cases) {
      expect(validate(c), JSON.stringify(c)).toBe(schema.ConfigFile.safeParse(c).success);
    }
    expect(validate(example)).toBe(true);
  });
});

describe('read once', () => {
  it('under register, every FAULTLINE_* variable and NODE_ENV is read once, and the ones faultline resolves for OTel at most once (child process)', async () => {
    const cwd = folder({ 'p.json': JSON.stringify(plan), 'g.yaml': 'routes: [{ retry: { maxRetries: 1 } }]\n' });
    // A Proxy over the environment counts reads while register starts; an LLM call then runs the span layer.
    const script = `
      const counts = {};
      const real = process.env;
      process.env = new Proxy(real, { get(t, k) { if (typeof k === 'string') counts[k] = (counts[k] || 0) + 1; return Reflect.get(t, k); } });
      require(${JSON.stringify(join(ROOT, 'dist/src/register.js'))});
      process.stdout.write(JSON.stringify(counts));
    `;
    const env = {
      FAULTLINE_PLAN: join(cwd, 'p.json'),
      FAULTLINE_GUARDS: join(cwd, 'g.yaml'),
      FAULTLINE_DISABLE: '0',
      FAULTLINE_DETECT: '1',
      FAULTLINE_TRACES_FILE: join(cwd, 't.jsonl'),
      NODE_ENV: 'development',
      OTEL_TRACES_EXPORTER: 'file',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'false',
    };
    const r = await runNode(['-e', script], { cwd, env, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    const counts = JSON.parse(r.stdout) as Record<string, number>;
    for (const k of [
      'FAULTLINE_PLAN',
      'FAULTLINE_GUARDS',
      'FAULTLINE_DISABLE',
      'FAULTLINE_DETECT',
      'FAULTLINE_TRACES_FILE',
      'FAULTLINE_CONFIG',
      'NODE_ENV',
    ]) {
      expect(counts[k], k).toBe(1);
    }
    for (const k of [
      'OTEL_TRACES_EXPORTER',
      'OTEL_SDK_DISABLED',
      'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
      'OTEL_NODE_DISABLED_INSTRUMENTATIONS',
      'OTEL_NODE_ENABLED_INSTRUMENTATIONS',
      'OTEL_PROPAGATORS',
      'OTEL_NODE_RESOURCE_DETECTORS',
    ]) {
      expect(counts[k] ?? 0, k).toBeLessThanOrEqual(1);
    }
  });
});
