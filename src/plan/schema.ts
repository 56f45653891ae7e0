/**
 * The fault plan: the single source of truth for what a plan may say. A rule is selector (`match`) + fault (a catalog
 * name) + strategy. `plan.schema.json` is generated from this schema (`io: 'input'`).
 */
import { z } from 'zod';
import { TASK_SCOPES, type TaskScope } from '../../instrumentation/agents/task';
import { FAULT_NAMES, getFault, nearestFaultName } from '../catalog/index';

const stringOrList = z
  .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
  .meta({ description: 'exact value, a glob with *, or a list of them (any of)' });

export const Selector = z
  .strictObject({
    operation: stringOrList.optional().meta({
      description:
        'gen_ai.operation.name: chat, generate_content, text_completion, embeddings, invoke_agent, execute_tool, or handoff for in-process channel messages; `model` matches every model generation call whatever its API names it (chat, generate_content, text_completion; not embeddings)',
    }),
    provider: stringOrList.optional().meta({ description: 'gen_ai.provider.name, e.g. openai, anthropic' }),
    model: stringOrList.optional().meta({ description: 'gen_ai.request.model' }),
    agent: stringOrList.optional().meta({
      description:
        'gen_ai.agent.name: the agent an A2A call invokes; for other calls, the agent making it (runAgent, an Agents SDK agent, a LangGraph node)',
    }),
    tool: stringOrList.optional().meta({ description: 'gen_ai.tool.name (MCP tool calls)' }),
    boundary: stringOrList
      .optional()
      .meta({ description: 'faultline.message.boundary: I1, I2, I3, I4 or a user label' }),
    source: stringOrList.optional().meta({ description: 'faultline.message.source (sending agent)' }),
    target: stringOrList.optional().meta({ description: 'faultline.message.target (receiving agent)' }),
    url: z
      .string()
      .min(1)
      .optional()
      .meta({ description: 'url.full: a glob with * (e.g. "*/v1/chat/completions"), or a /regular expression/' }),
    position: z
      .union([z.number().int().min(1), z.array(z.number().int().min(1)).min(1)])
      .optional()
      .meta({
        description:
          'only the nth call(s) this selector matches in the task (1-based); a retry of a failed call (the same request sent again) keeps its call’s position',
      }),
  })
  .meta({ description: 'Which calls the rule applies to: every given field must match the span’s start attributes' });

const STRATEGY_NAMES = ['single', 'persistent', 'intermittent', 'burst'] as const;

const faultName = z.enum(FAULT_NAMES as [string, ...string[]], {
  error: (issue) => {
    const name = String(issue.input);
    const near = typeof issue.input === 'string' ? nearestFaultName(name) : undefined;
    return `unknown fault ${JSON.stringify(issue.input)}${near ? ` (did you mean "${near}"?)` : ''}; see docs/fault-catalog.md for the ${FAULT_NAMES.length} names`;
  },
});

export const Rule = z
  .strictObject({
    name: z.string().min(1).optional().meta({
      description: 'rule name, unique in the plan (default: the fault name, suffixed with the rule number if repeated)',
    }),
    fault: faultName.meta({
      description: 'a catalog fault name',
      examples: ['llm_truncate_single', 'http_429', 'stream_cut', 'non_delivery'],
    }),
    match: Selector.default({}),
    strategy: z.enum(STRATEGY_NAMES).optional().meta({
      description:
        'how often it fires per task (not for AgentChaos names, which carry their strategy): single (default) = first matching call; persistent = every call; intermittent = with probability; burst = the first count calls',
    }),
    probability: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .meta({ description: 'intermittent: firing probability per eligible call (default 0.3)' }),
    count: z.number().int().min(1).optional().meta({ description: 'burst: how many calls (default 3)' }),
    params: z.record(z.string(), z.unknown()).default({}).meta({ description: 'fault parameters (see the catalog)' }),
  })
  .superRefine((rule, ctx) => {
    const def = getFault(rule.fault);
    if (!def) return;
    if (
      def.fixedStrategy &&
      (rule.strategy !== undefined || rule.probability !== undefined || rule.count !== undefined)
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['strategy'],
        message: `"${rule.fault}" carries its strategy in its name; remove strategy/probability/count`,
      });
    }
    if (rule.probability !== undefined && rule.strategy !== 'intermittent') {
      ctx.addIssue({
        code: 'custom',
        path: ['probability'],
        message: 'probability applies to strategy "intermittent" only',
      });
    }
    if (rule.count !== undefined && rule.strategy !== 'burst') {
      ctx.addIssue({ code: 'custom', path: ['count'], message: 'count applies to strategy "burst" only' });
    }
    const parsed = def.params.safeParse(rule.params);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        ctx.addIssue({
          code: 'custom',
          path: ['params', ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
          message: `${rule.fault}: ${issue.message}`,
        });
      }
    }
    if (rule.match.url?.startsWith('/') && rule.match.url.endsWith('/') && rule.match.url.length > 1) {
      try {
        new RegExp(rule.match.url.slice(1, -1));
      } catch (e) {
        ctx.addIssue({
          code: 'custom',
          path: ['match', 'url'],
          message: `invalid regular expression: ${(e as Error).message}`,
        });
      }
    }
  });

export const FaultPlan = z
  .strictObject({
    $schema: z.string().optional(),
    description: z.string().optional(),
    seed: z
      .number()
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .default(42)
      .meta({ description: 'seed of the per-task PRNG (Python MT19937; AgentChaos uses 42)' }),
    allowProduction: z.boolean().default(false).meta({ description: 'allow injection when NODE_ENV=production' }),
    taskScope: z
      .enum(TASK_SCOPES as [TaskScope, ...TaskScope[]])
      .default('auto')
      .meta({
        description:
          'what a task (the unit of per-task state: positions, single faults, seeded draws, replay caches) is when the app declares none with withTask/runWorkflow: auto (default) = the framework run (OpenAI Agents SDK trace, LangChain/LangGraph root run, AI SDK function id), else the trace when the call has a parent span, else the process; trace = the trace (a call without a parent span is its own task); process = the whole process',
      }),
    rules: z.array(Rule).min(1).meta({ description: 'applied in order; each call may be hit by several rules' }),
  })
  .superRefine((plan, ctx) => {
    const seen = new Map<string, number>();
    plan.rules.forEach((r, i) => {
      if (r.name === undefined) return;
      const j = seen.get(r.name);
      if (j !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['rules', i, 'name'],
          message: `duplicate rule name "${r.name}" (also rules[${j}])`,
        });
      else seen.set(r.name, i);
    });
  })
  .meta({
    title: 'faultline fault plan',
    description: 'Which faults to inject into which calls. See docs/fault-plans.md.',
  });

export type FaultPlan = z.infer<typeof FaultPlan>;
export type FaultPlanInput = z.input<typeof FaultPlan>;
export type FaultRule = z.infer<typeof Rule>;
export type FaultSelector = z.infer<typeof Selector>;

/** Identity, for type checking and editor completion of a plan written in code. */
export function definePlan(plan: FaultPlanInput): FaultPlanInput {
  return plan;
}
