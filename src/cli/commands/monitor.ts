/**
 * `faultline monitor FILE... | --jaeger URL | --tempo URL`: the workflow monitors (detectors/monitors) over exported
 * traces — per trace, each finding's MAST mode and ARCF type, the span, agent and step it names, its confidence and
 * evidence — the offline half of what the monitors do online (docs/monitors.md).
 */
import { oneOf } from '../options';
import { SOURCE_DETAILS, SOURCE_OPTIONS, finish, openTraceInput } from '../inputs';
import type { Command } from '../types';

export const command: Command = {
  name: 'monitor',
  summary: 'run the workflow monitors over traces: MAST failure modes and ARCF types per trace, with the span, agent and step',
  usage: 'faultline monitor FILE... | --jaeger URL | --tempo URL [--format table|json|jsonl] [--fail-on-finding]',
  options: [
    { name: 'format', short: 'f', value: 'table|json|jsonl', description: 'output format; jsonl prints one JSON object per trace per line', default: 'table' },
    { name: 'fail-on-finding', description: 'exit with code 1 when any trace has a finding' },
    ...SOURCE_OPTIONS,
  ],
  details: [
    'Each workflow of a trace (an invoke_workflow span, or the whole trace) is judged in start order with its earlier',
    'steps as history, against what it declared (agent tools and targets, required steps, deadline); findings the',
    'monitors recorded online (faultline.detection events) are read back, marked (online), not judged twice.',
    'Evidence is the finding\'s own: counts, names, positions, never message content. docs/monitors.md has the modes.',
    '',
    '--format json prints {"summary", "traces": [...]}; jsonl one {"traceId","workflows","findings":[...]} per trace.',
    '',
    ...SOURCE_DETAILS,
    '',
    'Examples:',
    '  faultline monitor traces.jsonl',
    '  faultline monitor runs/*.json --format jsonl --fail-on-finding',
    '  faultline monitor --tempo http://localhost:3200 --service my-agent --lookback 6h',
  ].join('\n'),
  async run({ options, positionals }) {
    const { MONITOR_FORMATS, monitoredTraceJson, monitorSummary, monitorsTable } = require('../../report/monitors') as typeof import('../../report/monitors');
    const format = oneOf(command, 'format', options.format, MONITOR_FORMATS);
    const input = openTraceInput(command.name, options, positionals);
    const { monitorTrace } = require('../../../detectors/monitors/offline') as typeof import('../../../detectors/monitors/offline');
    const { useColors } = require('../../report/colors') as typeof import('../../report/colors');
    const { createProgress } = require('../../report/progress') as typeof import('../../report/progress');
    const progress = createProgress({ label: 'monitoring' });
    const results: Array<ReturnType<typeof monitoredTraceJson>> = [];
    for await (const trace of input.traces) {
      const r = monitoredTraceJson(trace.traceId, monitorTrace(trace));
      results.push(r);
      if (format === 'jsonl') process.stdout.write(`${JSON.stringify(r)}\n`);
      progress.update(results.length);
    }
    progress.done();
    if (format === 'json') process.stdout.write(`${JSON.stringify({ summary: monitorSummary(results), traces: results }, null, 2)}\n`);
    else if (format === 'table' && (results.length > 0 || input.problems.length === 0)) process.stdout.write(results.length === 0 ? 'no traces found\n' : monitorsTable(results, useColors(process.stdout)));
    const found = results.some((r) => r.findings.length > 0);
    return finish(input.problems) || (options['fail-on-finding'] === true && found ? 1 : 0);
  },
};
