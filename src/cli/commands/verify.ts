/** `faultline verify FILE...`: trigger verification from exported traces — which planned faults fired, per task. */
import type { Command } from '../types';
import { oneOf } from '../options';
import type { SpanRecord } from '../../traces/model';
import { finish, openTraceInput } from '../inputs';
import { planFileFromEnv } from '../../env';

const FORMATS = ['table', 'json'] as const;

export const command: Command = {
  name: 'verify',
  summary: 'Check which planned faults actually fired in trace files (trigger verification; no-op fires do not count).',
  usage: 'faultline verify FILE... [--plan plan.yaml] [--format table|json] [--strict]',
  options: [
    { name: 'format', short: 'f', value: FORMATS.join('|'), description: 'plain report or JSON', default: 'table' },
    {
      name: 'plan',
      value: 'FILE',
      description: 'the fault plan the traces ran under, to name its rules that never fired (default $FAULTLINE_PLAN)',
    },
    {
      name: 'strict',
      description:
        "exit 1 when nothing fired, when a rule of the plan never fired, or when a task's fires all changed nothing",
    },
  ],
  details: [
    'Reads faultline.fault.injected events; a fire that changed nothing (mojibake on ASCII, truncating an empty string) is a no-op.',
    'A rule that never matched a call leaves nothing in the traces: give the plan (--plan) to have such rules named.',
    '',
    'Examples:',
    '  faultline verify campaign/traces.jsonl',
    '  FAULTLINE_PLAN=plan.yaml node --import faultline/register app.js && faultline verify --strict faultline-traces.jsonl',
  ].join('\n'),
  async run({ options, positionals }) {
    const format = oneOf(command, 'format', options.format, FORMATS);
    const planFile = typeof options.plan === 'string' ? options.plan : planFileFromEnv();
    const { loadPlan } = require('../../plan/load') as typeof import('../../plan/load');
    const plan = planFile !== undefined ? loadPlan(planFile) : undefined;
    const input = openTraceInput(command.name, options, positionals);
    const { triggerReportFromSpans, formatTriggerReport } =
      require('../../inject/verify') as typeof import('../../inject/verify');
    const spans: SpanRecord[] = [];
    for await (const t of input.traces) {
      // Only spans that carry fault events or a task id matter to the report: keep memory flat on big files.
      for (const s of t.spans)
        if (
          s.events.some((e) => e.name.startsWith('faultline.fault.')) ||
          s.attributes['faultline.task.id'] !== undefined ||
          s.attributes['faultline.message.task_id'] !== undefined
        )
          spans.push(s);
    }
    const report = triggerReportFromSpans(spans);
    // The plan's rules by the names the injector records them under.
    const { compilePlan } = require('../../plan/select') as typeof import('../../plan/select');
    const ruleNames = plan ? compilePlan(plan).rules.map((r) => r.name) : undefined;
    const fired = new Set(report.tasks.flatMap((t) => t.rules.filter((r) => r.fires > 0).map((r) => r.rule)));
    const neverFired = (ruleNames ?? []).filter((n) => !fired.has(n));
    const noopOnly = report.tasks.filter((t) => !t.triggered);
    if (format === 'json')
      process.stdout.write(JSON.stringify(plan ? { ...report, neverFired } : report, null, 2) + '\n');
    else {
      const lines = [formatTriggerReport(report)];
      if (report.totalTasks === 0)
        lines.push(
          `no fault fired in ${input.label}${plan ? '' : ' (is it the trace file of a run with FAULTLINE_PLAN set?)'}`,
        );
      for (const n of neverFired)
        lines.push(
          `✖ rule ${n} of ${planFile} never fired (its selector matched no call, or every matched call was not applicable)`,
        );
      process.stdout.write(lines.join('\n') + '\n');
    }
    const failed = report.totalTasks === 0 || neverFired.length > 0 || noopOnly.length > 0;
    const bad = finish(input.problems);
    if (bad) return bad;
    return options.strict === true && failed ? 1 : 0;
  },
};
