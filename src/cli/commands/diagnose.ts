/** `faultline diagnose FILE...` (or `--jaeger` / `--tempo`): per trace, which fault happened, at which step, with the evidence. */
import type { Command } from '../types';
import { oneOf } from '../options';
import { FaultlineInputError } from '../../errors';
import { DIAGNOSER_NAMES } from '../../diagnosers/types';
import { DIAGNOSIS_FORMATS, type DiagnosisFailure } from '../../report/diagnoses';
import type { Diagnosis } from '../../diagnosers/types';
import type { DiagnosisText } from '../../diagnosers/task';
import { DIAGNOSIS_SCOPE, SOURCE_DETAILS, SOURCE_OPTIONS, finish, openTraceInput } from '../inputs';

/** --concurrency: a positive integer, or the default. */
export function concurrencyOption(v: unknown, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < 1 || n > 256)
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `--concurrency must be an integer from 1 to 256; got ${JSON.stringify(v)}`,
    );
  return n;
}

/** After this many traces in a row that could not be diagnosed, and none that could, the rest are not tried. */
const GIVE_UP_AFTER = 5;

const EXPORTS = ['otlp'] as const;

export const command: Command = {
  name: 'diagnose',
  summary: 'Name the fault, the faulty step and the evidence of every trace in the given trace files.',
  usage:
    'faultline diagnose FILE... | --jaeger URL | --tempo URL [--diagnoser rule|llm|hybrid] [--format table|json|jsonl] [--export otlp]',
  options: [
    {
      name: 'diagnoser',
      short: 'd',
      value: DIAGNOSER_NAMES.join('|'),
      description: 'which diagnoser to use',
      default: 'rule',
    },
    {
      name: 'format',
      short: 'f',
      value: DIAGNOSIS_FORMATS.join('|'),
      description: 'output format; jsonl prints one JSON object per trace per line',
      default: 'table',
    },
    {
      name: 'concurrency',
      short: 'c',
      value: 'N',
      description: 'traces diagnosed at once (default: 1 for rule, 4 for llm and hybrid)',
    },
    {
      name: 'workers',
      value: 'N',
      description:
        'worker threads reading and diagnosing trace files with the rule diagnoser (default: one per core for 64 MiB of JSON lines or more; 0: none)',
    },
    { name: 'fail-on-fault', description: 'exit with code 1 when any trace is diagnosed with a fault' },
    {
      name: 'export',
      value: 'otlp',
      description: 'also send each diagnosis as a span of its trace to an OTLP/HTTP endpoint (OTEL_EXPORTER_OTLP_*)',
    },
    {
      name: 'otlp-endpoint',
      value: 'URL',
      description:
        'with --export otlp: the OTLP/HTTP base URL (default OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318)',
    },
    ...SOURCE_OPTIONS,
  ],
  details: [
    'Files: OTLP JSON (collector file exporter or request bodies), JSON lines, Jaeger or Tempo downloads, OTLP protobuf.',
    'Ground truth (faultline.fault.* attributes and events) is removed before any diagnoser sees a trace.',
    'A bad file or line is named on stderr after the traces that could be read (exit 2); a trace the diagnoser could not',
    'diagnose (an LLM endpoint down, a wrong key) is reported as not diagnosed (exit 1), never as clean.',
    '',
    ...SOURCE_DETAILS,
    '',
    '--export otlp: each diagnosis becomes a span "faultline.diagnosis" in the trace it explains, a child of and linked',
    'to the faulty span, with faultline.diagnosis.{fault_type,span_id,step,step_kind,confidence,evidence,diagnoser}.',
    '',
    'The llm and hybrid diagnosers call an OpenAI-compatible endpoint:',
    '  FAULTLINE_LLM_BASE_URL (e.g. https://api.openai.com/v1), FAULTLINE_LLM_API_KEY, FAULTLINE_LLM_MODEL',
    '',
    'Examples:',
    '  faultline diagnose traces.jsonl',
    '  faultline diagnose run-*.json --format jsonl > diagnoses.jsonl',
    '  faultline diagnose --jaeger http://localhost:16686 --service my-agent --lookback 2h --export otlp',
    '  faultline diagnose --tempo http://localhost:3200 --query \'{ span.gen_ai.operation.name = "chat" }\' --diagnoser hybrid',
  ].join('\n'),
  async run({ options, positionals }) {
    const diagnoserName = oneOf(command, 'diagnoser', options.diagnoser, DIAGNOSER_NAMES);
    const format = oneOf(command, 'format', options.format, DIAGNOSIS_FORMATS);
    const exportTo = options.export === undefined ? undefined : oneOf(command, 'export', options.export, EXPORTS);
    if (options['otlp-endpoint'] !== undefined && exportTo === undefined)
      throw new FaultlineInputError('FAULTLINE_USAGE', '--otlp-endpoint goes with --export otlp');
    const concurrency = concurrencyOption(options.concurrency, diagnoserName === 'rule' ? 1 : 4);
    const input = openTraceInput(command.name, options, positionals);
    const { createDiagnoser, diagnoseWithDocuments, mapOrdered } =
      require('../../diagnosers/index') as typeof import('../../diagnosers/index');
    const { inInputOrder } = require('../../diagnosers/shape-memory') as typeof import('../../diagnosers/shape-memory');
    const { diagnosisJson, diagnosisLine, diagnosesTable, failureJson, failureSummary } =
      require('../../report/diagnoses') as typeof import('../../report/diagnoses');
    const { useColors } = require('../../report/colors') as typeof import('../../report/colors');
    const { createProgress } = require('../../report/progress') as typeof import('../../report/progress');
    const diagnoser = createDiagnoser(diagnoserName);
    const exporter = exportTo
      ? (
          require('../../report/diagnosis-spans') as typeof import('../../report/diagnosis-spans')
        ).createDiagnosisExport({
          scope: DIAGNOSIS_SCOPE,
          ...(typeof options['otlp-endpoint'] === 'string' ? { endpoint: options['otlp-endpoint'] } : {}),
        })
      : undefined;
    const progress = createProgress({ label: `diagnosing (${diagnoserName})` });
    const rows: Array<Diagnosis | DiagnosisFailure> = [];
    const failures: DiagnosisFailure[] = [];
    let faulty = 0;
    let ok = 0;
    let n = 0;
    let gaveUp = false;
    type Judged = {
      result: Diagnosis | DiagnosisFailure;
      documents: import('../../diagnosers/shape-memory').TraceDocument[];
    };
    const one = async (t: import('../../traces/model').TraceRecord): Promise<Judged> => {
      try {
        const { diagnosis, documents } = await diagnoseWithDocuments(diagnoser, t);
        return { result: diagnosis, documents };
      } catch (err) {
        return {
          result: {
            traceId: t.traceId,
            diagnoser: diagnoserName,
            error: err instanceof Error ? err.message : String(err),
          },
          documents: [],
        };
      }
    };
    // Each trace judged against the input's other traces (shape-memory.ts), in input order.
    async function* inOrder(): AsyncGenerator<{
      item: import('../../traces/model').TraceRecord | undefined;
      result: Diagnosis | DiagnosisFailure;
    }> {
      // A waiting outcome keeps its trace only when --export needs it (to place the diagnosis span).
      const judged = inInputOrder(mapOrdered(input.traces, concurrency, one), ({ item, result }) => ({
        ...result,
        tag: exporter ? item : undefined,
      }));
      for await (const { result, tag } of judged) yield { item: tag, result };
    }
    // The rule diagnoser is CPU-bound: trace files are read and diagnosed on worker threads (same results, same order).
    const workers = options.workers === undefined ? undefined : Number(options.workers);
    if (
      workers !== undefined &&
      (typeof options.workers !== 'string' || !Number.isInteger(workers) || workers < 0 || workers > 16)
    ) {
      throw new FaultlineInputError(
        'FAULTLINE_USAGE',
        `--workers must be an integer from 0 to 16; got ${JSON.stringify(options.workers)}`,
      );
    }
    const inWorkers =
      diagnoserName === 'rule' &&
      exporter === undefined &&
      positionals.length > 0 &&
      options.jaeger === undefined &&
      options.tempo === undefined;
    const { diagnoseFiles } = require('../../diagnosers/task') as typeof import('../../diagnosers/task');
    // JSON lines are made where each trace is diagnosed (a worker), and cross to this thread as text.
    const pairs: AsyncIterable<{
      item?: import('../../traces/model').TraceRecord;
      result: Diagnosis | DiagnosisText | DiagnosisFailure;
    }> = inWorkers
      ? diagnoseFiles(positionals, {
          withoutScopes: [DIAGNOSIS_SCOPE],
          onError: (e) => input.problems.push(e),
          lines: format === 'jsonl',
          ...(workers !== undefined ? { workers } : {}),
        })
      : inOrder();
    // JSON lines go out in batches (one write per trace was a syscall per line), none held back more than 200 ms.
    let pending = '';
    let timer: NodeJS.Timeout | undefined;
    const flush = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (pending !== '') process.stdout.write(pending);
      pending = '';
    };
    try {
      for await (const { item, result } of pairs) {
        n++;
        if ('error' in result) failures.push(result);
        else if ('line' in result) {
          ok++;
          if (result.faulty) faulty++;
        } else {
          ok++;
          if (result.faultType !== 'none') faulty++;
          if (item !== undefined) exporter?.add(result, item);
        }
        if (format === 'jsonl') {
          pending +=
            ('error' in result
              ? JSON.stringify(failureJson(result))
              : 'line' in result
                ? result.line
                : diagnosisLine(result)) + '\n';
          if (pending.length >= 65536) flush();
          else timer ??= setTimeout(flush, 200);
        } else if (!('line' in result)) rows.push(result); // lines come only for --format jsonl
        progress.update(n);
        if (ok === 0 && failures.length >= GIVE_UP_AFTER) {
          gaveUp = true;
          break;
        }
      }
    } finally {
      flush(); // what was diagnosed is printed, even when the run stops on an error
    }
    progress.done();
    if (format === 'json')
      process.stdout.write(
        JSON.stringify(
          rows.map((r) => ('error' in r ? failureJson(r) : diagnosisJson(r))),
          null,
          2,
        ) + '\n',
      );
    else if (format === 'table' && (n > 0 || input.problems.length === 0))
      process.stdout.write(n === 0 ? 'no traces found\n' : diagnosesTable(rows, useColors(process.stdout)));
    let code = 0;
    if (exporter) {
      const sent = await exporter.finish();
      if (sent.error !== undefined) {
        process.stderr.write(
          `✖ --export otlp: ${sent.exported}/${sent.spans} diagnosis spans sent to ${sent.endpoint}; the rest failed: ${sent.error}\n`,
        );
        code = 1;
      } else if (format === 'table')
        process.stdout.write(
          `${sent.exported} diagnosis span${sent.exported === 1 ? '' : 's'} sent to ${sent.endpoint}\n`,
        );
    }
    if (failures.length > 0) {
      for (const line of failureSummary(failures)) process.stderr.write(`✖ ${line}\n`);
      if (gaveUp)
        process.stderr.write(
          `✖ stopped after ${GIVE_UP_AFTER} traces in a row could not be diagnosed; the remaining traces were not tried\n`,
        );
      code = 1;
    }
    if (options['fail-on-fault'] === true && faulty > 0) code = 1;
    const bad = finish(input.problems);
    return bad || code;
  },
};
