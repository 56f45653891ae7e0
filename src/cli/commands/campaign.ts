/**
 * `faultline campaign`: run a fault-injection matrix — over the user's own program (`--cmd`, with `--tasks` and
 * `--matrix`), or over the example multi-agent workflows (`--preset`) — and write the labelled traces, the summary
 * and the HTML report. Ctrl-C stops scheduling new runs (the runs in flight finish and are kept); a second Ctrl-C or
 * SIGTERM stops the runs in flight too. A `--cmd` campaign run again with the same arguments continues where it
 * stopped.
 */
import { FaultlineInputError } from '../../errors';
import type { Command } from '../types';
import { processEnv } from '../../env';

type Opts = Record<string, string | boolean | string[] | undefined>;

const list = (v: string | boolean | string[] | undefined): string[] | undefined => {
  if (v === undefined || typeof v === 'boolean') return undefined;
  const items = (Array.isArray(v) ? v : [v])
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length > 0 ? items : undefined;
};

function positiveInt(name: string, v: string | boolean | string[] | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < 1) {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `--${name} must be a positive integer, got ${JSON.stringify(v)} (see faultline campaign --help)`,
    );
  }
  return n;
}

export interface CampaignRun {
  preset: string;
  out: string;
  concurrency?: number;
  /** Ignore OPENAI_BASE_URL & co. and use the embedded mock model. */
  embedded?: boolean;
  overrides: {
    topologies?: string[];
    conditions?: string[];
    families?: string[];
    reps?: number;
    tasksPerFamily?: number;
  };
}

const EXAMPLE_ONLY = ['preset', 'topologies', 'faults', 'families', 'reps'] as const;
const COMMAND_ONLY = [
  'matrix',
  'oracle',
  'dry-run',
  'timeout',
  'max-calls',
  'max-tokens',
  'fresh',
  'arms',
  'fallback-model',
] as const;

export function readCampaignOptions(options: Opts, defaults: { preset: string; out: string }): CampaignRun {
  for (const o of COMMAND_ONLY) {
    if (options[o] !== undefined)
      throw new FaultlineInputError('FAULTLINE_USAGE', `--${o} goes with --cmd (see faultline campaign --help)`);
  }
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
export async function executeCampaign(
  run: CampaignRun,
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WriteStream },
) {
  const { resolveSpec } = require('../../campaign/matrix') as typeof import('../../campaign/matrix');
  const spec = resolveSpec(run.preset, run.overrides);
  const { runCampaign } = require('../../campaign/runner') as typeof import('../../campaign/runner');
  // The CLI wires the example workflows in: the campaign layer never imports an application.
  const workloads = require('../../../examples/index') as typeof import('../../../examples/index');
  const { createProgress } = require('../../report/progress') as typeof import('../../report/progress');
  const controller = new AbortController();
  const onSigint = (): void => {
    if (controller.signal.aborted) return;
    io.stderr.write(
      '\ninterrupted: finishing the runs in flight, then writing the partial report (Ctrl-C again to quit now)\n',
    );
    controller.abort();
    process.once('SIGINT', () => process.exit(130));
  };
  process.once('SIGINT', onSigint);
  let progress: ReturnType<typeof createProgress> | undefined;
  let failures = 0;
  try {
    const result = await runCampaign({
      workloads,
      spec,
      out: run.out,
      ...(run.concurrency !== undefined ? { concurrency: run.concurrency } : {}),
      ...(run.embedded ? { model: { embedded: true } } : {}),
      signal: controller.signal,
      onRun: (done, total, r) => {
        progress ??= createProgress({ label: `campaign ${spec.name}`, total, stream: io.stderr });
        if (r.faulted && !r.success) failures++;
        progress.update(
          done,
          `${r.family}/${r.topology} ${r.condition}${r.arm !== 'none' ? ` [${r.arm}]` : ''} · faulted failures ${failures}`,
        );
      },
    });
    progress?.done();
    io.stdout.write(`${result.text}\n\n`);
    io.stdout.write(
      `labelled traces: ${result.files.traces}\nsummary:         ${result.files.summary}\nHTML report:     ${result.files.report}\n`,
    );
    return result;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

/** A duration such as 90s, 5m, 2h (a bare number is seconds) → ms. */
function duration(name: string, v: string | boolean | string[] | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  const m = typeof v === 'string' ? /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/.exec(v.trim()) : null;
  const ms = m
    ? Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h']
    : NaN;
  if (!(ms > 0))
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `--${name} expects a duration such as 90s, 5m or 1h; got ${JSON.stringify(v)}`,
    );
  return ms;
}

const str = (v: string | boolean | string[] | undefined): string | undefined => (typeof v === 'string' ? v : undefined);

/** `--cmd` campaigns: the user's program over tasks × fault conditions × repetitions, each with its clean twin. */
async function commandCampaign(options: Opts): Promise<number> {
  for (const o of EXAMPLE_ONLY) {
    if (options[o] !== undefined)
      throw new FaultlineInputError(
        'FAULTLINE_USAGE',
        `--${o} is for the example workflows; with --cmd the matrix file says what runs (see faultline campaign --help)`,
      );
  }
  const cmd = str(options.cmd) as string;
  const tasks = str(options.tasks);
  const matrix = str(options.matrix);
  if (tasks === undefined || matrix === undefined)
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      '--cmd needs --tasks FILE (JSON lines) and --matrix FILE (see faultline campaign --help)',
    );
  const oracle = str(options.oracle);
  const arms = list(options.arms);
  for (const a of arms ?? [])
    if (a !== 'none' && a !== 'arcf')
      throw new FaultlineInputError('FAULTLINE_USAGE', `--arms: unknown arm ${JSON.stringify(a)}; expected none, arcf`);
  const armOptions = arms?.includes('arcf')
    ? {
        arms: ['none', 'arcf'] as Array<'none' | 'arcf'>,
        ...(str(options['fallback-model']) !== undefined
          ? { fallbackModel: str(options['fallback-model']) as string }
          : {}),
      }
    : {};
  const { describePlan, planCommandCampaign, runCommandCampaign } =
    require('../../campaign/command-runner') as typeof import('../../campaign/command-runner');
  if (options['dry-run'] === true) {
    const plan = planCommandCampaign({
      cmd,
      tasks,
      matrix,
      ...(oracle !== undefined ? { oracle } : {}),
      ...armOptions,
    });
    const { loadOracle } = require('../../campaign/oracle') as typeof import('../../campaign/oracle');
    const o = await loadOracle(oracle, processEnv());
    process.stdout.write(
      `faultline campaign (dry run, nothing is run)\n${describePlan(plan)}\n\nsuccess: ${o.describe}\n`,
    );
    return 0;
  }
  const maxCalls = positiveInt('max-calls', options['max-calls']);
  const maxTokens = positiveInt('max-tokens', options['max-tokens']);
  const concurrency = positiveInt('concurrency', options.concurrency);
  const timeoutMs = duration('timeout', options.timeout, 300_000);
  const out = str(options.out) ?? 'faultline-campaign';
  const { createProgress } = require('../../report/progress') as typeof import('../../report/progress');
  const soft = new AbortController();
  const hard = new AbortController();
  let exitSignal: 'SIGINT' | 'SIGTERM' | undefined;
  const onSigint = (): void => {
    exitSignal = 'SIGINT';
    if (!soft.signal.aborted) {
      process.stderr.write(
        '\ninterrupted: finishing the runs in flight (Ctrl-C again stops them; run the same command again to continue)\n',
      );
      soft.abort();
      return;
    }
    process.stderr.write('\nstopping the runs in flight; they are made again when the campaign continues\n');
    hard.abort();
  };
  const onSigterm = (): void => {
    exitSignal = 'SIGTERM';
    hard.abort();
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigterm);
  let progress: ReturnType<typeof createProgress> | undefined;
  let failed = 0;
  let planned = 0;
  try {
    const result = await runCommandCampaign({
      cmd,
      tasks,
      matrix,
      out,
      timeoutMs,
      ...(oracle !== undefined ? { oracle } : {}),
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(maxCalls !== undefined || maxTokens !== undefined
        ? {
            budget: {
              ...(maxCalls !== undefined ? { calls: maxCalls } : {}),
              ...(maxTokens !== undefined ? { tokens: maxTokens } : {}),
            },
          }
        : {}),
      fresh: options.fresh === true,
      ...armOptions,
      signal: soft.signal,
      stopSignal: hard.signal,
      onStart: ({ total, done }) => {
        planned = total;
        if (done > 0)
          process.stderr.write(`continuing the campaign in ${out}: ${done} of ${total} runs already made\n`);
        progress = createProgress({ label: 'campaign', total, stream: process.stderr });
      },
      onRun: (done, _total, r) => {
        if (r.faulted && !r.success) failed++;
        progress?.update(done, `task ${r.task} ${r.condition} ${r.success ? '✔' : '✖'} · faulted failures ${failed}`);
      },
      onNote: (text) => process.stderr.write(`faultline campaign: ${text}\n`),
    });
    progress?.done(
      `campaign: ${result.ran} run${result.ran === 1 ? '' : 's'} made now; ${result.records.length} of ${planned} recorded in ${out}`,
    );
    process.stdout.write(`${result.text}\n\n`);
    process.stdout.write(
      `labelled traces: ${result.files.traces}\nruns:            ${result.files.runs}\nsummary:         ${result.files.summary}\nHTML report:     ${result.files.report}\n`,
    );
    if (result.stopped === 'interrupted')
      process.stdout.write(`\nThe campaign stopped early; run the same command again to continue it.\n`);
    if (exitSignal !== undefined) return exitSignal === 'SIGINT' ? 130 : 143;
    return result.records.length === 0 ? 1 : 0;
  } finally {
    process.removeListener('SIGINT', onSigint);
    process.removeListener('SIGTERM', onSigterm);
  }
}

export const command: Command = {
  name: 'campaign',
  summary: 'run a fault-injection campaign over your program (--cmd) or the example workflows, and label its traces',
  usage:
    'faultline campaign --cmd "node agent.js {task}" --tasks tasks.jsonl --matrix matrix.yaml [--oracle CMD|check.mjs] [--dry-run] [--out DIR]\n' +
    '       faultline campaign [--preset smoke|paper] [--topologies ...] [--faults ...] [--reps N] [--out DIR] [--concurrency N]',
  options: [
    {
      name: 'cmd',
      value: 'COMMAND',
      description:
        'your program, run once per task × condition × repetition and once clean (placeholders {task}, {task.FIELD})',
    },
    {
      name: 'tasks',
      value: 'FILE|N',
      description: 'with --cmd: the tasks, one JSON object per line; with a preset: tasks per family',
    },
    {
      name: 'matrix',
      value: 'FILE',
      description: 'with --cmd: the fault conditions, repetitions and seeds (YAML or JSON)',
    },
    {
      name: 'oracle',
      value: 'CMD|FILE',
      description:
        "with --cmd: judges success: a command reading the run's stdout, or a JS module exporting check() (default: exit code 0)",
    },
    { name: 'dry-run', description: 'with --cmd: validate everything and print the runs it would make' },
    { name: 'timeout', value: 'DURATION', description: 'with --cmd: per run, then SIGTERM and SIGKILL (default 5m)' },
    {
      name: 'max-calls',
      value: 'N',
      description: 'with --cmd: budget: start no run once the campaign made N LLM calls',
    },
    {
      name: 'max-tokens',
      value: 'N',
      description: 'with --cmd: budget: start no run once the campaign spent N tokens',
    },
    {
      name: 'fresh',
      description: "with --cmd: discard an earlier campaign's results in --out instead of continuing it",
    },
    {
      name: 'arms',
      value: 'none,arcf',
      description:
        "with --cmd: also run every condition under ARCF's protection (retry, circuit, monitors) and the program bare (overhead)",
      multiple: true,
    },
    {
      name: 'fallback-model',
      value: 'MODEL',
      description: 'with --cmd --arms arcf: the model the arcf arm falls back to',
    },
    {
      name: 'preset',
      value: 'smoke|paper|arcf',
      description:
        "the example workflows' matrix to run (default: smoke; arcf: ARCF's experiment, baseline vs the arcf arm at a 10 % fault rate)",
    },
    {
      name: 'topologies',
      value: 'list',
      description: 'sequential, flat, hierarchical (comma-separated)',
      multiple: true,
    },
    {
      name: 'faults',
      value: 'list',
      description: 'fault conditions, e.g. non_delivery@I4,llm_truncate_single (comma-separated)',
      multiple: true,
    },
    { name: 'families', value: 'list', description: 'task families: shopping, coding', multiple: true },
    { name: 'reps', value: 'N', description: 'repetitions of every cell' },
    {
      name: 'out',
      value: 'DIR',
      description: 'output directory (traces.jsonl, summary.json, report.html; runs.jsonl with --cmd)',
      default: 'faultline-campaign',
    },
    { name: 'concurrency', value: 'N', description: 'runs (cells) at once', default: 4 },
  ],
  details: `Your program (--cmd): each run is a child process under faultline/register (through NODE_OPTIONS, so the command
must start Node: node, npm start, npx tsx …), with FAULTLINE_PLAN set to its condition's plan (none for the clean
twin), its spans in a file of its own and TRACEPARENT making the whole run one trace. The task is in
FAULTLINE_CAMPAIGN_TASK (JSON) and in the placeholders. Runs whose fault never fired are excluded and counted.
Results are appended as runs finish; running the same command again continues an interrupted campaign. See
docs/campaigns.md for the matrix file.

  faultline campaign --cmd "node agent.js {task}" --tasks tasks.jsonl --matrix matrix.yaml --dry-run
  faultline campaign --cmd "node agent.js {task}" --tasks tasks.jsonl --matrix matrix.yaml \\
                     --oracle "node judge.js {task.expected}" --max-calls 500 --out runs/agent

The example workflows (--preset): every faulted run is matched to a clean run of the same cell (family, task,
topology, protection arm, repetition). The model is the embedded mock model unless OPENAI_BASE_URL (with
OPENAI_API_KEY and FAULTLINE_MODEL) points at a real OpenAI-compatible endpoint.

Fault conditions: non_delivery@I1..I4, deadline@I4, semantic_corruption@I4, valid_partial@I4, stale_replay@I4,
duplicate@I2, identity_corruption@I4, key_drift@I4, type_drift@I4, and AgentChaos content faults
llm_{error,empty,truncate,corrupt,schema,timeout}_{single,persistent}.

Examples:
  faultline campaign                                  # the smoke preset
  faultline campaign --preset paper --out runs/paper  # several hundred runs
  faultline campaign --faults non_delivery@I4 --topologies flat,sequential --reps 3
  faultline eval faultline-campaign/traces.jsonl      # score the diagnosers on the labelled traces`,
  async run({ options }) {
    if (typeof options.cmd === 'string') return commandCampaign(options);
    const run = readCampaignOptions(options, { preset: 'smoke', out: 'faultline-campaign' });
    const result = await executeCampaign(run, { stdout: process.stdout, stderr: process.stderr });
    return result.records.length === 0 ? 1 : 0;
  },
};
