/**
 * The ARCF experiment for real (../shared/papers/arcf-reliability-control.txt §5–6): the `arcf` protection arm —
 * workflow monitors, retry, fallback, checkpoints, verification — against the unprotected baseline at a 10 % fault
 * rate, on the example workflows, reporting ARCF's Table 1.
 *
 *  - Faults: each condition fires with probability 0.1 on every call (or message) it applies to, with a seed per
 *    cell shared by both arms (so the baseline and the protected run meet the same fault sequence as long as their
 *    calls line up): transient HTTP errors, stalled connections, slow first bytes, cut streams, lost messages,
 *    incomplete evidence — ARCF's latencies and timeouts, tool and agent failures, output generation faults.
 *    Context-window overflow has no fault in the catalog and is left out.
 *  - The arm: the LLM route retried (ARCF back-off), then sent to a fallback model chosen by ARCF's score, behind a
 *    circuit breaker; undelivered action requests resubmitted and incomplete evidence read back (the message-level
 *    retry and the schema tier); every stage of the workflow a verified checkpoint (schema, safety rules, consistency
 *    with the plan), re-run once and then rolled back and resumed; the online monitors in both arms.
 *
 * Every faulted run has its clean twin (same arm), and untriggered runs are excluded with their twin, as in the other
 * studies. The table's definitions are in docs/campaigns.md.
 *
 * Here: the study's conditions, cells, plans and guards. A run's facts: arcf-facts.ts; the table: arcf-summary.ts;
 * the overhead: arcf-overhead.ts; the text: src/report/arcf.ts.
 */
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkpoints } from '../../detectors/guards/checkpoint';
import type { GuardConfigInput } from '../../detectors/guards/config';
import { guardPreset } from '../../detectors/guards/config';
import type { CampaignSpec, Cell, Condition, PlannedRun, Topology } from './types';

export type { ArcfRunFacts, ArcfTally } from './types';

export const ARCF_RATE = 0.1;

const cond = (id: string, fault: string, kind: Condition['kind'], params?: Record<string, unknown>): Condition => ({
  id,
  fault,
  kind,
  ...(params ? { params } : {}),
});

/** The fault conditions of the study, each at a 10 % rate per eligible call or message. */
export const ARCF_CONDITIONS: readonly Condition[] = [
  cond('http_503@10%', 'http_503', 'content', { retryAfterS: 0 }),
  cond('timeout@10%', 'timeout_hang', 'content', { stallMs: 400 }),
  cond('slow@10%', 'slow_first_byte', 'content', { delayMs: 1500 }),
  cond('stream_cut@10%', 'stream_cut', 'content', { afterEvents: 1 }),
  cond('non_delivery@10%', 'non_delivery', 'communication'),
  cond('valid_partial@10%', 'valid_partial', 'communication'),
];

/** The `arcf` preset: both families, all topologies, every task, two repetitions, baseline and arcf arms. */
export const ARCF_SPEC: CampaignSpec = {
  name: 'arcf',
  families: ['shopping', 'coding'],
  tasksPerFamily: 4,
  topologies: ['sequential', 'flat', 'hierarchical'],
  conditions: [],
  reps: 2,
  arcf: { conditions: [...ARCF_CONDITIONS] },
};

/** The study's cells: every condition × family × topology × task × repetition, in the baseline and the arcf arm. */
export function arcfCells(spec: CampaignSpec, tasksOf: (family: string) => readonly string[]): Cell[] {
  const study = spec.arcf;
  if (!study || study.conditions.length === 0) return [];
  const cells: Cell[] = [];
  const topologies: Topology[] = spec.topologies;
  for (let rep = 1; rep <= spec.reps; rep++) {
    for (const condition of study.conditions) {
      for (const family of spec.families) {
        for (const topology of topologies) {
          for (const arm of ['none', 'arcf'] as const) {
            for (const task of tasksOf(family).slice(0, spec.tasksPerFamily))
              cells.push({ study: 'arcf', family, task, topology, condition, arm, rep });
          }
        }
      }
    }
  }
  return cells;
}

/** The plan of a cell: its condition at 10 % on every eligible call, seeded per cell (the same seed in both arms). */
export function arcfPlan(cell: Cell): { seed: number; rules: Record<string, unknown>[] } {
  const c = cell.condition;
  const key = `${c.id}|${cell.family}|${cell.task}|${cell.topology}|${cell.rep}`;
  const seed = parseInt(createHash('sha256').update(key).digest('hex').slice(0, 8), 16);
  const rule: Record<string, unknown> = {
    name: c.id,
    fault: c.fault,
    strategy: 'intermittent',
    probability: ARCF_RATE,
    match: c.kind === 'communication' ? {} : { operation: 'chat' },
  };
  if (c.params) rule.params = c.params;
  return { seed, rules: [rule] };
}

/** The arm's guard routes: ARCF's retry, fallback and circuit on the LLM route, message-level recovery on the rest. */
export function arcfGuardConfig(
  family: { name?: string; evidenceFields?: Record<string, string> } | undefined,
  model: string,
): GuardConfigInput {
  const messages = guardPreset('both').routes;
  return {
    routes: [
      ...messages,
      {
        name: 'llm',
        // Every HTTP exchange of the example workflows is an LLM call.
        retry: { maxRetries: 2, baseDelayMs: 20, maxDelayMs: 200, jitter: 'equal' },
        fallback: [{ name: 'backup', model: model === 'faultline-mock-1' ? 'faultline-mock-2' : model, tier: 0 }],
        circuit: { failureThreshold: 5, coolDownMs: 1000 },
        onFailure: 'record',
      },
    ],
    contracts: [
      {
        name: `${String(family?.name)} evidence`,
        match: { boundary: 'I4' },
        requiredEvidence: (family?.evidenceFields ?? {}) as Record<string, 'string'>,
        evidenceMirror: 'evidence',
        ...(family?.name === 'shopping' ? { identity: ['product_id', 'sku'] } : {}),
      },
    ],
  };
}

/**
 * The arm for a command campaign (`--arms none,arcf`): the same LLM route recovery through FAULTLINE_GUARDS (retry,
 * circuit; a fallback model when one is given). Checkpoints need the program's own runWorkflow / checkpoint() calls.
 */
export function arcfCommandGuards(fallbackModel?: string): GuardConfigInput {
  return {
    routes: [
      ...guardPreset('execution').routes,
      {
        name: 'llm',
        retry: { maxRetries: 2, baseDelayMs: 200, maxDelayMs: 5000, jitter: 'equal' },
        ...(fallbackModel ? { fallback: [{ name: 'backup', model: fallbackModel }] } : {}),
        circuit: { failureThreshold: 5, coolDownMs: 10_000 },
        onFailure: 'record',
      },
    ],
  };
}

/** A command campaign's `arcf` arm for one (task, condition, repetition): the faulted run and its clean twin. */
export function arcfRuns(base: Omit<PlannedRun, 'key' | 'faulted'>, key: string): PlannedRun[] {
  return [
    { ...base, key: `${key}|arcf|faulted`, faulted: true, arm: 'arcf' },
    { ...base, key: `${key}|arcf|clean`, faulted: false, arm: 'arcf' },
  ];
}

/** The program run without faultline (no register, no plan): what the observability overhead is measured against. */
export function bareRun(base: Omit<PlannedRun, 'key' | 'faulted'>, key: string): PlannedRun {
  return { ...base, key: `${key}|bare`, faulted: false, bare: true };
}

/** The environment a command run gets for its arm: the `arcf` guards file, or no faultline at all for a bare run. */
export function arcfEnv(r: PlannedRun, env: NodeJS.ProcessEnv, out: string, fallbackModel?: string): NodeJS.ProcessEnv {
  if (r.bare) return { NODE_OPTIONS: env.NODE_OPTIONS ?? '' };
  if (r.arm !== 'arcf') return {};
  const file = join(out, 'arcf-guards.json');
  if (!existsSync(file)) writeFileSync(file, `${JSON.stringify(arcfCommandGuards(fallbackModel), null, 2)}\n`);
  // The monitors are online detectors: on explicitly, whatever register's default for detection is.
  return { FAULTLINE_GUARDS: file, FAULTLINE_DETECT: 'true' };
}

/** What the arm's workflow gets: a checkpoint guard of its own (memory store) and a deadline the monitors judge. */
export function arcfReliability(): { checkpoints: ReturnType<typeof checkpoints>; deadlineMs: number } {
  return { checkpoints: checkpoints({ maxRollbacks: 2 }), deadlineMs: 30_000 };
}
