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
import { runWorkflow } from '../../instrumentation/agents/task';
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

  return runWorkflow(
    `${family.name}-${topology}`,
    async (span) => {
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
      const plan = await planner(llm, task, planRole);
      const planMsg = plan ? first(await channel.send(envelope(planRole, 'Worker', 'I1', { plan }))) : undefined;
      const receivedPlan = planMsg?.plan as Json | undefined;

      // 2. The Worker acts through the Executor (I2 action request, I3 observation) and reports evidence (I4).
      let actions = 0;
      const act = async (operation: string, args: Json): Promise<Json | undefined> => {
        const actionId = `${taskId}:action-${++actions}`;
        // The RQ4 action-request shape: the binding, the action id and the operation's parameters side by side.
        const delivered = await channel.send(envelope('Worker', 'Executor', 'I2', { action_id: actionId, operation, ...args }));
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
      const found = receivedPlan ? await worker(llm, family, env, task, receivedPlan, act) : undefined;
      const evidence = found ? evidencePayload(found) : undefined;
      const sendEvidence = (target: string): Promise<AgentMessage[]> => {
        const msg = envelope('Worker', target, 'I4', evidence as Json);
        return opts.evidenceTransport && target === evidenceTarget ? opts.evidenceTransport(msg) : channel.send(msg);
      };

      // 3. Verification and decision.
      let final: Json | undefined;
      if (topology === 'hierarchical') {
        const got = evidence ? first(await sendEvidence('Supervisor')) : undefined;
        final = await decision(llm, task, undefined, got, 'Supervisor');
      } else {
        const atVerifier = evidence ? first(await sendEvidence('Verifier')) : undefined;
        const direct = evidence && topology === 'flat' ? first(await sendEvidence('Decision')) : undefined;
        const verdict = await verifier(llm, task, atVerifier);
        // The Verifier forwards its judgment with the evidence it checked.
        const judgmentMsg = verdict
          ? first(await channel.send(envelope('Verifier', 'Decision', 'judgment', { verdict: verdict.verdict, reason: verdict.reason, evidence: atVerifier ?? null })))
          : undefined;
        const forwarded = (judgmentMsg?.evidence ?? undefined) as Json | undefined;
        final = await decision(llm, task, judgmentMsg ? { verdict: judgmentMsg.verdict, reason: judgmentMsg.reason } : undefined, direct ?? forwarded);
      }

      // 4. An accepted decision is carried out; the evaluator then reads the environment.
      const commit = final?.decision === 'accept' ? family.commit(env, final) : undefined;
      const outcome = family.evaluate(env, task);
      span.setAttribute(ATTR_TASK_SUCCESS, outcome.success);
      return { taskId, traceId: span.spanContext().traceId, family: family.name, task: task.id, topology, outcome, decision: final, commit };
    },
    { taskId, attributes, requiredSteps: REQUIRED_STEPS[topology] },
  );
}

/** The agent turns every run of a topology must complete (the workflow monitors' premature-termination check). */
export const REQUIRED_STEPS: Record<Topology, string[]> = {
  sequential: ['Planner', 'Worker', 'Verifier', 'Decision'],
  flat: ['Planner', 'Worker', 'Verifier', 'Decision'],
  hierarchical: ['Supervisor', 'Worker'],
};

/** The evidence carrier: the Worker's findings plus provenance and a JSON mirror (inner/outer consistency). */
function evidencePayload(found: Json): Json {
  const fields = Object.fromEntries(Object.entries(found).filter(([k]) => k !== 'evidence'));
  return { ...fields, evidence_id: `ev-${randomUUID().slice(0, 8)}`, source: 'Worker', evidence: JSON.stringify(fields) };
}
