/**
 * The campaign's tracing harness, set up once per campaign: the OTel SDK with a span buffer (each finished run's spans
 * are taken out by trace id), the GenAI HTTP layer and the message channels, with the fault injector, the online
 * detectors and the guards wired in. Fault plan, protection arm and environment are chosen per task id, so runs of
 * different cells can proceed concurrently.
 *
 * It builds its own tracer provider rather than `start()`: a campaign needs every span of a run in memory the moment
 * the run ends (to label, count and write it), no exporters from the environment, and a clean shutdown so it can run
 * more than once in a process (tests).
 */
import { randomUUID } from 'node:crypto';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { configureChannels } from '../../instrumentation/agents/channel';
import { configureWorkflows, type WorkflowConfig } from '../../instrumentation/agents/declarations';
import { getTaskId } from '../../instrumentation/agents/task';
import { installInstrumentation } from '../../instrumentation/install';
import { ATTR_FL_TASK_ID } from '../../instrumentation/semconv';
import type { AgentMessage, DeliverStep, Interceptor } from '../../instrumentation/types';
import { detectorNames } from '../../detectors/index';
import { createGuards, guardPreset, type GuardConfigInput } from '../../detectors/guards/index';
import { createOnlineDetection } from '../../detectors/online';
import { createInjector } from '../inject/index';
import type { FaultPlanInput } from '../plan/schema';
import { arcfGuardConfig } from './arcf';
import type { Arm } from './matrix';

/** What one run needs: its plan (undefined = clean), its protection arm, and the family/task/environment for the
 * evidence guard's reacquisition. */
export interface RunSetup {
  plan?: { rules: Record<string, unknown>[] };
  arm: Arm;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- families differ in task and environment types
  family: any;
  task: unknown;
  /** The model the agents call (the `arcf` arm's fallback is another one). */
  model?: string;
}

export interface Harness {
  prepare(taskId: string, setup: RunSetup): void;
  bindEnv(taskId: string, env: unknown, sessionId?: string): void;
  /** The spans of a finished trace (removed from the buffer). */
  take(traceId: string): Promise<ReadableSpan[]>;
  /** The trace id of a task's workflow, found by its root span (when the run threw before returning it). */
  traceOf(taskId: string): string | undefined;
  release(taskId: string): void;
  shutdown(): Promise<void>;
}

/** Buffers ended spans by trace id until the runner takes them. */
class TraceBuffer implements SpanProcessor {
  readonly spans = new Map<string, ReadableSpan[]>();
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    const id = span.spanContext().traceId;
    const list = this.spans.get(id);
    if (list) list.push(span);
    else this.spans.set(id, [span]);
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    this.spans.clear();
    return Promise.resolve();
  }
}

export interface HarnessHooks {
  spanProcessors?: SpanProcessor[];
  httpSteps?: Interceptor[];
  channelSteps?: DeliverStep[];
  onExchangeEnd?: Parameters<typeof installInstrumentation>[0]['onExchangeEnd'];
  onDelivery?: Parameters<typeof configureChannels>[0]['onDelivery'];
  onWorkflowEvent?: WorkflowConfig['onWorkflowEvent'];
}

export interface RunState extends RunSetup {
  env?: unknown;
  taskId?: string;
  sessionId?: string;
}

/**
 * Build the harness. `wire` receives the per-task state lookup and returns the injector / detection / guard hooks.
 */
export async function createHarness(
  wire?: (state: (taskId: string) => RunState | undefined) => HarnessHooks | Promise<HarnessHooks>,
): Promise<Harness> {
  const runs = new Map<string, RunState>();
  const hooks = wire ? await wire((id) => runs.get(id)) : await defaultWiring((id) => runs.get(id));
  const buffer = new TraceBuffer();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'faultline-campaign' }),
    spanProcessors: [...(hooks.spanProcessors ?? []), buffer],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  const installed = installInstrumentation({
    tracer: () => trace.getTracer('faultline'),
    // The labelled traces carry message content: the evaluation's diagnosers (and a human reading a run) need it.
    captureContent: () => true,
    steps: hooks.httpSteps ?? [],
    ...(hooks.onExchangeEnd ? { onExchangeEnd: hooks.onExchangeEnd } : {}),
  });
  configureChannels({
    steps: hooks.channelSteps ?? [],
    ...(hooks.onDelivery ? { onDelivery: hooks.onDelivery } : {}),
    captureMessageContent: true,
  });
  configureWorkflows(hooks.onWorkflowEvent ? { onWorkflowEvent: hooks.onWorkflowEvent } : {});

  return {
    prepare(taskId, setup) {
      runs.set(taskId, { ...setup });
    },
    bindEnv(taskId, env, sessionId) {
      const r = runs.get(taskId);
      if (r) Object.assign(r, { env, taskId, ...(sessionId !== undefined ? { sessionId } : {}) });
    },
    async take(traceId) {
      await provider.forceFlush();
      const spans = buffer.spans.get(traceId) ?? [];
      buffer.spans.delete(traceId);
      return spans;
    },
    traceOf(taskId) {
      for (const [traceId, spans] of buffer.spans)
        if (spans.some((sp) => sp.attributes[ATTR_FL_TASK_ID] === taskId)) return traceId;
      return undefined;
    },
    release(taskId) {
      runs.delete(taskId);
    },
    async shutdown() {
      installed.uninstall();
      configureChannels({});
      configureWorkflows({});
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}

/**
 * Online detection runs in every arm: it is the system's own monitoring, the "detection signal" a silent failure
 * lacks. It runs the receiver-side detectors only: `message_integrity` is left out because it compares what was
 * delivered with the sender's original, an end-to-end digest the example systems do not carry (in the campaign the
 * original is simply the pre-fault message, so it would flag every content fault by construction). No user contracts
 * either: the receiver contracts are the evidence guards, a protection arm.
 */
export const CAMPAIGN_DETECTORS: readonly string[] = detectorNames().filter((n) => n !== 'message_integrity');

/** The injector, online detection and guards, each per task. */
async function defaultWiring(state: (taskId: string) => RunState | undefined): Promise<HarnessHooks> {
  // The plan objects are created once per condition (planFor), so the injector's parse cache keys on them.
  const injector = createInjector((taskId) => state(taskId)?.plan as FaultPlanInput | undefined, {
    captureMessageContent: true,
  });
  const detection = createOnlineDetection({ detectors: CAMPAIGN_DETECTORS });
  const guards = createGuards((taskId) => (taskId === undefined ? undefined : guardConfigFor(state(taskId))), {
    // The receiving task is the one in whose context the delivery runs — not the task a (stale, foreign) message
    // claims to belong to.
    reacquire: (message) => readback(message, state(getTaskId() ?? message.taskId ?? '')),
    exportHealth: false,
  });
  // Guards sit outside the fault step: they see what the fault did and can resubmit through it.
  return {
    spanProcessors: [injector.spanProcessor],
    httpSteps: [guards.httpStep, injector.httpStep],
    channelSteps: [guards.channelStep, injector.channelStep],
    onExchangeEnd: detection.onExchangeEnd,
    onDelivery: detection.onDelivery,
    onWorkflowEvent: detection.onWorkflowEvent,
  };
}

const configs = new Map<string, GuardConfigInput>();

/** The protection arm's guard config for a run: the preset routes, plus the family's receiver contract when the
 * evidence guards are on. One object per (arm, family), so the guards parse it once. */
export function guardConfigFor(run: RunState | undefined): GuardConfigInput | undefined {
  if (!run || run.arm === 'none') return undefined;
  const key = `${run.arm}|${String(run.family?.name)}`;
  let config = configs.get(key);
  if (!config && run.arm === 'arcf')
    configs.set(key, (config = arcfGuardConfig(run.family, run.model ?? 'faultline-mock-1')));
  if (!config) {
    const preset = guardPreset(run.arm as Exclude<Arm, 'arcf'>);
    const evidence = run.arm === 'evidence' || run.arm === 'both';
    config = {
      routes: preset.routes,
      ...(evidence
        ? {
            contracts: [
              {
                name: `${String(run.family?.name)} evidence`,
                match: { boundary: 'I4' },
                requiredEvidence: run.family?.evidenceFields ?? {},
                evidenceMirror: 'evidence',
                ...(run.family?.name === 'shopping' ? { identity: ['product_id', 'sku'] } : {}),
              },
            ],
          }
        : {}),
    };
    configs.set(key, config);
  }
  return config;
}

/** The guarded readback: fresh evidence observed straight from the receiving run's environment, as a new envelope
 * bound to that run's task and session. */
function readback(message: AgentMessage, run: RunState | undefined): AgentMessage | undefined {
  if (!run || run.env === undefined || typeof run.family?.reobserve !== 'function') return undefined;
  const fresh = run.family.reobserve(run.env, run.task) as Record<string, unknown>;
  const taskId = run.taskId ?? message.taskId;
  const sessionId = run.sessionId ?? message.sessionId;
  return {
    ...message,
    id: randomUUID(),
    source: 'EnvironmentReadback',
    ...(taskId !== undefined ? { taskId } : {}),
    ...(sessionId !== undefined ? { sessionId } : {}),
    version: (message.version ?? 1) + 2,
    sentAt: Date.now(),
    payload: {
      task_id: taskId,
      session_id: sessionId,
      ...fresh,
      evidence_id: `readback-${randomUUID().slice(0, 8)}`,
      source: 'EnvironmentReadback',
      evidence: JSON.stringify(fresh),
    },
  };
}
