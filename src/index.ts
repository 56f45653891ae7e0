/**
 * faultline's public API. Everything a user imports comes from here (`import { … } from 'faultline'`);
 * `faultline/register` is the one-line entry point that calls `start()`.
 *
 * Data flows one way: instrument → spans → detectors → diagnosers → reports.
 */

import { parts } from './parts';

// ---------------------------------------------------------------- runtime (instrument + inject + guard, wired)
export { start, startRuntime, shutdown, type StartOptions, type FaultlineRuntime } from './start';
export { resolveConfig, type FaultlineConfig, type ExportConfig, type ConfigOverrides } from './config';
export type { ConfigFileInput as FaultlineConfigFile } from './config-schema';
export { FileSpanExporter, DEFAULT_TRACES_FILE, type FileSpanExporterOptions } from './exporters/file-exporter';

// ---------------------------------------------------------------- instrument
export { FaultlineInstrumentation, installInstrumentation, getExchange } from '../instrumentation';
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
export { resolveTaskId, type TaskScope } from '../instrumentation/agents/task';
export { frameworkContext, registerLangChain, langChainHandler, type LangChainContextModule } from '../instrumentation/frameworks';
export type {
  AgentMessage,
  DeliverStep,
  DeliveryContext,
  Exchange,
  ExchangeOutcome,
  FaultlineInstrumentationConfig,
  GenAiMessage,
  LlmRequestSummary,
  LlmResponseSummary,
} from '../instrumentation/types';

// ---------------------------------------------------------------- inject
export { definePlan, FaultPlan, type FaultPlanInput, type FaultRule, type FaultSelector } from './plan/schema';
export { loadPlan, parsePlan, planFromEnv } from './plan/load';
export { FAULT_NAMES, listFaults, getFault } from './catalog';
export {
  createInjector,
  injectorFromEnv,
  FaultInjectionSpanProcessor,
  triggerReportFromSpans,
  formatTriggerReport,
  type Injector,
  type TriggerReport,
} from './inject';

// ---------------------------------------------------------------- detect and guard
export {
  runDetectors,
  defaultDetectors,
  registerDetector,
  detectSpans,
  createOnlineDetection,
  type Detector,
  type Finding,
  type Observation,
  type MessageContract,
} from '../detectors';
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
export { monitorTrace, type MonitorFinding, type MonitoredWorkflow } from '../detectors/monitors/offline';
export { MAST_MODES, ARCF_FAILURES, classifyFinding, type MastModeId, type ArcfFailure } from '../detectors/monitors/index';

// ---------------------------------------------------------------- traces, diagnosis, evaluation
export { readTraces, readSpans, startCollector, type TraceRecord, type SpanRecord } from './traces';
export {
  createDiagnoser,
  diagnoseTrace,
  diagnoseAll,
  stripGroundTruth,
  type Diagnoser,
  type Diagnosis,
} from './diagnosers';
export { evaluate, groundTruth, cohenKappa, type EvalReport } from './evaluation';

// ---------------------------------------------------------------- campaigns and the embedded mock model
// Loaded when first called: the campaign runner brings the example workflows and the openai SDK (about 750 modules),
// which an application importing faultline for its runtime never needs.
export type { CampaignOptions, CampaignResult } from './campaign/runner';
export type { MockModel, MockModelOptions } from './mock-model/server';

/** Run a campaign (see docs/campaigns.md). Without `workloads` it runs the example workflows (examples/), which need the
 * `openai` package installed. */
export async function runCampaign(
  options: Omit<import('./campaign/runner').CampaignOptions, 'workloads'> & { workloads?: import('./campaign/types').CampaignWorkloads },
): Promise<import('./campaign/runner').CampaignResult> {
  const workloads = options.workloads ?? (await import('../examples/index.js'));
  return parts.campaign().runCampaign({ ...options, workloads });
}

/** Start the embedded mock model (an OpenAI-compatible server on loopback). */
export async function startMockModel(options?: import('./mock-model/server').MockModelOptions): Promise<import('./mock-model/server').MockModel> {
  return parts.mockModel().startMockModel(options);
}

export { FAULT_TYPES, type FaultType, type FaultCategory, type FaultMode } from './taxonomy';
export { FaultlineError, FaultlineInputError, type FaultlineErrorCode } from './errors';
export { VERSION } from './version';
