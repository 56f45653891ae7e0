/**
 * Campaigns on any command: `faultline campaign --cmd "node my-agent.js {task}" --tasks tasks.jsonl --matrix m.yaml`
 * runs the user's program once per (task × fault condition × repetition) with that condition's plan, and once clean
 * as its matched twin, each in a child process under faultline/register (NODE_OPTIONS, so `npm start`, `npx tsx`
 * and shell wrappers work too). Each run gets its own span file (FAULTLINE_TRACES_FILE), its own trace
 * (TRACEPARENT, run-context.ts) and, when faulted, its plan (FAULTLINE_PLAN).
 *
 * Results are appended as runs finish — the labelled trace line to traces.jsonl, then the run's record to
 * runs.jsonl — so an interrupted campaign loses nothing it finished, and running the same command again continues
 * where it stopped (campaign.json holds a fingerprint of command, tasks, matrix and oracle; another campaign in the
 * same directory is refused). A budget (LLM calls or tokens, read off each run's spans) stops scheduling before it is
 * spent. The summary and the reports are the example campaigns' (analysis.ts, report.ts), by task instead of topology.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  ATTR_FL_FAULT_CONDITION,
  ATTR_FL_TASK_ID,
  GEN_AI_OPERATION_INVOKE_WORKFLOW,
} from '../../instrumentation/semconv';
import { sha256Hex16 } from '../hash';
import { FaultlineError, FaultlineInputError } from '../errors';
import { isProduction, processEnv } from '../env';
import { checkProduction, injectionDisabled } from '../plan/load';
import { checkWritable, ensureDir, writeFailed } from '../report/output';
import { analyse, type CampaignSummary, type RunRecord } from './analysis';
import { renderArcf } from '../report/arcf';
import { arcfEnv, arcfRuns, bareRun } from './arcf';
import { arcfTraceFacts } from './arcf-facts';
import { arcfSummary } from './arcf-summary';
import { fillCommand, shellQuote, splitCommand, type CommandTemplate } from './command-line';
import { loadMatrix, planOf, type ResolvedMatrix } from './command-matrix';
import {
  ATTR_CAMPAIGN_ID,
  ATTR_CAMPAIGN_PAIR,
  ATTR_CAMPAIGN_REP,
  ATTR_CAMPAIGN_TASK,
  ATTR_TASK_SUCCESS,
  runTaskId,
} from './labels';
import { loadOracle, type Oracle } from './oracle';
import { runProcess, stopAll } from './process-run';
import { buildRunTrace, runFacts } from './run-trace';
import { renderHtml, renderText, type ReportMeta } from './report';
import { loadTasks, type CampaignTask } from './tasks';
import type { PlannedRun } from './types';

export type { PlannedRun } from './types';

export interface CommandCampaignOptions {
  cmd: string;
  tasks: string;
  matrix: string;
  oracle?: string;
  out: string;
  /** Runs at once (default 4). */
  concurrency?: number;
  /** Per run (default 5 min). */
  timeoutMs?: number;
  /** Stop scheduling before the campaign's runs spend more than this. */
  budget?: { calls?: number; tokens?: number };
  /** Discard what an earlier campaign left in `out`. */
  fresh?: boolean;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Abort: no new runs start; the runs in flight finish and are kept. */
  signal?: AbortSignal;
  /** Abort now: the runs in flight are stopped (SIGTERM to their process groups) and not recorded, so a resumed
   * campaign makes them again. */
  stopSignal?: AbortSignal;
  onStart?: (info: { total: number; done: number }) => void;
  onRun?: (done: number, total: number, record: RunRecord) => void;
  /** A note for the user (a run that wrote no spans, the budget reached). */
  onNote?: (text: string) => void;
  /** Protection arms: `none` (the runs above), and `arcf` (each run again under ARCF's protection, arcf.ts). */
  arms?: Array<'none' | 'arcf'>;
  /** The `arcf` arm's fallback model, if the program's endpoint serves another. */
  fallbackModel?: string;
}

export interface CommandPlan {
  runs: PlannedRun[];
  tasks: CampaignTask[];
  matrix: ResolvedMatrix;
  template: CommandTemplate;
  fingerprint: string;
}

export interface CommandCampaignResult {
  summary: CampaignSummary;
  records: RunRecord[];
  interrupted: boolean;
  /** `budget reached`, `interrupted`, or undefined when every run was made. */
  stopped?: string;
  /** Runs made by this invocation (the rest were done by an earlier one). */
  ran: number;
  files: { traces: string; summary: string; report: string; runs: string };
  text: string;
  wallMs: number;
}

const STATE = 'campaign.json';

/** Every run of the campaign, in schedule order: per pair the faulted run, then its clean twin. */
export function planCommandCampaign(
  o: Pick<CommandCampaignOptions, 'cmd' | 'tasks' | 'matrix' | 'oracle' | 'arms'>,
): CommandPlan {
  const template = splitCommand(o.cmd, '--cmd');
  const tasks = loadTasks(o.tasks);
  const matrix = loadMatrix(o.matrix);
  const runs: PlannedRun[] = [];
  let pair = 0;
  // Tasks vary fastest: the runs in flight at once are of different tasks.
  for (let r = 0; r < matrix.seeds.length; r++) {
    for (const condition of matrix.conditions) {
      for (const task of tasks) {
        pair++;
        const argv = fillCommand(template, task, '--cmd');
        const base = { pair, task, condition, rep: r + 1, seed: matrix.seeds[r]!, argv };
        const key = `${task.id}|${condition.id}|${r + 1}`;
        runs.push({ ...base, key: `${key}|faulted`, faulted: true }, { ...base, key: `${key}|clean`, faulted: false });
        if (o.arms?.includes('arcf')) {
          runs.push(...arcfRuns({ ...base, pair: ++pair }, key));
          // One run of the program without faultline per task and repetition, beside the first condition's clean twin.
          if (condition === matrix.conditions[0]) runs.push(bareRun({ ...base, pair: ++pair }, key));
        }
      }
    }
  }
  const fingerprint = sha256Hex16(
    JSON.stringify({
      cmd: template.words,
      tasks: tasks.map((t) => t.fields),
      conditions: matrix.conditions,
      seeds: matrix.seeds,
      oracle: o.oracle ?? null,
      ...(o.arms?.includes('arcf') ? { arms: o.arms } : {}),
    }),
  );
  return { runs, tasks, matrix, template, fingerprint };
}

/** The --dry-run listing. */
export function describePlan(p: CommandPlan): string {
  const faulted = p.runs.filter((r) => r.faulted).length;
  const lines = [
    `${p.tasks.length} task${p.tasks.length === 1 ? '' : 's'} × ${p.matrix.conditions.length} condition${p.matrix.conditions.length === 1 ? '' : 's'} × ${p.matrix.seeds.length} repetition${p.matrix.seeds.length === 1 ? '' : 's'} = ${faulted} faulted runs, each with its clean twin: ${p.runs.length} runs`,
    '',
    'conditions:',
    ...p.matrix.conditions.map(
      (c) =>
        `  ${c.id}: ${JSON.stringify(c.plan.rules.map((r) => ({ fault: r.fault, ...(Object.keys(r.match).length > 0 ? { match: r.match } : {}), ...(r.strategy ? { strategy: r.strategy } : {}), ...(Object.keys(r.params).length > 0 ? { params: r.params } : {}) })))}`,
    ),
    '',
    'runs:',
  ];
  for (const r of p.runs) {
    lines.push(
      `  ${String(r.pair).padStart(3)} ${r.faulted ? 'faulted' : r.bare ? 'bare   ' : 'clean  '}${r.arm === 'arcf' ? ' [arcf]' : ''} task ${r.task.id}  ${r.condition.id}  rep ${r.rep}${r.faulted ? ` seed ${r.seed}` : ''}  $ ${r.argv.map(shellQuote).join(' ')}`,
    );
  }
  return lines.join('\n');
}

interface State {
  fingerprint: string;
  campaignId: string;
  cmd: string;
  tasks: string;
  matrix: string;
  oracle?: string;
  createdAt: string;
}

/** The built register and run-context modules the children preload (a campaign runs from the built package). */
function preloads(): string[] {
  const files = [join(__dirname, '..', 'register.js'), join(__dirname, 'run-context.js')];
  for (const f of files)
    if (!existsSync(f))
      throw new FaultlineError(
        'FAULTLINE_USAGE',
        `campaign --cmd needs the built package (${f} is missing): run npm run build`,
      );
  return files;
}

function readRecords(file: string): RunRecord[] {
  if (!existsSync(file)) return [];
  const out: RunRecord[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      const r = JSON.parse(line) as RunRecord;
      if (typeof r.key === 'string') out.push(r);
    } catch {
      /* a line torn by a kill: that run is simply made again */
    }
  }
  return out;
}

/** Keep only the trace lines of recorded runs (a trace written just before a kill has no record: it is run again). */
function compactTraces(file: string, keep: ReadonlySet<string>): void {
  if (!existsSync(file)) return;
  const lines = readFileSync(file, 'utf8').split('\n');
  const kept = lines.filter((l) => {
    const m = /"traceId":"([0-9a-f]{32})"/.exec(l);
    return m !== null && keep.has(m[1]!);
  });
  if (kept.length === lines.filter((l) => l.trim() !== '').length) return;
  writeFileSync(`${file}.tmp`, kept.length > 0 ? `${kept.join('\n')}\n` : '');
  renameSync(`${file}.tmp`, file);
}

export async function runCommandCampaign(o: CommandCampaignOptions): Promise<CommandCampaignResult> {
  const started = Date.now();
  const plan = planCommandCampaign(o);
  const env = o.env ?? processEnv();
  // What would make every faulted run an untriggered one, said before the first run rather than after the last.
  if (injectionDisabled(env))
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      'FAULTLINE_DISABLE is set: no fault would be injected in any run; unset it for the campaign',
    );
  for (const c of plan.matrix.conditions)
    checkProduction(planOf(c, 0), `--matrix ${o.matrix} (condition "${c.id}")`, isProduction(env));
  const oracle: Oracle = await loadOracle(o.oracle, env);
  const [registerJs, runContextJs] = preloads();
  const out = ensureDir(o.out, '--out');
  const files = {
    traces: join(out, 'traces.jsonl'),
    summary: join(out, 'summary.json'),
    report: join(out, 'report.html'),
    runs: join(out, 'runs.jsonl'),
  };
  for (const f of [...Object.values(files), join(out, STATE)]) checkWritable(f, '--out');

  // Resume, or start over.
  const statePath = join(out, STATE);
  let state: State | undefined;
  if (existsSync(statePath)) {
    try {
      state = JSON.parse(readFileSync(statePath, 'utf8')) as State;
    } catch {
      state = undefined;
    }
  }
  let previous = o.fresh ? [] : readRecords(files.runs);
  if (state && state.fingerprint !== plan.fingerprint && previous.length > 0) {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `--out ${o.out} holds ${previous.length} runs of another campaign (its command, tasks, matrix or oracle differ: ${JSON.stringify(state.cmd)}); give another --out, or --fresh to discard them`,
    );
  }
  if (o.fresh || !state || previous.length === 0) {
    for (const f of [files.runs, files.traces, files.summary, files.report]) rmSync(f, { force: true });
    rmSync(join(out, 'runs'), { recursive: true, force: true });
    rmSync(join(out, 'plans'), { recursive: true, force: true });
    previous = [];
    state = {
      fingerprint: plan.fingerprint,
      campaignId: `c${started.toString(36)}`,
      cmd: o.cmd,
      tasks: o.tasks,
      matrix: o.matrix,
      ...(o.oracle ? { oracle: o.oracle } : {}),
      createdAt: new Date(started).toISOString(),
    };
    writeFileSync(statePath, `${JSON.stringify(state, null, 2)}\n`);
  }
  const keys = new Set(plan.runs.map((r) => r.key));
  const done = new Map(previous.filter((r) => keys.has(r.key!)).map((r) => [r.key!, r]));
  compactTraces(
    files.traces,
    new Set([...done.values()].map((r) => r.traceId).filter((t): t is string => t !== undefined)),
  );
  const campaignId = state.campaignId;

  // One plan file per (condition, repetition).
  const plansDir = join(out, 'plans');
  if (!existsSync(plansDir)) mkdirSync(plansDir);
  const written = new Set<string>();
  const planFile = (r: PlannedRun): string => {
    const f = join(plansDir, `${plan.matrix.conditions.indexOf(r.condition) + 1}-rep${r.rep}.json`);
    if (!written.has(f)) {
      writeFileSync(f, `${JSON.stringify(planOf(r.condition, r.seed), null, 2)}\n`);
      written.add(f);
    }
    return f;
  };
  const runsDir = join(out, 'runs');
  if (!existsSync(runsDir)) mkdirSync(runsDir);

  const pending = plan.runs.filter((r) => !done.has(r.key));
  const records: RunRecord[] = [...done.values()];
  const total = plan.runs.length;
  o.onStart?.({ total, done: records.length });
  // Task ids per pair, kept across a resume: a finished run's own id, and the twin id a finished faulted run points to.
  const ids = new Map<number, { faulted: string; clean: string }>();
  const idsOf = (pair: number): { faulted: string; clean: string } => {
    let v = ids.get(pair);
    if (!v) ids.set(pair, (v = { faulted: runTaskId(campaignId, pair), clean: runTaskId(campaignId, pair) }));
    for (const r of records) {
      if (r.pair !== pair) continue;
      if (!r.faulted) v.clean = r.taskId;
      else {
        v.faulted = r.taskId;
        if (r.matchedTo !== undefined) v.clean = r.matchedTo;
      }
    }
    return v;
  };

  let spentCalls = records.reduce((a, r) => a + (r.llmCalls ?? 0), 0);
  let spentTokens = records.reduce((a, r) => a + (r.tokens ?? 0), 0);
  let inFlight = 0;
  let ran = 0;
  let stopped: string | undefined;
  let next = 0;
  let seq = records.reduce((m, r) => Math.max(m, r.run), 0);
  let warnedNoSpans = false;
  const budget = o.budget ?? {};
  const overBudget = (): boolean => {
    // Runs in flight are counted at the average cost so far: a budget is not overspent by the concurrency.
    const n = Math.max(1, records.length);
    const avgCalls = spentCalls / n;
    const avgTokens = spentTokens / n;
    return (
      (budget.calls !== undefined && spentCalls + inFlight * avgCalls >= budget.calls) ||
      (budget.tokens !== undefined && spentTokens + inFlight * avgTokens >= budget.tokens)
    );
  };

  const onStop = (): void => {
    stopped = 'interrupted';
    void stopAll();
  };
  o.stopSignal?.addEventListener('abort', onStop, { once: true });
  const runOne = async (r: PlannedRun): Promise<void> => {
    if (o.stopSignal?.aborted) return;
    const attempt = randomBytes(3).toString('hex');
    const dir = join(runsDir, `${r.pair}-${r.faulted ? 'f' : 'c'}-${attempt}`);
    mkdirSync(dir);
    const spanFile = join(dir, 'spans.jsonl');
    const traceId = randomBytes(16).toString('hex');
    const spanId = randomBytes(8).toString('hex');
    const twins = idsOf(r.pair);
    const taskId = r.faulted ? twins.faulted : twins.clean;
    const childEnv: NodeJS.ProcessEnv = {
      ...env,
      NODE_OPTIONS:
        `${env.NODE_OPTIONS ?? ''} --require ${JSON.stringify(registerJs)} --require ${JSON.stringify(runContextJs)}`.trim(),
      FAULTLINE_TRACES_FILE: spanFile,
      TRACEPARENT: `00-${traceId}-${spanId}-01`,
      FAULTLINE_CAMPAIGN_TASK: JSON.stringify(r.task.fields),
    };
    delete childEnv.TRACESTATE;
    if (r.faulted) childEnv.FAULTLINE_PLAN = planFile(r);
    else delete childEnv.FAULTLINE_PLAN;
    Object.assign(childEnv, arcfEnv(r, env, out, o.fallbackModel));
    if (r.bare)
      for (const k of ['FAULTLINE_TRACES_FILE', 'TRACEPARENT', 'FAULTLINE_PLAN', 'FAULTLINE_GUARDS'])
        delete childEnv[k];
    const result = await runProcess({
      argv: r.argv,
      env: childEnv,
      ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
      timeoutMs: o.timeoutMs ?? 300_000,
      stdoutFile: join(dir, 'stdout.txt'),
      stderrFile: join(dir, 'stderr.txt'),
    });
    // Stopped by us, not by the fault: not a result (a resumed campaign makes this run again).
    if (o.stopSignal?.aborted) return;
    let verdict: { success: boolean; reason: string };
    if (result.spawnError !== undefined)
      verdict = { success: false, reason: `could not start ${JSON.stringify(r.argv[0])}: ${result.spawnError}` };
    else if (result.timedOut)
      verdict = { success: false, reason: `timed out after ${Math.round((o.timeoutMs ?? 300_000) / 1000)} s` };
    else
      verdict = await oracle.judge({
        task: r.task,
        stdout: result.stdout,
        stderr: result.stderr,
        exitCode: result.exitCode,
        signal: result.signal,
      });
    const error =
      result.spawnError ??
      (result.timedOut
        ? 'timed out'
        : result.signal
          ? `killed by ${result.signal}`
          : result.exitCode !== 0
            ? `exit code ${String(result.exitCode)}`
            : undefined);
    const labelled = buildRunTrace(spanFile, {
      traceId,
      spanId,
      name: `${GEN_AI_OPERATION_INVOKE_WORKFLOW} ${r.task.id}`,
      startMs: result.startedAt,
      endMs: result.endedAt,
      attributes: {
        [ATTR_FL_TASK_ID]: taskId,
        [ATTR_CAMPAIGN_ID]: campaignId,
        [ATTR_CAMPAIGN_PAIR]: r.pair,
        [ATTR_CAMPAIGN_TASK]: r.task.id,
        [ATTR_CAMPAIGN_REP]: r.rep,
        ...(result.exitCode !== null ? { 'process.exit.code': result.exitCode } : {}),
        [ATTR_TASK_SUCCESS]: verdict.success,
        // Ground truth: the role of the run (stripped before any diagnoser sees the trace).
        [ATTR_FL_FAULT_CONDITION]: r.faulted ? r.condition.id : 'clean',
      },
      ...(error !== undefined ? { error } : {}),
    });
    const facts = runFacts(labelled.trace);
    if (facts.spans === 0 && !warnedNoSpans && !r.bare) {
      warnedNoSpans = true;
      o.onNote?.(
        `run ${r.pair} (${r.task.id}, ${r.faulted ? r.condition.id : 'clean'}) wrote no spans: faultline/register is loaded through NODE_OPTIONS, so the command must start Node (see ${join(dir, 'stderr.txt')})`,
      );
    }
    const record: RunRecord = {
      run: ++seq,
      key: r.key,
      taskId,
      traceId,
      study: r.arm === 'arcf' || r.bare ? 'arcf' : 'main',
      task: r.task.id,
      arm: r.arm ?? 'none',
      ...(r.bare ? { bare: true } : {}),
      ...(r.arm === 'arcf' ? { arcf: arcfTraceFacts(labelled.trace) } : {}),
      rep: r.rep,
      pair: r.pair,
      seed: r.seed,
      condition: r.faulted ? r.condition.id : 'clean',
      cell: r.condition.id,
      ...(r.condition.strategy !== undefined ? { strategy: r.condition.strategy } : {}),
      faulted: r.faulted,
      ...(r.faulted ? { matchedTo: twins.clean } : {}),
      success: verdict.success,
      reason: verdict.reason,
      // The program's own claim: exit code 0 is an accept (the silent-failure rule).
      decision: result.exitCode === 0 && !result.timedOut ? 'accept' : 'reject',
      triggered: r.faulted ? facts.triggered : false,
      detections: facts.detections,
      guardEvents: facts.guardEvents,
      errorSpans: facts.errorSpans,
      durationMs: result.endedAt - result.startedAt,
      exitCode: result.exitCode,
      signal: result.signal,
      llmCalls: facts.llmCalls,
      tokens: facts.tokens,
    };
    try {
      // The trace first: a record always has its trace line (compactTraces drops a trace without a record).
      appendFileSync(files.traces, `${labelled.line}\n`);
      appendFileSync(files.runs, `${JSON.stringify(record)}\n`);
    } catch (err) {
      throw writeFailed('--out', o.out, err);
    }
    rmSync(spanFile, { force: true });
    spentCalls += facts.llmCalls;
    spentTokens += facts.tokens;
    records.push(record);
    ran++;
    o.onRun?.(records.length, total, record);
  };

  const worker = async (): Promise<void> => {
    while (next < pending.length) {
      if (o.signal?.aborted || o.stopSignal?.aborted) {
        stopped ??= 'interrupted';
        return;
      }
      if (overBudget()) {
        if (stopped === undefined)
          o.onNote?.(
            `budget reached (${spentCalls} LLM calls, ${spentTokens} tokens spent${budget.calls !== undefined ? `; --max-calls ${budget.calls}` : ''}${budget.tokens !== undefined ? `; --max-tokens ${budget.tokens}` : ''}): no new runs start`,
          );
        stopped = 'budget reached';
        return;
      }
      const r = pending[next++]!;
      inFlight++;
      try {
        await runOne(r);
      } finally {
        inFlight--;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency ?? 4, pending.length || 1)) }, worker));
  } finally {
    o.stopSignal?.removeEventListener('abort', onStop);
  }

  records.sort((a, b) => a.run - b.run);
  const summary = analyse(records);
  const arcf = o.arms?.includes('arcf') ? arcfSummary(records, { baseline: 'main' }) : undefined;
  const wallMs = Date.now() - started;
  const meta: ReportMeta = {
    preset: o.cmd,
    startedAt: state.createdAt,
    wallMs,
    model: `command ${JSON.stringify(o.cmd)} · oracle ${oracle.describe}`,
    interrupted: stopped !== undefined,
    tracesFile: files.traces,
    dimension: 'task',
    ...(stopped !== undefined ? { stopped } : {}),
  };
  try {
    writeFileSync(
      files.summary,
      `${JSON.stringify({ meta, matrix: { conditions: plan.matrix.conditions, seeds: plan.matrix.seeds }, tasks: plan.tasks.map((t) => t.fields), summary, ...(arcf ? { arcf } : {}), runs: records }, null, 2)}\n`,
    );
    writeFileSync(files.report, renderHtml(summary, meta, records));
  } catch (err) {
    throw writeFailed('--out', o.out, err);
  }
  return {
    summary,
    records,
    interrupted: stopped !== undefined,
    ...(stopped !== undefined ? { stopped } : {}),
    ran,
    files,
    text: renderText(summary, meta) + (arcf ? `\n\n${renderArcf(arcf)}` : ''),
    wallMs,
  };
}
