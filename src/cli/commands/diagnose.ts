/** `faultline diagnose FILE...`: per trace, which fault happened, at which step, with the evidence. */
import type { Command } from '../types';
import { oneOf } from '../options';
import { FaultlineInputError } from '../../errors';
import { DIAGNOSER_NAMES } from '../../diagnosers/types';
import { DIAGNOSIS_FORMATS } from '../../report/diagnoses';
import type { Diagnosis } from '../../diagnosers/types';

/** --concurrency: a positive integer, or the default. */
export function concurrencyOption(v: unknown, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < 1 || n > 256) throw new FaultlineInputError('FAULTLINE_USAGE', `--concurrency must be an integer from 1 to 256; got ${JSON.stringify(v)}`);
  return n;
}

export const command: Command = {
  name: 'diagnose',
  summary: 'Name the fault, the faulty step and the evidence of every trace in the given trace files.',
  usage: 'faultline diagnose FILE... [--diagnoser rule|llm|hybrid] [--format table|json|jsonl]',
  options: [
    { name: 'diagnoser', short: 'd', value: DIAGNOSER_NAMES.join('|'), description: 'which diagnoser to use', default: 'rule' },
    { name: 'format', short: 'f', value: DIAGNOSIS_FORMATS.join('|'), description: 'output format; jsonl prints one JSON object per trace per line', default: 'table' },
    { name: 'concurrency', short: 'c', value: 'N', description: 'traces diagnosed at once (default: 1 for rule, 4 for llm and hybrid)' },
    { name: 'workers', value: 'N', description: 'worker threads reading and diagnosing JSON lines with the rule diagnoser (default: one per core for 64 MiB of input or more; 0: none)' },
    { name: 'fail-on-fault', description: 'exit with code 1 when any trace is diagnosed with a fault' },
  ],
  details: [
    'Files: OTLP JSON (collector file exporter or request bodies), JSON lines, Jaeger or Tempo downloads, OTLP protobuf.',
    'Ground truth (faultline.fault.* attributes and events) is removed before any diagnoser sees a trace.',
    '',
    'The llm and hybrid diagnosers call an OpenAI-compatible endpoint:',
    '  FAULTLINE_LLM_BASE_URL (e.g. https://api.openai.com/v1), FAULTLINE_LLM_API_KEY, FAULTLINE_LLM_MODEL',
    '',
    'Examples:',
    '  faultline diagnose traces.jsonl',
    '  faultline diagnose run-*.json --format jsonl > diagnoses.jsonl',
    '  faultline diagnose jaeger-download.json --diagnoser hybrid',
  ].join('\n'),
  async run({ options, positionals }) {
    if (positionals.length === 0) throw new FaultlineInputError('FAULTLINE_USAGE', 'no trace files given (usage: faultline diagnose FILE... ; see faultline diagnose --help)');
    const diagnoserName = oneOf(command, 'diagnoser', options.diagnoser, DIAGNOSER_NAMES);
    const format = oneOf(command, 'format', options.format, DIAGNOSIS_FORMATS);
    const concurrency = concurrencyOption(options.concurrency, diagnoserName === 'rule' ? 1 : 4);
    const { createDiagnoser, diagnoseAll } = (require('../../diagnosers/index') as typeof import('../../diagnosers/index'));
    const { diagnosisJson, diagnosisLine, diagnosesTable } = (require('../../report/diagnoses') as typeof import('../../report/diagnoses'));
    const { useColors } = (require('../../report/colors') as typeof import('../../report/colors'));
    const { createProgress } = (require('../../report/progress') as typeof import('../../report/progress'));
    const { readTraces } = (require('../../traces/read') as typeof import('../../traces/read'));
    const { mapTraces } = (require('../../traces/parallel') as typeof import('../../traces/parallel'));
    const workers = options.workers === undefined ? undefined : Number(options.workers);
    if (workers !== undefined && (typeof options.workers !== 'string' || !Number.isInteger(workers) || workers < 0 || workers > 16)) {
      throw new FaultlineInputError('FAULTLINE_USAGE', `--workers must be an integer from 0 to 16; got ${JSON.stringify(options.workers)}`);
    }
    const diagnoser = createDiagnoser(diagnoserName);
    const progress = createProgress({ label: `diagnosing (${diagnoserName})` });
    const all: Diagnosis[] = [];
    let faulty = 0;
    let n = 0;
    // The rule diagnoser is CPU-bound: big JSON-lines inputs are read and diagnosed on worker threads (same results, same order).
    const diagnoses =
      diagnoserName === 'rule'
        ? mapTraces<Diagnosis>(positionals, { module: require.resolve('../../diagnosers/task'), name: 'diagnosisTask', options: { diagnoser: 'rule' } }, workers === undefined ? {} : { workers })
        : diagnoseAll(diagnoser, readTraces(positionals), { concurrency });
    for await (const d of diagnoses) {
      n++;
      if (d.faultType !== 'none') faulty++;
      if (format === 'jsonl') process.stdout.write(diagnosisLine(d) + '\n');
      else all.push(d);
      progress.update(n);
    }
    progress.done();
    if (format === 'json') process.stdout.write(JSON.stringify(all.map(diagnosisJson), null, 2) + '\n');
    else if (format === 'table') process.stdout.write(n === 0 ? 'no traces found\n' : diagnosesTable(all, useColors(process.stdout)));
    return options['fail-on-fault'] === true && faulty > 0 ? 1 : 0;
  },
};
