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
    ['OpenAI / Azure: error.type and the exception', { 'gen_ai.request.model': 'gpt-4o' }, { type: 'context_length_exceeded', exception: { type: 'BadRequestError', message: "400 This model's maximum context length is 128000 tokens. However, your messages resulted in 131502 tokens. Please reduce the length of the messages." } }],
    ['vLLM: a generic error type, the sentence in the status', { 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'meta-llama/Llama-3.1-8B-Instruct' }, { type: 'BadRequestError', message: "Error code: 400 - This model's maximum context length is 16384 tokens. However, you requested 19591 tokens (9591 in the messages, 10000 in the completion)." }],
    ['Anthropic', { 'gen_ai.provider.name': 'anthropic', 'gen_ai.request.model': 'claude-sonnet-4-20250514' }, { type: 'invalid_request_error', message: 'prompt is too long: 209353 tokens > 200000 maximum' }],
    ['Gemini', { 'gen_ai.provider.name': 'gcp.gemini', 'gen_ai.request.model': 'gemini-2.5-pro' }, { type: 'ClientError', message: 'The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).' }],
    ['Bedrock', { 'gen_ai.provider.name': 'aws.bedrock', 'gen_ai.request.model': 'meta.llama3-1-70b-instruct-v1:0' }, { type: 'ValidationException', message: 'Input is too long for requested model.' }],
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
    run.chat(a, {}, { error: { type: 'rate_limit_exceeded', message: 'Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.' } });
    run.chat(a, usage(110_500, 200));
    run.chat(a, {}, { error: { type: 'invalid_request_error', message: "Invalid schema for function 'get_weather': In context=(), 'additionalProperties' is required to be supplied and to be false." } });
    run.chat(a, {}, { error: { type: 'ThrottlingException', message: 'Too many tokens, please wait before trying again.' } });
    expect(run.findings().filter((x) => x.detector === 'context_overflow')).toEqual([]);
  });
});

describe('role violation from the tools an agent’s own calls offered', () => {
  const conventions: Array<[string, Attributes]> = [
    ['gen_ai.tool.definitions', { 'gen_ai.tool.definitions': defs('search_hotels', 'hold_room') }],
    ['gen_ai.tool.definitions without type', { 'gen_ai.tool.definitions': JSON.stringify([{ name: 'search_hotels' }, { name: 'hold_room' }]) }],
    ['OpenLLMetry llm.request.functions', { 'llm.request.functions.0.name': 'search_hotels', 'llm.request.functions.1.name': 'hold_room' }],
    ['OpenInference llm.tools', { 'llm.tools.0.tool.json_schema': JSON.stringify({ type: 'function', function: { name: 'search_hotels' } }), 'llm.tools.1.tool.json_schema': JSON.stringify({ type: 'function', function: { name: 'hold_room' } }) }],
  ];
  it.each(conventions)('%s: a tool the agent was never offered is a violation; its own tools are not', (_, toolAttrs) => {
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
  });

  it('near-misses: an agent whose calls record no definitions; a tool run inside another tool; another agent’s own tools', () => {
    const run = new Run();
    const flights = run.agent('flights');
    run.chat(flights, usage(300, 40, 'tool_calls'));
    run.tool(flights, 'hold_fare');
    const hotels = run.agent('hotels');
    run.chat(hotels, { 'gen_ai.tool.definitions': defs('search_hotels', 'ask_expert'), ...usage(300, 40, 'tool_calls') });
    const outer = run.tool(hotels, 'ask_expert', {}, { ms: 5 });
    run.tool(hotels, 'lookup_reviews', {}, { parent: outer });
    run.chat(hotels, { 'gen_ai.tool.definitions': defs('search_hotels', 'ask_expert'), ...usage(400, 60) });
    expect(run.findings().filter((x) => x.detector === 'role_violation')).toEqual([]);
  });
});
