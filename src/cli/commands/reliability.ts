/**
 * `faultline reliability FILE... | --jaeger URL | --tempo URL`: ARCF's reliability model from traces — each agent's,
 * edge's and route's success probability with 95 % intervals, the workflow reliability without recovery, with k
 * attempts and with fallback (ARCF equations 1–3), beside the completion actually observed, per workflow.
 */
import { FaultlineInputError } from '../../errors';
import { oneOf } from '../options';
import { SOURCE_DETAILS, SOURCE_OPTIONS, finish, openTraceInput } from '../inputs';
import type { Command } from '../types';

const FORMATS = ['table', 'json'] as const;

function positive(name: string, v: unknown, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < 1)
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `--${name} must be a positive integer; got ${JSON.stringify(v)} (see faultline reliability --help)`,
    );
  return n;
}

export const command: Command = {
  name: 'reliability',
  summary:
    "ARCF's reliability model from traces: per-agent and per-route success with intervals, predicted against observed completion",
  usage:
    'faultline reliability FILE... | --jaeger URL | --tempo URL [--attempts K] [--group-by ATTR] [--format table|json]',
  options: [
    {
      name: 'attempts',
      short: 'k',
      value: 'K',
      description: 'k of ARCF equation 2: attempts per component with retries',
      default: 3,
    },
    {
      name: 'group-by',
      value: 'ATTR',
      description: 'also group runs by this workflow-span attribute (e.g. faultline.campaign.arm)',
    },
    { name: 'format', short: 'f', value: FORMATS.join('|'), description: 'output format', default: 'table' },
    { name: 'reps', value: 'N', description: 'bootstrap resamples for the workflow intervals', default: 1000 },
    {
      name: 'seed',
      value: 'N',
      description: 'bootstrap seed (the same traces and seed give the same report)',
      default: 1,
    },
    ...SOURCE_OPTIONS,
  ],
  details: [
    'A workflow is its agents and the inter-agent edges between them, in series. P(c) is the share of runs in which',
    'component c did its part without a failure: no failed attempt of its LLM calls or messages (HTTP or transport',
    'errors, findings of error severity, a guard retry or fallback after a failed attempt). Then, per workflow:',
    '  (1) R_base = Π P(c)   (2) P_retry(c) = 1 − (1 − P(c))^k   (3) P_comp(c) = P_retry(c) + (1 − P_retry(c))·P(c_fallback)',
    'beside the observed completion (faultline.task.success when the traces carry it, else the workflow span status).',
    'P(c_fallback) is measured where the traces show fallback attempts, else assumed equal to P(c) (and marked so).',
    '',
    ...SOURCE_DETAILS,
    '',
    'Examples:',
    '  faultline reliability runs/arcf/traces.jsonl --group-by faultline.campaign.arm',
    '  faultline reliability --jaeger http://localhost:16686 --service my-agent --lookback 6h --attempts 2',
  ].join('\n'),
  async run({ options, positionals }) {
    const format = oneOf(command, 'format', options.format, FORMATS);
    const attempts = positive('attempts', options.attempts, 3);
    const reps = positive('reps', options.reps, 1000);
    const seed = positive('seed', options.seed, 1);
    const groupBy = typeof options['group-by'] === 'string' ? options['group-by'] : undefined;
    if (groupBy?.startsWith('faultline.fault.'))
      throw new FaultlineInputError(
        'FAULTLINE_USAGE',
        `--group-by ${groupBy}: faultline.fault.* is ground truth, which the reliability model does not read`,
      );
    const input = openTraceInput(command.name, options, positionals);
    const { reliabilityReport } = require('../../reliability/model') as typeof import('../../reliability/model');
    const { reliabilityText } = require('../../reliability/report') as typeof import('../../reliability/report');
    const report = await reliabilityReport(input.traces, {
      attempts,
      reps,
      seed,
      ...(groupBy !== undefined ? { groupBy } : {}),
    });
    if (format === 'json') process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else if (report.traces > 0 || input.problems.length === 0) process.stdout.write(reliabilityText(report));
    return finish(input.problems) || (report.traces === 0 ? 1 : 0);
  },
};
