/**
 * What the workflow monitors share: findings that name their ARCF type and MAST mode, and the compact facts a call
 * leaves in a task's history (history.ts keeps them when it forgets the content).
 */
import type { FaultType } from '../../src/taxonomy';
import { contentPrint, knowsRequest, requestPrint, toolCallPrints } from '../history';
import type { Finding, FindingLocation, LlmObservation, Observation, Severity } from '../types';
import { MAST_OF, type ArcfFailure } from './mast';

export function monitorFinding(
  detector: string,
  failure: ArcfFailure,
  faultType: FaultType,
  severity: Severity,
  confidence: number,
  evidence: string,
  location?: FindingLocation,
): Finding {
  const f: Finding = { detector, faultType, severity, confidence, evidence, failure, mast: MAST_OF[failure].mode };
  if (location) f.location = location;
  return f;
}

/** The call answered: no HTTP error, no transport error, not aborted. */
export function answered(o: LlmObservation): boolean {
  const r = o.response;
  return (r.status === undefined || r.status < 400) && r.errorType === undefined && r.aborted !== true;
}

/** Messages the request carried (the recorded count when the history forgot the messages). */
export function messageCount(o: LlmObservation): number | undefined {
  if (o.facts?.messageCount !== undefined) return o.facts.messageCount;
  return o.request ? o.request.messages.length : undefined;
}

export interface CallFacts {
  agent?: string;
  turn?: string;
  ok: boolean;
  messages?: number;
  request?: string;
  content?: string;
  tools: string[];
}

export function callFacts(o: LlmObservation): CallFacts {
  const f: CallFacts = { ok: answered(o), tools: toolCallPrints(o) };
  if (o.scope?.agent !== undefined) f.agent = o.scope.agent;
  if (o.scope?.turn !== undefined) f.turn = o.scope.turn;
  const m = messageCount(o);
  if (m !== undefined) f.messages = m;
  const rq = knowsRequest(o) ? requestPrint(o) : undefined;
  if (rq !== undefined) f.request = rq;
  const c = contentPrint(o);
  if (c !== undefined) f.content = c;
  return f;
}

/** The earlier LLM calls of the same agent turn (the same conversation), oldest first. */
export function sameTurn(o: LlmObservation, earlier: readonly Observation[]): LlmObservation[] {
  const turn = o.scope?.turn;
  if (turn === undefined) return [];
  return earlier.filter((e): e is LlmObservation => e.kind === 'llm' && e.scope?.turn === turn);
}

/** The earlier LLM calls of the same agent in the task (any turn), oldest first. */
export function sameAgent(o: LlmObservation, earlier: readonly Observation[]): LlmObservation[] {
  const agent = o.scope?.agent;
  if (agent === undefined) return [];
  return earlier.filter((e): e is LlmObservation => e.kind === 'llm' && e.scope?.agent === agent);
}

export { median } from '../../src/stats';
