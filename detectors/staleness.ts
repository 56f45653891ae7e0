/**
 * Staleness and replay.
 * LLM responses: a response id and body already seen for a different request of the task (a cached / replayed body;
 * requiring id AND body keeps constant-id mocks quiet); a provider `created` time that went backwards against an
 * earlier answer of the same route, or that is older than the request while the route's earlier answers were fresh;
 * an age over the TTL. A `created` on its own proves nothing: servers send placeholders (`created: 1`), milliseconds,
 * or run on a skewed clock, so an old `created` with nothing to compare it to is only a hint.
 * Messages: a task / session binding that is foreign to the expected one, a version behind the minimum or behind an
 * earlier delivery on the same edge, a message id re-delivered with a different payload, an age over the TTL.
 */
import type { AgentMessage } from '../instrumentation/types';
import { contentPrint, payloadPrint, requestPrint } from './history';
import type { DetectionContext, Detector, Finding, LlmObservation, MessageObservation, Observation } from './types';
import { failedCall } from './text';

/** Clock skew tolerated between the provider's `created` and our request time. */
const CREATED_SKEW_S = 300;
/** A `created` before 2015 is a placeholder or an unset clock, not a time. */
const PLAUSIBLE_CREATED_S = 1_420_070_400;

/** Same output (by fingerprint: remembered observations keep no text)? */
function sameContent(a: LlmObservation, b: LlmObservation): boolean {
  const pa = contentPrint(a);
  return pa !== undefined && pa === contentPrint(b);
}

function contentSize(o: LlmObservation): number {
  if (!o.hasContent) return o.facts?.outputChars ?? (o.facts?.contentHash ? 80 : 0);
  let n = o.response.text.length;
  for (const t of o.response.toolCalls) n += t.name.length + t.arguments.length + 2;
  return n;
}

function stale(obs: Observation, confidence: number, evidence: string, field: string, index?: number): Finding {
  return {
    detector: 'staleness',
    faultType: 'stale',
    severity: 'error',
    confidence,
    evidence,
    location: index === undefined ? { spanId: obs.spanId, field } : { spanId: obs.spanId, field, index },
  };
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
      const req = requestPrint(o);
      const ereq = requestPrint(e);
      if (req !== undefined && ereq !== undefined && ereq === req) continue; // same request: a retry, not a replay
      out.push(
        stale(
          o,
          sameId ? 0.9 : 0.6,
          `response ${sameId ? `id ${r.id} and body` : 'body'} already returned for an earlier, different request`,
          'id',
        ),
      );
      break;
    }
  }
  const byClock = createdFinding(o, ctx);
  if (byClock) out.push(byClock);
  return out;
}

/** When a response was made, in epoch seconds, and when its request was sent, if both are known and plausible. */
function clock(o: LlmObservation): { created: number; sentS: number } | undefined {
  const created = o.response.created;
  const sent = o.request?.time;
  if (created === undefined || sent === undefined) return undefined;
  // Placeholders and unset clocks (before 2015), and milliseconds sent where seconds belong (far in the future).
  if (created < PLAUSIBLE_CREATED_S || created > sent / 1000 + 86_400) return undefined;
  return { created, sentS: sent / 1000 };
}

function sameRoute(a: LlmObservation, b: LlmObservation): boolean {
  return (
    a.request?.provider === b.request?.provider &&
    (a.request?.model ?? a.response.model) === (b.request?.model ?? b.response.model)
  );
}

/**
 * The provider's `created` as evidence, judged against the route's own clock: an answer made before an earlier
 * answer of the same route (time went backwards: an older answer replayed), or made long before its request while
 * earlier answers of the route were fresh (so the server's clock is right and this answer is old). With no earlier
 * answer to compare, an old `created` may be the server's clock: a hint only.
 */
function createdFinding(o: LlmObservation, ctx: DetectionContext): Finding | undefined {
  const c = clock(o);
  if (c === undefined) return undefined;
  let newest: number | undefined;
  let fresh = false;
  for (const e of ctx.earlier) {
    if (e.kind !== 'llm' || e === o || !sameRoute(o, e)) continue;
    const ec = clock(e);
    if (ec === undefined) continue;
    newest = Math.max(newest ?? ec.created, ec.created);
    if (Math.abs(ec.sentS - ec.created) <= CREATED_SKEW_S) fresh = true;
  }
  if (newest !== undefined && newest - c.created > CREATED_SKEW_S) {
    return stale(
      o,
      0.85,
      `created ${Math.round(newest - c.created)} s before an earlier answer of the same route`,
      'created',
    );
  }
  const lag = c.sentS - c.created;
  if (lag > CREATED_SKEW_S) {
    return fresh
      ? stale(
          o,
          0.8,
          `created ${Math.round(lag)} s before the request was sent, while earlier answers of the same route were fresh`,
          'created',
        )
      : stale(
          o,
          0.4,
          `created ${Math.round(lag)} s before the request was sent (no fresh answer of the route to tell a stale answer from a skewed server clock)`,
          'created',
        );
  }
  if (ctx.ttlMs !== undefined && ctx.now - c.created * 1000 > ctx.ttlMs) {
    return stale(
      o,
      0.7,
      `response age ${Math.round((ctx.now - c.created * 1000) / 1000)} s exceeds the TTL`,
      'created',
    );
  }
  return undefined;
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
      out.push(
        stale(m, 0.9, `message bound to session ${d.sessionId}, expected ${expectSession}`, 'session_id', index),
      );
      return;
    }
    if (d.version !== undefined && d.version < minVersion) {
      out.push(stale(m, 0.9, `version ${d.version} is behind ${minVersion}`, 'version', index));
      return;
    }
    const prior = latestOnEdge(d, ctx.earlier);
    if (prior !== undefined && d.version !== undefined && prior.version !== undefined && d.version < prior.version) {
      out.push(
        stale(
          m,
          0.8,
          `version ${d.version} arrived after version ${prior.version} on ${d.source}→${d.target}`,
          'version',
          index,
        ),
      );
      return;
    }
    const replayed = replayOf(d, ctx.earlier);
    if (replayed) {
      out.push(stale(m, 0.8, `message id ${d.id} was delivered earlier with a different payload`, 'id', index));
      return;
    }
    if (ctx.ttlMs !== undefined && d.sentAt !== undefined && ctx.now - d.sentAt > ctx.ttlMs) {
      out.push(
        stale(
          m,
          0.7,
          `message age ${Math.round(ctx.now - d.sentAt)} ms exceeds the TTL of ${ctx.ttlMs} ms`,
          'sent_at',
          index,
        ),
      );
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
  for (const o of earlier) {
    if (o.kind !== 'message') continue;
    for (const e of o.delivered) if (e.id === d.id && payloadPrint(e) !== payloadPrint(d)) return true;
  }
  return false;
}

export const stalenessDetector: Detector = {
  name: 'staleness',
  applies: (obs) => obs.kind === 'message' || !failedCall(obs),
  detect: (obs, ctx) => (obs.kind === 'llm' ? detectLlm(obs, ctx) : detectMessage(obs, ctx)),
};
