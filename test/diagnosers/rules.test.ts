import { describe, expect, it } from 'vitest';
import { diagnoseByRules } from '../../src/diagnosers/rules';
import { stepOf } from '../../src/traces/model';
import { TraceBuilder } from './support/builder';

const b = new TraceBuilder();

describe('rule diagnoser: span metadata, causal order', () => {
  it('a clean multi-agent trace is none', () => {
    const t = b.trace((w) => {
      w.agent('planner', (a) => a.chat({ finishReasons: ['stop'] }));
      w.agent('coder', (a) => {
        a.chat({ finishReasons: ['tool_calls'], toolCalls: 1, outputChars: 0 });
        a.tool('run_tests');
        a.chat({ finishReasons: ['stop'] });
      });
    });
    const d = diagnoseByRules(t);
    expect(d.faultType).toBe('none');
    expect(d.spanId).toBeNull();
    expect(d.step).toBeNull();
  });

  it('finish_reason length → truncate at its step', () => {
    let id = '';
    const t = b.trace((w) => {
      w.agent('planner', (a) => a.chat());
      w.agent('coder', (a) => {
        id = a.chat({ finishReasons: ['length'], outputChars: 40 });
        a.chat();
      });
    });
    const d = diagnoseByRules(t);
    expect(d).toMatchObject({ faultType: 'truncate', spanId: id, step: 2, stepKind: 'llm' });
    expect(d.evidence[0]).toContain('length');
  });

  it('a retried HTTP 503 is still the first fault; the later successful retry is not', () => {
    let id = '';
    const t = b.trace((w) => {
      w.agent('planner', (a) => {
        id = a.chat({ http: 503 });
        a.chat();
      });
    });
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'error', spanId: id, step: 1 });
  });

  it('timeouts by error.type → timeout', () => {
    const t = b.trace((w) => w.agent('a', (a) => {
      a.chat();
      a.chat({ errorType: 'UND_ERR_HEADERS_TIMEOUT' });
    }));
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'timeout', step: 2 });
  });

  it('no text and no tool calls → empty; content_filter → empty; tool_calls finish without tool calls → empty', () => {
    const t1 = b.trace((w) => w.agent('a', (a) => { a.chat(); a.chat({ outputChars: 0 }); }));
    expect(diagnoseByRules(t1)).toMatchObject({ faultType: 'empty', step: 2 });
    const t2 = b.trace((w) => w.agent('a', (a) => { a.chat({ finishReasons: ['content_filter'], outputChars: 80 }); }));
    expect(diagnoseByRules(t2)).toMatchObject({ faultType: 'empty', step: 1 });
    const t3 = b.trace((w) => w.agent('a', (a) => { a.chat(); a.chat(); a.chat({ finishReasons: ['tool_calls'], outputChars: 0, toolCalls: 0 }); }));
    expect(diagnoseByRules(t3)).toMatchObject({ faultType: 'empty', step: 3 });
  });

  it('an online detection event names its fault type', () => {
    const t = b.trace((w) => w.agent('a', (a) => {
      a.chat();
      a.chat({ detections: [{ detector: 'encoding', faultType: 'corrupt', confidence: 0.97, evidence: 'mojibake: Ã© x3' }] });
      a.chat();
    }));
    const d = diagnoseByRules(t);
    expect(d).toMatchObject({ faultType: 'corrupt', step: 2 });
    expect(d.evidence[0]).toContain('encoding');
  });

  it('a low-confidence detection alone does not make a fault (false positives stay out)', () => {
    const t = b.trace((w) => w.agent('a', (a) => {
      a.chat({ detections: [{ detector: 'structural_truncation', faultType: 'truncate', confidence: 0.3, evidence: 'ends mid-sentence?' }] });
    }));
    const d = diagnoseByRules(t);
    expect(d.faultType).toBe('none');
    expect(d.evidence.join(' ')).toContain('weak truncate');
  });

  it('the upstream cause wins over a downstream symptom, and a failing parent agent is not chosen', () => {
    let cause = '';
    const t = b.trace((w) => {
      w.agent('researcher', (a) => { cause = a.chat({ finishReasons: ['length'] }); });
      w.agent('writer', (a) => { a.chat({ http: 500 }); }, { fail: 'writer failed' });
    });
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'truncate', spanId: cause, step: 1 });
  });

  it('when no call or message is faulty, the failed leaf span is chosen over its failed parent', () => {
    const t = b.trace((w) => {
      w.agent('coder', (a) => { a.chat({ toolCalls: 1, finishReasons: ['tool_calls'], outputChars: 0 }); a.tool('run_tests', { fail: 'exit 1' }); }, { fail: 'tool failed' });
    });
    const d = diagnoseByRules(t);
    expect(d.faultType).toBe('error');
    expect(t.spans.find((s) => s.spanId === d.spanId)!.name).toBe('execute_tool run_tests');
    expect(d.step).toBeNull();
  });

  it('an aborted call (the application cancelled it) is not an empty answer', () => {
    const t = b.trace((w) => w.agent('a', (a) => { a.chat(); a.chat({ aborted: true, outputChars: 0, finishReasons: [] }); }));
    expect(diagnoseByRules(t).faultType).toBe('none');
  });

  it('natural latency variance is a weak hint, not a fault', () => {
    const t = b.trace((w) => w.agent('a', (a) => { a.chat({ durationMs: 400 }); a.chat({ durationMs: 2600 }); a.chat({ durationMs: 380 }); }));
    const d = diagnoseByRules(t);
    expect(d.faultType).toBe('none');
    expect(d.evidence[0]).toContain('weak delay');
  });

  it('a latency outlier → delay', () => {
    const t = b.trace((w) => w.agent('a', (a) => { a.chat({ durationMs: 700 }); a.chat({ durationMs: 5800 }); a.chat({ durationMs: 900 }); }));
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'delay', step: 2 });
  });

  it('a stream that ends without its terminal event → truncate', () => {
    const t = b.trace((w) => w.agent('a', (a) => { a.chat({ stream: { chunks: 2, done: false }, finishReasons: [] }); }));
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'truncate', step: 1 });
  });
});

describe('rule diagnoser: inter-agent messages', () => {
  it('non-delivery, deadline, duplicate and foreign binding, stepped among message spans', () => {
    const nd = b.trace((w) => { w.agent('p', (a) => a.chat()); w.message({ source: 'p', target: 'w', boundary: 'I2' }); w.message({ source: 'w', target: 'v', boundary: 'I4', delivered: 0 }); });
    expect(diagnoseByRules(nd)).toMatchObject({ faultType: 'non_delivery', step: 2, stepKind: 'message' });
    const dl = b.trace((w) => { w.message({ source: 'w', target: 'v', delivered: 0, errorType: 'deadline_exceeded', durationMs: 500 }); });
    expect(diagnoseByRules(dl)).toMatchObject({ faultType: 'timeout', step: 1, stepKind: 'message' });
    const waited = b.trace((w) => { w.message({ source: 'p', target: 'w', durationMs: 2 }); w.message({ source: 'w', target: 'v', delivered: 0, durationMs: 520 }); });
    expect(diagnoseByRules(waited)).toMatchObject({ faultType: 'timeout', step: 2, stepKind: 'message' });
    const dup = b.trace((w) => { w.message({ source: 'n', target: 'w', delivered: 2 }); });
    expect(diagnoseByRules(dup)).toMatchObject({ faultType: 'duplicate', step: 1 });
    const stale = b.trace((w) => { w.message({ source: 'e', target: 'v', taskId: 'task-7' }); }, { taskId: 'task-9' });
    expect(diagnoseByRules(stale)).toMatchObject({ faultType: 'stale', step: 1 });
  });

  it('a fault a guard recovered from is still the fault: resubmitted → non_delivery, suppressed copy → duplicate', () => {
    const nd = b.trace((w) => { w.message({ source: 'p', target: 'w' }); w.message({ source: 'w', target: 'x', delivered: 1, guards: [{ action: 'resubmit', reason: 'action request t:action-1 was not delivered; resubmitting after 15 ms' }] }); });
    expect(diagnoseByRules(nd)).toMatchObject({ faultType: 'non_delivery', step: 2, stepKind: 'message' });
    const dup = b.trace((w) => { w.message({ source: 'w', target: 'x', delivered: 1, guards: [{ action: 'duplicate_suppressed', reason: 'a second copy of action t:action-1' }] }); });
    expect(diagnoseByRules(dup)).toMatchObject({ faultType: 'duplicate', step: 1 });
    expect(diagnoseByRules(dup).evidence[0]).toContain('guard suppressed a duplicate');
  });

  it('a finding that contradicts the delivery facts is ignored (copies were delivered)', () => {
    const t = b.trace((w) => { w.message({ source: 'w', target: 'v', delivered: 1 }); });
    const d = diagnoseByRules(t, { findings: (tr) => new Map([[tr.spans[1]!.spanId, [{ detector: 'empty_output', faultType: 'non_delivery' as const, severity: 'error' as const, confidence: 0.9, evidence: 'the message was not delivered' }]]]) });
    expect(d.faultType).toBe('none');
  });

  it('a message detection (partial evidence) is named; step is the message index', () => {
    let id = '';
    const t = b.trace((w) => {
      w.agent('p', (a) => a.chat());
      w.message({ source: 'p', target: 'w' });
      id = w.message({ source: 'e', target: 'v', deliveredHashes: ['p2'], detections: [{ detector: 'evidence_completeness', faultType: 'partial', confidence: 0.9, evidence: 'missing sku, product_id' }] });
    });
    const d = diagnoseByRules(t);
    expect(d).toMatchObject({ faultType: 'partial', spanId: id, step: 2, stepKind: 'message' });
    expect(stepOf(t, id)).toBe(2);
  });
});

describe('rule diagnoser: traces of other producers (GenAI attributes only)', () => {
  it('reads content from gen_ai.output.messages and finish reasons from it', () => {
    const clean = b.trace((w) => w.agent('a', (a) => { a.chat({ foreign: true, text: 'The answer is 42.' }); }));
    expect(diagnoseByRules(clean).faultType).toBe('none');
    const empty = b.trace((w) => w.agent('a', (a) => { a.chat({ foreign: true, text: 'ok' }); a.chat({ foreign: true, text: '' }); }));
    expect(diagnoseByRules(empty)).toMatchObject({ faultType: 'empty', step: 2 });
  });

  it('no content and no faultline facts: only what the conventions say is used', () => {
    const t = b.trace((w) => w.agent('a', (a) => { a.chat({ foreign: true }); a.chat({ foreign: true, finishReasons: ['max_tokens'] }); }));
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'truncate', step: 2 });
  });
});
