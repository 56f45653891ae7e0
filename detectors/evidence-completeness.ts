/**
 * Evidence-field completeness, the receiver contract of "When Messages Go Wrong" (fault-catalog.md §2.10):
 * - required evidence fields present, non-empty and well-typed (missing / empty → partial; wrong type → schema);
 * - inner and outer copies consistent: a JSON-string mirror of the evidence agrees field by field (→ semantic);
 * - task / session binding: the payload's task_id / session_id agree with the envelope and the expected binding
 *   (→ stale);
 * - identity pin: identity fields agree with the first earlier message of the task that carried them (→ semantic).
 * Only messages a registered contract with `requiredEvidence`, `evidenceMirror` or `identity` applies to are checked.
 */
import type { AgentMessage } from '../instrumentation/types';
import type { DetectionContext, Detector, Finding, MessageContract, MessageObservation, Observation } from './types';
import { contractsFor } from './contracts';
import { safeParse } from './text';

type Kind = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array';

function wellTyped(v: unknown, kind: Kind): boolean {
  switch (kind) {
    case 'string':
      return typeof v === 'string';
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'array':
      return Array.isArray(v);
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
  }
}

function isEmpty(v: unknown): boolean {
  return (
    v === null || v === undefined || (typeof v === 'string' && v.trim() === '') || (Array.isArray(v) && v.length === 0)
  );
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null)
    return JSON.stringify(a) === JSON.stringify(b);
  return false;
}

function pick(p: Record<string, unknown>, ...keys: string[]): unknown {
  for (const k of keys) if (p[k] !== undefined) return p[k];
  return undefined;
}

/** The issues the receiver contract finds in one delivered message. Exported for the channel guard. */
export function evidenceIssues(
  msg: AgentMessage,
  contracts: readonly MessageContract[],
  ctx: Pick<DetectionContext, 'earlier' | 'binding'>,
): Array<Omit<Finding, 'detector' | 'location'> & { field: string }> {
  const out: Array<Omit<Finding, 'detector' | 'location'> & { field: string }> = [];
  const payload = msg.payload;
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    if (contracts.some((c) => c.requiredEvidence))
      out.push({
        faultType: 'schema',
        severity: 'error',
        confidence: 0.9,
        evidence: 'payload is not an object',
        field: 'payload',
      });
    return out;
  }
  const p = payload as Record<string, unknown>;
  for (const c of contracts) {
    const req = c.requiredEvidence ?? {};
    const missing: string[] = [];
    for (const [k, kind] of Object.entries(req)) {
      if (!(k in p) || isEmpty(p[k])) missing.push(k);
      else if (!wellTyped(p[k], kind))
        out.push({
          faultType: 'schema',
          severity: 'error',
          confidence: 0.9,
          evidence: `evidence field ${k} is not ${kind}`,
          field: `payload.${k}`,
        });
    }
    if (missing.length > 0) {
      out.push({
        faultType: 'partial',
        severity: 'error',
        confidence: 0.95,
        evidence: `evidence incomplete for "${c.name}": missing or empty ${missing.slice(0, 6).join(', ')}${missing.length > 6 ? ', …' : ''}`,
        field: `payload.${missing[0]}`,
      });
    }
    if (c.evidenceMirror && p[c.evidenceMirror] !== undefined && !isEmpty(p[c.evidenceMirror])) {
      const raw = p[c.evidenceMirror];
      const inner = typeof raw === 'string' ? safeParse(raw) : raw;
      if (typeof inner !== 'object' || inner === null) {
        // A free-text evidence string is allowed; only a JSON mirror is compared.
        if (typeof raw === 'string' && /^\s*[{[]/.test(raw))
          out.push({
            faultType: 'corrupt',
            severity: 'error',
            confidence: 0.8,
            evidence: `evidence mirror ${c.evidenceMirror} is not valid JSON`,
            field: `payload.${c.evidenceMirror}`,
          });
      } else {
        const keys = Object.keys(req).length > 0 ? Object.keys(req) : Object.keys(inner);
        const differ = keys.filter(
          (k) =>
            k !== c.evidenceMirror &&
            k in (inner as object) &&
            k in p &&
            !same((inner as Record<string, unknown>)[k], p[k]),
        );
        if (differ.length > 0)
          out.push({
            faultType: 'semantic',
            severity: 'error',
            confidence: 0.9,
            evidence: `inner and outer evidence disagree on ${differ.slice(0, 5).join(', ')}`,
            field: `payload.${differ[0]}`,
          });
      }
    }
    if (c.identity && c.identity.length > 0) {
      const pinned = identityPins(c.identity, msg, ctx.earlier);
      const differ = c.identity.filter((k) => pinned[k] !== undefined && p[k] !== undefined && !same(pinned[k], p[k]));
      if (differ.length > 0)
        out.push({
          faultType: 'semantic',
          severity: 'error',
          confidence: 0.85,
          evidence: `identity ${differ.join(', ')} differs from the task's earlier observation`,
          field: `payload.${differ[0]}`,
        });
    }
  }
  if (contracts.length > 0) {
    const task = pick(p, 'task_id', 'taskId');
    const expectedTask = ctx.binding?.taskId ?? msg.taskId;
    if (typeof task === 'string' && expectedTask !== undefined && task !== expectedTask) {
      out.push({
        faultType: 'stale',
        severity: 'error',
        confidence: 0.9,
        evidence: `payload bound to task ${task}, expected ${expectedTask}`,
        field: 'payload.task_id',
      });
    }
    const session = pick(p, 'session_id', 'sessionId');
    const expectedSession = ctx.binding?.sessionId ?? msg.sessionId;
    if (typeof session === 'string' && expectedSession !== undefined && session !== expectedSession) {
      out.push({
        faultType: 'stale',
        severity: 'error',
        confidence: 0.9,
        evidence: `payload bound to session ${session}, expected ${expectedSession}`,
        field: 'payload.session_id',
      });
    }
  }
  return out;
}

function identityPins(
  fields: string[],
  msg: AgentMessage,
  earlier: DetectionContext['earlier'],
): Record<string, unknown> {
  const pins: Record<string, unknown> = {};
  for (const o of earlier) {
    if (o.kind !== 'message') continue;
    for (const d of o.delivered) {
      if (msg.taskId !== undefined && d.taskId !== undefined && d.taskId !== msg.taskId) continue;
      if (typeof d.payload !== 'object' || d.payload === null) continue;
      const dp = d.payload as Record<string, unknown>;
      for (const f of fields) if (pins[f] === undefined && dp[f] !== undefined) pins[f] = dp[f];
    }
  }
  return pins;
}

export const evidenceCompletenessDetector: Detector = {
  name: 'evidence_completeness',
  applies: (obs) => obs.kind === 'message' && obs.hasContent,
  detect(obs: Observation, ctx): Finding[] {
    if (!ctx.contracts || ctx.contracts.length === 0) return [];
    const m = obs as MessageObservation;
    const out: Finding[] = [];
    m.delivered.forEach((msg, index) => {
      const contracts = contractsFor(ctx.contracts, msg).filter(
        (c) => c.requiredEvidence || c.evidenceMirror || c.identity,
      );
      if (contracts.length === 0) return;
      for (const { field, ...f } of evidenceIssues(msg, contracts, ctx))
        out.push({ detector: 'evidence_completeness', ...f, location: { spanId: m.spanId, field, index } });
    });
    return out;
  },
};
