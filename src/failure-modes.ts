/**
 * The two vocabularies workflow findings are named in: MAST's 14 failure modes (Cemri et al., "Why Do Multi-Agent LLM
 * Systems Fail?", arXiv 2503.13657, final taxonomy, in its three categories) and ARCF's failure types
 * (../shared/papers/arcf-reliability-control.txt §4.2, in its three groups). Plain vocabulary at the base, beside the
 * fault taxonomy, so that the detection types (detectors/types.ts) can name them; which ARCF type a MAST mode names,
 * and how a finding is classified, is the monitors' (detectors/monitors/mast.ts).
 */

export type MastCategory = 'FC1' | 'FC2' | 'FC3';

export interface MastMode {
  id: MastModeId;
  name: string;
  category: MastCategory;
}

export const MAST_MODES = [
  { id: '1.1', name: 'Disobey task specification', category: 'FC1' },
  { id: '1.2', name: 'Disobey role specification', category: 'FC1' },
  { id: '1.3', name: 'Step repetition', category: 'FC1' },
  { id: '1.4', name: 'Loss of conversation history', category: 'FC1' },
  { id: '1.5', name: 'Unaware of termination conditions', category: 'FC1' },
  { id: '2.1', name: 'Conversation reset', category: 'FC2' },
  { id: '2.2', name: 'Fail to ask for clarification', category: 'FC2' },
  { id: '2.3', name: 'Task derailment', category: 'FC2' },
  { id: '2.4', name: 'Information withholding', category: 'FC2' },
  { id: '2.5', name: "Ignored other agent's input", category: 'FC2' },
  { id: '2.6', name: 'Reasoning-action mismatch', category: 'FC2' },
  { id: '3.1', name: 'Premature termination', category: 'FC3' },
  { id: '3.2', name: 'No or incomplete verification', category: 'FC3' },
  { id: '3.3', name: 'Incorrect verification', category: 'FC3' },
] as const satisfies readonly { id: string; name: string; category: MastCategory }[];

export type MastModeId = (typeof MAST_MODES)[number]['id'];

export const MAST_CATEGORIES: Record<MastCategory, string> = {
  FC1: 'Specification and system design',
  FC2: 'Inter-agent misalignment',
  FC3: 'Task verification and termination',
};

/** ARCF's failure types (§4.2), in its three groups. */
export const ARCF_FAILURES = [
  'timeout',
  'context_overflow',
  'schema_violation',
  'improper_tool_use',
  'communication_failure',
  'role_violation',
  'workflow_deadlock',
  'output_conflict',
  'premature_termination',
  'infinite_loop',
  'quality_degradation',
] as const;

export type ArcfFailure = (typeof ARCF_FAILURES)[number];

export const ARCF_GROUP: Record<ArcfFailure, 'specification' | 'misalignment' | 'verification'> = {
  timeout: 'specification',
  context_overflow: 'specification',
  schema_violation: 'specification',
  improper_tool_use: 'specification',
  communication_failure: 'misalignment',
  role_violation: 'misalignment',
  workflow_deadlock: 'misalignment',
  output_conflict: 'misalignment',
  premature_termination: 'verification',
  infinite_loop: 'verification',
  quality_degradation: 'verification',
};
