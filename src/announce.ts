/**
 * Telling the user what is armed: one line on stderr at start-up when a fault plan is active (its rules and the
 * seed), and one line when the process ends (which rules fired, which matched without firing, which never matched).
 * A plan that silently did nothing is the failure a chaos experiment must not have.
 */
import type { TriggerReport } from './inject/verify';
import type { FaultPlan } from './plan/schema';
import { compilePlan } from './plan/select';

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

/** `faultline: fault plan plan.yaml: 1 of 2 rules fired (llm_truncate_single ×1); never matched: http_429` */
export function summaryLine(plan: FaultPlan, where: string, report: TriggerReport): string {
  const names = compilePlan(plan).rules.map((r) => r.name);
  const totals = new Map(names.map((n) => [n, { matched: 0, effective: 0, noops: 0, notApplicable: 0 }]));
  for (const task of report.tasks) {
    for (const r of task.rules) {
      const t = totals.get(r.rule);
      if (!t) continue;
      t.matched += r.matched ?? 0;
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
      const why = [t.noops ? `${t.noops} no-op` : '', t.notApplicable ? `${t.notApplicable} not applicable` : ''].filter(Boolean).join(', ');
      idle.push(`${name} (matched ${t.matched}${why ? `, ${why}` : ''})`);
    } else never.push(name);
  }
  const parts = [`${fired.length} of ${names.length} rule${names.length === 1 ? '' : 's'} fired${fired.length ? ` (${fired.join(', ')})` : ''}`];
  if (idle.length) parts.push(`matched but never fired: ${idle.join(', ')}`);
  if (never.length) parts.push(`never matched: ${never.join(', ')}`);
  return `faultline: ${where}: ${parts.join('; ')}`;
}
