/**
 * Messages whose spans record only their envelope (A2A / MCP client spans as another producer writes them: a method
 * name, maybe an id, no payload or delivery facts, no receive end). The message rules skip their per-message checks
 * when every message of a trace is like this; what such a span does say (a failure, a task binding) must still count.
 */
import { describe, expect, it } from 'vitest';
import { diagnoseByRules } from '../../src/diagnosers/rules';
import { detectSpans } from '../../detectors/from-span';
import type { Attributes, SpanRecord, TraceRecord } from '../../src/traces/model';

let seq = 0;
function client(attributes: Attributes, o: { error?: number } = {}): SpanRecord {
  seq++;
  const start = 1_700_000_000_000 + seq * 1000;
  return {
    traceId: 'e'.repeat(32),
    spanId: seq.toString(16).padStart(16, '0'),
    parentSpanId: 'f'.repeat(16),
    name: 'SendMessage reviewer',
    kind: 'CLIENT',
    start,
    end: start + 40,
    attributes: o.error !== undefined ? { ...attributes, 'http.response.status_code': o.error } : attributes,
    events: [],
    links: [],
    status: o.error !== undefined ? { code: 'ERROR', message: `${o.error}` } : { code: 'UNSET' },
    resource: {},
    scope: { name: 'other-producer' },
  };
}

const a2a = (extra: Attributes = {}): Attributes => ({
  'a2a.method.name': 'message/send',
  'server.address': '127.0.0.1',
  ...extra,
});
const trace = (spans: SpanRecord[]): TraceRecord => ({ traceId: spans[0]!.traceId, spans });
const rules = (t: TraceRecord) => diagnoseByRules(t, { findings: (tr) => detectSpans(tr, { includeOnline: false }) });

describe('envelope-only messages', () => {
  it('say nothing wrong when nothing is recorded beyond the envelope', () => {
    const d = rules(
      trace([
        client(a2a({ 'faultline.message.id': 'm1' })),
        client(a2a({ 'faultline.message.id': 'm2' })),
        client(a2a()),
      ]),
    );
    expect(d.faultType).toBe('none');
  });

  it('a failed call among them is still the fault, at its step', () => {
    const failed = client(a2a({ 'faultline.message.id': 'm2' }), { error: 503 });
    const d = rules(trace([client(a2a({ 'faultline.message.id': 'm1' })), failed]));
    expect(d).toMatchObject({ faultType: 'error', spanId: failed.spanId, stepKind: 'message' });
    expect(d.evidence[0]).toContain('503');
  });

  it('a message bound to another task than the run’s other messages is stale', () => {
    const odd = client(a2a({ 'faultline.message.task_id': 'task-B' }));
    const d = rules(
      trace([
        client(a2a({ 'faultline.message.task_id': 'task-A' })),
        client(a2a({ 'faultline.message.task_id': 'task-A' })),
        odd,
      ]),
    );
    expect(d).toMatchObject({ faultType: 'stale', spanId: odd.spanId, stepKind: 'message' });
  });
});
