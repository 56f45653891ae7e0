/**
 * `faultline/extend`: what code that plugs into faultline needs. That means the types of a custom detector (and
 * `registerDetector`), of a fault definition and a fault rule, and of a protocol module (the codec the span layer
 * asks about a request), plus the task a call belongs to. These are the contracts between the layers
 * (docs/architecture.md); nothing here starts or changes anything. docs/api.md lists the exports.
 */

// ---------------------------------------------------------------- a detector
export type {
  Detector,
  DetectionContext,
  Finding,
  FindingLocation,
  Severity,
  Observation,
  LlmObservation,
  MessageObservation,
  MessageContract,
} from '../../detectors';
export { registerDetector, detectionContext } from '../../detectors';

// ---------------------------------------------------------------- a fault
export { FAULT_TYPES, type FaultType, type FaultCategory, type FaultMode } from '../taxonomy';
export type {
  FaultDefinition,
  ContentFault,
  TransportFault,
  StreamFault,
  MessageFault,
  FaultTarget,
  Strategy,
  TransportEffect,
  StreamEvent,
  StreamTransform,
  MessageEffect,
  MessageFaultContext,
} from '../catalog/types';
export type { FaultPlanInput, FaultRule, FaultSelector } from '../plan/schema';

// ---------------------------------------------------------------- a protocol module
export type {
  ProtocolModule,
  ProtocolStart,
  ResponseReader,
  LlmRequestHead,
} from '../../instrumentation/internal-types';
export type {
  Protocol,
  Exchange,
  ExchangeOutcome,
  LlmRequestSummary,
  LlmResponseSummary,
  GenAiMessage,
  AgentMessage,
  DeliverStep,
  DeliveryContext,
} from '../../instrumentation/types';

// ---------------------------------------------------------------- the task of a call
export { getTaskId, resolveTaskId, type TaskScope } from '../../instrumentation/agents/task';
