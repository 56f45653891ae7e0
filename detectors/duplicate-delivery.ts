/**
 * Duplicate delivery: one send reaching the receiver more than once (several delivered copies, or a message id the
 * task already delivered with the same payload). Executing such a copy twice is the harm the action ledger prevents.
 */
import { payloadPrint } from './history';
import type { Detector, Finding, MessageObservation, Observation } from './types';

export const duplicateDeliveryDetector: Detector = {
  name: 'duplicate_delivery',
  applies: (obs) => obs.kind === 'message',
  detect(obs: Observation, ctx): Finding[] {
    const m = obs as MessageObservation;
    const count = m.delivered.length > 0 ? m.delivered.length : (m.facts?.deliveredCount ?? 0);
    if (count > 1) {
      return [
        {
          detector: 'duplicate_delivery',
          faultType: 'duplicate',
          severity: 'error',
          confidence: 0.95,
          evidence: `one send delivered ${count} times`,
          location: { spanId: m.spanId, index: 1 },
        },
      ];
    }
    const d = m.delivered[0];
    if (!d) return [];
    for (const e of ctx.earlier) {
      if (e.kind !== 'message' || e === m) continue;
      for (const prev of e.delivered) {
        if (prev.id !== d.id || prev.source !== d.source || prev.target !== d.target) continue;
        if (payloadPrint(prev) === payloadPrint(d)) {
          return [
            {
              detector: 'duplicate_delivery',
              faultType: 'duplicate',
              severity: 'error',
              confidence: 0.85,
              evidence: `message id ${d.id} was already delivered to ${d.target}`,
              location: { spanId: m.spanId, field: 'id' },
            },
          ];
        }
      }
    }
    return [];
  },
};
