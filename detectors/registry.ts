/**
 * The detector registry and `runDetectors`. Detectors are pure functions over one observation and its task context;
 * the same set runs offline (observations built from spans, see from-span.ts) and online (see online.ts and the
 * guards).
 */
import { diag } from '@opentelemetry/api';
import { callErrorDetector } from './call-error';
import { duplicateDeliveryDetector } from './duplicate-delivery';
import { emptyOutputDetector } from './empty-output';
import { encodingDetector } from './encoding';
import { entityGroundingDetector } from './entity-grounding';
import { evidenceCompletenessDetector } from './evidence-completeness';
import { finishReasonDetector } from './finish-reason';
import { inBandErrorDetector } from './in-band-error';
import { latencyDetector } from './latency';
import { monitorDetectors } from './monitors/index';
import { messageIntegrityDetector } from './message-integrity';
import { schemaContractDetector } from './schema-contract';
import { stalenessDetector } from './staleness';
import { structuralTruncationDetector } from './structural-truncation';
import type { DetectionContext, Detector, Finding, Observation } from './types';

/** Every built-in detector, in a fixed order (findings come out in this order). */
export const defaultDetectors: readonly Detector[] = [
  callErrorDetector,
  finishReasonDetector,
  emptyOutputDetector,
  inBandErrorDetector,
  encodingDetector,
  structuralTruncationDetector,
  schemaContractDetector,
  evidenceCompletenessDetector,
  messageIntegrityDetector,
  stalenessDetector,
  duplicateDeliveryDetector,
  latencyDetector,
  entityGroundingDetector,
  // The workflow monitors (detectors/monitors): they judge what the workflow declared and the task's history.
  ...monitorDetectors,
];

const registry = new Map<string, Detector>(defaultDetectors.map((d) => [d.name, d]));

/** Names of the registered detectors. */
export function detectorNames(): string[] {
  return [...registry.keys()];
}

/** Register a custom detector (replaces one of the same name). */
export function registerDetector(d: Detector): void {
  registry.set(d.name, d);
}

export function getDetector(name: string): Detector | undefined {
  return registry.get(name);
}

/** Resolve names to detectors; unknown names are reported through diag and skipped. */
export function resolveDetectors(names?: readonly (string | Detector)[]): Detector[] {
  if (!names) return [...registry.values()];
  const out: Detector[] = [];
  for (const n of names) {
    if (typeof n !== 'string') out.push(n);
    else {
      const d = registry.get(n);
      if (d) out.push(d);
      else diag.warn(`faultline: unknown detector "${n}" ignored (known: ${detectorNames().join(', ')})`);
    }
  }
  return out;
}

/**
 * Run detectors over one observation. A detector that throws is reported through diag and contributes nothing:
 * detection never breaks the caller.
 */
export function runDetectors(
  obs: Observation,
  ctx: DetectionContext,
  names?: readonly (string | Detector)[],
): Finding[] {
  return runResolved(obs, ctx, names ? resolveDetectors(names) : [...registry.values()]);
}

/** `runDetectors` over a list already resolved: a walk over a trace resolves its list once, not per observation. */
export function runResolved(obs: Observation, ctx: DetectionContext, detectors: readonly Detector[]): Finding[] {
  const out: Finding[] = [];
  for (const d of detectors) {
    try {
      if (!d.applies(obs)) continue;
      for (const f of d.detect(obs, ctx)) {
        if (obs.spanId !== undefined && f.location?.spanId === undefined)
          f.location = { ...f.location, spanId: obs.spanId };
        out.push(f);
      }
    } catch (err) {
      diag.error(`faultline: detector ${d.name} failed (ignored):`, err);
    }
  }
  return out;
}

/** A fresh detection context (now = Date.now()). */
export function detectionContext(partial: Partial<DetectionContext> = {}): DetectionContext {
  return { earlier: [], now: Date.now(), ...partial };
}
