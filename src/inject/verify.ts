/**
 * Trigger verification: per task, which planned rules actually fired. A fire that changed nothing (mojibake on ASCII
 * text, truncating an empty string, a replay with an empty cache) is a no-op and does not count as triggered — unlike
 * AgentChaos, which counted every logged fire. The same report is computed live (the Ledger) and offline from
 * exported spans (`triggerReportFromSpans`), so the CLI can print it from a trace file.
 */
import {
  ATTR_FL_FAULT_NAME,
  ATTR_FL_FAULT_NOOP,
  ATTR_FL_FAULT_RULE,
  ATTR_FL_MESSAGE_TASK_ID,
  ATTR_FL_TASK_ID,
  EVENT_FL_FAULT_INJECTED,
} from '../../instrumentation/semconv';
import type { Attributes } from '@opentelemetry/api';
import { selectorView } from '../plan/select';
import type { SpanRecord } from '../traces/model';
import { ATTR_FL_FAULT_TASK_ID } from './record';

export interface RuleTrigger {
  rule: string;
  fault: string;
  /** Calls the rule's selector matched (undefined offline: only fires are recorded on spans). */
  matched?: number;
  /** Times the fault fired (no-ops included). */
  fires: number;
  /** Fires that changed nothing. */
  noops: number;
  /** Matched calls where the fault could not apply (e.g. a stream fault on a JSON response). */
  notApplicable: number;
  /** fires − noops > 0. */
  triggered: boolean;
}

export interface TaskTrigger {
  taskId: string;
  rules: RuleTrigger[];
  /** At least one rule triggered. */
  triggered: boolean;
}

export interface TriggerReport {
  tasks: TaskTrigger[];
  totalTasks: number;
  triggeredTasks: number;
  /** The kinds of call the plan was asked about (live only: what selectors read of them, and how many). */
  seen?: SeenCalls[];
  /** Calls past the MAX_SEEN kinds remembered. */
  seenOther?: number;
}

/** Calls that looked the same to every selector: the attributes selectors read, and how many such calls there were. */
export interface SeenCalls {
  attrs: Attributes;
  count: number;
}

interface RuleRef {
  name: string;
  fault: { name: string };
}

const MAX_TASKS = 10_000;
/** Kinds of call remembered for the exit summary; a run with more (a model name per call?) counts the rest apart. */
const MAX_SEEN = 64;

/** The live ledger, one entry per task and rule. */
export class Ledger {
  private readonly tasks = new Map<string, Map<string, RuleTrigger>>();
  private readonly seen = new Map<string, SeenCalls>();
  private unseen = 0;

  /** A call the plan was asked about (its first attempt), by what selectors can read of it. */
  saw(attrs: Attributes): void {
    const view = selectorView(attrs);
    const key = JSON.stringify(view);
    const s = this.seen.get(key);
    if (s) s.count++;
    else if (this.seen.size < MAX_SEEN) this.seen.set(key, { attrs: view, count: 1 });
    else this.unseen++;
  }

  private entry(taskId: string, rule: RuleRef): RuleTrigger {
    let rules = this.tasks.get(taskId);
    if (!rules) {
      rules = new Map();
      this.tasks.set(taskId, rules);
      if (this.tasks.size > MAX_TASKS) this.tasks.delete(this.tasks.keys().next().value as string);
    }
    let e = rules.get(rule.name);
    if (!e) {
      e = {
        rule: rule.name,
        fault: rule.fault.name,
        matched: 0,
        fires: 0,
        noops: 0,
        notApplicable: 0,
        triggered: false,
      };
      rules.set(rule.name, e);
    }
    return e;
  }

  matched(taskId: string, rule: RuleRef): void {
    this.entry(taskId, rule).matched! += 1;
  }

  fired(taskId: string, rule: RuleRef, noop: boolean): void {
    const e = this.entry(taskId, rule);
    e.fires++;
    if (noop) e.noops++;
    e.triggered = e.fires - e.noops > 0;
  }

  notApplicable(taskId: string, rule: RuleRef): void {
    this.entry(taskId, rule).notApplicable++;
  }

  report(taskId?: string): TriggerReport {
    const entries = [...this.tasks.entries()].filter(([id]) => taskId === undefined || id === taskId);
    const report = summarise(
      entries.map(([id, rules]) => ({ taskId: id, rules: [...rules.values()].map((r) => ({ ...r })) })),
    );
    if (taskId !== undefined) return report;
    const seen = [...this.seen.values()].map((s) => ({ attrs: s.attrs, count: s.count }));
    return { ...report, seen, seenOther: this.unseen };
  }

  clear(): void {
    this.tasks.clear();
    this.seen.clear();
    this.unseen = 0;
  }
}

function summarise(tasks: Array<{ taskId: string; rules: RuleTrigger[] }>): TriggerReport {
  const out = tasks.map((t) => ({ ...t, triggered: t.rules.some((r) => r.triggered) }));
  return { tasks: out, totalTasks: out.length, triggeredTasks: out.filter((t) => t.triggered).length };
}

/**
 * The trigger report from exported spans: tasks are the fire's faultline.fault.task_id, else the faultline.task.id (or
 * faultline.message.task_id) found in its trace, else the trace id; fires are the faultline.fault.injected events.
 */
export function triggerReportFromSpans(spans: readonly SpanRecord[]): TriggerReport {
  const taskOfTrace = new Map<string, string>();
  for (const s of spans) {
    const t = s.attributes[ATTR_FL_TASK_ID] ?? s.attributes[ATTR_FL_MESSAGE_TASK_ID];
    if (typeof t === 'string' && !taskOfTrace.has(s.traceId)) taskOfTrace.set(s.traceId, t);
  }
  const tasks = new Map<string, Map<string, RuleTrigger>>();
  const order = [...spans].sort((a, b) => a.start - b.start);
  for (const s of order) {
    for (const ev of s.events) {
      if (ev.name !== EVENT_FL_FAULT_INJECTED) continue;
      const own = ev.attributes[ATTR_FL_FAULT_TASK_ID];
      const taskId = typeof own === 'string' ? own : (taskOfTrace.get(s.traceId) ?? s.traceId);
      const name = String(ev.attributes[ATTR_FL_FAULT_NAME] ?? s.attributes[ATTR_FL_FAULT_NAME] ?? 'unknown');
      const rule = String(ev.attributes[ATTR_FL_FAULT_RULE] ?? s.attributes[ATTR_FL_FAULT_RULE] ?? name);
      const noop = ev.attributes[ATTR_FL_FAULT_NOOP] === true;
      let rules = tasks.get(taskId);
      if (!rules) tasks.set(taskId, (rules = new Map()));
      let e = rules.get(rule);
      if (!e) rules.set(rule, (e = { rule, fault: name, fires: 0, noops: 0, notApplicable: 0, triggered: false }));
      e.fires++;
      if (noop) e.noops++;
      e.triggered = e.fires - e.noops > 0;
    }
  }
  return summarise([...tasks.entries()].map(([taskId, rules]) => ({ taskId, rules: [...rules.values()] })));
}

/** A plain-text rendering for the CLI. */
export function formatTriggerReport(report: TriggerReport): string {
  const lines = [`${report.triggeredTasks}/${report.totalTasks} tasks triggered`];
  for (const t of report.tasks) {
    lines.push(`${t.triggered ? '✔' : '✖'} task ${t.taskId}`);
    for (const r of t.rules) {
      const parts = [
        r.matched !== undefined ? `matched ${r.matched}` : undefined,
        `fired ${r.fires}`,
        r.noops ? `no-op ${r.noops}` : undefined,
        r.notApplicable ? `not applicable ${r.notApplicable}` : undefined,
      ].filter(Boolean);
      lines.push(`    ${r.triggered ? 'triggered' : 'not triggered'}  ${r.rule} (${r.fault}): ${parts.join(', ')}`);
    }
  }
  return lines.join('\n');
}
