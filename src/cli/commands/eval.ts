/** `faultline eval FILE...` (or `--jaeger` / `--tempo`): score diagnosers against the recorded ground truth (AgentChaos RQ3). */
import { writeFileSync } from 'node:fs';
import type { Command } from '../types';
import { oneOf } from '../options';
import { FaultlineInputError } from '../../errors';
import { DIAGNOSER_NAMES, type DiagnoserName } from '../../diagnosers/types';
import { checkWritable, writeFailed } from '../../report/output';
import { SOURCE_DETAILS, SOURCE_OPTIONS, finish, openTraceInput } from '../inputs';

const EVAL_FORMATS = ['table', 'json'] as const;

export const command: Command = {
  name: 'eval',
  summary:
    "Score diagnosers against the injected ground truth of labelled traces: type and step accuracy, per-type table, confusion matrix, Cohen's kappa, false positives on clean traces.",
  usage:
    'faultline eval FILE... | --jaeger URL | --tempo URL [--diagnoser rule|llm|hybrid]... [--html report.html] [--format table|json]',
  options: [
    {
      name: 'diagnoser',
      short: 'd',
      value: DIAGNOSER_NAMES.join('|'),
      description: 'diagnoser(s) to score; repeat or comma-separate for several (kappa needs two)',
      multiple: true,
    },
    {
      name: 'format',
      short: 'f',
      value: EVAL_FORMATS.join('|'),
      description: 'terminal table, or the whole report as JSON',
      default: 'table',
    },
    { name: 'html', value: 'file', description: 'also write a self-contained HTML report with charts' },
    {
      name: 'concurrency',
      short: 'c',
      value: 'N',
      description: 'traces evaluated at once (default: 1, or 4 with llm / hybrid)',
    },
    {
      name: 'min-type-accuracy',
      value: 'percent',
      description: "exit 1 when a diagnoser's type accuracy is below this",
    },
    {
      name: 'min-step-accuracy',
      value: 'percent',
      description: "exit 1 when a diagnoser's step accuracy is below this",
    },
    ...SOURCE_OPTIONS,
  ],
  details: [
    'Labelled traces carry faultline.fault.* ground truth (written by the fault injector / campaign runner). The truth of',
    'a trace is its earliest span with a faultline.fault.injected event that changed something; traces whose planned',
    'fault never fired are excluded and counted as untriggered. Diagnosers see the traces with the ground truth removed.',
    'Default diagnoser: rule. A bad file or line is named on stderr after the report of what could be read (exit 2).',
    '',
    ...SOURCE_DETAILS,
    '',
    'Examples:',
    '  faultline eval campaign/traces.jsonl',
    '  faultline eval campaign/*.json -d rule -d hybrid --html eval.html',
  ].join('\n'),
  async run({ options, positionals }) {
    const raw = (
      Array.isArray(options.diagnoser)
        ? options.diagnoser
        : typeof options.diagnoser === 'string'
          ? [options.diagnoser]
          : ['rule']
    )
      .flatMap((d) => d.split(','))
      .map((d) => d.trim())
      .filter((d) => d !== '');
    const names = [...new Set(raw.map((d) => oneOf<DiagnoserName>(command, 'diagnoser', d, DIAGNOSER_NAMES)))];
    const format = oneOf(command, 'format', options.format, EVAL_FORMATS);
    const threshold = (name: string): number | undefined => {
      const v = options[name];
      if (v === undefined) return undefined;
      const n = Number(v);
      if (typeof v !== 'string' || !Number.isFinite(n) || n < 0 || n > 100)
        throw new FaultlineInputError(
          'FAULTLINE_USAGE',
          `--${name} must be a percentage 0..100; got ${JSON.stringify(v)}`,
        );
      return n;
    };
    const minType = threshold('min-type-accuracy');
    const minStep = threshold('min-step-accuracy');
    const { concurrencyOption } = require('./diagnose') as typeof import('./diagnose');
    const concurrency = concurrencyOption(options.concurrency, names.some((n) => n !== 'rule') ? 4 : 1);
    const { createDiagnoser } = require('../../diagnosers/index') as typeof import('../../diagnosers/index');
    const { evaluate } = require('../../evaluation/evaluate') as typeof import('../../evaluation/evaluate');
    const { evalText, evalJson } = require('../../report/eval-text') as typeof import('../../report/eval-text');
    const { useColors } = require('../../report/colors') as typeof import('../../report/colors');
    const { createProgress } = require('../../report/progress') as typeof import('../../report/progress');
    // Checked first: an unwritable --html must not cost the whole evaluation.
    const html = typeof options.html === 'string' ? checkWritable(options.html, '--html') : undefined;
    const input = openTraceInput(command.name, options, positionals);
    const diagnosers = names.map((n) => createDiagnoser(n));
    const progress = createProgress({ label: `evaluating ${names.join(', ')}` });
    const report = await evaluate(input.traces, diagnosers, { concurrency, onTrace: (done) => progress.update(done) });
    progress.done();
    if (report.traces === 0) {
      if (input.problems.length > 0) return finish(input.problems);
      throw new FaultlineInputError('FAULTLINE_TRACE_MALFORMED', `no traces found in ${input.label}`);
    }
    process.stdout.write(format === 'json' ? evalJson(report) : evalText(report, useColors(process.stdout)));
    if (html !== undefined && typeof options.html === 'string') {
      const { evalHtml } = require('../../report/html') as typeof import('../../report/html');
      try {
        writeFileSync(html, evalHtml(report));
      } catch (err) {
        throw writeFailed('--html', options.html, err);
      }
      if (format !== 'json') process.stdout.write(`\nHTML report written to ${options.html}\n`);
    }
    let code = 0;
    if (report.failures.length > 0) {
      const { failureSummary } = require('../../report/diagnoses') as typeof import('../../report/diagnoses');
      for (const line of failureSummary(report.failures)) process.stderr.write(`✖ ${line} (scored as wrong)\n`);
      code = 1;
    }
    const below = report.diagnosers.filter(
      (d) =>
        (minType !== undefined && d.accuracy.typeAccuracy < minType) ||
        (minStep !== undefined && d.accuracy.stepAccuracy < minStep),
    );
    if (below.length > 0) {
      process.stderr.write(`✖ below the accuracy threshold: ${below.map((d) => d.diagnoser).join(', ')}\n`);
      code = 1;
    }
    return finish(input.problems) || code;
  },
};
