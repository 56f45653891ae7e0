/**
 * Online detection remembers each task's earlier calls compactly and within a byte budget: 1 MB answers over 1,200
 * calls leave the heap where it was, while the detectors that compare calls (a replayed answer, a duplicate message)
 * still see the earlier ones.
 */
import { trace } from '@opentelemetry/api';
import { describe, expect, test } from 'vitest';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createOnlineDetection } from '../../detectors/online';
import type { Finding, LlmObservation, MessageObservation } from '../../detectors/types';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const span = trace.wrapSpanContext({
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: 1,
});

function llm(text: string, id: string, question: string): LlmObservation {
  return {
    kind: 'llm',
    hasContent: true,
    request: {
      provider: 'openai',
      operation: 'chat',
      model: 'gpt-4o',
      stream: false,
      tools: [],
      time: Date.now(),
      messages: [{ role: 'user', parts: [{ type: 'text', content: question }] }],
    },
    response: {
      status: 200,
      id,
      model: 'gpt-4o',
      created: Math.floor(Date.now() / 1000),
      finishReasons: ['stop'],
      text,
      toolCalls: [],
      durationMs: 20,
    },
  };
}

function heapMb(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

describe('online detection history', () => {
  test('1 MB answers over 1,200 calls: the heap stays bounded', () => {
    // The detectors that read the history; scanning 1.2 GB of text with all of them would only make the test slow.
    const online = createOnlineDetection({ detectors: ['staleness', 'latency', 'duplicate_delivery'] });
    const before = heapMb();
    for (let i = 0; i < 1200; i++) {
      // A fresh 1 MB string per call, as a real answer would be.
      const text = `${i} `.padEnd(1024 * 1024, 'lorem ipsum ');
      online.observe(llm(text, `resp-${i}`, `question ${i}`), `task-${i % 10}`, span);
    }
    expect(heapMb() - before).toBeLessThan(48);
  }, 120_000); // 1.2 GB of answers to make and fingerprint: seconds on a quiet machine, more on a loaded one

  test('a replayed answer is still found when the earlier one was remembered compactly', () => {
    const found: Finding[] = [];
    const online = createOnlineDetection({ onFinding: (f) => found.push(f) });
    const text = 'The capital of Australia is Canberra, which was chosen as a compromise between Sydney and Melbourne.';
    online.observe(llm(text, 'resp-1', 'What is the capital of Australia?'), 't', span);
    online.observe(llm(text, 'resp-1', 'And the largest city?'), 't', span);
    expect(found.map((f) => f.detector)).toContain('staleness');
    found.length = 0;
    online.observe(llm(text, 'resp-1', 'And the largest city?'), 't2', span);
    online.observe(llm(text, 'resp-1', 'And the largest city?'), 't2', span); // the same request again: a retry
    expect(found.map((f) => f.detector)).not.toContain('staleness');
  });

  test('a duplicate of a large message is still found; the byte budget forgets the oldest tasks first', () => {
    const found: Finding[] = [];
    const online = createOnlineDetection({ onFinding: (f) => found.push(f), historyBytes: 64 * 1024 });
    const payload = { order_id: 'A-17', lines: Array.from({ length: 2000 }, (_, i) => ({ sku: `S${i}`, qty: i })) };
    const msg = (taskId: string): MessageObservation => ({
      kind: 'message',
      hasContent: true,
      delivered: [{ id: `m-${taskId}`, source: 'a', target: 'b', taskId, payload: structuredClone(payload) }],
    });
    online.observe(msg('t1'), 't1', span);
    online.observe(msg('t1'), 't1', span);
    expect(found.filter((f) => f.detector === 'duplicate_delivery')).toHaveLength(1);
    // Enough other tasks to overflow 64 KiB: t1 is forgotten, so its message is no longer a duplicate.
    for (let i = 0; i < 400; i++) online.observe(llm(`answer ${i}`, `r${i}`, `q${i}`), `other-${i}`, span);
    found.length = 0;
    online.observe(msg('t1'), 't1', span);
    expect(found.filter((f) => f.detector === 'duplicate_delivery')).toHaveLength(0);
  });
});
