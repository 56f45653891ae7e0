/**
 * The run's consensus shape (src/diagnosers/consensus-shape.ts) on project-written traces in the GenAI conventions
 * with content and no tool definitions or response_format recorded (as @opentelemetry/instrumentation-openai writes
 * them): a tool call or structured answer that lacks a key, carries an undeclared one or changes a value's type
 * against the same tool's / agent's other instances is `schema` at its call; an optional key, a single other
 * instance, a declared schema, null and integer-vs-decimal are not.
 */
import { describe, expect, it } from 'vitest';
import { diagnoseByRules } from '../../src/diagnosers/rules';
import { consensusBreaks } from '../../src/diagnosers/consensus-shape';
import { parseShape, payloadShape, payloadTypes } from '../../instrumentation/agents/shape';
import { detectSpans } from '../../detectors/from-span';
import type { Attributes, SpanRecord, TraceRecord } from '../../src/traces/model';

let seq = 0;
function span(name: string, attributes: Attributes, parent?: string): SpanRecord {
  seq++;
  const start = 1_700_000_000_000 + seq * 1000;
  const s: SpanRecord = {
    traceId: 'c'.repeat(32),
    spanId: seq.toString(16).padStart(16, '0'),
    name,
    kind: 'INTERNAL',
    start,
    end: start + (parent ? 400 : 60_000),
    attributes,
    events: [],
    links: [],
    status: { code: 'UNSET' },
    resource: {},
    scope: { name: 'project-written' },
  };
  if (parent) s.parentSpanId = parent;
  return s;
}

const rules = (t: TraceRecord) => diagnoseByRules(t, { findings: (tr) => detectSpans(tr, { includeOnline: false }) });
const trace = (spans: SpanRecord[]): TraceRecord => ({ traceId: spans[0]!.traceId, spans });
const agent = (name: string) =>
  span(`invoke_agent ${name}`, { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': name });

function call(
  parent: string,
  output: unknown[],
  o: { system?: string; tools?: unknown[]; responseFormat?: unknown } = {},
) {
  return span(
    'chat gpt-4o-mini',
    {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.input.messages': JSON.stringify([
        ...(o.system ? [{ role: 'system', parts: [{ type: 'text', content: o.system }] }] : []),
        { role: 'user', parts: [{ type: 'text', content: 'Go on.' }] },
      ]),
      'gen_ai.output.messages': JSON.stringify(output),
      ...(o.tools ? { 'gen_ai.tool.definitions': JSON.stringify(o.tools) } : {}),
    },
    parent,
  );
}
const toolCall = (parent: string, name: string, args: unknown, tools?: unknown[]) =>
  call(
    parent,
    [
      {
        role: 'assistant',
        parts: [{ type: 'tool_call', id: `call_${seq}`, name, arguments: JSON.stringify(args) }],
        finish_reason: 'tool_call',
      },
    ],
    tools ? { tools } : {},
  );
const answer = (parent: string, doc: unknown, system: string) =>
  call(
    parent,
    [{ role: 'assistant', parts: [{ type: 'text', content: JSON.stringify(doc) }], finish_reason: 'stop' }],
    {
      system,
    },
  );

/** Three workers each reading a commit, then `third` as the fourth call of the same tool. */
function readCommits(third: unknown, o: { tools?: unknown[]; others?: unknown[] } = {}) {
  const a = agent('workers');
  const others = o.others ?? [
    { repo: 'billing-api', sha: '3f9c2ab', max_lines: 200 },
    { repo: 'web-console', sha: '81d0e4c', max_lines: 120 },
    { repo: 'auth-gateway', sha: 'a07b5d1', max_lines: 80 },
  ];
  const calls = others.map((args) => toolCall(a.spanId, 'read_commit', args, o.tools));
  const odd = toolCall(a.spanId, 'read_commit', third, o.tools);
  return { spans: [a, ...calls, odd], odd, step: calls.length + 1 };
}

describe('tool arguments against the same tool’s other calls (no tool definitions recorded)', () => {
  it('a key every other call carries is missing → schema at that call', () => {
    const t = readCommits({ repo: 'ingest-worker', max_lines: 150 });
    const d = rules(trace(t.spans));
    expect(d).toMatchObject({ faultType: 'schema', spanId: t.odd.spanId, step: t.step });
    expect(d.evidence[0]).toContain('lacks sha');
  });

  it('a key none of the others carries → schema', () => {
    const t = readCommits({ repo: 'ingest-worker', sha: 'c4e1f02', max_lines: 150, verbose: true });
    const d = rules(trace(t.spans));
    expect(d).toMatchObject({ faultType: 'schema', spanId: t.odd.spanId, step: t.step });
    expect(d.evidence[0]).toContain('verbose');
  });

  it('a value of another JSON type than all the others → schema', () => {
    const t = readCommits({ repo: 'ingest-worker', sha: 'c4e1f02', max_lines: '150' });
    const d = rules(trace(t.spans));
    expect(d).toMatchObject({ faultType: 'schema', spanId: t.odd.spanId, step: t.step });
    expect(d.evidence[0]).toContain('max_lines (num elsewhere, str here)');
  });

  it('the odd call is named wherever it is in the run, not only last', () => {
    const a = agent('workers');
    const odd = toolCall(a.spanId, 'read_commit', { repo: 'x', max_lines: '9' });
    const rest = [1, 2].map((i) => toolCall(a.spanId, 'read_commit', { repo: `r${i}`, max_lines: i }));
    expect(rules(trace([a, odd, ...rest]))).toMatchObject({ faultType: 'schema', spanId: odd.spanId, step: 1 });
  });

  it('clean: an optional key present in only some calls, absent here', () => {
    const t = readCommits(
      { repo: 'ingest-worker', sha: 'c4e1f02' },
      {
        others: [
          { repo: 'billing-api', sha: '3f9c2ab', max_lines: 200 },
          { repo: 'web-console', sha: '81d0e4c' },
          { repo: 'auth-gateway', sha: 'a07b5d1', max_lines: 80 },
        ],
      },
    );
    expect(rules(trace(t.spans)).faultType).toBe('none');
  });

  it('clean: integers and decimals are one type, null is absent-compatible, array lengths vary', () => {
    const t = readCommits(
      { repo: 'ingest-worker', sha: null, max_lines: 12.5, paths: ['a', 'b', 'c'] },
      {
        others: [
          { repo: 'billing-api', sha: '3f9c2ab', max_lines: 200, paths: [] },
          { repo: 'web-console', sha: '81d0e4c', max_lines: 120, paths: ['x'] },
        ],
      },
    );
    expect(rules(trace(t.spans)).faultType).toBe('none');
  });

  it('clean: only one other call is no consensus', () => {
    const t = readCommits(
      { repo: 'ingest-worker', max_lines: '150' },
      { others: [{ repo: 'a', sha: 'b', max_lines: 1 }] },
    );
    expect(rules(trace(t.spans)).faultType).toBe('none');
  });

  it('a declared schema wins: the definitions allow what the other calls left out → no consensus verdict', () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'read_commit',
          parameters: {
            type: 'object',
            properties: { repo: { type: 'string' }, sha: { type: 'string' }, max_lines: { type: 'integer' } },
            required: ['repo'],
          },
        },
      },
    ];
    const t = readCommits({ repo: 'ingest-worker', max_lines: 150 }, { tools });
    expect(rules(trace(t.spans)).faultType).toBe('none');
  });
});

describe('structured answers against the same agent’s other answers (no response_format recorded)', () => {
  const system = 'Judge the draft. Answer {"approved": boolean, "notes": string, "score": number}.';
  const verdicts = (odd: unknown, n = 3) => {
    const a = agent('critic');
    const rest = Array.from({ length: n - 1 }, (_, i) =>
      answer(a.spanId, { approved: i % 2 === 0, notes: `round ${i + 1}`, score: i + 3 }, system),
    );
    const o = answer(a.spanId, odd, system);
    return { spans: [a, ...rest, o], odd: o, step: n };
  };

  it('a key the others all carry is missing → schema at that answer', () => {
    const t = verdicts({ approved: true, score: 8 });
    expect(rules(trace(t.spans))).toMatchObject({ faultType: 'schema', spanId: t.odd.spanId, step: t.step });
  });

  it('clean: a third verdict of the same shape; and only one other answer says nothing', () => {
    expect(rules(trace(verdicts({ approved: true, notes: 'fine', score: 9.5 }).spans)).faultType).toBe('none');
    expect(rules(trace(verdicts({ approved: true, score: 8 }, 2).spans)).faultType).toBe('none');
  });

  it('another agent’s answers are not this agent’s consensus', () => {
    const a = agent('critic');
    const b = agent('scorer');
    const spans = [
      a,
      b,
      answer(a.spanId, { approved: true, notes: 'ok', score: 1 }, system),
      answer(a.spanId, { approved: false, notes: 'no', score: 2 }, system),
      answer(b.spanId, { score: 3 }, system),
    ];
    expect(rules(trace(spans)).faultType).toBe('none');
  });
});

describe('consensusBreaks', () => {
  const shape = (v: unknown) => parseShape(payloadShape(v));
  it('needs unanimity: a key one other lacks is optional; a null there is not carrying it', () => {
    const others = [shape({ a: 1, b: 'x', c: null }), shape({ a: 2, b: 'y', c: 'z' })];
    expect(consensusBreaks(shape({ a: 3 }), others)).toEqual({ missing: ['b'], extra: [], retyped: [] });
  });
});

describe('payloadTypes, the type-only shape the documents are compared by', () => {
  it('gives every key path the JSON type payloadShape gives it', () => {
    const values = [
      { queue: 'billing', id: 'C-12', n: 3, x: 2.5, ok: true, none: null, nested: { a: [1, 2], b: { c: 'd' } } },
      { list: [{ k: 1 }, { k: 'two' }], empty: [], deep: { a: { b: { c: { d: { e: { f: { g: { h: 1 } } } } } } } } },
      { text: 'Lisbon, Portugal — 3 days', url: 'https://example.com/x', when: '2026-12-07', ids: ['a1', 'b2'] },
      Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`k${i}`, i])),
    ];
    for (const v of values) {
      const types = new Map([...payloadTypes(v)].map(([path, e]) => [path, e.type]));
      const full = new Map([...parseShape(payloadShape(v))].map(([path, e]) => [path, e.type]));
      expect(types).toEqual(full);
    }
  });
});
