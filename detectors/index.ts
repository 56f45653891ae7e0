/**
 * faultline's detectors: public surface only. Detectors (one per file) are registered by name in registry.ts; the
 * same ones run offline over spans (from-span.ts), online on what the interceptor and channel saw (online.ts), and
 * in the guards (guards/).
 */
export type {
  DetectionContext,
  Detector,
  Finding,
  FindingLocation,
  LlmObservation,
  MessageContract,
  MessageObservation,
  Observation,
  Severity,
} from './types';
export {
  defaultDetectors,
  detectionContext,
  detectorNames,
  getDetector,
  registerDetector,
  resolveDetectors,
  runDetectors,
} from './registry';
export {
  detectSpans,
  detectionsFromSpan,
  llmObservationFromSpan,
  messageObservationFromSpan,
  observationFromSpan,
  type DetectSpansOptions,
} from './from-span';
export {
  createOnlineDetection,
  detectionAttributes,
  recordFindings,
  DETECTION_SPAN_NAME,
  type OnlineDetection,
  type OnlineDetectionOptions,
} from './online';
export {
  llmObservationFromWire,
  summarizeLlmRequest,
  summarizeLlmResponse,
  type LlmProtocol,
  type WireResponse,
} from './wire';
export { validateJsonSchema, compileJsonSchema, type SchemaIssue } from './json-schema';
export { validateAgainst, contractsFor } from './contracts';
export { evidenceIssues } from './evidence-completeness';
