/**
 * The workflow monitors on plain GenAI-semconv traces that carry no faultline declaration or fact: hand-written
 * `invoke_workflow` / `invoke_agent` / `chat` / `execute_tool` spans as any producer of the latest semantic
 * conventions writes them (and OpenLLMetry's / OpenInference's names where they differ), each failure mode next to
 * the near-miss that must stay silent. Error texts are the providers' documented refusals (see
 * detectors/monitors/context-overflow.ts for where each is from), not faultline's.
 */
import { describe, expect, it } from 'vitest';
import type { Attributes } from '../../src/traces/model';
import { Run, defs, modes, usage, type SpanSpec } from './support/semconv-trace';

describe('context overflow from what any producer records', () => {
  const refusals: Array<[string, Attributes, SpanSpec['error']]> = [
    [
      'OpenAI / Azure: error.type and the exception',
      { 'gen_ai.request.model': 'gpt-4o' },
      {
        type: 'context_length_exceeded',
        exception: {
          type: 'BadRequestError',
          message:
            "400 This model's maximum context length is 128000 tokens. However, your messages resulted in 131502 tokens. Please reduce the length of the messages.",
        },
      },
    ],
    [
      'vLLM: a generic error type, the sentence in the status',
      { 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'meta-llama/Llama-3.1-8B-Instruct' },
      {
        type: 'BadRequestError',
        message:
          "Error code: 400 - This model's maximum context length is 16384 tokens. However, you requested 19591 tokens (9591 in the messages, 10000 in the completion).",
      },
    ],
    [
      'Anthropic',
      { 'gen_ai.provider.name': 'anthropic', 'gen_ai.request.model': 'claude-sonnet-4-20250514' },
      { type: 'invalid_request_error', message: 'prompt is too long: 209353 tokens > 200000 maximum' },
    ],
    [
      'Gemini',
      { 'gen_ai.provider.name': 'gcp.gemini', 'gen_ai.request.model': 'gemini-2.5-pro' },
      {
        type: 'ClientError',
        message: 'The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).',
      },
    ],
    [
      'Bedrock',
      { 'gen_ai.provider.name': 'aws.bedrock', 'gen_ai.request.model': 'meta.llama3-1-70b-instruct-v1:0' },
      { type: 'ValidationException', message: 'Input is too long for requested model.' },
    ],
  ];
  it.each(refusals)('%s', (_, attrs, error) => {
    const run = new Run();
    const a = run.agent('researcher');
    run.chat(a, { ...attrs, ...usage(90_000, 300, 'tool_calls') });
    run.chat(a, attrs, { error });
    run.fail(run.root, error!.type ?? 'Error');
    const f = run.findings().filter((x) => x.detector === 'context_overflow');
    expect(f.length).toBe(1);
    expect(f[0]!.mast).toBe('1.4');
    // Evidence names the sizes, never the message.
    expect(f[0]!.evidence).not.toMatch(/Please reduce|requested model/);
  });

  it("a refused call without a reason, after the conversation's input grew toward the window", () => {
    const run = new Run();
    const a = run.agent('researcher');
    for (const n of [61_000, 82_000, 103_000, 121_000]) run.chat(a, usage(n, 200, 'tool_calls'));
    run.chat(a, {}, { error: { type: '400' } });
    expect(modes(run.findings())).toContain('context_overflow/1.4');
  });

  it('near-misses: a long context that fits, a rate limit, a refusal of another kind', () => {
    const run = new Run();
    const a = run.agent('researcher');
    for (const n of [96_000, 104_000, 110_000]) run.chat(a, usage(n, 300));
    run.chat(
      a,
      {},
      {
        error: {
          type: 'rate_limit_exceeded',
          message: 'Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.',
        },
      },
    );
    run.chat(a, usage(110_500, 200));
    run.chat(
      a,
      {},
      {
        error: {
          type: 'invalid_request_error',
          message:
            "Invalid schema for function 'get_weather': In context=(), 'additionalProperties' is required to be supplied and to be false.",
        },
      },
    );
    run.chat(
      a,
      {},
      { error: { type: 'ThrottlingException', message: 'Too many tokens, please wait before trying again.' } },
    );
    expect(run.findings().filter((x) => x.detector === 'context_overflow')).toEqual([]);
  });
});

describe('role violation from the tools an agent’s own calls offered', () => {
  const conventions: Array<[string, Attributes]> = [
    ['gen_ai.tool.definitions', { 'gen_ai.tool.definitions': defs('search_hotels', 'hold_room') }],
    [
      'gen_ai.tool.definitions without type',
      { 'gen_ai.tool.definitions': JSON.stringify([{ name: 'search_hotels' }, { name: 'hold_room' }]) },
    ],
    [
      'OpenLLMetry llm.request.functions',
      { 'llm.request.functions.0.name': 'search_hotels', 'llm.request.functions.1.name': 'hold_room' },
    ],
    [
      'OpenInference llm.tools',
      {
        'llm.tools.0.tool.json_schema': JSON.stringify({ type: 'function', function: { name: 'search_hotels' } }),
        'llm.tools.1.tool.json_schema': JSON.stringify({ type: 'function', function: { name: 'hold_room' } }),
      },
    ],
  ];
  it.each(conventions)(
    '%s: a tool the agent was never offered is a violation; its own tools are not',
    (_, toolAttrs) => {
      const run = new Run();
      const hotels = run.agent('hotels');
      run.chat(hotels, { ...toolAttrs, ...usage(300, 40, 'tool_calls') });
      run.tool(hotels, 'search_hotels');
      run.chat(hotels, { ...toolAttrs, ...usage(420, 40, 'tool_calls') });
      run.tool(hotels, 'hold_fare');
      run.chat(hotels, { ...toolAttrs, ...usage(500, 60) });
      const f = run.findings().filter((x) => x.detector === 'role_violation');
      expect(f.map((x) => x.evidence)).toEqual([expect.stringContaining('hold_fare')]);
      expect(f[0]!.agent).toBe('hotels');
    },
  );

  it('near-misses: an agent whose calls record no definitions; a tool run inside another tool; another agent’s own tools', () => {
    const run = new Run();
    const flights = run.agent('flights');
    run.chat(flights, usage(300, 40, 'tool_calls'));
    run.tool(flights, 'hold_fare');
    const hotels = run.agent('hotels');
    run.chat(hotels, {
      'gen_ai.tool.definitions': defs('search_hotels', 'ask_expert'),
      ...usage(300, 40, 'tool_calls'),
    });
    const outer = run.tool(hotels, 'ask_expert', {}, { ms: 5 });
    run.tool(hotels, 'lookup_reviews', {}, { parent: outer });
    run.chat(hotels, { 'gen_ai.tool.definitions': defs('search_hotels', 'ask_expert'), ...usage(400, 60) });
    expect(run.findings().filter((x) => x.detector === 'role_violation')).toEqual([]);
  });
});

const msgs = (n: number): string =>
  JSON.stringify(
    Array.from({ length: n }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      parts: [{ type: 'text', content: `m${i}` }],
    })),
  );
const said = (text: string): Attributes => ({
  'gen_ai.output.messages': JSON.stringify([
    { role: 'assistant', parts: [{ type: 'text', content: text }], finish_reason: 'stop' },
  ]),
});
const asks = (name: string, args: Record<string, string>): Attributes => ({
  'gen_ai.output.messages': JSON.stringify([
    { role: 'assistant', parts: [{ type: 'tool_call', id: 'c1', name, arguments: args }], finish_reason: 'tool_call' },
  ]),
});
const told = (text: string): Attributes => ({
  'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: text }] }]),
});
const ran = (args: unknown, result: string): Attributes => ({
  'gen_ai.tool.call.arguments': JSON.stringify(args),
  'gen_ai.tool.call.result': result,
});

describe('history reset and loss from request sizes and a repeated tool request', () => {
  it('input tokens back at the opening, the first tool asked for again: a reset (2.1), without content', () => {
    const run = new Run();
    const a = run.agent('flights');
    run.chat(a, usage(146, 28, 'tool_calls'));
    run.tool(a, 'search_flights');
    run.chat(a, usage(231, 17, 'tool_calls'));
    run.tool(a, 'hold_fare');
    run.chat(a, usage(147, 28, 'tool_calls'));
    run.tool(a, 'search_flights');
    run.chat(a, usage(231, 30));
    expect(modes(run.findings())).toEqual(['history_loss/2.1']);
  });

  it('input messages not grown past the last request (part of it lost): 1.4, with content', () => {
    const run = new Run();
    const a = run.agent('reader');
    run.chat(a, {
      'gen_ai.input.messages': msgs(1),
      ...asks('fetch_diff', { pr: '7' }),
      ...usage(140, 20, 'tool_calls'),
    });
    run.tool(a, 'fetch_diff');
    run.chat(a, {
      'gen_ai.input.messages': msgs(3),
      ...asks('read_file', { path: 'a.ts' }),
      ...usage(220, 20, 'tool_calls'),
    });
    run.tool(a, 'read_file');
    run.chat(a, {
      'gen_ai.input.messages': msgs(3),
      ...asks('fetch_diff', { pr: '7' }),
      ...usage(225, 20, 'tool_calls'),
    });
    run.tool(a, 'fetch_diff');
    expect(modes(run.findings())).toEqual(['history_loss/1.4']);
  });

  it('near-misses: a re-read on the full history; a stateful API sending only what is new; a new turn', () => {
    const reread = new Run();
    const a = reread.agent('reader');
    for (const [n, tool] of [
      [140, 'read_file'],
      [220, 'write_file'],
      [300, 'read_file'],
    ] as const) {
      reread.chat(a, usage(n, 20, 'tool_calls'));
      reread.tool(a, tool);
    }
    reread.chat(a, usage(380, 40));
    expect(reread.findings()).toEqual([]);

    const stateful = new Run();
    const b = stateful.agent('reader');
    for (const [i, tool] of ['read_file', 'read_file'].entries()) {
      stateful.chat(b, { ...told(i === 0 ? 'Read a.ts' : 'contents of a.ts'), ...usage(60, 20, 'tool_calls') });
      stateful.tool(b, tool, ran({ path: 'a.ts' }, `v${i}`));
    }
    stateful.chat(b, { ...told('contents of a.ts, again'), ...usage(60, 40) });
    expect(stateful.findings()).toEqual([]);

    const fresh = new Run();
    const c = fresh.agent('reader');
    fresh.chat(c, usage(140, 20, 'tool_calls'));
    fresh.tool(c, 'read_file');
    fresh.chat(c, usage(220, 40));
    const d = fresh.agent('reader');
    fresh.chat(d, usage(140, 20, 'tool_calls'));
    fresh.tool(d, 'read_file');
    fresh.chat(d, usage(220, 40));
    expect(fresh.findings()).toEqual([]);
  });
});

describe('output collapse from an agent’s last answers', () => {
  it('output tokens 64, 79, 59, 61 then 11, 11, 11 (no content); characters with content', () => {
    const run = new Run();
    for (const n of [64, 79, 59, 61, 11, 11, 11]) run.chat(run.agent('writer'), usage(120, n));
    const f = run.findings();
    expect(modes(f)).toEqual(['quality_degradation/3.2']);
    expect(f[0]!.evidence).toMatch(/last 3 answers collapsed to 11, 11, 11 output tokens/);

    const text = new Run();
    const w = text.agent('writer');
    for (const t of ['A long section. '.repeat(20), 'Another long section. '.repeat(15), 'N/A', 'N/A'])
      text.chat(w, { ...said(t), ...usage(100, Math.ceil(t.length / 4)) });
    expect(modes(text.findings())).toEqual(['quality_degradation/3.2']);
  });

  it('near-misses: one short sign-off after long parts; a short answer then long ones again; tool-call turns', () => {
    const signoff = new Run();
    for (const n of [64, 79, 59, 61, 6]) signoff.chat(signoff.agent('writer'), usage(120, n));
    expect(signoff.findings()).toEqual([]);

    const recovers = new Run();
    for (const n of [64, 79, 8, 9, 70]) recovers.chat(recovers.agent('writer'), usage(120, n));
    expect(recovers.findings()).toEqual([]);

    const tools = new Run();
    const a = tools.agent('writer');
    tools.chat(a, usage(120, 90));
    tools.chat(a, usage(160, 12, 'tool_calls'));
    tools.tool(a, 'cite_source');
    tools.chat(a, usage(200, 14, 'tool_calls'));
    tools.tool(a, 'cite_source');
    tools.chat(a, usage(240, 85));
    expect(tools.findings()).toEqual([]);
  });
});

describe('an early end: the last step said more was to come', () => {
  it('the last call asks for a tool and nothing runs it (finish reason only, no content)', () => {
    const run = new Run();
    const a = run.agent('hotels');
    run.chat(a, usage(130, 20, 'tool_calls'));
    run.tool(a, 'search_hotels');
    run.chat(a, usage(200, 18, 'tool_calls'));
    expect(modes(run.findings())).toEqual(['premature_termination/3.1']);
  });

  it('the last answer announces the next step, and nothing comes', () => {
    const run = new Run();
    const a = run.agent('flights');
    run.chat(a, usage(130, 20, 'tool_calls'));
    run.tool(a, 'hold_fare');
    run.chat(a, {
      ...said('Held FL-1234 at 300 EUR. I will now hand over to the hotel agent to finish.'),
      ...usage(200, 30),
    });
    expect(modes(run.findings())).toEqual(['premature_termination/3.1']);
  });

  it('an announcement that names another agent of the run, who never ran after', () => {
    const run = new Run();
    const r = run.agent('reviewer');
    run.chat(r, usage(100, 10));
    const a = run.agent('flights');
    run.chat(a, usage(130, 20, 'tool_calls'));
    run.tool(a, 'hold_fare');
    run.chat(a, {
      ...said('Held FL-1234 at 300 EUR. I will ask the reviewer to check the fare rules.'),
      ...usage(200, 30),
    });
    expect(modes(run.findings())).toEqual(['premature_termination/3.1']);
  });

  it('near-misses: a final answer that says it is done; an offer of more help; a run that records no tool executions; a crash', () => {
    const done = (text: string) => {
      const run = new Run();
      const a = run.agent('flights');
      run.chat(a, usage(130, 20, 'tool_calls'));
      run.tool(a, 'hold_fare');
      run.chat(a, { ...said(text), ...usage(200, 30) });
      return run.findings();
    };
    expect(done('Nothing to do: the booking already exists. Closing.')).toEqual([]);
    expect(done('Your flight is held until tomorrow. Let me know if you need anything else.')).toEqual([]);
    expect(done('Held FL-1234. I will not book a hotel, as you asked.')).toEqual([]);

    const untooled = new Run();
    untooled.chat(untooled.agent('calc'), usage(100, 20, 'tool_calls'));
    expect(untooled.findings()).toEqual([]);

    const crash = new Run();
    const c = crash.agent('hotels');
    crash.tool(c, 'search_hotels');
    crash.chat(c, usage(200, 18, 'tool_calls'));
    crash.fail(crash.root, 'RuntimeError');
    expect(crash.findings().filter((f) => f.failure === 'premature_termination')).toEqual([]);
  });
});

describe('no progress: one tool, varied arguments, one result', () => {
  it('four searches with different arguments, the same empty answer each time', () => {
    const run = new Run();
    const a = run.agent('hotels');
    for (let i = 0; i < 4; i++) {
      run.chat(a, usage(130 + 40 * i, 20, 'tool_calls'));
      run.tool(a, 'search_hotels', ran({ city: 'Oslo', max_price: String(100 + 20 * i) }, '{"hotels": []}'));
    }
    run.chat(a, { ...said('No rooms found.'), ...usage(300, 10) });
    const f = run.findings();
    expect(modes(f)).toEqual(['no_progress/1.5']);
    expect(f[0]!.failure).toBe('workflow_deadlock');
    expect(f[0]!.faultType).toBe('stale');
  });

  it('near-misses: pages of a listing; a re-read after a change; one acknowledgement for actions on different targets; the same arguments (a repetition, not this)', () => {
    const pages = new Run();
    const a = pages.agent('hotels');
    for (let i = 1; i <= 3; i++)
      pages.tool(a, 'search_hotels', ran({ city: 'Oslo', page: String(i) }, `{"page":${i},"hotels":["h${i}"]}`));
    expect(pages.findings().filter((f) => f.detector === 'no_progress')).toEqual([]);

    const reread = new Run();
    const b = reread.agent('coder');
    reread.tool(b, 'read_file', ran({ path: 'a.ts' }, 'v1'));
    reread.tool(b, 'write_file', ran({ path: 'a.ts', body: 'v2' }, 'ok'));
    reread.tool(b, 'read_file', ran({ path: 'a.ts' }, 'v2'));
    expect(reread.findings().filter((f) => f.detector === 'no_progress')).toEqual([]);

    const batch = new Run();
    const m = batch.agent('mailer');
    for (const to of ['ana@example.com', 'li@example.com', 'sam@example.com'])
      batch.tool(m, 'send_email', ran({ to }, '{"status":"sent"}'));
    expect(batch.findings().filter((f) => f.detector === 'no_progress')).toEqual([]);

    const same = new Run();
    const c = same.agent('hotels');
    for (let i = 0; i < 4; i++) same.tool(c, 'search_hotels', ran({ city: 'Oslo' }, '{"hotels": []}'));
    expect(same.findings().filter((f) => f.detector === 'no_progress')).toEqual([]);
  });
});

describe('output conflict: two agents holding different values of one identifier', () => {
  it('two agents pass ORD-28115, a third reports ORD-82115', () => {
    const run = new Run();
    const triage = run.agent('triage');
    run.chat(triage, {
      ...told('Order ORD-28115 arrived damaged.'),
      ...asks('get_order', { order_id: 'ORD-28115' }),
      ...usage(100, 20, 'tool_calls'),
    });
    run.tool(triage, 'get_order', ran({ order_id: 'ORD-28115' }, '{"order_id":"ORD-28115","total":42}'));
    run.chat(triage, { ...said('Refund request for ORD-28115, 42 EUR.'), ...usage(160, 20) });
    const router = run.agent('router');
    run.chat(router, {
      ...told('Refund request for ORD-28115, 42 EUR.'),
      ...said('Routing ORD-28115 to billing.'),
      ...usage(80, 20),
    });
    const billing = run.agent('billing');
    run.chat(billing, { ...told('Refund ORD-28115.'), ...said('Refunded 42 EUR for ORD-82115.'), ...usage(80, 20) });
    const f = run.findings().filter((x) => x.detector === 'output_conflict');
    expect(f.map((x) => [x.agent, x.mast])).toEqual([['billing', '2.5']]);
    // The evidence names no value.
    expect(f[0]!.evidence).not.toMatch(/ORD-/);
  });

  it('near-misses: neighbouring ids a tool returned; a probe with the next id; different entities of one shape', () => {
    const run = new Run();
    const a = run.agent('flights');
    run.chat(a, { ...told('Find flights to Oslo.'), ...usage(100, 20, 'tool_calls') });
    run.tool(a, 'search_flights', ran({ to: 'Oslo' }, '{"flights":["FL-1234","FL-1235"]}'));
    run.chat(a, { ...said('Options: FL-1234 and FL-1235.'), ...usage(150, 20) });
    const b = run.agent('orders');
    run.chat(b, {
      ...told('Check ORD-50001.'),
      ...asks('get_order', { order_id: 'ORD-50002' }),
      ...usage(80, 20, 'tool_calls'),
    });
    run.tool(b, 'get_order', ran({ order_id: 'ORD-50002' }, '{"error":"not found"}'));
    run.chat(b, { ...said('ORD-50001 is not in the system; held FL-1234 as HF-7781.'), ...usage(120, 20) });
    expect(run.findings().filter((x) => x.detector === 'output_conflict')).toEqual([]);
  });
});

describe('history near-misses a provider’s accounting makes', () => {
  it('a prompt cache counting cached input apart; another file read with the same tool', () => {
    const cached = new Run();
    const a = cached.agent('coder');
    cached.chat(a, usage(1200, 20, 'tool_calls'));
    cached.tool(a, 'read_file');
    cached.chat(a, usage(1500, 20, 'tool_calls'));
    cached.tool(a, 'run_tests');
    // Anthropic's input_tokens leaves out what was read from the cache: the count drops while the request grew.
    cached.chat(a, { ...usage(300, 20, 'tool_calls'), 'gen_ai.usage.cache_read.input_tokens': 1400 });
    cached.tool(a, 'read_file');
    cached.chat(a, usage(1800, 40));
    expect(cached.findings()).toEqual([]);

    const other = new Run();
    const b = other.agent('coder');
    other.chat(b, {
      'gen_ai.input.messages': msgs(1),
      ...asks('read_file', { path: 'a.ts' }),
      ...usage(140, 20, 'tool_calls'),
    });
    other.tool(b, 'read_file');
    other.chat(b, { 'gen_ai.input.messages': msgs(3), ...asks('run_tests', {}), ...usage(220, 20, 'tool_calls') });
    other.tool(b, 'run_tests');
    other.chat(b, {
      'gen_ai.input.messages': msgs(3),
      ...asks('read_file', { path: 'b.ts' }),
      ...usage(225, 20, 'tool_calls'),
    });
    other.tool(b, 'read_file');
    expect(other.findings().filter((f) => f.detector === 'history_loss')).toEqual([]);
  });
});

describe('step repetition offline: a retry after failures is recovery', () => {
  const three = (fail: boolean) => {
    const run = new Run();
    const a = run.agent('reviewer');
    for (let i = 0; i < 3; i++) {
      run.chat(a, {
        'gen_ai.input.messages': msgs(1 + 2 * i),
        ...asks('run_linter', { path: 'a.ts' }),
        ...usage(100 + 50 * i, 20, 'tool_calls'),
      });
      run.tool(
        a,
        'run_linter',
        fail ? {} : ran({ path: 'a.ts' }, '{"warnings":[]}'),
        fail ? { error: { type: 'TimeoutError', message: 'The operation was aborted due to timeout' } } : {},
      );
    }
    run.chat(a, { 'gen_ai.input.messages': msgs(7), ...said('Lint is clean.'), ...usage(260, 10) });
    return run.findings().filter((f) => f.detector === 'repetition');
  };
  it('the same tool call three times, each run succeeding, is a loop; each run timing out, a retry', () => {
    expect(three(false).map((f) => f.mast)).toEqual(['1.3']);
    expect(three(true)).toEqual([]);
  });
});
