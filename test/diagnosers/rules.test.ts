import { SpanKind } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { diagnoseByRules } from '../../src/diagnosers/rules';
import { stepOf } from '../../src/traces/steps';
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
    const t = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat();
        a.chat({ errorType: 'UND_ERR_HEADERS_TIMEOUT' });
      }),
    );
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'timeout', step: 2 });
  });

  it('no text and no tool calls → empty; content_filter → empty; tool_calls finish without tool calls → empty', () => {
    const t1 = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat();
        a.chat({ outputChars: 0 });
      }),
    );
    expect(diagnoseByRules(t1)).toMatchObject({ faultType: 'empty', step: 2 });
    const t2 = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat({ finishReasons: ['content_filter'], outputChars: 80 });
      }),
    );
    expect(diagnoseByRules(t2)).toMatchObject({ faultType: 'empty', step: 1 });
    const t3 = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat();
        a.chat();
        a.chat({ finishReasons: ['tool_calls'], outputChars: 0, toolCalls: 0 });
      }),
    );
    expect(diagnoseByRules(t3)).toMatchObject({ faultType: 'empty', step: 3 });
  });

  it('an online detection event names its fault type', () => {
    const t = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat();
        a.chat({
          detections: [{ detector: 'encoding', faultType: 'corrupt', confidence: 0.97, evidence: 'mojibake: Ã© x3' }],
        });
        a.chat();
      }),
    );
    const d = diagnoseByRules(t);
    expect(d).toMatchObject({ faultType: 'corrupt', step: 2 });
    expect(d.evidence[0]).toContain('encoding');
  });

  it('a low-confidence detection alone does not make a fault (false positives stay out)', () => {
    const t = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat({
          detections: [
            {
              detector: 'structural_truncation',
              faultType: 'truncate',
              confidence: 0.3,
              evidence: 'ends mid-sentence?',
            },
          ],
        });
      }),
    );
    const d = diagnoseByRules(t);
    expect(d.faultType).toBe('none');
    expect(d.evidence.join(' ')).toContain('weak truncate');
  });

  it('the upstream cause wins over a downstream symptom, and a failing parent agent is not chosen', () => {
    let cause = '';
    const t = b.trace((w) => {
      w.agent('researcher', (a) => {
        cause = a.chat({ finishReasons: ['length'] });
      });
      w.agent(
        'writer',
        (a) => {
          a.chat({ http: 500 });
        },
        { fail: 'writer failed' },
      );
    });
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'truncate', spanId: cause, step: 1 });
  });

  it('when no call or message is faulty, the failed leaf span is chosen over its failed parent', () => {
    const t = b.trace((w) => {
      w.agent(
        'coder',
        (a) => {
          a.chat({ toolCalls: 1, finishReasons: ['tool_calls'], outputChars: 0 });
          a.tool('run_tests', { fail: 'exit 1' });
        },
        { fail: 'tool failed' },
      );
    });
    const d = diagnoseByRules(t);
    expect(d.faultType).toBe('error');
    expect(t.spans.find((s) => s.spanId === d.spanId)!.name).toBe('execute_tool run_tests');
    expect(d.step).toBeNull();
  });

  it('an aborted call (the application cancelled it) is not an empty answer', () => {
    const t = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat();
        a.chat({ aborted: true, outputChars: 0, finishReasons: [] });
      }),
    );
    expect(diagnoseByRules(t).faultType).toBe('none');
  });

  it('natural latency variance is a weak hint, not a fault', () => {
    const t = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat({ durationMs: 400 });
        a.chat({ durationMs: 1250 });
        a.chat({ durationMs: 380 });
      }),
    );
    const d = diagnoseByRules(t);
    expect(d.faultType).toBe('none');
    expect(d.evidence[0]).toContain('weak delay');
  });

  it('a latency outlier → delay', () => {
    const t = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat({ durationMs: 700 });
        a.chat({ durationMs: 5800 });
        a.chat({ durationMs: 900 });
      }),
    );
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'delay', step: 2 });
  });

  it('a stream that ends without its terminal event → truncate', () => {
    const t = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat({ stream: { chunks: 2, done: false }, finishReasons: [] });
      }),
    );
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'truncate', step: 1 });
  });
});

describe('rule diagnoser: inter-agent messages', () => {
  it('non-delivery, deadline, duplicate and foreign binding, stepped among message spans', () => {
    const nd = b.trace((w) => {
      w.agent('p', (a) => a.chat());
      w.message({ source: 'p', target: 'w', boundary: 'I2' });
      w.message({ source: 'w', target: 'v', boundary: 'I4', delivered: 0 });
    });
    expect(diagnoseByRules(nd)).toMatchObject({ faultType: 'non_delivery', step: 2, stepKind: 'message' });
    const dl = b.trace((w) => {
      w.message({ source: 'w', target: 'v', delivered: 0, errorType: 'deadline_exceeded', durationMs: 500 });
    });
    expect(diagnoseByRules(dl)).toMatchObject({ faultType: 'timeout', step: 1, stepKind: 'message' });
    const waited = b.trace((w) => {
      w.message({ source: 'p', target: 'w', durationMs: 2 });
      w.message({ source: 'w', target: 'v', delivered: 0, durationMs: 520 });
    });
    expect(diagnoseByRules(waited)).toMatchObject({ faultType: 'timeout', step: 2, stepKind: 'message' });
    const dup = b.trace((w) => {
      w.message({ source: 'n', target: 'w', delivered: 2 });
    });
    expect(diagnoseByRules(dup)).toMatchObject({ faultType: 'duplicate', step: 1 });
    const stale = b.trace(
      (w) => {
        w.message({ source: 'e', target: 'v', taskId: 'task-7' });
      },
      { taskId: 'task-9' },
    );
    expect(diagnoseByRules(stale)).toMatchObject({ faultType: 'stale', step: 1 });
  });

  it('a fault a guard recovered from is still the fault: resubmitted → non_delivery, suppressed copy → duplicate', () => {
    const nd = b.trace((w) => {
      w.message({ source: 'p', target: 'w' });
      w.message({
        source: 'w',
        target: 'x',
        delivered: 1,
        guards: [
          { action: 'resubmit', reason: 'action request t:action-1 was not delivered; resubmitting after 15 ms' },
        ],
      });
    });
    expect(diagnoseByRules(nd)).toMatchObject({ faultType: 'non_delivery', step: 2, stepKind: 'message' });
    const dup = b.trace((w) => {
      w.message({
        source: 'w',
        target: 'x',
        delivered: 1,
        guards: [{ action: 'duplicate_suppressed', reason: 'a second copy of action t:action-1' }],
      });
    });
    expect(diagnoseByRules(dup)).toMatchObject({ faultType: 'duplicate', step: 1 });
    expect(diagnoseByRules(dup).evidence[0]).toContain('guard suppressed a duplicate');
  });

  it('a finding that contradicts the delivery facts is ignored (copies were delivered)', () => {
    const t = b.trace((w) => {
      w.message({ source: 'w', target: 'v', delivered: 1 });
    });
    const d = diagnoseByRules(t, {
      findings: (tr) =>
        new Map([
          [
            tr.spans[1]!.spanId,
            [
              {
                detector: 'empty_output',
                faultType: 'non_delivery' as const,
                severity: 'error' as const,
                confidence: 0.9,
                evidence: 'the message was not delivered',
              },
            ],
          ],
        ]),
    });
    expect(d.faultType).toBe('none');
  });

  it('a message detection (partial evidence) is named; step is the message index', () => {
    let id = '';
    const t = b.trace((w) => {
      w.agent('p', (a) => a.chat());
      w.message({ source: 'p', target: 'w' });
      id = w.message({
        source: 'e',
        target: 'v',
        deliveredHashes: ['p2'],
        detections: [
          {
            detector: 'evidence_completeness',
            faultType: 'partial',
            confidence: 0.9,
            evidence: 'missing sku, product_id',
          },
        ],
      });
    });
    const d = diagnoseByRules(t);
    expect(d).toMatchObject({ faultType: 'partial', spanId: id, step: 2, stepKind: 'message' });
    expect(stepOf(t, id)).toBe(2);
  });
});

describe('rule diagnoser: how a delivered message differs from what was sent', () => {
  const SENT = {
    task_id: 't-1',
    session_id: 's-1',
    sku: 'MUG-12',
    product_id: 'P-1',
    title: 'Blue Mug',
    quantity: 3,
    evidence: '{"sku":"MUG-12"}',
    rows: [1, 2, 3],
  };
  const changed = (changes: string[], extra: Record<string, string | string[]> = {}) =>
    b.trace((w) => {
      w.message({ source: 'p', target: 'w', boundary: 'I1' });
      w.message({
        source: 'w',
        target: 'v',
        boundary: 'I4',
        deliveredHashes: ['p2'],
        attributes: { 'faultline.message.delivered_changes': changes, ...extra },
      });
    });

  it.each([
    [['removed:sku', 'removed:product_id', 'removed:evidence'], 'partial'],
    [['removed:evidence_result.rows', 'length:visible_evidence'], 'partial'],
    [['removed:task_id', 'added:task_binding'], 'schema'],
    [['type:quantity'], 'schema'],
    // Content-free, a value that changed and kept its type says nothing about its format: semantic, whatever its key
    // is called (the key names of the example workflows decide nothing; content or shapes tell corrupt apart).
    [['value:task_id', 'value:evidence'], 'semantic'],
    [['value:sku', 'value:product_id', 'value:evidence'], 'semantic'],
    [['value:evidence_result.candidate_answer', 'length:evidence_result.rows'], 'semantic'],
    [['value:title'], 'semantic'],
    [['type:$'], 'corrupt'],
  ])('content-free changes %j → %s, at the changed handoff', (changes, type) => {
    expect(diagnoseByRules(changed(changes))).toMatchObject({ faultType: type, step: 2, stepKind: 'message' });
  });

  it('reads the same changes from captured content when only the payloads were recorded', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ...SENT, sku: undefined, product_id: undefined }, 'partial'],
      [{ ...SENT, quantity: '3' }, 'schema'],
      [{ ...SENT, sku: 'LAMP-01', product_id: 'P-9', evidence: '{"sku":"LAMP-01"}' }, 'semantic'],
      [{ ...SENT, title: 'Bl\ufffde Mug' }, 'corrupt'],
    ];
    for (const [got, type] of cases) {
      const t = b.trace((w) => {
        w.message({
          source: 'w',
          target: 'v',
          deliveredHashes: ['p2'],
          payload: JSON.stringify(SENT),
          attributes: { 'faultline.message.delivered_payloads': [JSON.stringify(got)] },
        });
      });
      expect(diagnoseByRules(t).faultType, JSON.stringify(got)).toBe(type);
    }
  });

  it('a delivered copy that is another message is stale: another task, session, an older version, another id, an earlier payload', () => {
    const env = (attributes: Record<string, string | string[] | number>, delivered = 1) =>
      b.trace(
        (w) => {
          w.message({
            source: 'w',
            target: 'v',
            boundary: 'I4',
            taskId: 't-1',
            delivered,
            deliveredHashes: Array.from({ length: delivered }, (_, i) => (i === 0 ? 'p1' : 'p9')),
            attributes,
          });
        },
        { taskId: 't-1' },
      );
    expect(diagnoseByRules(env({ 'faultline.message.delivered_task_ids': ['t-0'] })).faultType).toBe('stale');
    expect(
      diagnoseByRules(
        env({ 'faultline.message.session_id': 's-1', 'faultline.message.delivered_session_ids': ['s-0'] }),
      ).faultType,
    ).toBe('stale');
    expect(
      diagnoseByRules(env({ 'faultline.message.version': 2, 'faultline.message.delivered_versions': ['2', '1'] }, 2))
        .faultType,
    ).toBe('stale');
    // A reordering: the older message delivered after this one is not a duplicate of it.
    const reordered = env({ 'faultline.message.delivered_ids': ['SELF', 'msg-older'] }, 2);
    reordered.spans[1]!.attributes['faultline.message.delivered_ids'] = [
      String(reordered.spans[1]!.attributes['faultline.message.id']),
      'msg-older',
    ];
    expect(diagnoseByRules(reordered).faultType).toBe('stale');
    // The payload an earlier message of the trace carried, delivered again.
    const replay = b.trace((w) => {
      w.message({ source: 'w', target: 'v', payloadHash: 'h-old' });
      w.message({ source: 'w', target: 'v', payloadHash: 'h-new', deliveredHashes: ['h-old'] });
    });
    expect(diagnoseByRules(replay)).toMatchObject({ faultType: 'stale', step: 2 });
  });

  it('a guard that replaced or withheld the changed copy does not hide the fault', () => {
    // Reacquired: the guard's fresh readback (another id, a newer version) crossed the channel after the partial copy.
    const readback = b.trace((w) => {
      w.message({
        source: 'w',
        target: 'v',
        boundary: 'I4',
        deliveredHashes: ['p3'],
        attributes: {
          'faultline.message.delivered_ids': ['m-orig', 'm-fresh'],
          'faultline.message.delivered_changes': ['removed:sku'],
        },
        guards: [
          { action: 'reacquire', reason: 'failed its contract' },
          { action: 'accept', reason: 'the readback passed' },
        ],
      });
    });
    readback.spans[1]!.attributes['faultline.message.id'] = 'm-orig';
    expect(diagnoseByRules(readback).faultType).toBe('partial');
    // Dropped by the guard: the message arrived (changed), it was not lost.
    const dropped = b.trace((w) => {
      w.message({
        source: 'w',
        target: 'v',
        boundary: 'I4',
        delivered: 0,
        attributes: { 'faultline.message.delivered_changes': ['value:sku'] },
        guards: [{ action: 'drop', reason: 'failed its contract' }],
      });
    });
    expect(diagnoseByRules(dropped).faultType).toBe('semantic');
  });

  it('detector readings the delivered facts contradict are dropped: partial on a rename, duplicate on another message', () => {
    const partialFinding = [
      {
        detector: 'message_integrity',
        faultType: 'partial' as const,
        confidence: 0.9,
        evidence: 'delivered payload lacks task_id',
      },
    ];
    const renamed = b.trace((w) => {
      w.message({
        source: 'w',
        target: 'v',
        deliveredHashes: ['p2'],
        detections: partialFinding,
        attributes: { 'faultline.message.delivered_changes': ['added:task_binding', 'removed:task_id'] },
      });
    });
    expect(diagnoseByRules(renamed).faultType).toBe('schema');
    const dupFinding = [
      {
        detector: 'duplicate_delivery',
        faultType: 'duplicate' as const,
        confidence: 0.95,
        evidence: 'one send delivered 2 times',
      },
    ];
    const reordered = b.trace((w) => {
      w.message({ source: 'w', target: 'v', delivered: 2, deliveredHashes: ['p1', 'p0'], detections: dupFinding });
    });
    reordered.spans[1]!.attributes['faultline.message.delivered_ids'] = [
      String(reordered.spans[1]!.attributes['faultline.message.id']),
      'msg-older',
    ];
    expect(diagnoseByRules(reordered).faultType).toBe('stale');
    // Without the delivered facts the detector's reading stands.
    const plain = b.trace((w) => {
      w.message({ source: 'w', target: 'v', deliveredHashes: ['p2'], detections: partialFinding });
    });
    expect(diagnoseByRules(plain).faultType).toBe('partial');
  });

  it('an A2A call span with the same message facts is read the same way as a handoff', () => {
    const a2a = b.trace((w) => {
      w.message({
        source: 'w',
        target: 'verifier',
        kind: SpanKind.CLIENT,
        deliveredHashes: ['p2'],
        attributes: {
          'a2a.method.name': 'SendMessage',
          'gen_ai.operation.name': 'invoke_agent',
          'faultline.message.delivered_changes': ['removed:sku'],
        },
      });
    });
    expect(diagnoseByRules(a2a)).toMatchObject({ faultType: 'partial', step: 1, stepKind: 'message' });
    // Without delivered facts (the A2A module records only the message as sent) nothing changes: clean stays clean.
    const clean = b.trace((w) => {
      w.message({
        source: 'w',
        target: 'verifier',
        kind: SpanKind.CLIENT,
        attributes: { 'a2a.method.name': 'SendMessage' },
      });
    });
    expect(diagnoseByRules(clean).faultType).toBe('none');
  });
});

describe('rule diagnoser: traces of other producers (GenAI attributes only)', () => {
  it('reads content from gen_ai.output.messages and finish reasons from it', () => {
    const clean = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat({ foreign: true, text: 'The answer is 42.' });
      }),
    );
    expect(diagnoseByRules(clean).faultType).toBe('none');
    const empty = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat({ foreign: true, text: 'ok' });
        a.chat({ foreign: true, text: '' });
      }),
    );
    expect(diagnoseByRules(empty)).toMatchObject({ faultType: 'empty', step: 2 });
  });

  it('no content and no faultline facts: only what the conventions say is used', () => {
    const t = b.trace((w) =>
      w.agent('a', (a) => {
        a.chat({ foreign: true });
        a.chat({ foreign: true, finishReasons: ['max_tokens'] });
      }),
    );
    expect(diagnoseByRules(t)).toMatchObject({ faultType: 'truncate', step: 2 });
  });
});
