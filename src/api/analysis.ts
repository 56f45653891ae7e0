/**
 * `faultline/analysis`: everything that reads traces after the fact. It covers the trace readers and the collector,
 * the detectors and workflow monitors over exported spans, the diagnosers, the evaluation against ground truth, and
 * trigger verification. None of it instruments or changes a call: an analysis tool imports this entry alone.
 * docs/api.md lists the exports.
 */

// ---------------------------------------------------------------- traces: readers, the collector, the model
export { readTraces, readSpans, detectFileFormat, TRACE_FORMATS, startCollector, DEFAULT_IDLE_SPANS } from '../traces';
export type {
  ReadSpansOptions,
  ReadTracesOptions,
  TraceFormat,
  Collector,
  CollectorOptions,
  CollectorStats,
} from '../traces';
export type { TraceRecord, SpanRecord, SpanEventRecord, SpanLinkRecord, Attributes, AttrValue } from '../traces/model';
export { llmSpans, messageSpans, stepOf, isLlmSpan, isMessageSpan } from '../traces/steps';

// ---------------------------------------------------------------- detectors and monitors over exported spans
export {
  runDetectors,
  defaultDetectors,
  detectorNames,
  detectionContext,
  detectSpans,
  type DetectSpansOptions,
} from '../../detectors';
export { monitorTrace, type MonitorFinding, type MonitoredWorkflow } from '../../detectors/monitors/offline';
export {
  MAST_MODES,
  MAST_OF,
  ARCF_FAILURES,
  classifyFinding,
  type MastModeId,
  type ArcfFailure,
  type Classified,
} from '../../detectors/monitors/index';

// ---------------------------------------------------------------- diagnosis
export {
  createDiagnoser,
  diagnoseTrace,
  diagnoseEach,
  diagnoseAll,
  stripGroundTruth,
  DIAGNOSER_NAMES,
  DiagnoserError,
  type Diagnoser,
  type DiagnoserName,
  type DiagnoserOptions,
  type Diagnosis,
  type DiagnosisFailure,
  type DiagnosisOutcome,
  type StepKind,
} from '../diagnosers';

// ---------------------------------------------------------------- evaluation and trigger verification
export {
  evaluate,
  groundTruth,
  cohenKappa,
  confusion,
  type EvalReport,
  type EvaluateOptions,
  type GroundTruth,
  type ConfusionMatrix,
} from '../evaluation';
export { triggerReportFromSpans, formatTriggerReport, type TriggerReport } from '../inject/verify';
