/** `faultline verify FILE...`: trigger verification from exported traces — which planned faults fired, per task. */
import type { Command } from '../types';
import { oneOf } from '../options';
import { FaultlineInputError } from '../../errors';
import type { SpanRecord } from '../../traces/model';

const FORMATS = ['table', 'json'] as const;

export const command: Command = {
  name: 'verify',
  summary: 'Check which planned faults actually fired in trace files (trigger verification; no-op fires do not count).',
  usage: 'faultline verify FILE... [--format table|json] [--strict]',
  options: [
    { name: 'format', short: 'f', value: FORMATS.join('|'), description: 'plain report or JSON', default: 'table' },
    { name: 'strict', description: 'exit with code 1 when a task with fault fires has none that changed anything' },
  ],
  details: ['Reads faultline.fault.injected events; a fire that changed nothing (mojibake on ASCII, truncating an empty string) is a no-op.', '', 'Example:', '  faultline verify campaign/traces.jsonl'].join('\n'),
  async run({ options, positionals }) {
    if (positionals.length === 0) throw new FaultlineInputError('FAULTLINE_USAGE', 'no trace files given (usage: faultline verify FILE... ; see faultline verify --help)');
    const format = oneOf(command, 'format', options.format, FORMATS);
    const { readTraces } = require('../../traces/read') as typeof import('../../traces/read');
    const { triggerReportFromSpans, formatTriggerReport } = require('../../inject/verify') as typeof import('../../inject/verify');
    const spans: SpanRecord[] = [];
    for await (const t of readTraces(positionals)) {
      // Only spans that carry fault events or a task id matter to the report: keep memory flat on big files.
      for (const s of t.spans) if (s.events.some((e) => e.name.startsWith('faultline.fault.')) || s.attributes['faultline.task.id'] !== undefined || s.attributes['faultline.message.task_id'] !== undefined) spans.push(s);
    }
    const report = triggerReportFromSpans(spans);
    process.stdout.write(format === 'json' ? JSON.stringify(report, null, 2) + '\n' : formatTriggerReport(report) + '\n');
    return options.strict === true && report.tasks.some((t) => !t.triggered) ? 1 : 0;
  },
};
