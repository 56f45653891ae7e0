/**
 * The detector interface. A detector is a pure function over one observation and its context; it does no I/O.
 * The same detectors run online (the interceptor and the channel build observations from what they saw) and
 * offline (observations built from exported spans).
 */
import type { AgentMessage, LlmRequestSummary, LlmResponseSummary } from '../instrumentation/types';
import type { ObservationScope } from '../instrumentation/agents/declarations';
import type { FaultType } from '../src/taxonomy';
import type { ArcfFailure, MastModeId } from '../src/failure-modes';

export type Severity = 'info' | 'warning' | 'error' | 'critical';

export interface FindingLocation {
  /** Span id, when the observation came from a span. */
  spanId?: string;
  /** A JSON path or field name inside the response or message, e.g. `choices[0].message.content`, `payload.sku`. */
  field?: string;
  /** Index of the tool call / message / delivered copy concerned. */
  index?: number;
}

export interface Finding {
  detector: string;
  faultType: FaultType;
  severity: Severity;
  /** 0..1 */
  confidence: number;
  /** Short human-readable evidence: what and where (field, length, count, position), never the content itself —
   * findings are recorded on spans, where content appears only when capture is on. */
  evidence: string;
  location?: FindingLocation;
  /** Workflow monitors: the ARCF failure type and the MAST mode the finding names (src/failure-modes.ts). */
  failure?: ArcfFailure;
  mast?: MastModeId;
}

export interface LlmObservation {
  kind: 'llm';
  spanId?: string;
  request?: LlmRequestSummary;
  response: LlmResponseSummary;
  /** True when text / tool arguments are available (online, or offline with content captured). Content-free
   * observations carry only the facts recorded on every span (lengths, counts, hashes, finish reasons, usage). */
  hasContent: boolean;
  /** Content-free facts, always present offline. `messageCount`: messages in the request; `toolCallPrints`: a
   * fingerprint of each tool call's name and arguments (kept when the history forgets the content). */
  facts?: {
    outputChars?: number;
    toolCallCount?: number;
    contentHash?: string;
    messageCount?: number;
    toolCallPrints?: string[];
  };
  /** Who made the call and what the workflow declared (online from the context, offline from the spans). */
  scope?: ObservationScope;
}

export interface MessageObservation {
  kind: 'message';
  spanId?: string;
  /** The message the sender handed over (online only; offline it is unknown). */
  original?: AgentMessage;
  /** What the receiver got: zero, one or more messages. */
  delivered: AgentMessage[];
  hasContent: boolean;
  /** Content-free facts, always present offline. */
  facts?: {
    keys?: string[];
    payloadHash?: string;
    payloadBytes?: number;
    deliveredCount?: number;
    deliveredHashes?: string[];
  };
  /** Delivery latency in ms (send to delivery), when known. */
  latencyMs?: number;
  /** The deadline the route declares, if any. */
  deadlineMs?: number;
  /** Who sent it and what the workflow declared. */
  scope?: ObservationScope;
}

export type Observation = LlmObservation | MessageObservation;

/** A registered message contract: a zod schema or a JSON Schema, per boundary, target or message kind. */
export interface MessageContract {
  name: string;
  /** Which messages it applies to; all when omitted. */
  match?: { boundary?: string; target?: string; source?: string };
  /** JSON Schema object, or anything with `safeParse` (zod) / Standard Schema `~standard.validate`. */
  schema: unknown;
  /** Evidence fields that must be present, non-empty and well-typed (evidence-field completeness). */
  requiredEvidence?: Record<string, 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array'>;
  /** Field holding a JSON-string mirror of the evidence, compared field by field (inner/outer consistency). */
  evidenceMirror?: string;
  /** Identity fields (e.g. `sku`, `product_id`) pinned to the value the first earlier message of the same task
   * carried (identity pin of the receiver contract). */
  identity?: string[];
}

export interface DetectionContext {
  /** Earlier observations of the same task, oldest first. */
  earlier: readonly Observation[];
  /** Message contracts the user registered. */
  contracts?: readonly MessageContract[];
  /** The expected binding of messages in this task (task / session / minimum version). */
  binding?: { taskId?: string; sessionId?: string; minVersion?: number };
  /** Maximum message / response age in ms before it counts as stale. */
  ttlMs?: number;
  /** Now, epoch ms (injected for purity and tests). */
  now: number;
  /** Latency baseline for outliers: median and MAD of earlier durations on this route, if known. */
  latency?: { medianMs: number; madMs: number };
}

export interface Detector {
  readonly name: string;
  /** `workflow`: a workflow monitor (detectors/monitors) — it judges the task against its history and declarations,
   * not the call's own fault; offline it runs in `monitorTrace` with the workflow's scope, not in `detectSpans`. */
  readonly level?: 'call' | 'workflow';
  /** Cheap pre-check; detect() is only called when it returns true. */
  applies(obs: Observation): boolean;
  detect(obs: Observation, ctx: DetectionContext): Finding[];
}
