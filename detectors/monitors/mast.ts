/**
 * The two vocabularies the workflow monitors speak: MAST's 14 failure modes (Cemri et al., "Why Do Multi-Agent LLM
 * Systems Fail?", arXiv 2503.13657, final taxonomy) and ARCF's failure types (../shared/papers/arcf-reliability-
 * control.txt §4.2). Every monitor finding names one ARCF type and one MAST mode; `MAST_OF` says which, and whether
 * the mode is the failure itself (`exact`) or the nearest of the 14 (MAST has no infrastructure modes: a timeout or a
 * lost message is named by the mode it causes in the workflow). docs/monitors.md has the table and the reasons.
 *
 * Findings of the call-level detectors (detectors/*.ts) are classified into the same two vocabularies by
 * `classifyFinding`, so a campaign's "MAST coverage" counts every online finding, not only the monitors'.
 */
import type { FaultType } from '../../src/taxonomy';
import type { Finding } from '../types';
import { ARCF_FAILURES, MAST_MODES, type ArcfFailure, type MastMode, type MastModeId } from '../../src/failure-modes';
export {
  ARCF_FAILURES,
  ARCF_GROUP,
  MAST_CATEGORIES,
  MAST_MODES,
  type ArcfFailure,
  type MastCategory,
  type MastMode,
  type MastModeId,
} from '../../src/failure-modes';

/** The MAST mode an ARCF failure type is named by, and whether it is that mode or only the nearest one. */
export const MAST_OF: Record<ArcfFailure, { mode: MastModeId; exact: boolean }> = {
  // A call or task past its time budget: the workflow does not stop when its deadline says it should.
  timeout: { mode: '1.5', exact: false },
  // The model can no longer see the whole conversation: rejected, or cut by the caller.
  context_overflow: { mode: '1.4', exact: false },
  schema_violation: { mode: '1.1', exact: true },
  // An unknown tool or a malformed call disobeys the tool specification (a declared-set violation is a role one).
  improper_tool_use: { mode: '1.1', exact: true },
  // A message that never arrives, or a call to another agent that fails, withholds its information from the receiver.
  communication_failure: { mode: '2.4', exact: false },
  role_violation: { mode: '1.2', exact: true },
  // Agents waiting on each other, or a task past its deadline with nothing completed: no one sees it should stop.
  workflow_deadlock: { mode: '1.5', exact: false },
  // Two agents report different values for the same fact and the workflow carries on with both.
  output_conflict: { mode: '2.5', exact: false },
  premature_termination: { mode: '3.1', exact: true },
  infinite_loop: { mode: '1.3', exact: true },
  // An answer far below what the same task produced before, passed on unchecked.
  quality_degradation: { mode: '3.2', exact: false },
};

export function mastMode(id: MastModeId): MastMode {
  return MAST_MODES.find((m) => m.id === id) as MastMode;
}

export function isMastModeId(v: unknown): v is MastModeId {
  return typeof v === 'string' && MAST_MODES.some((m) => m.id === v);
}

export function isArcfFailure(v: unknown): v is ArcfFailure {
  return typeof v === 'string' && (ARCF_FAILURES as readonly string[]).includes(v);
}

/** The ARCF type of a call-level detector finding, by its fault type (monitor findings carry theirs). */
const BY_FAULT_TYPE: Record<FaultType, ArcfFailure | undefined> = {
  timeout: 'timeout',
  delay: 'timeout',
  error: 'communication_failure',
  non_delivery: 'communication_failure',
  duplicate: 'communication_failure',
  partial: 'communication_failure',
  schema: 'schema_violation',
  empty: 'quality_degradation',
  truncate: 'quality_degradation',
  corrupt: 'quality_degradation',
  stale: 'quality_degradation',
  semantic: 'quality_degradation',
  none: undefined,
};

export interface Classified {
  failure: ArcfFailure;
  mast: MastModeId;
  exact: boolean;
}

/**
 * A finding in ARCF's and MAST's terms: the monitor's own naming when it carries one, else by fault type (a partial
 * message withholds information: 2.4 exactly; an undefined tool is improper tool use).
 */
export function classifyFinding(
  f: Pick<Finding, 'faultType' | 'detector' | 'evidence'> & { failure?: ArcfFailure; mast?: MastModeId },
): Classified | undefined {
  if (f.failure !== undefined) {
    const m = MAST_OF[f.failure];
    return {
      failure: f.failure,
      mast: f.mast ?? m.mode,
      exact: f.mast !== undefined ? f.mast === m.mode && m.exact : m.exact,
    };
  }
  if (f.faultType === 'partial') return { failure: 'communication_failure', mast: '2.4', exact: true };
  if (f.detector === 'schema_contract' && /undefined tool|unknown tool|not JSON/i.test(f.evidence))
    return { failure: 'improper_tool_use', mast: '1.1', exact: true };
  const failure = BY_FAULT_TYPE[f.faultType];
  if (failure === undefined) return undefined;
  return { failure, mast: MAST_OF[failure].mode, exact: MAST_OF[failure].exact };
}

/**
 * The MAST mode a human label names, whatever draft of the taxonomy the annotation used. The human-labelled MAD
 * records number their modes differently per round (round 1 "2.2 Step repetition", round 2 "1.5 Step repetition"),
 * so labels are matched by name, never by number. Draft modes with no counterpart in the final 14 give undefined.
 */
export function mastModeOfLabel(label: string): MastModeId | undefined {
  const name = label
    .split('\n')[0]!
    .replace(/^\s*\d+\.\d+\s*/, '')
    .trim()
    .toLowerCase();
  const table: Array<[RegExp, MastModeId]> = [
    [/^poor task constraint compliance|^disobey task spec/, '1.1'],
    [/^disobey role spec/, '1.2'],
    [/^step repetition/, '1.3'],
    [/^backtracking interruption|^loss of conversation history/, '1.4'],
    [/^unaware of (stopping|termination) conditions/, '1.5'],
    [/^conversation reset/, '2.1'],
    [/^fail(ure)? to (elicit|ask for) clarification/, '2.2'],
    [/^derailment from task|^task derailment/, '2.3'],
    [/^withholding relevant information|^information with?holding/, '2.4'],
    [/^ignoring suggestions from agents|^ignored other agent/, '2.5'],
    [/^inconsistency between reasoning and action|^reasoning-action mismatch/, '2.6'],
    [/^ill specified termination condition|^premature termination/, '3.1'],
    // The generalisability round names both: "3.2 No or Incomplete Verification — Lack of critical verification",
    // "3.3 Incorrect Verification — Lack of result verification".
    [/^lack of critical verification|^no or incomplete verification/, '3.2'],
    [/^lack of result verification|^incorrect verification/, '3.3'],
  ];
  for (const [re, id] of table) if (re.test(name)) return id;
  return undefined;
}
