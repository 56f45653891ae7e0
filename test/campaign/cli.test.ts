/**
 * `faultline campaign` / `faultline demo` as commands: bad input fails with a coded error naming the option, and an
 * interrupted campaign keeps the runs it finished (traces, summary and report written from them).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FaultlineInputError } from '../../src/errors';
import { command as campaign, readCampaignOptions } from '../../src/cli/commands/campaign';
import { command as demo } from '../../src/cli/commands/demo';
import { resolveSpec } from '../../src/campaign/matrix';
import * as examples from '../../examples/index';
import { runCampaign } from '../../src/campaign/runner';

describe('faultline campaign options', () => {
  it('rejects unknown presets, conditions, topologies and bad numbers with a clear coded error', () => {
    expect(() => resolveSpec('nope')).toThrow(/unknown preset "nope"; expected one of smoke, paper/);
    expect(() => resolveSpec('smoke', { conditions: ['non_delivery@I9'] })).toThrow(FaultlineInputError);
    expect(() => resolveSpec('smoke', { conditions: ['non_delivery@I9'] })).toThrow(
      /unknown fault condition "non_delivery@I9" in --faults/,
    );
    expect(() => resolveSpec('smoke', { topologies: ['ring'] })).toThrow(/unknown topology "ring" in --topologies/);
    expect(() => readCampaignOptions({ reps: '0' }, { preset: 'smoke', out: 'x' })).toThrow(
      /--reps must be a positive integer, got "0"/,
    );
  });

  it('parses comma-separated and repeated lists', () => {
    const run = readCampaignOptions(
      { preset: 'paper', topologies: ['flat,sequential'], faults: ['non_delivery@I4', 'valid_partial@I4'], reps: '2' },
      { preset: 'smoke', out: 'o' },
    );
    expect(run).toMatchObject({
      preset: 'paper',
      out: 'o',
      overrides: { topologies: ['flat', 'sequential'], conditions: ['non_delivery@I4', 'valid_partial@I4'], reps: 2 },
    });
    const spec = resolveSpec(run.preset, run.overrides);
    expect(spec.protection?.conditions.map((c) => c.id)).toEqual(['valid_partial@I4']);
    expect(spec.protection?.topologies).toEqual(['sequential', 'flat']);
  });

  it('declares its commands for the CLI registry', () => {
    expect(campaign.name).toBe('campaign');
    expect(campaign.options.map((o) => o.name)).toEqual(
      expect.arrayContaining(['preset', 'topologies', 'faults', 'reps', 'out', 'concurrency']),
    );
    expect(demo.name).toBe('demo');
  });
});

describe('interrupting a campaign', () => {
  it('finishes the cells in flight, starts no new ones, and writes the partial results', async () => {
    const out = mkdtempSync(join(tmpdir(), 'faultline-interrupt-'));
    const controller = new AbortController();
    const spec = resolveSpec('smoke', { families: ['shopping'] });
    const result = await runCampaign({
      workloads: examples,
      spec,
      out,
      concurrency: 2,
      signal: controller.signal,
      onRun: (done) => {
        if (done === 3) controller.abort();
      },
    });
    expect(result.interrupted).toBe(true);
    // The cells in flight at the abort finished both their runs (complete pairs only); no others started.
    const n = result.records.length;
    expect(n % 2).toBe(0);
    expect(n).toBeGreaterThanOrEqual(4);
    expect(n).toBeLessThanOrEqual(6);
    expect(
      result.records.filter((r) => r.faulted).every((r) => result.records.some((c) => c.taskId === r.matchedTo)),
    ).toBe(true);
    expect(readFileSync(result.files.traces, 'utf8').trim().split('\n').length).toBe(n);
    const summary = JSON.parse(readFileSync(result.files.summary, 'utf8')) as {
      meta: { interrupted: boolean };
      runs: unknown[];
    };
    expect(summary.meta.interrupted).toBe(true);
    expect(summary.runs.length).toBe(n);
    expect(readFileSync(result.files.report, 'utf8')).toContain('interrupted');
    expect(result.text).toContain('INTERRUPTED');
  }, 60_000);
});
