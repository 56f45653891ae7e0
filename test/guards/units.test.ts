/** The guard building blocks on their own: ARCF back-off, Retry-After, circuit states, ledger, config validation. */
import { describe, expect, test } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ActionLedger,
  adaptFactor,
  guardConfigFromEnv,
  backoffDelay,
  CircuitBreaker,
  guardPreset,
  parseGuardConfig,
  retryAfterMs,
  routeMatches,
} from '../../detectors/guards/index';
import { FaultlineInputError } from '../../src/errors';

describe('retry', () => {
  test('ARCF adaptive factor and exponential growth with jitter', () => {
    expect([0.9, 0.7, 0.4].map(adaptFactor)).toEqual([1, 1.5, 2]);
    const none = { baseDelayMs: 100, maxDelayMs: 10_000, jitter: 'none' as const };
    expect([0, 1, 2, 3].map((n) => backoffDelay(n, none, 1))).toEqual([100, 200, 400, 800]);
    expect(backoffDelay(2, none, 0.6)).toBe(600);
    expect(backoffDelay(10, none, 0.1)).toBe(10_000);
    expect(backoffDelay(1, { baseDelayMs: 100, jitter: 'full' }, 1, () => 0.25)).toBe(50);
  });
  test('Retry-After in seconds, milliseconds and as an HTTP date', () => {
    expect(retryAfterMs({ 'retry-after': '3' })).toBe(3000);
    expect(retryAfterMs({ 'retry-after-ms': '250' })).toBe(250);
    const now = Date.UTC(2026, 0, 1);
    expect(retryAfterMs({ 'retry-after': new Date(now + 5000).toUTCString() }, now)).toBe(5000);
    expect(retryAfterMs({})).toBeUndefined();
  });
});

describe('circuit breaker', () => {
  test('closed → open → half-open → open → half-open → closed', () => {
    let t = 0;
    const c = new CircuitBreaker({ failureThreshold: 2, coolDownMs: 100 }, () => t);
    expect(c.onFailure()).toBeUndefined();
    expect(c.onFailure()).toEqual({ from: 'closed', to: 'open' });
    expect(c.admit().allowed).toBe(false);
    t = 100;
    expect(c.admit()).toEqual({ allowed: true, transition: { from: 'open', to: 'half_open' } });
    expect(c.admit().allowed).toBe(false); // one probe at a time
    expect(c.onFailure()).toEqual({ from: 'half_open', to: 'open' });
    t = 250;
    expect(c.admit().transition).toEqual({ from: 'open', to: 'half_open' });
    expect(c.onSuccess()).toEqual({ from: 'half_open', to: 'closed' });
    expect(c.state).toBe('closed');
  });
});

describe('ledger', () => {
  test('execute once, replay the receipt, refuse a different binding, share an in-flight execution', async () => {
    const l = new ActionLedger();
    let runs = 0;
    const act = () => new Promise<string>((r) => setTimeout(() => r(`receipt-${++runs}`), 5));
    const [a, b] = await Promise.all([l.executeOnce('a1', 't|s|2', act), l.executeOnce('a1', 't|s|2', act)]);
    expect(runs).toBe(1);
    expect([a.receipt, b.receipt]).toEqual(['receipt-1', 'receipt-1']);
    expect((await l.executeOnce('a1', 't|s|2', act)).replayed).toBe(true);
    await expect(l.executeOnce('a1', 't|s|3', act)).rejects.toThrow(/different binding/);
  });
});

describe('config', () => {
  test('a bad config names what and where', () => {
    expect(() => parseGuardConfig({ routes: [{ retry: { maxRetries: -1 } }] })).toThrow(FaultlineInputError);
    expect(() => parseGuardConfig({ routes: [{ retrys: 2 }] })).toThrow(/at guards\.routes\[0\]/);
    expect(() => parseGuardConfig({ routes: [{ fallback: [{ origin: 'http://x/path' }] }] })).toThrow(/origin/);
    // A duration no timer can hold (Node would fire it after 1 ms) is refused, naming the field.
    for (const [route, field] of [
      [{ retry: { baseDelayMs: 3e9 } }, 'retry.baseDelayMs'],
      [{ retry: { maxDelayMs: 3e9 } }, 'retry.maxDelayMs'],
      [{ retry: { maxRetryAfterMs: 3e9 } }, 'retry.maxRetryAfterMs'],
      [{ circuit: { coolDownMs: 3e9 } }, 'circuit.coolDownMs'],
    ] as const) {
      expect(() => parseGuardConfig({ routes: [route] })).toThrow(
        new RegExp(`a duration above 2147483647 ms.*at guards\\.routes\\[0\\]\\.${field.replace('.', '\\.')}`),
      );
    }
    expect(() => parseGuardConfig({ routes: [], ttlMs: 3e9 })).toThrow(
      /a duration above 2147483647 ms.*at guards\.ttlMs/,
    );
    expect(() => parseGuardConfig({ routes: [{ retry: { baseDelayMs: 2 ** 31 - 1 } }] })).not.toThrow();
  });
  test('presets for the campaign arms', () => {
    expect(guardPreset('none').routes).toEqual([]);
    expect(guardPreset('execution').routes.map((r) => r.name)).toEqual(['execution']);
    expect(guardPreset('both').routes.map((r) => r.match?.boundary)).toEqual(['I2', 'I4']);
    expect(parseGuardConfig(guardPreset('both'))).toEqual(guardPreset('both'));
  });
  test('route matching with prefixes', () => {
    expect(
      routeMatches({ provider: 'openai*', model: 'gpt-4o' }, { provider: 'openai_compatible', model: 'gpt-4o' }),
    ).toBe(true);
    expect(routeMatches({ boundary: 'I4' }, { provider: 'openai' })).toBe(false);
  });
});

describe('config files', () => {
  test('FAULTLINE_GUARDS names a YAML file; errors name the file and the field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fl-guards-'));
    const good = join(dir, 'guards.yaml');
    writeFileSync(good, 'routes:\n  - name: chat\n    match: { provider: "openai*" }\n    retry: { maxRetries: 1 }\n');
    expect(guardConfigFromEnv({ FAULTLINE_GUARDS: good })?.routes[0]?.retry).toEqual({ maxRetries: 1 });
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'routes:\n  - circuit: { coolDownMs: -5 }\n');
    expect(() => guardConfigFromEnv({ FAULTLINE_GUARDS: bad })).toThrow(/bad\.yaml\.routes\[0\]\.circuit/);
    expect(() => guardConfigFromEnv({ FAULTLINE_GUARDS: join(dir, 'missing.yaml') })).toThrow(
      /cannot read the guard config .*ENOENT/,
    );
    expect(guardConfigFromEnv({})).toBeUndefined();
  });
});

describe('route health metric', () => {
  test('faultline.route.health is exported through the global MeterProvider', async () => {
    const { metrics } = await import('@opentelemetry/api');
    const { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } =
      await import('@opentelemetry/sdk-metrics');
    const { RouteHealth } = await import('../../detectors/guards/health.js');
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    try {
      const health = new RouteHealth();
      health.record('planner', true);
      health.record('planner', false);
      health.record('planner', true);
      health.record('planner', true);
      health.exportMetric();
      await reader.forceFlush();
      const metric = exporter
        .getMetrics()
        .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
        .find((m) => m.descriptor.name === 'faultline.route.health');
      expect(metric?.dataPoints.map((p) => [p.attributes['faultline.guard.route'], p.value])).toEqual([
        ['planner', 0.75],
      ]);
    } finally {
      await provider.shutdown();
      metrics.disable();
    }
  });
});
