/**
 * `faultline monitor FILE... | --jaeger URL | --tempo URL`: the workflow monitors (detectors/monitors) over exported
 * traces — per trace, each finding's MAST mode and ARCF type, the span, agent and step it names, its confidence and
 * evidence — the offline half of what the monitors do online (docs/monitors.md).
 */
import { oneOf } from '../options';
import { SOURCE_DETAILS, SOURCE_OPTIONS, finish, openTraceInput } from '../inputs';
import type { JudgeResult } from '../../diagnosers/mast-judge';
import type { Command } from '../types';

type JudgeOutcome = JudgeResult | { error: string };

/** The judge's findings under the table, one line each, marked (judge); a trace it could not read says why. */
function judgeLines(results: ReadonlyArray<{ traceId: string; judge?: JudgeOutcome }>): string {
  const lines: string[] = [];
  for (const r of results) {
    const j = r.judge;
    if (j === undefined) continue;
    if ('error' in j) lines.push(`  ${r.traceId}  not judged: ${j.error}`);
    else if (!j.observable) lines.push(`  ${r.traceId}  not observable: ${j.reason}`);
    else
      for (const f of j.findings)
        lines.push(
          `  ${r.traceId}  ${f.mode} ${f.name}${f.step !== null ? ` at line ${f.step}` : ''}${f.agent ? ` (${f.agent})` : ''}  ${Math.round(f.confidence * 100)} %  ${f.evidence}  (judge)`,
        );
  }
  return lines.length === 0 ? '' : `\nMAST judge (an LLM's reading of the dialogue):\n${lines.join('\n')}\n`;
}

export const command: Command = {
  name: 'monitor',
  summary:
    'run the workflow monitors over traces: MAST failure modes and ARCF types per trace, with the span, agent and step',
  usage:
    'faultline monitor FILE... | --jaeger URL | --tempo URL [--format table|json|jsonl] [--fail-on-finding] [--judge]',
  options: [
    {
      name: 'format',
      short: 'f',
      value: 'table|json|jsonl',
      description: 'output format; jsonl prints one JSON object per trace per line',
      default: 'table',
    },
    { name: 'fail-on-finding', description: 'exit with code 1 when any trace has a finding' },
    {
      name: 'judge',
      description:
        'also ask an LLM (FAULTLINE_LLM_BASE_URL, as the llm diagnoser) for the MAST modes only the dialogue shows; needs captured content',
    },
    ...SOURCE_OPTIONS,
  ],
  details: [
    'Each workflow of a trace (an invoke_workflow span, or the whole trace) is judged in start order with its earlier',
    'steps as history, against what it declared (agent tools and targets, required steps, deadline); findings the',
    'monitors recorded online (faultline.detection events) are read back, marked (online), not judged twice.',
    "Evidence is the finding's own: counts, names, positions, never message content. docs/monitors.md has the modes.",
    '',
    "--judge (off by default) adds the MAST judge: a model reads each trace's dialogue (LLM inputs and outputs, tool",
    'runs, messages: content must have been captured) for the modes no span fact shows — task or role disobeyed,',
    'termination unawareness, no clarification asked, derailment, withholding, ignored input, reasoning-action',
    'mismatch, missing or incorrect verification — its answer locked to a schema. A trace without content is',
    'reported not observable and the model is not called. Its findings are listed apart, marked (judge).',
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
    const { MONITOR_FORMATS, monitoredTraceJson, monitorSummary, monitorsTable } =
      require('../../report/monitors') as typeof import('../../report/monitors');
    const format = oneOf(command, 'format', options.format, MONITOR_FORMATS);
    const input = openTraceInput(command.name, options, positionals);
    const { monitorTrace } =
      require('../../../detectors/monitors/offline') as typeof import('../../../detectors/monitors/offline');
    const { useColors } = require('../../report/colors') as typeof import('../../report/colors');
    const { createProgress } = require('../../report/progress') as typeof import('../../report/progress');
    const progress = createProgress({ label: 'monitoring' });
    const judge =
      options.judge === true
        ? (require('../../diagnosers/mast-judge') as typeof import('../../diagnosers/mast-judge')).createMastJudge()
        : undefined;
    const results: Array<ReturnType<typeof monitoredTraceJson> & { judge?: JudgeOutcome }> = [];
    let judgeFailures = 0;
    for await (const trace of input.traces) {
      const r: (typeof results)[number] = monitoredTraceJson(trace.traceId, monitorTrace(trace));
      if (judge) {
        try {
          r.judge = await judge.judge(trace);
        } catch (err) {
          judgeFailures++;
          r.judge = { error: (err as Error).message };
          process.stderr.write(`✖ trace ${trace.traceId}: ${(err as Error).message}\n`);
        }
      }
      results.push(r);
      if (format === 'jsonl') process.stdout.write(`${JSON.stringify(r)}\n`);
      progress.update(results.length);
    }
    progress.done();
    if (format === 'json')
      process.stdout.write(`${JSON.stringify({ summary: monitorSummary(results), traces: results }, null, 2)}\n`);
    else if (format === 'table' && (results.length > 0 || input.problems.length === 0)) {
      process.stdout.write(
        results.length === 0 ? 'no traces found\n' : monitorsTable(results, useColors(process.stdout)),
      );
      if (judge) process.stdout.write(judgeLines(results));
    }
    const found = results.some(
      (r) => r.findings.length > 0 || (r.judge !== undefined && 'findings' in r.judge && r.judge.findings.length > 0),
    );
    return (
      finish(input.problems) || (judgeFailures > 0 ? 2 : 0) || (options['fail-on-finding'] === true && found ? 1 : 0)
    );
  },
};
