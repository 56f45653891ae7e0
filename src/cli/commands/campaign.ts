/**
 * `faultline campaign`: run the fault-injection matrix over the example multi-agent workflows and write the labelled
 * traces, the summary and the HTML report. Ctrl-C stops scheduling new cells; finished runs are kept and reported.
 */
import { FaultlineInputError } from '../../errors';
import type { Command } from '../types';

type Opts = Record<string, string | boolean | string[] | undefined>;

const list = (v: string | boolean | string[] | undefined): string[] | undefined => {
  if (v === undefined || typeof v === 'boolean') return undefined;
  const items = (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
  return items.length > 0 ? items : undefined;
};

function positiveInt(name: string, v: string | boolean | string[] | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < 1) {
    throw new FaultlineInputError('FAULTLINE_USAGE', `--${name} must be a positive integer, got ${JSON.stringify(v)} (see faultline campaign --help)`);
  }
  return n;
}

export interface CampaignRun {
  preset: string;
  out: string;
  concurrency?: number;
  /** Ignore OPENAI_BASE_URL & co. and use the embedded mock model. */
  embedded?: boolean;
  overrides: { topologies?: string[]; conditions?: string[]; families?: string[]; reps?: number; tasksPerFamily?: number };
}

export function readCampaignOptions(options: Opts, defaults: { preset: string; out: string }): CampaignRun {
  const preset = typeof options.preset === 'string' ? options.preset : defaults.preset;
  const out = typeof options.out === 'string' ? options.out : defaults.out;
  const reps = positiveInt('reps', options.reps);
  const tasks = positiveInt('tasks', options.tasks);
  const concurrency = positiveInt('concurrency', options.concurrency);
  const overrides: CampaignRun['overrides'] = {};
  const topologies = list(options.topologies);
  const conditions = list(options.faults);
  const families = list(options.families);
  if (topologies) overrides.topologies = topologies;
  if (conditions) overrides.conditions = conditions;
  if (families) overrides.families = families;
  if (reps !== undefined) overrides.reps = reps;
  if (tasks !== undefined) overrides.tasksPerFamily = tasks;
  return { preset, out, ...(concurrency !== undefined ? { concurrency } : {}), overrides };
}

/** Run a campaign with a progress line and Ctrl-C handling; prints the tables. Shared with `faultline demo`. */
export async function executeCampaign(run: CampaignRun, io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WriteStream }) {
  const { resolveSpec } = (require('../../campaign/matrix') as typeof import('../../campaign/matrix'));
  const spec = resolveSpec(run.preset, run.overrides);
  const { runCampaign } = (require('../../campaign/runner') as typeof import('../../campaign/runner'));
  const { createProgress } = (require('../../report/progress') as typeof import('../../report/progress'));
  const controller = new AbortController();
  const onSigint = (): void => {
    if (controller.signal.aborted) return;
    io.stderr.write('\ninterrupted: finishing the runs in flight, then writing the partial report (Ctrl-C again to quit now)\n');
    controller.abort();
    process.once('SIGINT', () => process.exit(130));
  };
  process.once('SIGINT', onSigint);
  let progress: ReturnType<typeof createProgress> | undefined;
  let failures = 0;
  try {
    const result = await runCampaign({
      spec,
      out: run.out,
      ...(run.concurrency !== undefined ? { concurrency: run.concurrency } : {}),
      ...(run.embedded ? { model: { embedded: true } } : {}),
      signal: controller.signal,
      onRun: (done, total, r) => {
        progress ??= createProgress({ label: `campaign ${spec.name}`, total, stream: io.stderr });
        if (r.faulted && !r.success) failures++;
        progress.update(done, `${r.family}/${r.topology} ${r.condition}${r.arm !== 'none' ? ` [${r.arm}]` : ''} · faulted failures ${failures}`);
      },
    });
    progress?.done();
    io.stdout.write(`${result.text}\n\n`);
    io.stdout.write(`labelled traces: ${result.files.traces}\nsummary:         ${result.files.summary}\nHTML report:     ${result.files.report}\n`);
    return result;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

export const command: Command = {
  name: 'campaign',
  summary: 'run a fault-injection campaign over the example multi-agent workflows and label its traces',
  usage: 'faultline campaign [--preset smoke|paper] [--topologies ...] [--faults ...] [--reps N] [--out DIR] [--concurrency N]',
  options: [
    { name: 'preset', value: 'smoke|paper', description: 'the matrix to run', default: 'smoke' },
    { name: 'topologies', value: 'list', description: 'sequential, flat, hierarchical (comma-separated)', multiple: true },
    { name: 'faults', value: 'list', description: 'fault conditions, e.g. non_delivery@I4,llm_truncate_single (comma-separated)', multiple: true },
    { name: 'families', value: 'list', description: 'task families: shopping, coding', multiple: true },
    { name: 'reps', value: 'N', description: 'repetitions of every cell' },
    { name: 'tasks', value: 'N', description: 'tasks per family' },
    { name: 'out', value: 'DIR', description: 'output directory (traces.jsonl, summary.json, report.html)', default: 'faultline-campaign' },
    { name: 'concurrency', value: 'N', description: 'cells run at once', default: 4 },
  ],
  details: `Every faulted run is matched to a clean run of the same cell (family, task, topology, protection arm,
repetition). Untriggered faults are excluded and counted. The model is the embedded mock model unless
OPENAI_BASE_URL (with OPENAI_API_KEY and FAULTLINE_MODEL) points at a real OpenAI-compatible endpoint.

Fault conditions: non_delivery@I1..I4, deadline@I4, semantic_corruption@I4, valid_partial@I4, stale_replay@I4,
duplicate@I2, identity_corruption@I4, key_drift@I4, type_drift@I4, and AgentChaos content faults
llm_{error,empty,truncate,corrupt,schema,timeout}_{single,persistent}.

Examples:
  faultline campaign                                  # the smoke preset
  faultline campaign --preset paper --out runs/paper  # several hundred runs
  faultline campaign --faults non_delivery@I4 --topologies flat,sequential --reps 3
  faultline eval faultline-campaign/traces.jsonl      # score the diagnosers on the labelled traces`,
  async run({ options }) {
    const run = readCampaignOptions(options, { preset: 'smoke', out: 'faultline-campaign' });
    const result = await executeCampaign(run, { stdout: process.stdout, stderr: process.stderr });
    return result.records.length === 0 ? 1 : 0;
  },
};
