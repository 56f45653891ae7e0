/**
 * Staleness and replay.
 * LLM responses: a response id and body already seen for a different request of the task (a cached / replayed body;
 * requiring id AND body keeps constant-id mocks quiet), a provider `created` time older than the request, an age over
 * the TTL.
 * Messages: a task / session binding that is foreign to the expected one, a version behind the minimum or behind an
 * earlier delivery on the same edge, a message id re-delivered with a different payload, an age over the TTL.
 */
import type { AgentMessage, LlmRequestSummary } from '../instrumentation/types';
import type { DetectionContext, Detector, Finding, LlmObservation, MessageObservation, Observation } from './types';
import { failedCall } from './text';

/** Clock skew tolerated between the provider's `created` and our request time. */
const CREATED_SKEW_S = 300;

const requestPrints = new WeakMap<LlmRequestSummary, string>();

function requestPrint(req: LlmRequestSummary | undefined): string | undefined {
  if (!req) return undefined;
  let p = requestPrints.get(req);
  if (p === undefined) {
    const last = req.messages[req.messages.length - 1];
    p = `${req.model ?? ''}|${req.messages.length}|${last ? JSON.stringify(last).slice(0, 2000) : ''}`;
    requestPrints.set(req, p);
  }
  return p;
}

/** Same output (text and tool calls, or the recorded content hash when content was not captured)? No copies made. */
function sameContent(a: LlmObservation, b: LlmObservation): boolean {
  if (a.hasContent && b.hasContent) {
    const ta = a.response.toolCalls;
    const tb = b.response.toolCalls;
    if (a.response.text !== b.response.text || ta.length !== tb.length) return false;
    for (let i = 0; i < ta.length; i++) if (ta[i]!.name !== tb[i]!.name || ta[i]!.arguments !== tb[i]!.arguments) return false;
    return true;
  }
  const ha = a.facts?.contentHash;
  return ha !== undefined && ha === b.facts?.contentHash;
}

function contentSize(o: LlmObservation): number {
  if (!o.hasContent) return o.facts?.outputChars ?? (o.facts?.contentHash ? 80 : 0);
  let n = o.response.text.length;
  for (const t of o.response.toolCalls) n += t.name.length + t.arguments.length + 2;
  return n;
}

function stale(obs: Observation, confidence: number, evidence: string, field: string, index?: number): Finding {
  return { detector: 'staleness', faultType: 'stale', severity: 'error', confidence, evidence, location: index === undefined ? { spanId: obs.spanId, field } : { spanId: obs.spanId, field, index } };
}

function detectLlm(o: LlmObservation, ctx: DetectionContext): Finding[] {
  const out: Finding[] = [];
  const r = o.response;
  const size = contentSize(o);
  for (const e of ctx.earlier) {
    if (e.kind !== 'llm' || e === o) continue;
    const sameId = r.id !== undefined && e.response.id === r.id;
    const noIds = r.id === undefined && e.response.id === undefined;
    if (!sameId && !noIds) continue;
    if (size <= 1 || (!sameId && size < 80)) continue;
    {
      if (!sameContent(o, e)) continue;
      const req = requestPrint(o.request);
      const ereq = requestPrint(e.request);
      if (req !== undefined && ereq !== undefined && ereq === req) continue; // same request: a retry, not a replay
      out.push(stale(o, sameId ? 0.9 : 0.6, `response ${sameId ? `id ${r.id} and body` : 'body'} already returned for an earlier, different request`, 'id'));
      break;
    }
  }
  if (r.created !== undefined && o.request?.time !== undefined && r.created < o.request.time / 1000 - CREATED_SKEW_S) {
    out.push(stale(o, 0.8, `created ${Math.round(o.request.time / 1000 - r.created)} s before the request was sent`, 'created'));
  } else if (r.created !== undefined && ctx.ttlMs !== undefined && ctx.now - r.created * 1000 > ctx.ttlMs) {
    out.push(stale(o, 0.7, `response age ${Math.round((ctx.now - r.created * 1000) / 1000)} s exceeds the TTL`, 'created'));
  }
  return out;
}

function detectMessage(m: MessageObservation, ctx: DetectionContext): Finding[] {
  const out: Finding[] = [];
  const expectTask = ctx.binding?.taskId ?? m.original?.taskId;
  const expectSession = ctx.binding?.sessionId ?? m.original?.sessionId;
  const minVersion = Math.max(ctx.binding?.minVersion ?? -Infinity, m.original?.version ?? -Infinity);
  m.delivered.forEach((d, index) => {
    if (expectTask !== undefined && d.taskId !== undefined && d.taskId !== expectTask) {
      out.push(stale(m, 0.95, `message bound to task ${d.taskId}, expected ${expectTask}`, 'task_id', index));
      return;
    }
    if (expectSession !== undefined && d.sessionId !== undefined && d.sessionId !== expectSession) {
      out.push(stale(m, 0.9, `message bound to session ${d.sessionId}, expected ${expectSession}`, 'session_id', index));
      return;
    }
    if (d.version !== undefined && d.version < minVersion) {
      out.push(stale(m, 0.9, `version ${d.version} is behind ${minVersion}`, 'version', index));
      return;
    }
    const prior = latestOnEdge(d, ctx.earlier);
    if (prior !== undefined && d.version !== undefined && prior.version !== undefined && d.version < prior.version) {
      out.push(stale(m, 0.8, `version ${d.version} arrived after version ${prior.version} on ${d.source}→${d.target}`, 'version', index));
      return;
    }
    const replayed = replayOf(d, ctx.earlier);
    if (replayed) {
      out.push(stale(m, 0.8, `message id ${d.id} was delivered earlier with a different payload`, 'id', index));
      return;
    }
    if (ctx.ttlMs !== undefined && d.sentAt !== undefined && ctx.now - d.sentAt > ctx.ttlMs) {
      out.push(stale(m, 0.7, `message age ${Math.round(ctx.now - d.sentAt)} ms exceeds the TTL of ${ctx.ttlMs} ms`, 'sent_at', index));
    }
  });
  return out;
}

function latestOnEdge(d: AgentMessage, earlier: DetectionContext['earlier']): AgentMessage | undefined {
  let best: AgentMessage | undefined;
  for (const o of earlier) {
    if (o.kind !== 'message') continue;
    for (const e of o.delivered) {
      if (e.source !== d.source || e.target !== d.target || e.version === undefined) continue;
      if (d.taskId !== undefined && e.taskId !== undefined && e.taskId !== d.taskId) continue;
      if (!best || (best.version ?? -Infinity) < e.version) best = e;
    }
  }
  return best;
}

function replayOf(d: AgentMessage, earlier: DetectionContext['earlier']): boolean {
  let payload: string | undefined;
  for (const o of earlier) {
    if (o.kind !== 'message') continue;
    for (const e of o.delivered) {
      if (e.id !== d.id) continue;
      payload ??= JSON.stringify(d.payload) ?? '';
      if ((JSON.stringify(e.payload) ?? '') !== payload) return true;
    }
  }
  return false;
}

export const stalenessDetector: Detector = {
  name: 'staleness',
  applies: (obs) => obs.kind === 'message' || !failedCall(obs),
  detect: (obs, ctx) => (obs.kind === 'llm' ? detectLlm(obs, ctx) : detectMessage(obs, ctx)),
};
