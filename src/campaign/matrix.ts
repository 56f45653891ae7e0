/**
 * The campaign matrix: which runs a campaign makes. A cell is (family, task, topology, condition, protection arm,
 * repetition); every cell is run twice — once clean, once with the condition's fault plan — under fresh task ids, so
 * each faulted run has its matched clean twin (clean-conditional loss, Δpass@1).
 *
 * Two studies share the machinery: the main matrix (conditions × topologies, no protection) and the protection study
 * (the RQ4 faults × the four arms: none, execution guards, evidence guards, both).
 */
import { FaultlineInputError } from '../errors';
import { ARCF_SPEC } from './arcf';
import type { Arm, CampaignSpec, Cell, Condition, Topology } from './types';

export type { Arm, CampaignSpec, Cell, Condition, Topology } from './types';

export const ARMS: readonly Arm[] = ['none', 'execution', 'evidence', 'both'];

export const ALL_TOPOLOGIES: readonly Topology[] = ['sequential', 'flat', 'hierarchical'];

const comm = (fault: string, boundary: string, params?: Record<string, unknown>): Condition => ({
  id: `${fault}@${boundary}`,
  fault,
  kind: 'communication',
  boundary,
  ...(params ? { params } : {}),
});
const content = (base: string, strategy: 'single' | 'persistent'): Condition => ({
  id: `${base}_${strategy}`,
  fault: `${base}_${strategy}`,
  kind: 'content',
  strategy,
});

/** The evidence block a semantic corruption swaps: everything the Worker found, the outer binding kept. */
const EVIDENCE_CONTENT = [
  'product_title',
  'product_id',
  'sku',
  'requested_quantity',
  'observed_quantity',
  'cart_verified',
  'function',
  'path',
  'tests_passed',
  'tests_total',
  'all_passed',
  'evidence',
];

/** Every condition the campaign knows by id. */
export const CONDITIONS: Record<string, Condition> = Object.fromEntries(
  [
    // "When Messages Go Wrong": the six evaluated cells.
    comm('non_delivery', 'I2'),
    comm('non_delivery', 'I4'),
    comm('deadline', 'I4'),
    comm('semantic_corruption', 'I4', { fields: EVIDENCE_CONTENT }),
    comm('valid_partial', 'I4'),
    comm('stale_replay', 'I4'),
    // Further operators (RQ4 and §2.6).
    comm('duplicate', 'I2'),
    comm('identity_corruption', 'I4'),
    comm('non_delivery', 'I1'),
    comm('non_delivery', 'I3'),
    comm('key_drift', 'I4'),
    comm('type_drift', 'I4'),
    // AgentChaos content faults, single vs persistent.
    ...['llm_error', 'llm_empty', 'llm_truncate', 'llm_corrupt', 'llm_schema', 'llm_timeout'].flatMap((b) => [
      content(b, 'single'),
      content(b, 'persistent'),
    ]),
  ].map((c) => [c.id, c]),
);

const pick = (ids: string[]): Condition[] => ids.map((id) => CONDITIONS[id]);

const SIX = [
  'non_delivery@I2',
  'non_delivery@I4',
  'deadline@I4',
  'semantic_corruption@I4',
  'valid_partial@I4',
  'stale_replay@I4',
];
const CONTENT = ['llm_error', 'llm_empty', 'llm_truncate', 'llm_corrupt', 'llm_schema', 'llm_timeout'].flatMap((b) => [
  `${b}_single`,
  `${b}_persistent`,
]);
const RQ4 = ['non_delivery@I2', 'duplicate@I2', 'valid_partial@I4', 'identity_corruption@I4', 'stale_replay@I4'];

export const PRESETS: Record<string, CampaignSpec> = {
  /** The demo: a couple of minutes at most on a 2-core machine. */
  smoke: {
    name: 'smoke',
    families: ['shopping', 'coding'],
    tasksPerFamily: 1,
    topologies: [...ALL_TOPOLOGIES],
    conditions: pick([
      'non_delivery@I2',
      'non_delivery@I4',
      'valid_partial@I4',
      'llm_truncate_single',
      'llm_truncate_persistent',
    ]),
    reps: 1,
    protection: {
      families: ['shopping'],
      topologies: ['sequential'],
      conditions: pick(['non_delivery@I2', 'duplicate@I2', 'valid_partial@I4']),
      arms: [...ARMS],
    },
  },
  /** The papers' experiments on the examples: the six communication cells + AgentChaos content faults, and RQ4. */
  paper: {
    name: 'paper',
    families: ['shopping', 'coding'],
    tasksPerFamily: 4,
    topologies: [...ALL_TOPOLOGIES],
    conditions: pick([...SIX, ...CONTENT]),
    reps: 1,
    protection: { families: ['shopping'], topologies: ['sequential', 'flat'], conditions: pick(RQ4), arms: [...ARMS] },
  },
};

// ARCF's experiment, defined with the rest of its arm (arcf.ts).
PRESETS.arcf = ARCF_SPEC;

export interface MatrixOverrides {
  topologies?: string[];
  conditions?: string[];
  families?: string[];
  reps?: number;
  tasksPerFamily?: number;
}

/** A preset with the user's overrides applied; unknown names fail with the list of known ones. */
export function resolveSpec(preset: string, o: MatrixOverrides = {}): CampaignSpec {
  const base = PRESETS[preset];
  if (!base)
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `unknown preset "${preset}"; expected one of ${Object.keys(PRESETS).join(', ')}`,
    );
  const spec: CampaignSpec = structuredClone(base);
  if (o.topologies) {
    for (const t of o.topologies) {
      if (!(ALL_TOPOLOGIES as readonly string[]).includes(t)) {
        throw new FaultlineInputError(
          'FAULTLINE_USAGE',
          `unknown topology "${t}" in --topologies; expected ${ALL_TOPOLOGIES.join(', ')}`,
        );
      }
    }
    spec.topologies = o.topologies as Topology[];
    if (spec.protection)
      spec.protection.topologies = spec.protection.topologies.filter((t) => spec.topologies.includes(t));
  }
  if (o.conditions) {
    spec.conditions = o.conditions.map((id) => {
      const c = CONDITIONS[id];
      if (!c)
        throw new FaultlineInputError(
          'FAULTLINE_USAGE',
          `unknown fault condition "${id}" in --faults; expected one of ${Object.keys(CONDITIONS).join(', ')}`,
        );
      return c;
    });
    if (spec.protection)
      spec.protection.conditions = spec.protection.conditions.filter((c) => o.conditions?.includes(c.id));
  }
  if (o.families) {
    for (const f of o.families) {
      if (f !== 'shopping' && f !== 'coding')
        throw new FaultlineInputError('FAULTLINE_USAGE', `unknown family "${f}"; expected shopping, coding`);
    }
    spec.families = o.families;
    if (spec.protection) spec.protection.families = spec.protection.families.filter((f) => o.families?.includes(f));
  }
  if (o.reps !== undefined) {
    if (!Number.isInteger(o.reps) || o.reps < 1)
      throw new FaultlineInputError('FAULTLINE_USAGE', `--reps must be a positive integer, got ${String(o.reps)}`);
    spec.reps = o.reps;
  }
  if (o.tasksPerFamily !== undefined) spec.tasksPerFamily = o.tasksPerFamily;
  return spec;
}

/** Expand a spec into cells, given each family's task ids. */
export function expand(spec: CampaignSpec, tasksOf: (family: string) => readonly string[]): Cell[] {
  const cells: Cell[] = [];
  // Tasks vary fastest, so runs in flight at the same time (and the one just before) are of different tasks: the
  // cross-task donors of stale replay and identity corruption then really come from another task.
  const add = (
    study: Cell['study'],
    families: string[],
    topologies: Topology[],
    conditions: Condition[],
    arms: Arm[],
  ): void => {
    for (let rep = 1; rep <= spec.reps; rep++) {
      for (const condition of conditions) {
        for (const family of families) {
          for (const topology of topologies) {
            for (const arm of arms) {
              for (const task of tasksOf(family).slice(0, spec.tasksPerFamily))
                cells.push({ study, family, task, topology, condition, arm, rep });
            }
          }
        }
      }
    }
  };
  add('main', spec.families, spec.topologies, spec.conditions, ['none']);
  const p = spec.protection;
  if (p && p.conditions.length > 0) add('protection', p.families, p.topologies, p.conditions, p.arms);
  return cells;
}

const plans = new Map<string, { rules: Record<string, unknown>[] }>();

/** The fault plan of a condition (the plan schema's input shape); one object per condition, so it is parsed once. */
export function planFor(c: Condition): { rules: Record<string, unknown>[] } {
  const cached = plans.get(c.id);
  if (cached) return cached;
  const rule: Record<string, unknown> = { name: c.id, fault: c.fault };
  if (c.kind === 'communication') rule.match = { boundary: c.boundary };
  else rule.match = { operation: 'chat' };
  if (c.params) rule.params = c.params;
  const plan = { rules: [rule] };
  plans.set(c.id, plan);
  return plan;
}
