/**
 * Compiling a plan into matchers, and matching a span's start attributes against a rule's selector. Selectors read
 * only attributes known at span start (the ones samplers see), so selection never depends on the response.
 */
import type { Attributes } from '@opentelemetry/api';
import {
  ATTR_FL_MESSAGE_BOUNDARY,
  ATTR_FL_MESSAGE_ID,
  ATTR_FL_MESSAGE_SOURCE,
  ATTR_FL_MESSAGE_TARGET,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_URL_FULL,
} from '../../instrumentation/semconv';
import type { FaultSpec } from '../catalog/agentchaos/spec';
import { STRATEGIES } from '../catalog/agentchaos/experiments';
import { getFault } from '../catalog/index';
import type { FaultDefinition, Strategy } from '../catalog/types';
import type { FaultPlan, FaultRule, FaultSelector } from './schema';

/** The operation name used for in-process channel handoffs (their spans carry no gen_ai.operation.name). */
export const HANDOFF_OPERATION = 'handoff';

/**
 * `operation: model` in a selector: every model generation call, whatever its API names it (OpenAI chat and
 * Responses, Anthropic and Ollama are `chat`, Gemini `generate_content`, legacy completions `text_completion`).
 * Embeddings are not generation calls: select them with `operation: embeddings`.
 */
export const MODEL_OPERATION = 'model';
const MODEL_OPERATIONS = new Set(['chat', 'generate_content', 'text_completion']);

export interface CompiledRule {
  readonly index: number;
  readonly name: string;
  readonly fault: FaultDefinition;
  readonly strategy: Strategy;
  /** The specs the engine fires: the fault's own (content faults) or one spec carrying the rule's strategy. */
  readonly specs: readonly FaultSpec[];
  readonly params: Record<string, unknown>;
  matches(attrs: Attributes): boolean;
  /** The selector's fields (as `key=value`) these attributes fail: why a call was not selected. */
  misses(attrs: Attributes): string[];
  readonly positions?: ReadonlySet<number>;
}

export interface CompiledPlan {
  readonly plan: FaultPlan;
  readonly rules: readonly CompiledRule[];
  /** Some rule selects on the URL (which a span's start attributes may lack: then the fault step selects). */
  readonly usesUrl: boolean;
}

export function compilePlan(plan: FaultPlan): CompiledPlan {
  const counts = new Map<string, number>();
  for (const r of plan.rules) counts.set(r.fault, (counts.get(r.fault) ?? 0) + 1);
  const rules = plan.rules.map((r, i) =>
    compileRule(r, i, r.name ?? ((counts.get(r.fault) ?? 0) > 1 ? `${r.fault}_${i + 1}` : r.fault)),
  );
  return { plan, rules, usesUrl: plan.rules.some((r) => r.match.url !== undefined) };
}

function strategyOf(rule: FaultRule, fault: FaultDefinition): Strategy {
  if (fault.fixedStrategy || rule.strategy === undefined) return fault.strategy;
  const base = STRATEGIES[rule.strategy];
  if (rule.strategy === 'intermittent') return { ...base, probability: rule.probability ?? base.probability };
  if (rule.strategy === 'burst') return { ...base, maxCount: rule.count ?? base.maxCount };
  return base;
}

function compileRule(rule: FaultRule, index: number, name: string): CompiledRule {
  const fault = getFault(rule.fault);
  if (!fault) throw new Error(`unknown fault ${rule.fault}`); // unreachable: the schema checked it
  const strategy = strategyOf(rule, fault);
  const specs: readonly FaultSpec[] =
    fault.mode === 'content'
      ? fault.specs
      : [
          {
            action: 'set',
            target: '$',
            maxCount: strategy.maxCount,
            minCount: strategy.minCount,
            probability: strategy.probability,
            skipGuard: true,
          },
        ];
  const params = fault.params.parse(rule.params);
  const pos = rule.match.position;
  const checks = selectorChecks(rule.match);
  return {
    index,
    name,
    fault,
    strategy,
    specs,
    params,
    matches: (attrs) => checks.every((c) => c.test(attrs)),
    misses: (attrs) => checks.filter((c) => !c.test(attrs)).map((c) => c.label),
    positions: pos === undefined ? undefined : new Set(Array.isArray(pos) ? pos : [pos]),
  };
}

const FIELDS: Array<[keyof FaultSelector, string]> = [
  ['operation', ATTR_GEN_AI_OPERATION_NAME],
  ['provider', ATTR_GEN_AI_PROVIDER_NAME],
  ['model', ATTR_GEN_AI_REQUEST_MODEL],
  ['agent', ATTR_GEN_AI_AGENT_NAME],
  ['tool', ATTR_GEN_AI_TOOL_NAME],
  ['boundary', ATTR_FL_MESSAGE_BOUNDARY],
  ['source', ATTR_FL_MESSAGE_SOURCE],
  ['target', ATTR_FL_MESSAGE_TARGET],
];

/**
 * A `*` glob as a matcher that runs in O(glob × value) at worst: the two-pointer wildcard walk that, on a mismatch,
 * backtracks only to the last star. A glob compiled to a regular expression backtracks once per star and blocks the
 * event loop for seconds on a few stars (`*a*a*a*a*a*a*a*a*b` against 40 characters: 11 s).
 */
export function globMatcher(glob: string): (value: string) => boolean {
  return (value) => {
    let g = 0;
    let v = 0;
    let star = -1; // the glob position after the last star seen
    let resume = 0; // the value position that star is matched up to
    while (v < value.length) {
      if (g < glob.length && glob[g] === '*') {
        star = ++g;
        resume = v;
      } else if (g < glob.length && glob[g] === value[v]) {
        g++;
        v++;
      } else if (star !== -1) {
        g = star;
        v = ++resume;
      } else {
        return false;
      }
    }
    while (g < glob.length && glob[g] === '*') g++;
    return g === glob.length;
  };
}

function valueMatcher(spec: string | string[]): (v: string | undefined) => boolean {
  const ms = (Array.isArray(spec) ? spec : [spec]).map((s) =>
    s.includes('*') ? globMatcher(s) : (v: string) => v === s,
  );
  return (v) => v !== undefined && ms.some((m) => m(v));
}

/** The operation a span stands for: gen_ai.operation.name, or `handoff` for a channel message span. */
export function operationOf(attrs: Attributes): string | undefined {
  const op = attrs[ATTR_GEN_AI_OPERATION_NAME];
  if (typeof op === 'string') return op;
  return typeof attrs[ATTR_FL_MESSAGE_ID] === 'string' ? HANDOFF_OPERATION : undefined;
}

interface SelectorCheck {
  /** `operation=chat`, as the plan wrote it. */
  readonly label: string;
  test(attrs: Attributes): boolean;
}

function selectorChecks(sel: FaultSelector): SelectorCheck[] {
  const checks: SelectorCheck[] = [];
  const label = (key: string, spec: string | string[]) => `${key}=${Array.isArray(spec) ? spec.join('|') : spec}`;
  for (const [key, attr] of FIELDS) {
    const spec = sel[key] as string | string[] | undefined;
    if (spec === undefined) continue;
    const m = valueMatcher(spec);
    if (key === 'operation') {
      const model = (Array.isArray(spec) ? spec : [spec]).includes(MODEL_OPERATION);
      checks.push({
        label: label(key, spec),
        test: (a) => {
          const op = operationOf(a);
          return m(op) || (model && op !== undefined && MODEL_OPERATIONS.has(op));
        },
      });
    } else
      checks.push({
        label: label(key, spec),
        test: (a) => m(typeof a[attr] === 'string' ? (a[attr] as string) : undefined),
      });
  }
  if (sel.url !== undefined) {
    const u = sel.url;
    const re = u.length > 1 && u.startsWith('/') && u.endsWith('/') ? new RegExp(u.slice(1, -1)) : undefined;
    const m = re ? (v: string) => re.test(v) : globMatcher(u);
    checks.push({
      label: `url=${u}`,
      test: (a) => typeof a[ATTR_URL_FULL] === 'string' && m(a[ATTR_URL_FULL] as string),
    });
  }
  return checks;
}

export function compileSelector(sel: FaultSelector): (attrs: Attributes) => boolean {
  const checks = selectorChecks(sel);
  return (attrs) => checks.every((c) => c.test(attrs));
}

/** Whether an operation is a model generation call (what `operation: model` selects). */
export function isModelOperation(op: string | undefined): boolean {
  return op !== undefined && MODEL_OPERATIONS.has(op);
}

/**
 * What a selector can read of a call, and nothing else: the attributes of FIELDS with the operation resolved as
 * `operationOf` does. The ledger keeps this much of each kind of call seen, to say why a rule never matched.
 */
export function selectorView(attrs: Attributes): Attributes {
  const out: Attributes = {};
  for (const [, attr] of FIELDS) {
    const v = attr === ATTR_GEN_AI_OPERATION_NAME ? operationOf(attrs) : attrs[attr];
    if (typeof v === 'string') out[attr] = v;
  }
  return out;
}
