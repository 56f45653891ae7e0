/**
 * One task of a multi-agent workflow in the three topologies of "When Messages Go Wrong":
 *
 *   sequential    Planner ─I1→ Worker ⇄(I2 action / I3 observation) Executor;  Worker ─I4→ Verifier ─judgment→ Decision
 *   flat          sequential + a direct Worker ─I4→ Decision evidence branch
 *   hierarchical  Supervisor ─I1→ Worker ⇄ Executor;  Worker ─I4→ Supervisor (verifies and decides)
 *
 * Every handoff goes through a faultline MessageChannel (a handoff span; where faults and guards apply). The outcome is
 * judged by the family's evaluator from the environment, after the workflow ran.
 */
import { randomUUID } from 'node:crypto';
import { MessageChannel } from '../../instrumentation/agents/channel';
import { checkpoint, type WorkflowRecovery } from '../../instrumentation/agents/declarations';
import { runWorkflow } from '../../instrumentation/agents/task';
import { verificationPipeline } from '../../detectors/guards/verify';
import { ATTR_FL_FAULT_CONDITION } from '../../instrumentation/semconv';
import type { AgentMessage } from '../../instrumentation/types';
import { ATTR_TASK_SUCCESS } from '../../src/campaign/labels';
import type { Json, Outcome, TaskDef, TaskFamily } from './family';
import type { ModelConnection } from './model';
import { decision, planner, verifier, worker } from './roles';

export const TOPOLOGIES = ['sequential', 'flat', 'hierarchical'] as const;
export type Topology = (typeof TOPOLOGIES)[number];

/** Where one evidence handoff goes instead of the in-process channel (the A2A variant plugs in here). */
export type EvidenceTransport = (message: Omit<AgentMessage, 'id'> & { id?: string }) => Promise<AgentMessage[]>;

export interface RunTaskOptions<T extends TaskDef, Env> {
  family: TaskFamily<T, Env>;
  task: T;
  topology: Topology;
  llm: ModelConnection;
  /** Default: a fresh id. The fault plan's per-task state keys on it. */
  taskId?: string;
  channel?: MessageChannel;
  /** Campaign condition label, recorded as faultline.fault.condition on the workflow span (ground truth). */
  condition?: string;
  /** Extra attributes for the workflow span. */
  attributes?: Record<string, string | number | boolean>;
  /** Called with the fresh environment and the run's binding before the agents start (the evidence guard's
   * reacquisition reads the environment and addresses its fresh envelope to this task and session). */
  onEnv?: (env: Env, binding: { taskId: string; sessionId: string }) => void;
  /** Send the Worker → Verifier/Supervisor evidence handoff through this instead of the channel. */
  evidenceTransport?: EvidenceTransport;
  /** ARCF's protection (the campaign's `arcf` arm): every stage a verified checkpoint, rolled back and resumed by
   * this recovery guard. */
  reliability?: { checkpoints: WorkflowRecovery; deadlineMs?: number };
}

export interface TaskRun {
  taskId: string;
  traceId?: string;
  family: string;
  task: string;
  topology: Topology;
  outcome: Outcome;
  /** The final decision as the deciding agent gave it, if it gave one. */
  decision?: Json;
  /** What the environment said to the commit, if the decision was acted on. */
  commit?: Json;
}

export async function runTask<T extends TaskDef, Env>(opts: RunTaskOptions<T, Env>): Promise<TaskRun> {
  const { family, task, topology, llm } = opts;
  const taskId = opts.taskId ?? `${task.id}-${randomUUID().slice(0, 8)}`;
  const sessionId = `session-${taskId}`;
  const channel = opts.channel ?? new MessageChannel({ name: 'workflow' });
  const env = family.createEnv(task);
  opts.onEnv?.(env, { taskId, sessionId });

  const attributes: Record<string, string | number | boolean> = { ...opts.attributes };
  if (opts.condition !== undefined) attributes[ATTR_FL_FAULT_CONDITION] = opts.condition;
  const reliability = opts.reliability;
  const verify = reliability ? stageVerifiers(family) : undefined;
  let traceId: string | undefined;

  /**
   * One stage of the workflow. Without `reliability` it just runs. With it, it is a checkpoint: its output is
   * verified (ARCF's three tiers) before it is saved with a snapshot of the environment, a failed verification runs
   * the stage again and then rolls the workflow back, and a resumed workflow restores the stage (and the environment
   * as it was after it) instead of running it again.
   */
  const stage = async <S extends Json>(
    name: string,
    fn: () => Promise<S>,
    check?: (s: S) => Promise<{ ok: boolean; reason?: string }>,
  ): Promise<S> => {
    if (!reliability) return fn();
    const saved = await checkpoint(name, async () => ({ out: await fn(), env: family.snapshot(env) }), {
      retries: 1,
      ...(check ? { verify: (s: { out: S }) => check(s.out) } : {}),
      restore: (s) => family.restore(env, s.env),
    });
    return saved.out;
  };

  const body = async (span: import('@opentelemetry/api').Span): Promise<TaskRun> => {
    traceId = span.spanContext().traceId;
    const envelope = (source: string, target: string, boundary: string, payload: Json) => ({
      source,
      target,
      boundary,
      taskId,
      sessionId,
      version: 1,
      payload: { task_id: taskId, session_id: sessionId, ...payload },
    });
    const first = (delivered: AgentMessage[]): Json | undefined => delivered[0]?.payload as Json | undefined;
    const planRole = topology === 'hierarchical' ? 'Supervisor' : 'Planner';
    const evidenceTarget = topology === 'hierarchical' ? 'Supervisor' : 'Verifier';

    // 1. Plan, handed to the Worker (I1).
    const { plan: receivedPlan } = await stage(
      'plan',
      async () => {
        const plan = await planner(llm, task, planRole);
        const planMsg = plan ? first(await channel.send(envelope(planRole, 'Worker', 'I1', { plan }))) : undefined;
        return { plan: (planMsg?.plan as Json | undefined) ?? null };
      },
      verify?.plan,
    );

    // 2. The Worker acts through the Executor (I2 action request, I3 observation) and reports evidence (I4).
    let actions = 0;
    const act = async (operation: string, args: Json): Promise<Json | undefined> => {
      const actionId = `${taskId}:action-${++actions}`;
      // The RQ4 action-request shape: the binding, the action id and the operation's parameters side by side.
      const delivered = await channel.send(
        envelope('Worker', 'Executor', 'I2', { action_id: actionId, operation, ...args }),
      );
      let observation: Json | undefined;
      // The Executor runs every request it receives: a duplicated request is executed twice.
      for (const m of delivered) {
        const { task_id: _t, session_id: _s, action_id, operation: op, ...params } = m.payload as Json;
        const result = family.runTool(env, task, String(op), params);
        const back = await channel.send(envelope('Executor', 'Worker', 'I3', { action_id, operation: op, ...result }));
        if (observation === undefined && back[0]) {
          const { task_id: _bt, session_id: _bs, action_id: _ba, operation: _bo, ...seen } = back[0].payload as Json;
          observation = seen;
        }
      }
      return observation;
    };
    const { evidence } = await stage(
      'work',
      async () => {
        const found = receivedPlan ? await worker(llm, family, env, task, receivedPlan as Json, act) : undefined;
        return { evidence: found ? evidencePayload(found) : null };
      },
      verify ? (s) => verify.work(s, receivedPlan as Json | null) : undefined,
    );
    const sendEvidence = (target: string): Promise<AgentMessage[]> => {
      const msg = envelope('Worker', target, 'I4', evidence as Json);
      return opts.evidenceTransport && target === evidenceTarget ? opts.evidenceTransport(msg) : channel.send(msg);
    };

    // 3. Verification and decision.
    let final: Json | undefined;
    if (topology === 'hierarchical') {
      ({ final } = (await stage(
        'decide',
        async () => {
          const got = evidence ? first(await sendEvidence('Supervisor')) : undefined;
          return { final: (await decision(llm, task, undefined, got, 'Supervisor')) ?? null, received: got ?? null };
        },
        verify?.decide,
      )) as { final: Json | undefined });
    } else {
      const verified = await stage(
        'verify',
        async () => {
          const atVerifier = evidence ? first(await sendEvidence('Verifier')) : undefined;
          const direct = evidence && topology === 'flat' ? first(await sendEvidence('Decision')) : undefined;
          const verdict = await verifier(llm, task, atVerifier);
          // The Verifier forwards its judgment with the evidence it checked.
          const judgmentMsg = verdict
            ? first(
                await channel.send(
                  envelope('Verifier', 'Decision', 'judgment', {
                    verdict: verdict.verdict,
                    reason: verdict.reason,
                    evidence: atVerifier ?? null,
                  }),
                ),
              )
            : undefined;
          return {
            judgment: judgmentMsg ? { verdict: judgmentMsg.verdict, reason: judgmentMsg.reason } : null,
            forwarded: (judgmentMsg?.evidence as Json | undefined) ?? null,
            direct: direct ?? null,
            received: atVerifier ?? null,
          };
        },
        verify?.verify,
      );
      ({ final } = (await stage(
        'decide',
        async () => ({
          final:
            (await decision(
              llm,
              task,
              (verified.judgment as Json | null) ?? undefined,
              ((verified.direct ?? verified.forwarded) as Json | null) ?? undefined,
            )) ?? null,
        }),
        verify?.decide,
      )) as { final: Json | undefined });
    }
    final = final ?? undefined;

    // 4. An accepted decision is carried out; the evaluator then reads the environment.
    const commit = final?.decision === 'accept' ? family.commit(env, final) : undefined;
    const outcome = family.evaluate(env, task);
    span.setAttribute(ATTR_TASK_SUCCESS, outcome.success);
    return {
      taskId,
      traceId: span.spanContext().traceId,
      family: family.name,
      task: task.id,
      topology,
      outcome,
      ...(final !== undefined ? { decision: final } : {}),
      ...(commit !== undefined ? { commit } : {}),
    };
  };

  const options = {
    taskId,
    attributes,
    requiredSteps: REQUIRED_STEPS[topology],
    ...(reliability
      ? {
          checkpoints: reliability.checkpoints,
          ...(reliability.deadlineMs !== undefined ? { deadlineMs: reliability.deadlineMs } : {}),
        }
      : {}),
  };
  if (!reliability) return runWorkflow(`${family.name}-${topology}`, body, options);
  try {
    return await runWorkflow(`${family.name}-${topology}`, body, options);
  } catch (err) {
    // Recovery gave up (the error is on the workflow span): nothing was committed; the evaluator says so.
    const outcome = family.evaluate(env, task);
    return {
      taskId,
      ...(traceId !== undefined ? { traceId } : {}),
      family: family.name,
      task: task.id,
      topology,
      outcome: {
        ...outcome,
        reason: `${outcome.reason} (recovery gave up: ${err instanceof Error ? err.message : String(err)})`,
      },
    };
  }
}

/** The evidence carrier: the Worker's findings plus provenance and a JSON mirror (inner/outer consistency). */
function evidencePayload(found: Json): Json {
  const fields = Object.fromEntries(Object.entries(found).filter(([k]) => k !== 'evidence'));
  return {
    ...fields,
    evidence_id: `ev-${randomUUID().slice(0, 8)}`,
    source: 'Worker',
    evidence: JSON.stringify(fields),
  };
}

/**
 * ARCF's verification pipeline for each stage's output (schema, safety rules, consistency with the task's earlier
 * outcomes): a plan has its family; evidence has the family's evidence fields and is about what the plan names; the
 * Verifier saw complete evidence and gave a verdict; a decision was made.
 */
function stageVerifiers(family: TaskFamily<TaskDef, unknown>) {
  const fields = Object.fromEntries(Object.entries(family.evidenceFields).filter(([k]) => k !== 'task_id'));
  const plan = verificationPipeline({ required: { family: 'string' } });
  const evidence = verificationPipeline({
    required: fields,
    consistency: {
      check: (value, earlier) => {
        const ev = value as Json;
        const p = earlier.find((e) => (e as Json).family !== undefined) as Json | undefined;
        if (!p) return undefined;
        if (
          typeof p.product === 'string' &&
          typeof ev.product_title === 'string' &&
          p.product.toLowerCase() !== ev.product_title.toLowerCase()
        )
          return 'the evidence is about another product than the plan';
        if (typeof p.function === 'string' && typeof ev.function === 'string' && p.function !== ev.function)
          return 'the evidence is about another function than the plan';
        return undefined;
      },
    },
  });
  const received = verificationPipeline({ required: fields, safety: false });
  const verdict = verificationPipeline({ required: { verdict: 'string' }, safety: false });
  const decided = verificationPipeline({ required: { decision: 'string' } });
  const reason = (v: { ok: boolean; tier?: string; reason?: string }) =>
    v.ok ? { ok: true } : { ok: false, reason: `${v.tier} tier: ${v.reason ?? ''}` };
  return {
    plan: async (s: { plan: Json | null }) => reason(await plan.verify(s.plan ?? undefined, { label: 'plan' })),
    work: async (s: { evidence: Json | null }, planned: Json | null) => {
      // The plan is the earlier outcome the evidence must agree with.
      if (planned) await evidence.verify(planned, { label: 'plan' });
      return reason(await evidence.verify(s.evidence ?? undefined, { label: 'evidence' }));
    },
    verify: async (s: { judgment: Json | null; received: Json | null }) => {
      const got = await received.verify(s.received ?? undefined, { label: 'evidence received' });
      if (!got.ok) return reason(got);
      return reason(await verdict.verify(s.judgment ?? undefined, { label: 'verdict' }));
    },
    decide: async (s: { final: Json | null }) =>
      reason(await decided.verify(s.final ?? undefined, { label: 'decision' })),
  };
}

/** The agent turns every run of a topology must complete (the workflow monitors' premature-termination check). */
export const REQUIRED_STEPS: Record<Topology, string[]> = {
  sequential: ['Planner', 'Worker', 'Verifier', 'Decision'],
  flat: ['Planner', 'Worker', 'Verifier', 'Decision'],
  hierarchical: ['Supervisor', 'Worker'],
};
