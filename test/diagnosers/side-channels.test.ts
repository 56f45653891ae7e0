/**
 * No side channels: once the ground truth is stripped, nothing on a faulted run's spans other than the fault's own
 * effect tells it apart from its clean twin. A real campaign (faultline's runner, examples, injector, online
 * detectors) runs faulted and clean twins of the same cells; for every attribute key, string-value shape (ids with
 * their digits and hex masked — task ids, session ids, message ids, payload ids), event name, event attribute,
 * resource attribute, scope, status, span name and span count, the test asks whether it separates the twins the same
 * way in every pair of two or more fault conditions. A fault's effect is specific to its kind, so a feature that
 * marks faulted runs across kinds of fault is a channel, not an effect.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasGroundTruth, stripGroundTruth } from '../../src/diagnosers/strip-ground-truth';
import { createDiagnoser } from '../../src/diagnosers/index';
import { resolveSpec } from '../../src/campaign/matrix';
import * as examples from '../../examples/index';
import { runCampaign } from '../../src/campaign/runner';
import type { RunRecord } from '../../src/campaign/analysis';
import { readTraces } from '../../src/traces/read';
import type { TraceRecord } from '../../src/traces/model';

/**
 * Features that differ between twins because of the fault's effect as faultline's own online detectors read it: a
 * `faultline.detection` event is a detector's finding about the response or message it observed, the same finding
 * the offline detectors make from the content; it is there because the content changed.
 */
const EFFECT_READINGS = [/^event:faultline\.detection$/, /^eattr:faultline\.detection\./];

const shape = (v: unknown): string =>
  String(v)
    .replace(/[0-9a-f]{8,}/gi, 'H')
    .replace(/[0-9]+/g, '#')
    .slice(0, 80);

function features(t: TraceRecord): Set<string> {
  const f = new Set<string>([`spans=${t.spans.length}`]);
  for (const s of t.spans) {
    f.add(`name:${shape(s.name)}`);
    f.add(`scope:${s.scope.name}`);
    f.add(`status:${s.status.code}`);
    f.add(`kind:${s.kind}`);
    for (const [k, v] of Object.entries(s.attributes)) {
      f.add(`attr:${k}`);
      if (typeof v === 'string') f.add(`shape:${k}=${shape(v)}`);
    }
    for (const [k, v] of Object.entries(s.resource)) f.add(`res:${k}=${shape(v)}`);
    for (const e of s.events) {
      f.add(`event:${e.name}`);
      for (const k of Object.keys(e.attributes)) f.add(`eattr:${e.name}.${k}`);
    }
    for (const l of s.links) for (const k of Object.keys(l.attributes)) f.add(`lattr:${k}`);
  }
  return f;
}

let records: RunRecord[] = [];
const traces = new Map<string, TraceRecord>();

beforeAll(async () => {
  const out = mkdtempSync(join(tmpdir(), 'faultline-sidechannel-'));
  const spec = resolveSpec('smoke', {
    conditions: ['non_delivery@I4', 'valid_partial@I4', 'llm_truncate_single', 'llm_error_single', 'llm_empty_single'],
    families: ['shopping', 'coding'],
    topologies: ['sequential'],
  });
  spec.protection = undefined;
  const result = await runCampaign({ workloads: examples, spec, out, concurrency: 3 });
  records = (JSON.parse(readFileSync(result.files.summary, 'utf8')) as { runs: RunRecord[] }).runs;
  for await (const t of readTraces([result.files.traces])) traces.set(t.traceId, t);
}, 120_000);

describe('no side channels in campaign traces', () => {
  it('no feature of the stripped spans marks faulted runs apart from their clean twins across fault kinds', () => {
    const byTask = new Map(records.map((r) => [r.taskId, r]));
    const pairs = records
      .filter((r) => r.faulted && r.matchedTo && r.triggered)
      .map((r) => ({
        condition: r.condition,
        faulted: traces.get(r.traceId!)!,
        clean: traces.get(byTask.get(r.matchedTo!)!.traceId!)!,
      }))
      .filter((p) => p.faulted && p.clean);
    expect(pairs.length).toBeGreaterThanOrEqual(8);
    const conditions = new Set(pairs.map((p) => p.condition));
    expect(conditions.size).toBeGreaterThanOrEqual(4);

    // feature → condition → how the twins differ on it in each pair: 'f' (faulted only), 'c' (clean only), '=' (same)
    const seen = new Map<string, Map<string, string[]>>();
    const all = new Set<string>();
    const fs = pairs.map((p) => ({
      ...p,
      ff: features(stripGroundTruth(p.faulted)),
      cf: features(stripGroundTruth(p.clean)),
    }));
    for (const p of fs) for (const x of [...p.ff, ...p.cf]) all.add(x);
    for (const x of all) {
      const perCond = new Map<string, string[]>();
      for (const p of fs) {
        const side = p.ff.has(x) && !p.cf.has(x) ? 'f' : p.cf.has(x) && !p.ff.has(x) ? 'c' : '=';
        perCond.set(p.condition, [...(perCond.get(p.condition) ?? []), side]);
      }
      seen.set(x, perCond);
    }
    const channels: string[] = [];
    for (const [x, perCond] of seen) {
      if (EFFECT_READINGS.some((re) => re.test(x))) continue;
      for (const side of ['f', 'c']) {
        const marked = [...perCond].filter(([, sides]) => sides.every((s) => s === side)).map(([c]) => c);
        if (marked.length >= 2)
          channels.push(
            `${x} (on ${side === 'f' ? 'faulted' : 'clean'} runs only, in every pair of ${marked.join(', ')})`,
          );
      }
    }
    expect(channels).toEqual([]);
  });

  it('the stripped traces carry no ground truth, and the rule diagnosis is the same with and without it', async () => {
    const rule = createDiagnoser('rule');
    for (const t of traces.values()) {
      const stripped = stripGroundTruth(t);
      expect(hasGroundTruth(stripped)).toBe(false);
      expect(await rule.diagnose(stripped)).toEqual(await rule.diagnose(t));
    }
  });
});
