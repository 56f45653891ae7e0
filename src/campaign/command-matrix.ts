/**
 * The matrix of a command campaign (`--matrix matrix.yaml`): the fault conditions, each a fault plan, and how often
 * each runs. Validated like a plan — zod for the matrix's own shape, then every condition's plan through the plan
 * schema — so a misspelt fault or parameter fails before the first run, naming the condition.
 *
 * ```yaml
 * seed: 42              # plan seed of repetition 1 (repetition r uses seed + r - 1), or `seeds: [7, 8, 9]`
 * repetitions: 2
 * conditions:
 *   - fault: llm_truncate_single          # a catalog fault: one condition
 *   - fault: http_503
 *     match: { operation: chat }
 *     positions: [1, 2]                   # one condition per position …
 *     strategies: [single, persistent]    # … × per strategy (faults without their strategy in their name)
 *   - fault: non_delivery
 *     boundaries: [I2, I4]                # … × per boundary
 *   - name: slow-then-cut                 # or a whole plan's rules, as one condition
 *     rules: [{ fault: slow_first_byte }, { fault: stream_cut, params: { afterEvents: 2 } }]
 * ```
 *
 * Condition ids: the `name`, else the fault with `@boundary`, `#position` and `/strategy` as expanded.
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { FaultlineInputError } from '../errors';
import { parsePlan } from '../plan/load';
import type { FaultPlan } from '../plan/schema';

const STRATEGIES = ['single', 'persistent', 'intermittent', 'burst'] as const;

const FaultEntry = z.strictObject({
  name: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'condition id (default: the fault, with @boundary #position /strategy)' }),
  fault: z.string().min(1).meta({ description: 'a catalog fault name' }),
  match: z.record(z.string(), z.unknown()).optional().meta({ description: 'the rule selector, as in a plan' }),
  params: z.record(z.string(), z.unknown()).optional(),
  probability: z.number().optional(),
  count: z.number().optional(),
  positions: z
    .array(z.number().int().min(1))
    .min(1)
    .optional()
    .meta({ description: 'one condition per position (match.position)' }),
  strategies: z.array(z.enum(STRATEGIES)).min(1).optional().meta({ description: 'one condition per strategy' }),
  boundaries: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .meta({ description: 'one condition per boundary (match.boundary)' }),
});

const PlanEntry = z.strictObject({
  name: z.string().min(1).meta({ description: 'condition id' }),
  rules: z.array(z.unknown()).min(1).meta({ description: 'the rules of a fault plan' }),
});

export const CommandMatrix = z
  .strictObject({
    $schema: z.string().optional(),
    description: z.string().optional(),
    seed: z
      .number()
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .optional()
      .meta({ description: 'plan seed of the first repetition (default 42)' }),
    seeds: z
      .array(z.number().int().min(0).max(Number.MAX_SAFE_INTEGER))
      .min(1)
      .optional()
      .meta({ description: 'one repetition per seed' }),
    repetitions: z
      .number()
      .int()
      .min(1)
      .optional()
      .meta({ description: 'runs of every (task, condition), each with its clean twin (default 1)' }),
    allowProduction: z.boolean().optional(),
    conditions: z.array(z.union([PlanEntry, FaultEntry])).min(1),
  })
  .superRefine((m, ctx) => {
    if (m.seeds && m.seed !== undefined)
      ctx.addIssue({ code: 'custom', path: ['seed'], message: 'give seed or seeds, not both' });
    if (m.seeds && m.repetitions !== undefined && m.repetitions !== m.seeds.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['repetitions'],
        message: `${m.seeds.length} seeds mean ${m.seeds.length} repetitions, not ${m.repetitions}`,
      });
    }
  });

export interface PlanCondition {
  id: string;
  /** The fault of a single-fault condition (for per-fault grouping); `undefined` for a multi-rule plan. */
  fault?: string;
  strategy?: string;
  /** The plan, validated, without its seed (set per repetition). */
  plan: Omit<FaultPlan, 'seed'>;
}

export interface ResolvedMatrix {
  conditions: PlanCondition[];
  /** Seed of each repetition (length = repetitions). */
  seeds: number[];
}

function read(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new FaultlineInputError(
      code === 'ENOENT' ? 'FAULTLINE_PLAN_NOT_FOUND' : 'FAULTLINE_PLAN_INVALID',
      `--matrix ${file}: ${code === 'ENOENT' ? 'no such file' : `cannot read (${code ?? String(err)})`}`,
      { cause: err },
    );
  }
  try {
    return extname(file).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new FaultlineInputError(
      'FAULTLINE_PLAN_INVALID',
      `--matrix ${file} is not valid ${extname(file).toLowerCase() === '.json' ? 'JSON' : 'YAML'}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

const AGENTCHAOS_STRATEGY = /_(single|persistent|intermittent|burst)$/;

/** Read, validate and expand a matrix file. */
export function loadMatrix(file: string): ResolvedMatrix {
  return resolveMatrix(read(file), `--matrix ${file}`);
}

export function resolveMatrix(input: unknown, where: string): ResolvedMatrix {
  const parsed = CommandMatrix.safeParse(input);
  if (!parsed.success)
    throw new FaultlineInputError('FAULTLINE_PLAN_INVALID', `invalid ${where}:\n${z.prettifyError(parsed.error)}`, {
      details: parsed.error.issues,
    });
  const m = parsed.data;
  const conditions: PlanCondition[] = [];
  const ids = new Map<string, number>();
  m.conditions.forEach((entry, i) => {
    const expanded: Array<{ id: string; rules: unknown[]; fault?: string; strategy?: string }> = [];
    if ('rules' in entry) expanded.push({ id: entry.name, rules: entry.rules });
    else {
      for (const boundary of entry.boundaries ?? [undefined]) {
        for (const position of entry.positions ?? [undefined]) {
          for (const strategy of entry.strategies ?? [undefined]) {
            const match: Record<string, unknown> = { ...entry.match };
            if (boundary !== undefined) match.boundary = boundary;
            if (position !== undefined) match.position = position;
            const rule: Record<string, unknown> = { fault: entry.fault, match };
            if (entry.params) rule.params = entry.params;
            if (strategy !== undefined) rule.strategy = strategy;
            if (entry.probability !== undefined) rule.probability = entry.probability;
            if (entry.count !== undefined) rule.count = entry.count;
            const auto = `${entry.fault}${boundary !== undefined ? `@${boundary}` : ''}${position !== undefined ? `#${position}` : ''}${strategy !== undefined ? `/${strategy}` : ''}`;
            const multiple =
              (entry.boundaries?.length ?? 1) * (entry.positions?.length ?? 1) * (entry.strategies?.length ?? 1) > 1;
            const id =
              entry.name !== undefined
                ? multiple
                  ? `${entry.name}${auto.slice(entry.fault.length)}`
                  : entry.name
                : auto;
            rule.name = id;
            const strat = strategy ?? AGENTCHAOS_STRATEGY.exec(entry.fault)?.[1];
            expanded.push({
              id,
              rules: [rule],
              fault: entry.fault,
              ...(strat !== undefined ? { strategy: strat } : {}),
            });
          }
        }
      }
    }
    for (const c of expanded) {
      const dup = ids.get(c.id);
      if (dup !== undefined)
        throw new FaultlineInputError(
          'FAULTLINE_PLAN_INVALID',
          `invalid ${where}: conditions[${i}]: condition "${c.id}" is already defined by conditions[${dup}] (give it a name)`,
        );
      ids.set(c.id, i);
      const plan = parsePlan(
        { rules: c.rules, ...(m.allowProduction !== undefined ? { allowProduction: m.allowProduction } : {}) },
        `${where}: conditions[${i}] ("${c.id}")`,
      );
      const { seed: _seed, ...rest } = plan;
      void _seed;
      conditions.push({
        id: c.id,
        plan: rest,
        ...(c.fault !== undefined ? { fault: c.fault } : {}),
        ...(c.strategy !== undefined ? { strategy: c.strategy } : {}),
      });
    }
  });
  const seeds = m.seeds ?? Array.from({ length: m.repetitions ?? 1 }, (_, r) => (m.seed ?? 42) + r);
  return { conditions, seeds };
}

/** The plan of one condition in one repetition, as written to the file FAULTLINE_PLAN points at. */
export function planOf(c: PlanCondition, seed: number): FaultPlan {
  return { ...c.plan, seed };
}
