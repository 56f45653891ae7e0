/**
 * The ARCF table's accounting (issue 28): detections (online findings) and repairs (the arm's guard actions) counted
 * apart, MAST coverage from detections alone, and one denominator for recovery in both arms. The runs' spans are
 * real OTel SDK spans carrying the events faultline's guards and detectors write; the summary is the campaign's.
 */
import { describe, expect, it } from 'vitest';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode } from '@opentelemetry/api';
import { arcfRunFacts } from '../../src/campaign/arcf-facts';
import { arcfSummary } from '../../src/campaign/arcf-summary';
import { renderArcf } from '../../src/report/arcf';
import type { RunRecord } from '../../src/campaign/analysis';

type Ev = { name: string; attributes: Record<string, string> };
const retry503: Ev = {
  name: 'faultline.guard',
  attributes: {
    'faultline.guard.action': 'retry',
    'faultline.guard.reason': 'HTTP 503',
    'faultline.guard.route': 'llm',
  },
};
const lostMessage: Ev = {
  name: 'faultline.detection',
  attributes: {
    'faultline.detection.fault_type': 'partial',
    'faultline.detection.detector': 'evidence_completeness',
    'faultline.detection.evidence': 'required field price missing',
    'faultline.detection.severity': 'error',
  },
};

function spansOf(events: Ev[], error = false): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const span = provider.getTracer('arcf-accounting').startSpan('chat faultline-mock-1');
  for (const e of events) span.addEvent(e.name, e.attributes);
  if (error) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
  return memory.getFinishedSpans();
}

let seq = 0;
/** A faulted run and its clean twin in one arm of one cell. */
function pair(
  arm: 'none' | 'arcf',
  task: string,
  faulted: { success: boolean; events: Ev[]; error?: boolean },
): RunRecord[] {
  const base = {
    study: 'arcf' as const,
    family: 'shopping',
    task,
    topology: 'sequential' as const,
    arm,
    rep: 1,
    cell: 'http_503@10%',
    reason: '',
    triggered: true,
    detections: 0,
    guardEvents: 0,
    durationMs: 100,
  };
  const cleanId = `${arm}-${task}-clean`;
  return [
    {
      ...base,
      run: ++seq,
      taskId: `${arm}-${task}-faulted`,
      condition: 'http_503@10%',
      faulted: true,
      matchedTo: cleanId,
      success: faulted.success,
      errorSpans: faulted.error ? 1 : 0,
      arcf: arcfRunFacts(spansOf(faulted.events, faulted.error)),
    },
    {
      ...base,
      run: ++seq,
      taskId: cleanId,
      condition: 'clean',
      faulted: false,
      triggered: false,
      success: true,
      errorSpans: 0,
      arcf: arcfRunFacts(spansOf([])),
    },
  ];
}

describe('ARCF accounting: detections and repairs apart', () => {
  it('a guard retry is a repair, not a finding; a detector finding is a detection', () => {
    const repaired = arcfRunFacts(spansOf([retry503]));
    expect(repaired.detections.modes).toEqual({});
    expect(Object.values(repaired.repairs.modes).reduce((a, b) => a + (b ?? 0), 0)).toBe(1);
    expect(repaired.repaired).toBe(true);
    expect(repaired.failed).toBe(false);
    const detected = arcfRunFacts(spansOf([lostMessage]));
    expect(detected.detections.modes).toEqual({ '2.4': 1 });
    expect(detected.repairs.modes).toEqual({});
    expect(detected.failed).toBe(true);
  });

  it('coverage counts detections only, and recovery has one denominator in both arms', () => {
    const records = [
      // Cell A: the fault breaks the baseline (ERROR span, not completed); the arcf arm retries and completes, silently.
      ...pair('none', 'a', { success: false, events: [], error: true }),
      ...pair('arcf', 'a', { success: true, events: [retry503] }),
      // Cell B: a lost message both arms' detectors see; the baseline fails, the arcf arm resubmits and completes.
      ...pair('none', 'b', { success: false, events: [lostMessage] }),
      ...pair('arcf', 'b', { success: true, events: [lostMessage, retry503] }),
      // Cell C: a harmless fault (both complete, nothing signalled): not a failure to recover from in either arm.
      ...pair('none', 'c', { success: true, events: [] }),
      ...pair('arcf', 'c', { success: true, events: [retry503] }),
    ];
    const s = arcfSummary(records)!;
    const none = s.arms.find((a) => a.arm === 'none')!;
    const arcf = s.arms.find((a) => a.arm === 'arcf')!;
    // Counting the guard actions as findings would give the arcf arm 3 / 3.
    expect(arcf.mastCoverage).toMatchObject({ k: 1, n: 3 });
    expect(none.mastCoverage).toMatchObject({ k: 1, n: 3 });
    expect(arcf.repairedRuns).toMatchObject({ k: 3, n: 3 });
    expect(none.repairedRuns).toMatchObject({ k: 0, n: 3 });
    expect(arcf.detections.modes).toEqual({ '2.4': 1 });
    expect(Object.values(arcf.repairs.modes).reduce((a, b) => a + (b ?? 0), 0)).toBe(3);
    // One denominator: the cells where the fault harmed the unprotected run (A and B), in both arms.
    expect(none.recovery).toMatchObject({ k: 0, n: 2 });
    expect(arcf.recovery).toMatchObject({ k: 2, n: 2 });
    const text = renderArcf(s);
    expect(text).toMatch(/MAST coverage rate \(detections only\)\s+33\.3% \(1\/3\)\s+33\.3% \(1\/3\)/);
    expect(text).toMatch(/Runs repaired \(guard \/ checkpoint actions\)\s+0\.0% \(0\/3\)\s+100\.0% \(3\/3\)/);
    expect(text).toContain("Failures repaired by the arcf arm's guards (not counted as detections)");
  });
});
