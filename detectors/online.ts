/**
 * Online detection: the same detectors, run on what the interceptor and the channel saw, with a bounded per-task
 * history as context. Each finding becomes a `faultline.detection` event on the exchange / handoff span, so offline
 * diagnosis works even when message content was not captured. Cheap: one observation per call, no I/O, and nothing
 * thrown into the application.
 */
import { context as otelContext, trace, type Context, type Span } from '@opentelemetry/api';
import { observationScope, type WorkflowEvent } from '../instrumentation/agents/declarations';
import { resolveTaskId } from '../instrumentation/agents/task';
import {
  ATTR_FL_DETECTION_CONFIDENCE,
  ATTR_FL_DETECTION_DETECTOR,
  ATTR_FL_DETECTION_EVIDENCE,
  ATTR_FL_DETECTION_FAILURE,
  ATTR_FL_DETECTION_FAULT_TYPE,
  ATTR_FL_DETECTION_LOCATION,
  ATTR_FL_DETECTION_MAST_MODE,
  ATTR_FL_DETECTION_SEVERITY,
  EVENT_FL_DETECTION,
} from '../instrumentation/semconv';
import type { AgentMessage, DeliveryContext, Exchange, ExchangeOutcome } from '../instrumentation/types';
import { flushExchanges } from '../instrumentation/interceptor';
import { logger, safely } from '../src/diag';
import { now } from '../src/clock';
import { median } from '../src/stats';
import { HISTORY_WINDOW, remember } from './history';
import { workflowFindings, workflowSnapshot } from './monitors/index';
import { runDetectors } from './registry';
import type {
  DetectionContext,
  Detector,
  Finding,
  LlmObservation,
  MessageContract,
  MessageObservation,
  Observation,
} from './types';

const log = logger('detectors');

/** Name of the zero-length span that carries detections when the exchange span already ended (from-span.ts reads
 * it under the same name). */
export const DETECTION_SPAN_NAME = 'faultline.detection';

export interface OnlineDetectionOptions {
  /** Detector names or instances (default: every registered detector). */
  detectors?: readonly (string | Detector)[];
  contracts?: readonly MessageContract[];
  ttlMs?: number;
  /** Deadline of a message delivery, by message (e.g. per boundary). */
  deadlineMs?: number | ((message: AgentMessage) => number | undefined);
  /** Observations kept per task as context (default HISTORY_WINDOW, 32). */
  historySize?: number;
  /** Tasks remembered at once (default 1000; the least recently active is forgotten first). */
  maxTasks?: number;
  /** Bytes the remembered observations of all tasks may hold together (default 16 MiB; the least recently active
   * task's oldest observations are forgotten first). Observations are remembered compactly (see history.ts). */
  historyBytes?: number;
  /** Called with every finding, after it was recorded. */
  onFinding?: (finding: Finding, observation: Observation) => void;
  /** Clock (epoch ms), for tests. */
  now?: () => number;
}

export interface OnlineDetection {
  onExchangeEnd(exchange: Exchange, outcome: ExchangeOutcome): void;
  onDelivery(ctx: DeliveryContext, original: AgentMessage, delivered: AgentMessage[]): void;
  /** Run the detectors on an observation of the given task and record the findings on `span` (used by guards). */
  observe(observation: Observation, taskId: string, span: Span | undefined, parent?: Context): Finding[];
  /** The workflow monitors at a workflow's deadline and end (`configureWorkflows({ onWorkflowEvent })`): findings
   * on the workflow span, judged with the task's history. */
  onWorkflowEvent(event: WorkflowEvent): void;
}

/** The attributes of one `faultline.detection` event. */
export function detectionAttributes(f: Finding): Record<string, string | number> {
  const a: Record<string, string | number> = {
    [ATTR_FL_DETECTION_DETECTOR]: f.detector,
    [ATTR_FL_DETECTION_FAULT_TYPE]: f.faultType,
    [ATTR_FL_DETECTION_SEVERITY]: f.severity,
    [ATTR_FL_DETECTION_CONFIDENCE]: f.confidence,
    [ATTR_FL_DETECTION_EVIDENCE]: f.evidence,
  };
  if (f.location?.field !== undefined) a[ATTR_FL_DETECTION_LOCATION] = f.location.field;
  if (f.failure !== undefined) a[ATTR_FL_DETECTION_FAILURE] = f.failure;
  if (f.mast !== undefined) a[ATTR_FL_DETECTION_MAST_MODE] = f.mast;
  return a;
}

/**
 * Record findings as events on `span`; when it already ended, on a zero-length child span named
 * `faultline.detection` (offline readers attribute those events to the parent).
 */
export function recordFindings(findings: readonly Finding[], span: Span | undefined, parent?: Context): void {
  if (findings.length === 0 || !span) return;
  let target = span;
  let child: Span | undefined;
  if (!span.isRecording()) {
    const ctx = parent ?? trace.setSpan(otelContext.active(), span);
    child = trace.getTracer('faultline').startSpan(DETECTION_SPAN_NAME, { startTime: now() }, ctx);
    target = child;
  }
  const at = now();
  for (const f of findings) target.addEvent(EVENT_FL_DETECTION, detectionAttributes(f), at);
  child?.end(at);
}

/** Durations per route, for latency baselines. */
class Baselines {
  readonly #windows = new Map<string, number[]>();
  add(route: string, ms: number): void {
    let w = this.#windows.get(route);
    if (!w) this.#windows.set(route, (w = []));
    w.push(ms);
    if (w.length > 32) w.shift();
  }
  get(route: string): { medianMs: number; madMs: number } | undefined {
    const w = this.#windows.get(route);
    if (!w || w.length < 8) return undefined;
    const m = median(w);
    return { medianMs: m, madMs: median(w.map((x) => Math.abs(x - m))) };
  }
}

/**
 * The earlier observations of each task, bounded three ways: per task (a count), in tasks, and in bytes across all
 * of them. Map iteration order is insertion order, so the first task is the least recently active.
 */
class TaskHistory {
  readonly #tasks = new Map<string, { obs: Observation[]; bytes: number[] }>();
  #bytes = 0;

  constructor(
    private readonly perTask: number,
    private readonly maxTasks: number,
    private readonly maxBytes: number,
  ) {}

  /** The task's earlier observations, oldest first; marks the task as the most recently active. */
  earlier(task: string): readonly Observation[] {
    let h = this.#tasks.get(task);
    if (h) this.#tasks.delete(task);
    else h = { obs: [], bytes: [] };
    this.#tasks.set(task, h);
    if (this.#tasks.size > this.maxTasks) this.#dropTask(this.#tasks.keys().next().value as string);
    return h.obs;
  }

  add(task: string, observation: Observation): void {
    const h = this.#tasks.get(task);
    if (!h) return;
    const { obs, bytes } = remember(observation);
    h.obs.push(obs);
    h.bytes.push(bytes);
    this.#bytes += bytes;
    if (h.obs.length > this.perTask) this.#shift(h);
    // Forget the least recently active task's oldest observations first; the one just added always stays.
    while (this.#bytes > this.maxBytes) {
      const [oldest, first] = this.#tasks.entries().next().value as [string, { obs: Observation[]; bytes: number[] }];
      if (first === h) {
        if (h.obs.length <= 1) break;
        this.#shift(h);
      } else if (first.obs.length <= 1) this.#dropTask(oldest);
      else this.#shift(first);
    }
  }

  #shift(h: { obs: Observation[]; bytes: number[] }): void {
    h.obs.shift();
    this.#bytes -= h.bytes.shift() ?? 0;
  }

  #dropTask(task: string): void {
    const h = this.#tasks.get(task);
    if (!h) return;
    for (const b of h.bytes) this.#bytes -= b;
    this.#tasks.delete(task);
  }
}

export function createOnlineDetection(options: OnlineDetectionOptions = {}): OnlineDetection {
  const now = options.now ?? Date.now;
  const history = new TaskHistory(
    options.historySize ?? HISTORY_WINDOW,
    options.maxTasks ?? 1000,
    options.historyBytes ?? 16 * 1024 * 1024,
  );
  const baselines = new Baselines();

  function observe(
    obs: Observation,
    task: string,
    span: Span | undefined,
    parent?: Context,
    latency?: { medianMs: number; madMs: number },
  ): Finding[] {
    const ctx: DetectionContext = { earlier: history.earlier(task), now: now() };
    if (options.contracts) ctx.contracts = options.contracts;
    if (options.ttlMs !== undefined) ctx.ttlMs = options.ttlMs;
    if (latency) ctx.latency = latency;
    const findings = runDetectors(obs, ctx, options.detectors);
    history.add(task, obs);
    recordFindings(findings, span, parent);
    if (options.onFinding)
      for (const f of findings) safely(log, 'onFinding', () => options.onFinding?.(f, obs), undefined);
    return findings;
  }

  return {
    onExchangeEnd(exchange, outcome) {
      safely(
        log,
        'online detection (exchange)',
        () => {
          if (!exchange.llmRequest || !outcome.response) return;
          const spanId = exchange.span.spanContext().spanId;
          const obs: LlmObservation = {
            kind: 'llm',
            spanId,
            request: exchange.llmRequest,
            response: outcome.response,
            hasContent: true,
          };
          const scope = observationScope(exchange.context);
          if (scope) obs.scope = scope;
          const route = `${exchange.provider}|${exchange.llmRequest.model ?? ''}`;
          // The task the fault plan and the guards see too: the explicit scope, the framework run, the trace or the process.
          const task = resolveTaskId(exchange.context, 'auto', exchange.span.spanContext().traceId);
          observe(obs, task, exchange.span, exchange.context, baselines.get(route));
          if (outcome.response.status !== undefined && outcome.response.status < 400 && !outcome.response.errorType)
            baselines.add(route, outcome.durationMs);
        },
        undefined,
      );
    },
    onDelivery(ctx, original, delivered) {
      safely(
        log,
        'online detection (delivery)',
        () => {
          const obs: MessageObservation = {
            kind: 'message',
            spanId: ctx.span.spanContext().spanId,
            original,
            delivered,
            hasContent: true,
          };
          const scope = observationScope(ctx.context);
          if (scope) obs.scope = scope;
          if (original.sentAt !== undefined) obs.latencyMs = now() - original.sentAt;
          const deadline = typeof options.deadlineMs === 'function' ? options.deadlineMs(original) : options.deadlineMs;
          if (deadline !== undefined) obs.deadlineMs = deadline;
          const task = original.taskId ?? resolveTaskId(ctx.context, 'auto', ctx.span.spanContext().traceId);
          observe(obs, task, ctx.span, ctx.context);
        },
        undefined,
      );
    },
    observe: (obs, task, span, parent) => safely(log, 'online detection', () => observe(obs, task, span, parent), []),
    onWorkflowEvent(event) {
      safely(
        log,
        'workflow monitors',
        () => {
          if (event.type === 'step') return;
          // The span layer reads a response after the application had it: the workflow's last calls join the
          // task's history now, before the workflow is judged on them.
          flushExchanges();
          const wf = event.workflow;
          const task = wf.taskId ?? wf.span.spanContext().traceId;
          // The deadline event comes from a timer set for the deadline: it is the deadline, even when the timer's clock
          // (libuv's, cached per loop turn) let it fire a few ms before Date.now() says the deadline has passed.
          const at =
            event.type === 'deadline' && wf.declaration.deadlineMs !== undefined
              ? Math.max(now(), wf.startedAt + wf.declaration.deadlineMs)
              : now();
          const findings = workflowFindings(workflowSnapshot(wf, at), history.earlier(task));
          recordFindings(findings, wf.span);
        },
        undefined,
      );
    },
  };
}
