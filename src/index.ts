/**
 * faultline's public API for an application (`import { … } from 'faultline'`): start the runtime, declare workflows,
 * agents and channels, plan faults, guard calls, run campaigns. `faultline/register` is the one-line entry point that
 * calls `start()`. Reading traces afterwards (readers, detectors, diagnosers, evaluation) is `faultline/analysis`;
 * the contracts for code that plugs in (a custom detector, fault or protocol module) are `faultline/extend`.
 * docs/api.md lists every export of the three.
 *
 * Data flows one way: instrument → spans → detectors → diagnosers → reports.
 */

import { parts } from './parts';

// ---------------------------------------------------------------- runtime (instrument + inject + guard, wired)
export { start, shutdown, type StartOptions, type FaultlineRuntime } from './start';
export { resolveConfig, type FaultlineConfig, type ExportConfig, type ConfigOverrides } from './config';
export type { ConfigFileInput as FaultlineConfigFile } from './config-schema';
export { FileSpanExporter, DEFAULT_TRACES_FILE, type FileSpanExporterOptions } from './exporters/file-exporter';

// ---------------------------------------------------------------- instrument
export { FaultlineInstrumentation } from '../instrumentation';
export {
  runAgent,
  runWorkflow,
  withTask,
  getTaskId,
  getAgentName,
  MessageChannel,
  configureChannels,
  a2aAgentCardInterceptor,
  checkpoint,
  workflowSignal,
  WorkflowDeadlineError,
  VerificationFailedError,
  instrumentA2aRequestHandler,
  instrumentMcpServer,
  type A2aServerOptions,
  type McpServerOptions,
  type ReceiverOptions,
  type RunAgentOptions,
  type RunWorkflowOptions,
  type AgentDeclaration,
  type WorkflowDeclaration,
  type CheckpointOptions,
} from '../instrumentation/agents';
export {
  frameworkContext,
  registerLangChain,
  langChainHandler,
  type LangChainContextModule,
} from '../instrumentation/frameworks';
export type { AgentMessage, ExchangeOutcome, FaultlineInstrumentationConfig } from '../instrumentation/types';

// ---------------------------------------------------------------- inject
export { definePlan, FaultPlan, type FaultPlanInput, type FaultRule, type FaultSelector } from './plan/schema';
export { loadPlan, parsePlan } from './plan/load';
export { FAULT_NAMES, listFaults, getFault } from './catalog';
export { createInjector, FaultInjectionSpanProcessor, type Injector } from './inject';

// ---------------------------------------------------------------- detect and guard
export { createOnlineDetection, type MessageContract } from '../detectors';
export {
  createGuards,
  guard,
  guardPreset,
  GuardRejectedError,
  CircuitOpenError,
  checkpoints,
  fileStore,
  memoryStore,
  verificationPipeline,
  llmJudge,
  type GuardConfig,
  type GuardConfigInput,
  type CheckpointPolicy,
  type CheckpointStore,
  type Verifier,
  type VerificationOptions,
} from '../detectors/guards';

// ---------------------------------------------------------------- kept here for code written before faultline/analysis
export { readTraces } from './traces';
export { runDetectors } from '../detectors';
export { monitorTrace } from '../detectors/monitors/offline';

// ---------------------------------------------------------------- campaigns and the embedded mock model
// Loaded when first called: the campaign runner brings the example workflows and the openai SDK (about 750 modules),
// which an application importing faultline for its runtime never needs.
export type { CampaignOptions, CampaignResult } from './campaign/runner';
export type { CampaignWorkloads } from './campaign/types';
export type { MockModel, MockModelOptions } from './mock-model/server';

/** Run a campaign (see docs/campaigns.md). Without `workloads` it runs the example workflows (examples/), which need the
 * `openai` package installed. */
export async function runCampaign(
  options: Omit<import('./campaign/runner').CampaignOptions, 'workloads'> & {
    workloads?: import('./campaign/types').CampaignWorkloads;
  },
): Promise<import('./campaign/runner').CampaignResult> {
  const workloads = options.workloads ?? (await import('../examples/index.js'));
  return parts.campaign().runCampaign({ ...options, workloads });
}

/** Start the embedded mock model (an OpenAI-compatible server on loopback). */
export async function startMockModel(
  options?: import('./mock-model/server').MockModelOptions,
): Promise<import('./mock-model/server').MockModel> {
  return parts.mockModel().startMockModel(options);
}

// ---------------------------------------------------------------- errors and the version
export { FaultlineError, FaultlineInputError, type FaultlineErrorCode } from './errors';
export { VERSION } from './version';
