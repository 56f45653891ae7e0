/**
 * The campaign runner: for each cell of the matrix, a clean run and the faulted run (fresh task ids, same family,
 * task, topology, protection arm and repetition), each traced end to end. Every finished run is appended at once to
 * the labelled trace file as one OTLP JSON line, so an interrupted campaign keeps everything it finished; the
 * summary and reports are written from whatever finished.
 *
 * The workflows come in `options.workloads` (the CLI and the public `runCampaign` pass the examples of examples/):
 * the campaign layer never imports an application.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { SpanStatusCode } from '@opentelemetry/api';
import {
  ATTR_FL_FAULT_NOOP,
  EVENT_FL_DETECTION,
  EVENT_FL_FAULT_INJECTED,
  EVENT_FL_GUARD,
} from '../../instrumentation/semconv';
import { analyse, type CampaignSummary, type RunRecord } from './analysis';
import { createHarness, type Harness } from './harness';
import {
  ATTR_CAMPAIGN_ARM,
  ATTR_CAMPAIGN_FAMILY,
  ATTR_CAMPAIGN_ID,
  ATTR_CAMPAIGN_PAIR,
  ATTR_CAMPAIGN_REP,
  ATTR_CAMPAIGN_TASK,
  ATTR_CAMPAIGN_TOPOLOGY,
  runTaskId,
} from './labels';
import { renderArcf } from '../report/arcf';
import { arcfCells, arcfPlan, arcfReliability } from './arcf';
import { arcfRunFacts } from './arcf-facts';
import { measureOverhead } from './arcf-overhead';
import { arcfSummary } from './arcf-summary';
import { expand, planFor, type CampaignSpec, type Cell } from './matrix';
import { renderHtml, renderText, type ReportMeta } from './report';
import type { CampaignWorkloads } from './types';
import { checkWritable, ensureDir } from '../report/output';

export interface CampaignOptions {
  spec: CampaignSpec;
  /** The workflows to run (examples/index.ts for the example systems). */
  workloads: CampaignWorkloads;
  /** Output directory (created). */
  out: string;
  /** Cells run at once (default 4). */
  concurrency?: number;
  /** Called after each finished run. */
  onRun?: (done: number, total: number, record: RunRecord) => void;
  /** Abort: no new cells start; runs in flight finish and are kept. */
  signal?: AbortSignal;
  /** Model options (default: the embedded mock model, or OPENAI_BASE_URL / FAULTLINE_MODEL). `embedded` ignores the
   * environment and always uses the embedded mock model. */
  model?: { baseURL?: string; apiKey?: string; model?: string; embedded?: boolean };
  /** Give up on a single run after this long (default 60 s); it is recorded as a failure. */
  runTimeoutMs?: number;
}

export interface CampaignResult {
  summary: CampaignSummary;
  /** The ARCF study's table, when the campaign ran it. */
  arcf?: import('./arcf-summary').ArcfSummary;
  records: RunRecord[];
  interrupted: boolean;
  files: { traces: string; summary: string; report: string };
  text: string;
  wallMs: number;
}

export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const started = Date.now();
  // Checked before the first run: an output directory that cannot be written is an input error, not lost work.
  const out = ensureDir(options.out, '--out');
  const files = {
    traces: join(out, 'traces.jsonl'),
    summary: join(out, 'summary.json'),
    report: join(out, 'report.html'),
  };
  for (const f of Object.values(files)) checkWritable(f, '--out');

  const examples = options.workloads;
  const { embedded, ...modelOptions } = options.model ?? {};
  const llm = await examples.connectModel({ ...modelOptions, ...(embedded ? { env: {} } : {}) });
  const harness: Harness = await createHarness();
  const traces: WriteStream = createWriteStream(files.traces, { flags: 'w' });
  const campaignId = `c${started.toString(36)}`;

  const tasksOf = (f: string) => (examples.FAMILIES[f]?.tasks ?? []).map((t: { id: string }) => t.id);
  const cells = [...expand(options.spec, tasksOf), ...arcfCells(options.spec, tasksOf)];
  const total = cells.length * 2;
  const records: RunRecord[] = [];
  let seq = 0;
  let next = 0;
  let interrupted = false;

  const runOne = async (
    cell: Cell,
    cellNo: number,
    ids: { faulted: string; clean: string },
    faulted: boolean,
  ): Promise<RunRecord> => {
    const family = examples.FAMILIES[cell.family];
    const task = family.tasks.find((t: { id: string }) => t.id === cell.task);
    const taskId = faulted ? ids.faulted : ids.clean;
    const matchedTo = faulted ? ids.clean : undefined;
    const runNo = ++seq;
    harness.prepare(taskId, {
      plan: faulted ? (cell.study === 'arcf' ? arcfPlan(cell) : planFor(cell.condition)) : undefined,
      arm: cell.arm,
      family,
      task,
      model: llm.model,
    });
    // The same labels on both twins (labels.ts): the role is only in the ground truth (the condition).
    const attributes: Record<string, string | number | boolean> = {
      [ATTR_CAMPAIGN_ID]: campaignId,
      [ATTR_CAMPAIGN_PAIR]: cellNo,
      [ATTR_CAMPAIGN_FAMILY]: cell.family,
      [ATTR_CAMPAIGN_TASK]: cell.task,
      [ATTR_CAMPAIGN_TOPOLOGY]: cell.topology,
      [ATTR_CAMPAIGN_ARM]: cell.arm,
      [ATTR_CAMPAIGN_REP]: cell.rep,
    };
    const t0 = Date.now();
    let success = false;
    let reason = '';
    let decision: string | undefined;
    let traceId: string | undefined;
    try {
      const run = await withTimeout(
        examples.runTask({
          family,
          task,
          topology: cell.topology,
          llm,
          taskId,
          condition: faulted ? cell.condition.id : 'clean',
          attributes,
          onEnv: (env: unknown, binding: { taskId: string; sessionId: string }) =>
            harness.bindEnv(taskId, env, binding.sessionId),
          ...(cell.arm === 'arcf' ? { reliability: arcfReliability() } : {}),
        }),
        options.runTimeoutMs ?? 60_000,
      );
      success = run.outcome.success;
      reason = run.outcome.reason;
      decision = typeof run.decision?.decision === 'string' ? run.decision.decision : undefined;
      traceId = run.traceId;
    } catch (err) {
      reason = `run failed: ${err instanceof Error ? err.message : String(err)}`;
    }
    traceId ??= harness.traceOf(taskId);
    const spans = traceId ? await harness.take(traceId) : [];
    harness.release(taskId);
    const facts = traceFacts(spans);
    if (spans.length > 0)
      traces.write(
        `${Buffer.from(JsonTraceSerializer.serializeRequest(spans) ?? new Uint8Array()).toString('utf8')}\n`,
      );
    const record: RunRecord = {
      run: runNo,
      taskId,
      ...(traceId ? { traceId } : {}),
      study: cell.study,
      family: cell.family,
      task: cell.task,
      topology: cell.topology,
      arm: cell.arm,
      rep: cell.rep,
      condition: faulted ? cell.condition.id : 'clean',
      cell: cell.condition.id,
      faulted,
      ...(matchedTo ? { matchedTo } : {}),
      success,
      reason,
      ...(decision ? { decision } : {}),
      triggered: faulted ? facts.triggered : false,
      detections: facts.detections,
      guardEvents: facts.guardEvents,
      errorSpans: facts.errorSpans,
      durationMs: Date.now() - t0,
      ...(cell.study === 'arcf' ? { arcf: arcfRunFacts(spans) } : {}),
    };
    records.push(record);
    options.onRun?.(records.length, total, record);
    return record;
  };

  const worker = async (): Promise<void> => {
    while (next < cells.length) {
      if (options.signal?.aborted) {
        interrupted = true;
        return;
      }
      const i = next++;
      // The faulted run first: its cross-task donors (stale replay) are then other cells' messages, not its twin's.
      const ids = { faulted: runTaskId(campaignId, i + 1), clean: runTaskId(campaignId, i + 1) };
      await runOne(cells[i], i + 1, ids, true);
      await runOne(cells[i], i + 1, ids, false);
    }
  };
  let overhead: Awaited<ReturnType<typeof measureOverhead>> | undefined;
  try {
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 4) }, worker));
  } finally {
    await new Promise<void>((r) => traces.end(() => r()));
    await harness.shutdown();
    // ARCF's observability overhead: clean tasks with and without faultline, once the harness is gone.
    if (!options.signal?.aborted && cells.some((c) => c.study === 'arcf')) {
      const family = examples.FAMILIES[options.spec.families[0] ?? 'shopping'];
      overhead = await measureOverhead(() =>
        examples.runTask({ family, task: family.tasks[0], topology: 'sequential', llm }),
      ).catch(() => undefined);
    }
    await llm.close();
  }
  if (options.signal?.aborted && next < cells.length) interrupted = true;

  // Only complete pairs count: an interrupted cell's lone clean run has no faulted twin.
  const summary = analyse(records);
  const wallMs = Date.now() - started;
  const meta: ReportMeta = {
    preset: options.spec.name,
    startedAt: new Date(started).toISOString(),
    wallMs,
    model: `model ${llm.model}${llm.embedded ? ' (embedded mock)' : ` @ ${llm.baseURL}`}`,
    interrupted,
    tracesFile: files.traces,
  };
  records.sort((a, b) => a.run - b.run);
  const arcf = arcfSummary(records);
  if (arcf && overhead) arcf.overhead = overhead;
  await writeFile(
    files.summary,
    `${JSON.stringify({ meta, spec: options.spec, summary, ...(arcf ? { arcf } : {}), runs: records }, null, 2)}\n`,
  );
  await writeFile(files.report, renderHtml(summary, meta, records));
  return {
    summary,
    records,
    interrupted,
    files,
    text: renderText(summary, meta) + (arcf ? `\n\n${renderArcf(arcf)}` : ''),
    wallMs,
    ...(arcf ? { arcf } : {}),
  };
}

/** What a run's trace says: did the fault fire, and what signalled a problem. */
export function traceFacts(spans: ReadableSpan[]): {
  triggered: boolean;
  detections: number;
  guardEvents: number;
  errorSpans: number;
} {
  let triggered = false;
  let detections = 0;
  let guardEvents = 0;
  let errorSpans = 0;
  for (const s of spans) {
    if (s.status.code === SpanStatusCode.ERROR) errorSpans++;
    const spanNoop = s.attributes[ATTR_FL_FAULT_NOOP] === true;
    for (const e of s.events) {
      if (e.name === EVENT_FL_DETECTION) detections++;
      else if (e.name === EVENT_FL_GUARD) guardEvents++;
      // The same rule the evaluation's ground truth uses: a fault.injected record that was not a no-op.
      else if (e.name === EVENT_FL_FAULT_INJECTED && !spanNoop && e.attributes?.[ATTR_FL_FAULT_NOOP] !== true)
        triggered = true;
    }
  }
  return { triggered, detections, guardEvents, errorSpans };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`run did not finish within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
