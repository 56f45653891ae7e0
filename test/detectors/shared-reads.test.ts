/**
 * What the offline path reads once and shares: the tool definitions of every call that carries the same
 * `gen_ai.tool.definitions` text, and a tool call's parsed arguments. Each call must still be judged by its own.
 */
import { describe, expect, it } from 'vitest';
import { detectSpans } from '../../detectors/from-span';
import { argumentsValue } from '../../detectors/text';
import type { Attributes, SpanRecord } from '../../src/traces/model';

const weather = JSON.stringify([
  {
    type: 'function',
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
]);
const other = JSON.stringify([{ type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} } }]);

let seq = 0;
function call(definitions: string, args: string): SpanRecord {
  seq++;
  const start = 1_700_000_000_000 + seq * 1000;
  const output = [
    {
      role: 'assistant',
      parts: [{ type: 'tool_call', id: `call_${seq}`, name: 'get_weather', arguments: args }],
      finish_reason: 'tool_calls',
    },
  ];
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': 'gpt-4o-mini',
    'gen_ai.response.finish_reasons': ['tool_calls'],
    'gen_ai.input.messages': JSON.stringify([
      { role: 'user', parts: [{ type: 'text', content: 'Weather in Lisbon?' }] },
    ]),
    'gen_ai.output.messages': JSON.stringify(output),
    'gen_ai.tool.definitions': definitions,
  };
  return {
    traceId: 'c'.repeat(32),
    spanId: seq.toString(16).padStart(16, '0'),
    name: 'chat gpt-4o-mini',
    kind: 'CLIENT',
    start,
    end: start + 500,
    attributes,
    events: [],
    links: [],
    status: { code: 'UNSET' },
    resource: {},
    scope: { name: 'other-producer' },
  };
}

const schemaFindings = (spans: SpanRecord[]) => {
  const found = detectSpans({ traceId: spans[0]!.traceId, spans }, { includeOnline: false });
  return spans.map((s) =>
    (found.get(s.spanId) ?? []).filter((f) => f.detector === 'schema_contract').map((f) => f.evidence),
  );
};

describe('reads shared between calls', () => {
  it('calls with the same tool definitions text are each checked against them', () => {
    // A fresh text object per span, as a reader makes them: the same content is read once.
    const [ok, broken] = schemaFindings([
      call(`${weather}`, '{"city":"Lisbon"}'),
      call(JSON.parse(JSON.stringify(weather)) as string, '{}'),
    ]);
    expect(ok).toEqual([]);
    expect(broken).toHaveLength(1);
    expect(broken[0]).toMatch(/city/);
  });

  it('a call with other definitions gets its own', () => {
    const [first, second] = schemaFindings([call(weather, '{"city":"Lisbon"}'), call(other, '{"city":"Lisbon"}')]);
    expect(first).toEqual([]);
    expect(second[0]).toMatch(/did not define/);
  });

  it('arguments that changed since they were parsed are parsed again', () => {
    const tc = { name: 'get_weather', arguments: '{"city":"Lis' };
    expect(argumentsValue(tc)).toBeUndefined();
    tc.arguments = '{"city":"Lisbon"}';
    expect(argumentsValue(tc)).toEqual({ city: 'Lisbon' });
    expect(argumentsValue(tc)).toBe(argumentsValue(tc));
  });
});
