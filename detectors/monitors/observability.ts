/**
 * Which failure modes a recorded run cannot show, given what its producer recorded: a mode whose evidence is absent
 * from every span of the run is not observable there, and saying so is the honest answer rather than silence (a
 * trace with no finding and nothing recorded to find one in is not a clean trace). Read per workflow, from the same
 * steps the monitors judge:
 *  - step repetition (1.3): no request, answer or tool-call content or fingerprints (the same tool name again is
 *    also what pagination looks like);
 *  - output conflict (2.5) and no progress (1.5): no values — message content, tool arguments and results;
 *  - role violation (1.2): no tool definitions on the agents' calls and no declared tools or targets;
 *  - history loss / reset (1.4, 2.1): no input message counts or input token usage;
 *  - output collapse (3.2): no output sizes (content, characters or output token usage);
 *  - premature termination (3.1): no finish reasons, no content and no declared required steps.
 * Timeouts, deadlocks and context-length refusals are read from span status and times, which every span carries.
 * The modes that need a reading of the dialogue (2.2, 2.3, 2.6, 3.3) are never observable from spans and are listed
 * once in docs/monitors.md, not per trace.
 */
import type { FaultType } from '../../src/taxonomy';
import type { LlmObservation, MessageObservation } from '../types';
import { knowsRequest, toolCallPrints } from '../history';
import { MAST_OF, type ArcfFailure, type MastModeId } from './mast';
import type { WorkflowRun } from './read';

export interface NotObservable {
  /** The ARCF type and MAST mode a finding of this mode would name, and its fault type where that tells modes apart. */
  failure: ArcfFailure;
  mast: MastModeId;
  faultType?: FaultType;
  /** The monitor that would judge it. */
  detector: string;
  /** What the run's spans lack. */
  reason: string;
}

export function notObservable(run: WorkflowRun): NotObservable[] {
  const calls = run.steps.map((s) => s.observation).filter((o): o is LlmObservation => o?.kind === 'llm');
  const messages = run.steps.map((s) => s.observation).filter((o): o is MessageObservation => o?.kind === 'message');
  const tools = run.steps.flatMap((s) => (s.tool ? [s.tool] : []));
  const content = calls.some((o) => o.hasContent) || messages.some((m) => m.hasContent);
  const values = content || tools.some((t) => t.arguments !== undefined || t.result !== undefined);
  const prints =
    calls.some((o) => knowsRequest(o) || toolCallPrints(o).length > 0 || o.facts?.contentHash !== undefined) ||
    messages.some((m) => m.facts?.payloadHash !== undefined);
  const definitions =
    calls.some((o) => (o.request?.tools.length ?? 0) > 0) ||
    run.agents.size > 0 ||
    tools.some((t) => t.declaration !== undefined);
  const inputSizes = calls.some(
    (o) =>
      o.response.usage?.inputTokens !== undefined ||
      (o.facts?.messageCount ?? 0) > 0 ||
      (o.request?.messages.length ?? 0) > 0,
  );
  const outputSizes = calls.some(
    (o) => o.hasContent || o.response.usage?.outputTokens !== undefined || o.facts?.outputChars !== undefined,
  );
  const finishes = calls.some((o) => o.response.finishReasons.length > 0);

  const out: NotObservable[] = [];
  const add = (
    failure: ArcfFailure,
    detector: string,
    reason: string,
    extra: { mast?: MastModeId; faultType?: FaultType } = {},
  ): void => {
    out.push({
      failure,
      mast: extra.mast ?? MAST_OF[failure].mode,
      ...(extra.faultType ? { faultType: extra.faultType } : {}),
      detector,
      reason,
    });
  };
  if (calls.length === 0 && messages.length === 0 && tools.length === 0) return out;
  if (!values && !prints)
    add('infinite_loop', 'repetition', 'no request, answer or tool-call content or fingerprints recorded');
  if (!values) {
    add('output_conflict', 'output_conflict', 'no message content, tool arguments or results recorded');
    add('workflow_deadlock', 'no_progress', 'no tool arguments or results recorded', { faultType: 'stale' });
  }
  if (!definitions && tools.length > 0)
    add('role_violation', 'role_violation', 'no tool definitions on the agents\u2019 calls and no declared tools');
  if (!inputSizes && calls.length > 0)
    add('context_overflow', 'history_loss', 'no input message counts or input token usage recorded', { mast: '2.1' });
  if (!outputSizes && calls.length > 0)
    add('quality_degradation', 'quality_degradation', 'no output content, characters or output token usage recorded');
  if (!content && !finishes && run.requiredSteps === undefined && calls.length > 0)
    add(
      'premature_termination',
      'premature_termination',
      'no finish reasons, content or declared required steps recorded',
    );
  return out;
}
