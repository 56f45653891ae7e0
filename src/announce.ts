/**
 * Telling the user what is armed: one line on stderr at start-up when a fault plan is active (its rules and the
 * seed), and one line when the process ends (which rules fired, which matched without firing, which never matched).
 * A plan that silently did nothing is the failure a chaos experiment must not have.
 */
import type { Attributes } from '@opentelemetry/api';
import {
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_TOOL_NAME,
} from '../instrumentation/semconv';
import type { SeenCalls, TriggerReport } from './inject/verify';
import type { FaultPlan } from './plan/schema';
import { compilePlan, isModelOperation, type CompiledRule } from './plan/select';
import { terminalText } from './report/terminal';

function matchText(match: Record<string, unknown>): string {
  const parts = Object.entries(match)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('|') : String(v)}`);
  return parts.length > 0 ? parts.join(', ') : 'every call';
}

/** `faultline: fault plan plan.yaml armed, seed 42, 2 rules: llm_truncate_single [operation=chat]; http_429 […]` */
export function armedLine(plan: FaultPlan, where: string): string {
  const names = compilePlan(plan).rules.map((r) => r.name);
  const rules = plan.rules.map((r, i) => {
    const name = names[i]!;
    const label = name === r.fault ? name : `${name} (${r.fault})`;
    return `${label} [${matchText(r.match)}]`;
  });
  return `faultline: ${where} armed, seed ${plan.seed}, ${rules.length} rule${rules.length === 1 ? '' : 's'}: ${rules.join('; ')}`;
}

/** `chat gpt-4o-mini agent planner`: a kind of call as selectors see it (app-given names, control characters escaped). */
function callKind(a: Attributes): string {
  const what = [a[ATTR_GEN_AI_OPERATION_NAME] ?? 'call', a[ATTR_GEN_AI_REQUEST_MODEL] ?? a[ATTR_GEN_AI_TOOL_NAME]];
  if (a[ATTR_GEN_AI_AGENT_NAME] !== undefined) what.push(`agent ${String(a[ATTR_GEN_AI_AGENT_NAME])}`);
  return terminalText(what.filter((v) => v !== undefined).join(' '));
}

const KINDS_SHOWN = 3;

/**
 * Why a rule never matched, from the kinds of call the plan saw: `http_429 (none of the 2 calls seen had
 * agent=planner: chat gpt-4o-mini ×2)`. The selector fields no seen call had are named; when each field matched some
 * call but no call had them all, the fields together are.
 */
function neverText(rule: CompiledRule, seen: readonly SeenCalls[], other: number): string {
  const total = seen.reduce((n, s) => n + s.count, other);
  if (total === 0) return `${rule.name} (no model, tool or agent call was seen)`;
  const excluded = new Map<string, number>();
  for (const s of seen)
    for (const label of rule.misses(s.attrs)) excluded.set(label, (excluded.get(label) ?? 0) + s.count);
  const seenCount = total - other;
  const none = [...excluded].filter(([, n]) => n === seenCount).map(([label]) => label);
  const calls = `${total} call${total === 1 ? '' : 's'} seen`;
  const why =
    none.length > 0
      ? `none of the ${calls} had ${none.join(' or ')}`
      : `no call of the ${calls} had ${[...excluded.keys()].join(' and ')} together`;
  const kinds = [...seen].sort((a, b) => b.count - a.count);
  const shown = kinds.slice(0, KINDS_SHOWN).map((s) => `${callKind(s.attrs)} ×${s.count}`);
  const rest = kinds.length - KINDS_SHOWN + (other > 0 ? 1 : 0);
  if (rest > 0) shown.push(`${rest} other kind${rest === 1 ? '' : 's'}`);
  // The mistake this catches most: `operation: chat` on Gemini (generate_content) or legacy completions.
  const hint =
    none.some((l) => l.startsWith('operation=')) &&
    seen.some((s) => isModelOperation(s.attrs[ATTR_GEN_AI_OPERATION_NAME] as string | undefined))
      ? '; `operation: model` selects every model call'
      : '';
  return `${rule.name} (${why}: ${shown.join(', ')}${hint})`;
}

/** `faultline: fault plan plan.yaml: 1 of 2 rules fired (llm_truncate_single ×1); never matched: http_429 (…)` */
export function summaryLine(plan: FaultPlan, where: string, report: TriggerReport): string {
  const rules = compilePlan(plan).rules;
  const names = rules.map((r) => r.name);
  const totals = new Map(
    names.map((n) => [n, { matched: 0, mostInTask: 0, effective: 0, noops: 0, notApplicable: 0 }]),
  );
  for (const task of report.tasks) {
    for (const r of task.rules) {
      const t = totals.get(r.rule);
      if (!t) continue;
      t.matched += r.matched ?? 0;
      t.mostInTask = Math.max(t.mostInTask, r.matched ?? 0);
      t.effective += r.fires - r.noops;
      t.noops += r.noops;
      t.notApplicable += r.notApplicable;
    }
  }
  const fired: string[] = [];
  const idle: string[] = [];
  const never: string[] = [];
  for (const [name, t] of totals) {
    if (t.effective > 0) fired.push(`${name} ×${t.effective}`);
    else if (t.matched > 0) {
      const first = rules[names.indexOf(name)]!.positions;
      const least = first ? Math.min(...first) : 0;
      const unreached = least > t.mostInTask ? `position ${least} not reached: at most ${t.mostInTask} in a task` : '';
      const why = [
        t.noops ? `${t.noops} no-op` : '',
        t.notApplicable ? `${t.notApplicable} not applicable` : '',
        unreached,
      ]
        .filter(Boolean)
        .join(', ');
      idle.push(`${name} (matched ${t.matched}${why ? `, ${why}` : ''})`);
    } else never.push(report.seen ? neverText(rules[names.indexOf(name)]!, report.seen, report.seenOther ?? 0) : name);
  }
  const parts = [
    `${fired.length} of ${names.length} rule${names.length === 1 ? '' : 's'} fired${fired.length ? ` (${fired.join(', ')})` : ''}`,
  ];
  if (idle.length) parts.push(`matched but never fired: ${idle.join(', ')}`);
  if (never.length) parts.push(`never matched: ${never.join(', ')}`);
  return `faultline: ${where}: ${parts.join('; ')}`;
}
