/**
 * The LLM-call rules on spans written the way other producers write them (plain SpanRecords: OpenInference `llm.*`,
 * latest GenAI semconv with content, GenAI `execute_tool` spans): what counts as a cut stream, tool arguments that
 * cannot be right, a tool's rejection, and what the run recovered from.
 */
import { describe, expect, it } from 'vitest';
import { diagnoseByRules } from '../../src/diagnosers/rules';
import { detectSpans } from '../../detectors/from-span';
import type { Attributes, SpanRecord, TraceRecord } from '../../src/traces/model';

let seq = 0;
function span(
  name: string,
  attributes: Attributes,
  o: { parent?: string; start?: number; dur?: number; error?: { type: string; message: string } } = {},
): SpanRecord {
  seq++;
  const start = o.start ?? 1_700_000_000_000 + seq * 1000;
  const s: SpanRecord = {
    traceId: 'b'.repeat(32),
    spanId: seq.toString(16).padStart(16, '0'),
    name,
    kind: 'INTERNAL',
    start,
    end: start + (o.dur ?? 400),
    attributes: o.error ? { ...attributes, 'error.type': o.error.type } : attributes,
    events: o.error
      ? [
          {
            name: 'exception',
            time: start + 1,
            attributes: { 'exception.type': o.error.type, 'exception.message': o.error.message },
          },
        ]
      : [],
    links: [],
    status: o.error ? { code: 'ERROR', message: o.error.message } : { code: 'UNSET' },
    resource: {},
    scope: { name: 'other-producer' },
  };
  if (o.parent) s.parentSpanId = o.parent;
  return s;
}

const rules = (t: TraceRecord) => diagnoseByRules(t, { findings: (tr) => detectSpans(tr, { includeOnline: false }) });
const trace = (spans: SpanRecord[]): TraceRecord => ({ traceId: spans[0]!.traceId, spans });

const oiCall = (content: string, o: { stream?: boolean; finish?: string; parent?: string } = {}): SpanRecord =>
  span(
    'ChatCompletion',
    {
      'openinference.span.kind': 'LLM',
      'llm.model_name': 'gpt-4o-mini',
      'llm.invocation_parameters': JSON.stringify({ model: 'gpt-4o-mini', stream: o.stream === true }),
      'llm.input_messages.0.message.role': 'user',
      'llm.input_messages.0.message.content': 'Write a short note.',
      'llm.output_messages.0.message.role': 'assistant',
      'llm.output_messages.0.message.content': content,
      ...(o.finish ? { 'llm.finish_reason': o.finish } : {}),
    },
    o.parent ? { parent: o.parent } : {},
  );

const semconvCall = (
  output: unknown[],
  o: { input?: unknown[]; parent?: string; tools?: unknown[] } = {},
): SpanRecord =>
  span(
    'chat gpt-4o-mini',
    {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.input.messages': JSON.stringify(
        o.input ?? [
          { role: 'user', parts: [{ type: 'text', content: 'Weather in Lisbon on 2025-06-12, order A-10293.' }] },
        ],
      ),
      'gen_ai.output.messages': JSON.stringify(output),
      ...(o.tools ? { 'gen_ai.tool.definitions': JSON.stringify(o.tools) } : {}),
    },
    o.parent ? { parent: o.parent } : {},
  );

const toolCallOut = (name: string, args: string) => [
  {
    role: 'assistant',
    parts: [{ type: 'tool_call', id: 'call_1', name, arguments: args }],
    finish_reason: 'tool_call',
  },
];
const textOut = (text: string) => [
  { role: 'assistant', parts: [{ type: 'text', content: text }], finish_reason: 'stop' },
];
const tool = (name: string, parent: string, error?: { type: string; message: string }) =>
  span(
    `execute_tool ${name}`,
    { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, 'gen_ai.tool.call.id': 'call_1' },
    { parent, ...(error ? { error } : {}) },
  );
const agent = (name: string) =>
  span(`invoke_agent ${name}`, { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': name }, { dur: 5000 });

describe('a stream without a finish reason', () => {
  it('is not a cut where the convention records no finish reasons at all (every stream would look cut)', () => {
    expect(
      rules(
        trace([oiCall('One.', { stream: true }), oiCall('Two.', { stream: true }), oiCall('Three', { stream: true })]),
      ).faultType,
    ).toBe('none');
  });

  it('is a cut where the producer records them on the trace’s other calls', () => {
    const cut = oiCall('The plan for the week is to', { stream: true });
    const d = rules(trace([oiCall('One.', { finish: 'stop' }), cut, oiCall('Three.', { finish: 'stop' })]));
    expect(d).toMatchObject({ faultType: 'truncate', spanId: cut.spanId, step: 2 });
  });
});

describe('tool arguments', () => {
  const weather = [
    {
      type: 'function',
      function: {
        name: 'get_forecast',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    },
  ];

  it('empty where the schema requires parameters → error (the catalog’s tool_error), not schema', () => {
    const a = agent('weather');
    const call = semconvCall(toolCallOut('get_forecast', '{}'), { parent: a.spanId, tools: weather });
    const d = rules(trace([a, call, tool('get_forecast', a.spanId)]));
    expect(d).toMatchObject({ faultType: 'error', spanId: call.spanId, agent: 'weather', operation: 'chat' });
    expect(d.evidence[0]).toContain('empty arguments');
  });

  it('{} for a tool that takes no parameters is fine', () => {
    const a = agent('support');
    const call = semconvCall(toolCallOut('get_refund_policy', '{}'), {
      parent: a.spanId,
      tools: [
        { type: 'function', function: { name: 'get_refund_policy', parameters: { type: 'object', properties: {} } } },
      ],
    });
    expect(
      rules(
        trace([
          a,
          call,
          tool('get_refund_policy', a.spanId),
          semconvCall(textOut('Refunds within 30 days.'), { parent: a.spanId }),
        ]),
      ).faultType,
    ).toBe('none');
  });

  it('rejected by the tool as invalid → schema at the call that produced them, when no definitions say so', () => {
    const a = agent('lookup');
    const call = semconvCall(toolCallOut('find_order', '{"order":"A-10293"}'), { parent: a.spanId });
    const d = rules(
      trace([
        a,
        call,
        tool('find_order', a.spanId, { type: 'TypeError', message: 'find_order needs order_id' }),
        semconvCall(textOut('I could not find it.'), { parent: a.spanId }),
      ]),
    );
    expect(d).toMatchObject({ faultType: 'schema', spanId: call.spanId, step: 1 });
  });

  it('a lookup that found nothing, handled by the agent, is recovered — not a fault', () => {
    const a = agent('lookup');
    const call = semconvCall(toolCallOut('find_order', '{"order_id":"A-10293"}'), { parent: a.spanId });
    const failed = tool('find_order', a.spanId, { type: 'ValueError', message: 'order A-10293 not found' });
    const d = rules(
      trace([
        a,
        call,
        failed,
        semconvCall(textOut('The order could not be found; please send the receipt.'), { parent: a.spanId }),
      ]),
    );
    expect(d.faultType).toBe('none');
    expect(d.recovered).toMatchObject([{ spanId: failed.spanId, faultType: 'error', agent: 'lookup' }]);
  });

  it('a flaky tool run again successfully is recovered, even when its error sounded like a rejection', () => {
    const a = agent('analyst');
    const call = semconvCall(toolCallOut('run_sql', '{"query":"SELECT 1"}'), { parent: a.spanId });
    const d = rules(
      trace([
        a,
        call,
        tool('run_sql', a.spanId, { type: 'TypeError', message: 'query is required' }),
        tool('run_sql', a.spanId),
        semconvCall(textOut('Done.'), { parent: a.spanId }),
      ]),
    );
    expect(d.faultType).toBe('none');
    expect(d.recovered?.[0]?.how).toContain('run again');
  });

  it('cut inside a value the conversation holds whole → truncate; an id copied whole from a JSON tool result is not cut', () => {
    const input = [
      { role: 'user', parts: [{ type: 'text', content: 'Where is my order?' }] },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool_call_response',
            id: 'c0',
            response: JSON.stringify({ results: [{ order_id: 'A-10293', sku: 'A-10293-BLK' }] }),
          },
        ],
      },
    ];
    const whole = semconvCall(toolCallOut('find_order', '{"order_id":"A-10293"}'), { input });
    expect(rules(trace([whole])).faultType).toBe('none');
    const cut = semconvCall(toolCallOut('find_order', '{"order_id":"A-10"}'), { input });
    expect(rules(trace([cut]))).toMatchObject({ faultType: 'truncate', spanId: cut.spanId });
  });

  it('an identifier carrying symbol characters → corrupt', () => {
    const call = semconvCall(toolCallOut('get_forecast', '{"city":"Lisbo♚"}'));
    expect(rules(trace([call]))).toMatchObject({ faultType: 'corrupt', spanId: call.spanId });
  });
});
