/**
 * The workflow monitors (ARCF's MAST-aware monitoring engine, ../shared/papers/arcf-reliability-control.txt §4.2):
 * detectors over a call or message with the task's history and what the workflow declared, plus the workflow-level
 * checks at a workflow's deadline and end. Every finding names its ARCF failure type and MAST mode. They are
 * registered with the other detectors (registry.ts), so they run online, offline and in guard routes alike.
 * docs/monitors.md lists what each sees and the MAST coverage table.
 */
import type { WorkflowState } from '../../instrumentation/agents/declarations';
import type { Detector } from '../types';
import { outputConflictDetector } from './conflict';
import { contextOverflowDetector } from './context-overflow';
import { historyLossDetector } from './history-loss';
import { qualityDegradationDetector } from './quality';
import { repetitionDetector } from './repetition';
import { roleViolationDetector } from './role';
import type { WorkflowSnapshot } from './workflow';

export const monitorDetectors: readonly Detector[] = [
  contextOverflowDetector,
  roleViolationDetector,
  repetitionDetector,
  historyLossDetector,
  outputConflictDetector,
  qualityDegradationDetector,
];

/** What the live state of a workflow says, at `at`. */
export function workflowSnapshot(w: WorkflowState, at: number): WorkflowSnapshot {
  const s: WorkflowSnapshot = {
    name: w.name,
    startedAt: w.startedAt,
    at: w.ended?.at ?? at,
    ended: w.ended !== undefined,
    completed: [...w.completed],
    lastProgressAt: w.lastProgressAt,
    open: w.open.map((t) => (t.parent !== undefined ? { name: t.name, parent: t.parent } : { name: t.name })),
  };
  if (w.declaration.requiredSteps !== undefined) s.requiredSteps = w.declaration.requiredSteps;
  if (w.declaration.deadlineMs !== undefined) s.deadlineMs = w.declaration.deadlineMs;
  if (w.ended) {
    s.outcome = w.ended.outcome;
    s.output = w.ended.output;
    if (w.ended.errorType !== undefined) s.errorType = w.ended.errorType;
  }
  return s;
}

export { workflowFindings, PREMATURE_TERMINATION, WORKFLOW_PROGRESS, type WorkflowSnapshot } from './workflow';
export {
  MAST_MODES,
  MAST_OF,
  MAST_CATEGORIES,
  ARCF_FAILURES,
  ARCF_GROUP,
  classifyFinding,
  mastMode,
  mastModeOfLabel,
  type ArcfFailure,
  type MastModeId,
  type MastMode,
  type Classified,
} from './mast';
export { contextWindowOf, CONTEXT_WINDOWS } from './context-overflow';
