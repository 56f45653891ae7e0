/**
 * What one ARCF run did, read from its spans: the faults that fired, the monitors' detections (MAST mode, ARCF type)
 * and the guards' repairs, counted apart (a repair is not a detection), and whether the run ended well.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import { type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  classifyFinding,
  isArcfFailure,
  isMastModeId,
  type ArcfFailure,
  type MastModeId,
} from '../../detectors/monitors/mast';
import { isFaultType, type FaultType } from '../taxonomy';
import type { SpanRecord, TraceRecord } from '../traces/model';
import type { ArcfRunFacts, ArcfTally } from './types';

const RECOVERY = new Set(['retry', 'fallback', 'resubmit', 'reacquire', 'reject', 'record', 'drop', 'fail_fast']);

/**
 * The failure a guard acted on, from its event (the monitoring that triggered the recovery): the findings it names
 * (`truncate (finish_reason: …)`, as guards describe them), an HTTP status or connection error, a lost or duplicated
 * message, a message that failed its contract.
 */
function guardFailure(action: string, reason: string): FaultType | undefined {
  if (action === 'resubmit') return 'non_delivery';
  if (action === 'duplicate_suppressed') return 'duplicate';
  if (action === 'reacquire') return 'partial';
  if (action === 'fail_fast') return 'error';
  if (!RECOVERY.has(action)) return undefined;
  const http = /^HTTP (\d{3})/.exec(reason);
  if (http) return http[1] === '408' || http[1] === '504' ? 'timeout' : 'error';
  if (/^connection error/.test(reason)) return /TIMEDOUT|timeout/i.test(reason) ? 'timeout' : 'error';
  const named = /^(\w+) \(/.exec(reason)?.[1];
  return isFaultType(named) ? named : undefined;
}

/** What the facts read of a span: the SDK's ReadableSpan (the example campaigns) or a SpanRecord (command runs). */
interface SpanView {
  error: boolean;
  attributes: Record<string, unknown>;
  events: ReadonlyArray<{ name: string; attributes?: Record<string, unknown> }>;
}

const fromSdk = (s: ReadableSpan): SpanView => ({
  error: s.status.code === SpanStatusCode.ERROR,
  attributes: s.attributes,
  events: s.events,
});
const fromRecord = (s: SpanRecord): SpanView => ({
  error: s.status.code === 'ERROR',
  attributes: s.attributes,
  events: s.events,
});

export function arcfRunFacts(spans: readonly ReadableSpan[]): ArcfRunFacts {
  return runFactsOf(spans.map(fromSdk));
}

/** The same facts from a labelled trace (a command campaign's run). */
export function arcfTraceFacts(trace: TraceRecord): ArcfRunFacts {
  return runFactsOf(trace.spans.map(fromRecord));
}

function runFactsOf(spans: readonly SpanView[]): ArcfRunFacts {
  const f: ArcfRunFacts = {
    retried: 0,
    retryOk: 0,
    fellBack: 0,
    fallbackOk: 0,
    rollbacks: 0,
    detections: { failures: {}, modes: {} },
    repairs: { failures: {}, modes: {} },
    failed: false,
    repaired: false,
    verified: 0,
    safetyBlocked: 0,
  };
  const count = (t: ArcfTally, c: { failure: ArcfFailure; mast: MastModeId }): void => {
    t.failures[c.failure] = (t.failures[c.failure] ?? 0) + 1;
    t.modes[c.mast] = (t.modes[c.mast] ?? 0) + 1;
  };
  for (const s of spans) {
    if (s.error) f.failed = true;
    const guard = s.events
      .filter((e) => e.name === 'faultline.guard')
      .map((e) => ({
        action: String(e.attributes?.['faultline.guard.action']),
        reason: String(e.attributes?.['faultline.guard.reason'] ?? ''),
        route: String(e.attributes?.['faultline.guard.route'] ?? ''),
      }));
    const gaveUp = (after: number) =>
      guard.slice(after).some((g) => g.action === 'reject' || g.action === 'record' || g.action === 'drop') || s.error;
    const firstRetry = guard.findIndex(
      (g) => g.action === 'retry' || g.action === 'resubmit' || g.action === 'reacquire',
    );
    if (firstRetry >= 0) {
      f.retried++;
      const fallbackAfter = guard.slice(firstRetry).some((g) => g.action === 'fallback');
      const delivered = s.attributes['faultline.message.delivered_count'];
      if (!fallbackAfter && !gaveUp(firstRetry) && (delivered === undefined || Number(delivered) > 0)) f.retryOk++;
    }
    const lastFallback = guard.map((g) => g.action).lastIndexOf('fallback');
    if (lastFallback >= 0) {
      f.fellBack++;
      if (!gaveUp(lastFallback)) f.fallbackOk++;
    }
    if (guard.some((g) => RECOVERY.has(g.action))) f.repaired = true;
    for (const g of guard) {
      const type = guardFailure(g.action, g.reason);
      const c =
        type !== undefined ? classifyFinding({ faultType: type, detector: 'guard', evidence: g.reason }) : undefined;
      if (c) count(f.repairs, c);
    }
    for (const g of guard) {
      if (g.action !== 'verify_pass' && g.action !== 'verify_fail') continue;
      f.verified++;
      if (g.action === 'verify_fail' && g.reason.startsWith('safety tier')) f.safetyBlocked++;
    }
    // Steps that failed verification and were saved after their re-run: a retry that worked.
    const ckpt = s.events
      .filter((e) => e.name === 'faultline.checkpoint')
      .map((e) => ({
        action: String(e.attributes?.['faultline.checkpoint.action']),
        name: String(e.attributes?.['faultline.checkpoint.name']),
      }));
    for (let i = 0; i < ckpt.length; i++) {
      const c = ckpt[i]!;
      if (c.action === 'rollback') {
        f.rollbacks++;
        f.repaired = true;
      }
      if (c.action !== 'verify_failed') continue;
      f.repaired = true;
      if (ckpt[i - 1]?.action === 'verify_failed' && ckpt[i - 1]?.name === c.name) continue; // one retried step, counted once
      f.retried++;
      const next = ckpt.slice(i + 1).find((x) => x.name === c.name && x.action !== 'verify_failed');
      if (next?.action === 'saved' && !ckpt.slice(i + 1, ckpt.indexOf(next)).some((x) => x.action === 'rollback'))
        f.retryOk++;
    }
    for (const e of s.events) {
      if (e.name !== 'faultline.detection') continue;
      const a = e.attributes ?? {};
      const faultType = a['faultline.detection.fault_type'];
      if (!isFaultType(faultType)) continue;
      const failure = a['faultline.detection.failure'];
      const mast = a['faultline.detection.mast_mode'];
      const c = classifyFinding({
        faultType,
        detector: String(a['faultline.detection.detector'] ?? ''),
        evidence: String(a['faultline.detection.evidence'] ?? ''),
        ...(isArcfFailure(failure) ? { failure } : {}),
        ...(isMastModeId(mast) ? { mast } : {}),
      });
      if (a['faultline.detection.severity'] === 'error' || a['faultline.detection.severity'] === 'critical')
        f.failed = true;
      if (c) count(f.detections, c);
    }
  }
  return f;
}
