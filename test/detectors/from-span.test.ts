/** Offline detection from spans: semconv content attributes, older indexed forms, content-free facts, online events. */
import { describe, expect, test } from 'vitest';
import {
  detectSpans,
  detectionsFromSpan,
  llmObservationFromSpan,
  messageObservationFromSpan,
} from '../../detectors/from-span';
import { HISTORY_WINDOW } from '../../detectors/history';
import { detectionAttributes } from '../../detectors/online';
import type { SpanRecord } from '../../src/traces/model';

let seq = 0;
function span(attributes: SpanRecord['attributes'], extra: Partial<SpanRecord> = {}): SpanRecord {
  seq++;
  return {
    traceId: 'a'.repeat(32),
    spanId: seq.toString(16).padStart(16, '0'),
    name: 'chat gpt-4o',
    kind: 'CLIENT',
    start: 1_700_000_000_000 + seq * 1000,
    end: 1_700_000_000_500 + seq * 1000,
    attributes,
    events: [],
    links: [],
    status: { code: 'UNSET' },
    resource: {},
    scope: { name: 'faultline' },
    ...extra,
  };
}

const tools = JSON.stringify([
  {
    type: 'function',
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: { location: { type: 'string' } },
      required: ['location'],
      additionalProperties: false,
    },
  },
]);
const input = JSON.stringify([
  { role: 'user', parts: [{ type: 'text', content: 'What is the weather in San Francisco?' }] },
]);

describe('observations from spans', () => {
  test('semconv content: tool call arguments (object form) checked against gen_ai.tool.definitions', () => {
    const s = span({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.input.messages': input,
      'gen_ai.tool.definitions': tools,
      'gen_ai.output.messages': JSON.stringify([
        {
          role: 'assistant',
          parts: [{ type: 'tool_call', id: 'c1', name: 'get_weather', arguments: { city: 'San Francisco' } }],
          finish_reason: 'tool_call',
        },
      ]),
      'gen_ai.response.finish_reasons': ['tool_calls'],
    });
    const obs = llmObservationFromSpan(s);
    expect(obs.hasContent).toBe(true);
    expect(obs.response.toolCalls).toEqual([{ id: 'c1', name: 'get_weather', arguments: '{"city":"San Francisco"}' }]);
    const found = detectSpans({ traceId: s.traceId, spans: [s] }).get(s.spanId) ?? [];
    expect(found.map((f) => f.detector)).toContain('schema_contract');
  });

  test('older indexed attributes and legacy usage names (another producer)', () => {
    const s = span({
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': 'openai',
      'gen_ai.prompt.0.role': 'user',
      'gen_ai.prompt.0.content': 'Summarise the report.',
      'gen_ai.completion.0.role': 'assistant',
      'gen_ai.completion.0.content':
        '[TIMEOUT] The request timed out. The server did not respond within the expected time.',
      'gen_ai.completion.0.finish_reason': 'stop',
      'gen_ai.usage.completion_tokens': 20,
    });
    const obs = llmObservationFromSpan(s);
    expect(obs.request?.provider).toBe('openai');
    expect(obs.response.finishReasons).toEqual(['stop']);
    expect(obs.response.usage?.outputTokens).toBe(20);
    const found = detectSpans({ traceId: s.traceId, spans: [s] }).get(s.spanId) ?? [];
    expect(found.map((f) => f.faultType)).toContain('timeout');
  });

  test('content-free facts still reveal a cut and an empty answer', () => {
    const cut = span({
      'gen_ai.operation.name': 'chat',
      'gen_ai.response.finish_reasons': '["length"]',
      'faultline.response.output_chars': 120,
      'faultline.response.tool_call_count': 0,
    });
    const empty = span({
      'gen_ai.operation.name': 'chat',
      'gen_ai.response.finish_reasons': ['stop'],
      'faultline.response.output_chars': 0,
      'faultline.response.tool_call_count': 0,
      'gen_ai.response.id': 'x',
    });
    const found = detectSpans({ traceId: cut.traceId, spans: [cut, empty] });
    expect(found.get(cut.spanId)?.map((f) => f.faultType)).toEqual(['truncate']);
    expect(found.get(empty.spanId)?.map((f) => f.faultType)).toEqual(['empty']);
  });

  test('the same response id and content hash for a different request: stale (task context across spans)', () => {
    const base = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.response.id': 'chatcmpl-1',
      'faultline.response.content_hash': 'h1',
      'faultline.response.output_chars': 50,
    };
    const a = span({ ...base, 'gen_ai.input.messages': input });
    const b = span({
      ...base,
      'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'And tomorrow?' }] }]),
    });
    const found = detectSpans({ traceId: a.traceId, spans: [a, b] });
    expect(found.get(a.spanId)).toBeUndefined();
    expect(found.get(b.spanId)?.map((f) => f.faultType)).toEqual(['stale']);
  });

  test('message spans: delivered count and hashes without content', () => {
    const s = span(
      {
        'faultline.message.id': 'm1',
        'faultline.message.source': 'Navigator',
        'faultline.message.target': 'Worker',
        'faultline.message.boundary': 'I2',
        'faultline.message.payload_hash': 'p1',
        'faultline.message.delivered_count': 2,
        'faultline.message.delivered_hashes': ['p1', 'p1'],
      },
      { name: 'handoff Worker', kind: 'INTERNAL' },
    );
    expect(messageObservationFromSpan(s).facts?.deliveredCount).toBe(2);
    const dropped = span(
      {
        'faultline.message.id': 'm2',
        'faultline.message.boundary': 'I4',
        'faultline.message.payload_hash': 'p2',
        'faultline.message.delivered_count': 0,
        'faultline.message.delivered_hashes': [],
      },
      { name: 'handoff Verifier', kind: 'INTERNAL' },
    );
    const found = detectSpans({ traceId: s.traceId, spans: [s, dropped] });
    expect(found.get(s.spanId)?.map((f) => f.faultType)).toEqual(['duplicate']);
    expect(found.get(dropped.spanId)?.map((f) => f.faultType)).toEqual(['non_delivery']);
  });

  test('online findings are parsed back, also from a faultline.detection child span; ground truth is ignored', () => {
    const parent = span({
      'gen_ai.operation.name': 'chat',
      'faultline.fault.type': 'truncate',
      'faultline.fault.name': 'llm_truncate_single',
    });
    const child = span(
      {},
      {
        name: 'faultline.detection',
        parentSpanId: parent.spanId,
        kind: 'INTERNAL',
        events: [
          {
            name: 'faultline.detection',
            time: 0,
            attributes: detectionAttributes({
              detector: 'finish_reason',
              faultType: 'truncate',
              severity: 'error',
              confidence: 0.95,
              evidence: 'finish reason length',
              location: { field: 'finish_reason' },
            }),
          },
        ],
      },
    );
    expect(detectionsFromSpan(child)[0]).toMatchObject({
      detector: 'finish_reason',
      faultType: 'truncate',
      location: { field: 'finish_reason' },
    });
    const found = detectSpans({ traceId: parent.traceId, spans: [parent, child] });
    expect(found.get(parent.spanId)?.map((f) => f.detector)).toEqual(['finish_reason']);
    expect(found.get(child.spanId)).toBeUndefined();
    // Without the online event nothing is found: the ground-truth attributes are never read.
    expect(detectSpans({ traceId: parent.traceId, spans: [parent] }).get(parent.spanId)).toBeUndefined();
  });
});

describe('detection over long traces', () => {
  test('each call is judged against at most HISTORY_WINDOW earlier calls of its task, so long tasks stay linear', () => {
    const seen: number[] = [];
    const probe = {
      name: 'probe',
      applies: () => true,
      detect: (_o: unknown, ctx: { earlier: readonly unknown[] }) => (seen.push(ctx.earlier.length), []),
    };
    const spans = Array.from({ length: 200 }, (_, i) =>
      span({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.response.id': `r${i}`,
        'gen_ai.response.finish_reasons': ['stop'],
      }),
    );
    detectSpans({ traceId: spans[0]!.traceId, spans }, { detectors: [probe] });
    expect(seen).toHaveLength(200);
    expect(Math.max(...seen)).toBe(HISTORY_WINDOW);
    expect(seen.slice(0, 3)).toEqual([0, 1, 2]);
  });
});
