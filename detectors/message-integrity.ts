/**
 * Message integrity: what the receiver got against what the sender handed over (online, where the channel sees
 * both; offline from the recorded payload and delivered hashes). Missing keys → partial; a value whose type changed →
 * schema; a value that changed → semantic; a hash that differs with no content to compare → corrupt. A foreign
 * envelope (another task or session) is the staleness detector's finding and is skipped here.
 */
import type { AgentMessage } from '../instrumentation/types';
import type { Detector, Finding, MessageObservation, Observation } from './types';

function kind(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

function compare(
  orig: AgentMessage,
  d: AgentMessage,
): { faultType: Finding['faultType']; evidence: string; field?: string } | undefined {
  if (d.taskId !== orig.taskId || d.sessionId !== orig.sessionId) return undefined; // staleness
  const a = orig.payload as unknown;
  const b = d.payload as unknown;
  if (a === b) return undefined;
  const ja = JSON.stringify(a);
  const jb = JSON.stringify(b);
  if (ja === jb) return undefined;
  if (kind(a) !== kind(b))
    return {
      faultType: kind(b) === 'string' ? 'corrupt' : 'schema',
      evidence: `payload changed from ${kind(a)} to ${kind(b)}`,
    };
  if (kind(a) === 'object') {
    const ao = a as Record<string, unknown>;
    const bo = b as Record<string, unknown>;
    const missing = Object.keys(ao).filter((k) => !(k in bo));
    if (missing.length > 0)
      return {
        faultType: 'partial',
        evidence: `delivered payload lacks ${missing.slice(0, 6).join(', ')}`,
        field: `payload.${missing[0]}`,
      };
    const retyped = Object.keys(ao).filter((k) => kind(ao[k]) !== kind(bo[k]));
    if (retyped.length > 0)
      return {
        faultType: 'schema',
        evidence: `type of ${retyped.slice(0, 4).join(', ')} changed in transit`,
        field: `payload.${retyped[0]}`,
      };
    const added = Object.keys(bo).filter((k) => !(k in ao));
    if (added.length > 0 && Object.keys(ao).every((k) => JSON.stringify(ao[k]) === JSON.stringify(bo[k]))) {
      return {
        faultType: 'semantic',
        evidence: `fields added in transit: ${added.slice(0, 4).join(', ')}`,
        field: `payload.${added[0]}`,
      };
    }
    const changed = Object.keys(ao).filter((k) => JSON.stringify(ao[k]) !== JSON.stringify(bo[k]));
    return {
      faultType: 'semantic',
      evidence: `values changed in transit: ${changed.slice(0, 4).join(', ') || 'payload'}`,
      field: changed[0] ? `payload.${changed[0]}` : 'payload',
    };
  }
  if (typeof a === 'string' && typeof b === 'string' && a.startsWith(b))
    return { faultType: 'truncate', evidence: `payload cut to ${b.length} of ${a.length} chars` };
  return { faultType: 'semantic', evidence: 'payload changed in transit' };
}

export const messageIntegrityDetector: Detector = {
  name: 'message_integrity',
  applies: (obs) => obs.kind === 'message' && (obs.original !== undefined || obs.facts?.payloadHash !== undefined),
  detect(obs: Observation): Finding[] {
    const m = obs as MessageObservation;
    const out: Finding[] = [];
    if (m.original && (m.hasContent || m.delivered.length > 0)) {
      m.delivered.forEach((d, index) => {
        const diff = compare(m.original!, d);
        if (diff)
          out.push({
            detector: 'message_integrity',
            faultType: diff.faultType,
            severity: 'error',
            confidence: 0.9,
            evidence: diff.evidence,
            location: { spanId: m.spanId, field: diff.field ?? 'payload', index },
          });
      });
      return out;
    }
    const h = m.facts?.payloadHash;
    const delivered = m.facts?.deliveredHashes ?? [];
    delivered.forEach((dh, index) => {
      if (h !== undefined && dh !== h)
        out.push({
          detector: 'message_integrity',
          faultType: 'corrupt',
          severity: 'warning',
          confidence: 0.6,
          evidence: 'delivered payload differs from the payload sent',
          location: { spanId: m.spanId, field: 'payload', index },
        });
    });
    return out;
  },
};
