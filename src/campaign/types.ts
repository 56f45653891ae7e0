/**
 * The shapes the campaign modules share, below all of them so that none imports another for a type: the matrix's
 * cells and conditions (matrix.ts), a run's record (analysis.ts), a command campaign's planned run
 * (command-runner.ts), what a run's spans say about recovery and monitoring in the ARCF study (arcf.ts), and the
 * workloads a campaign runs (runner.ts). Each of those modules re-exports its own.
 */
import type { WorkflowRecovery } from '../../instrumentation/agents/declarations';
import type { ArcfFailure, MastModeId } from '../failure-modes';
import type { PlanCondition } from './command-matrix';
import type { CampaignTask } from './tasks';

export type Arm = 'none' | 'execution' | 'evidence' | 'both' | 'arcf';

export type Topology = 'sequential' | 'flat' | 'hierarchical';

/** One fault condition: a fault plan rule, named the way the papers name their cells. */
export interface Condition {
  /** e.g. `non_delivery@I4`, `llm_truncate_persistent`. */
  id: string;
  fault: string;
  kind: 'communication' | 'content';
  boundary?: string;
  strategy?: 'single' | 'persistent';
  params?: Record<string, unknown>;
}

export interface Cell {
  study: 'main' | 'protection' | 'arcf';
  family: string;
  task: string;
  topology: Topology;
  condition: Condition;
  arm: Arm;
  rep: number;
}

export interface CampaignSpec {
  name: string;
  families: string[];
  /** Tasks per family (the first n). */
  tasksPerFamily: number;
  topologies: Topology[];
  conditions: Condition[];
  reps: number;
  protection?: { families: string[]; topologies: Topology[]; conditions: Condition[]; arms: Arm[] };
  /** ARCF's experiment (arcf.ts): these conditions at a 10 % rate, baseline against the `arcf` arm. */
  arcf?: { conditions: Condition[] };
}

export interface RunRecord {
  /** Sequence number in the campaign. */
  run: number;
  taskId: string;
  traceId?: string;
  study: Cell['study'];
  /** Example workloads: the task family and topology (a command campaign has neither). */
  family?: string;
  task: string;
  topology?: Topology;
  arm: Arm;
  rep: number;
  /** `clean`, or the condition id. */
  condition: string;
  /** For faulted runs, the condition of the cell (same as condition); for clean twins, the cell's condition too. */
  cell: string;
  faulted: boolean;
  /** Task id of the clean twin (faulted runs). */
  matchedTo?: string;
  success: boolean;
  reason: string;
  /** The final decision as given by the deciding agent ('accept' | 'reject' | undefined when none came). */
  decision?: string;
  triggered: boolean;
  detections: number;
  guardEvents: number;
  errorSpans: number;
  durationMs: number;
  /** Command campaigns: the run's key in runs.jsonl (resume), its pair, plan seed and the fault's strategy. */
  key?: string;
  pair?: number;
  seed?: number;
  strategy?: string;
  exitCode?: number | null;
  signal?: string | null;
  /** LLM calls and tokens (input + output) seen on the run's spans: what the budget counts. */
  llmCalls?: number;
  tokens?: number;
  /** The ARCF study (arcf.ts): what the run's spans say about recovery and monitoring. */
  arcf?: ArcfRunFacts;
  /** A command campaign's run of the program without faultline (ARCF's observability overhead). */
  bare?: boolean;
}

export interface PlannedRun {
  key: string;
  pair: number;
  task: CampaignTask;
  condition: PlanCondition;
  rep: number;
  seed: number;
  faulted: boolean;
  argv: string[];
  /** The protection arm (default none); `bare`: the program without faultline, for the observability overhead. */
  arm?: 'none' | 'arcf';
  bare?: boolean;
}

/** Findings or guard actions of a run, by ARCF failure type and MAST mode. */
export interface ArcfTally {
  failures: Partial<Record<ArcfFailure, number>>;
  modes: Partial<Record<MastModeId, number>>;
}

/**
 * What one run's spans say about recovery and monitoring. Detections (the online detectors' and monitors' findings)
 * and repairs (the guards' recovery actions) are kept apart: a guard acting on a failure is the arm's recovery, not
 * its monitoring, and counting it as a finding would credit the protected arm with coverage it did not detect.
 */
export interface ArcfRunFacts {
  /** Calls / messages / steps retried, and of them those whose retry ended well. */
  retried: number;
  retryOk: number;
  fellBack: number;
  fallbackOk: number;
  rollbacks: number;
  /** The online findings (`faultline.detection` events) named by ARCF failure type and MAST mode. */
  detections: ArcfTally;
  /** The failures a guard acted on (`faultline.guard` recovery events), named the same way. */
  repairs: ArcfTally;
  /** A failure signal that does not depend on the arm's repairs: a finding of error severity or a span with ERROR. */
  failed: boolean;
  /** A guard recovery action, a failed checkpoint verification or a rollback: the arm repaired something. */
  repaired: boolean;
  /** Outputs verified, and those the safety tier blocked. */
  verified: number;
  safetyBlocked: number;
}

/** The model connection a workload's agents call through (examples/agents/model.ts's satisfies it). */
export interface CampaignModel {
  readonly model: string;
  /** True when the embedded mock model serves the calls. */
  readonly embedded: boolean;
  readonly baseURL: string;
  close(): Promise<void>;
}

/** What one run of a task came to, as the workload's own evaluator judged it. */
export interface CampaignTaskRun {
  traceId?: string;
  outcome: { success: boolean; reason: string };
  /** The final decision as the deciding agent gave it, if it gave one. */
  decision?: Record<string, unknown>;
}

/**
 * The workflows a campaign runs, handed in by whoever starts it — the CLI and the public `runCampaign` pass the
 * example systems of examples/index.ts, which satisfies this — so that the campaign layer never imports an application.
 */
export interface CampaignWorkloads {
  /** Task families by name: each has a `name`, its `tasks` (each with an `id`) and the hooks the guards call
   * (`reobserve`, `evidenceFields`; detectors/guards and harness.ts). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- families differ in task and environment types
  readonly FAMILIES: Record<string, any>;
  connectModel(options: {
    baseURL?: string;
    apiKey?: string;
    model?: string;
    env?: NodeJS.ProcessEnv;
  }): Promise<CampaignModel>;
  runTask(options: {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- one of FAMILIES, and one of its tasks
    family: any;
    task: unknown;
    topology: Topology;
    llm: CampaignModel;
    taskId?: string;
    condition?: string;
    attributes?: Record<string, string | number | boolean>;
    onEnv?: (env: unknown, binding: { taskId: string; sessionId: string }) => void;
    reliability?: { checkpoints: WorkflowRecovery; deadlineMs?: number };
  }): Promise<CampaignTaskRun>;
}
