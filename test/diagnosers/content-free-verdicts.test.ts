/**
 * Content off, online detection off: faultline's own span layer around the real openai client, against a loopback
 * server answering in OpenAI's documented chat-completions shape, records verdicts instead of content — arguments
 * that do not parse, arguments that break the declared schema (keyword and path), a tool the request did not
 * declare, garbled characters, a blank answer, a structured answer against its response_format — and the rules name
 * the fault and the call from those alone. No argument value or text reaches the span.
 */
import { trace as otel } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { diagnoseByRules } from '../../src/diagnosers/rules';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { pollSpans, readingExporter } from '../support/otel';
import { toTraces } from '../support/to-traces';

const exporter = readingExporter();
let provider: NodeTracerProvider;
let inst: FaultlineInstrumentation;
let server: LlmServer;
let script: object[] = [];

const completion = (message: object, finish: string, tokens: number) =>
  JSON.stringify({
    id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: 'gpt-4o-mini-2024-07-18',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: null, refusal: null, ...message },
        finish_reason: finish,
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: 40, completion_tokens: tokens, total_tokens: 40 + tokens },
  });
const text = (t: string) => ({ content: t });
const call = (name: string, args: string) => ({
  tool_calls: [
    { id: `call_${Math.random().toString(36).slice(2, 12)}`, type: 'function', function: { name, arguments: args } },
  ],
});

const LOOKUP = {
  type: 'function' as const,
  function: {
    name: 'lookup_order',
    description: 'Look up an order',
    parameters: {
      type: 'object' as const,
      properties: { order_id: { type: 'string', pattern: '^A-[0-9]{5}$' }, quantity: { type: 'integer' } },
      required: ['order_id'],
      additionalProperties: false,
    },
  },
};
const HANDOFF = {
  type: 'json_schema' as const,
  json_schema: {
    name: 'handoff',
    strict: true,
    schema: {
      type: 'object',
      properties: { queue: { type: 'string' }, summary: { type: 'string' } },
      required: ['queue', 'summary'],
      additionalProperties: false,
    },
  },
};

beforeAll(async () => {
  provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  inst = new FaultlineInstrumentation({ captureMessageContent: false });
  inst.enable();
  server = await startLlmServer((req) => {
    if (req.url.includes('/v1/messages')) return anthropicReply();
    if (req.url.endsWith('/responses')) return responsesReply();
    const m = script.shift() ?? text('Done.');
    const tools = 'tool_calls' in m;
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: completion(m, tools ? 'tool_calls' : 'stop', tools ? 18 : 9),
    };
  });
});
afterAll(async () => {
  await server.close();
  inst.disable();
  await provider.shutdown();
  otel.disable();
});

/** A three-call agent run (the second call's answer is `faulty`); the rule diagnosis of its trace and its spans. */
async function run(faulty: object, structured = false) {
  exporter.reset();
  script = [text('Let me look that up.'), faulty, text('Your order ships on Tuesday.')];
  const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
  await otel.getTracer('app').startActiveSpan('invoke_agent support', async (span) => {
    for (let i = 0; i < 3; i++) {
      const body = {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user' as const, content: 'Where is order A-10293?' }],
        tools: [LOOKUP],
        ...(structured && i === 1 ? { response_format: HANDOFF } : {}),
      };
      await client.chat.completions.create(body);
    }
    span.end();
  });
  const spans = await pollSpans(exporter, (s) => s.filter((x) => x.name.startsWith('chat')).length >= 3, 5000);
  const [t] = toTraces(spans);
  return {
    d: diagnoseByRules(t!),
    chat: spans
      .filter((x) => x.name.startsWith('chat'))
      .sort((a, b) => a.startTime[1] - b.startTime[1] + (a.startTime[0] - b.startTime[0]) * 1e9),
  };
}

/** Anthropic Messages answers (its documented shape): a text, then a tool_use block whose input breaks the schema. */
let anthropicScript: object[] = [];
function anthropicReply() {
  const block = anthropicScript.shift() ?? { type: 'text', text: 'Done.' };
  const stop = (block as { type: string }).type === 'tool_use' ? 'tool_use' : 'end_turn';
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      id: `msg_${Math.random().toString(36).slice(2)}`,
      type: 'message',
      role: 'assistant',
      model: 'claude-3-5-haiku-20241022',
      content: [block],
      stop_reason: stop,
      stop_sequence: null,
      usage: { input_tokens: 30, output_tokens: 12 },
    }),
  };
}

/** OpenAI Responses answers (the documented `response` object): an output item each. */
let responsesScript: object[] = [];
function responsesReply() {
  const item = responsesScript.shift() ?? {
    type: 'message',
    id: 'msg_1',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'Done.', annotations: [] }],
  };
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      id: `resp_${Math.random().toString(36).slice(2)}`,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      model: 'gpt-4o-mini-2024-07-18',
      output: [item],
      usage: { input_tokens: 30, output_tokens: 12, total_tokens: 42 },
    }),
  };
}

describe('content-free verdicts from faultline’s own layer (content off)', () => {
  it('OpenAI Responses: function_call arguments that do not parse are schema at that call', async () => {
    exporter.reset();
    const say = (t: string) => ({
      type: 'message',
      id: 'msg_1',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: t, annotations: [] }],
    });
    responsesScript = [
      say('Let me look.'),
      {
        type: 'function_call',
        id: 'fc_1',
        call_id: 'call_1',
        name: 'lookup_order',
        arguments: '{"order_id": "A-10293",',
        status: 'completed',
      },
      say('It ships Tuesday.'),
    ];
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
    const tool = {
      type: 'function' as const,
      name: 'lookup_order',
      description: 'Look up an order',
      parameters: LOOKUP.function.parameters,
      strict: false,
    };
    await otel.getTracer('app').startActiveSpan('invoke_agent support', async (span) => {
      for (let i = 0; i < 3; i++)
        await client.responses.create({ model: 'gpt-4o-mini', input: 'Where is order A-10293?', tools: [tool] });
      span.end();
    });
    const spans = await pollSpans(exporter, (x) => x.filter((y) => y.name.startsWith('chat')).length >= 3, 5000);
    const d = diagnoseByRules(toTraces(spans)[0]!);
    expect({ type: d.faultType, step: d.step }).toEqual({ type: 'schema', step: 2 });
    expect(d.evidence[0]).toContain('not JSON');
  }, 30_000);

  it('Anthropic Messages: a tool_use input breaking the declared input_schema is schema at that call', async () => {
    exporter.reset();
    anthropicScript = [
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'toolu_01', name: 'lookup_order', input: { quantity: 2 } },
      { type: 'text', text: 'It ships Tuesday.' },
    ];
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: server.url, maxRetries: 0 });
    const tool = { name: 'lookup_order', description: 'Look up an order', input_schema: LOOKUP.function.parameters };
    await otel.getTracer('app').startActiveSpan('invoke_agent support', async (span) => {
      for (let i = 0; i < 3; i++)
        await client.messages.create({
          model: 'claude-3-5-haiku-20241022',
          max_tokens: 200,
          messages: [{ role: 'user', content: 'Where is order A-10293?' }],
          tools: [tool],
        });
      span.end();
    });
    const spans = await pollSpans(exporter, (x) => x.filter((y) => y.name.startsWith('chat')).length >= 3, 5000);
    const d = diagnoseByRules(toTraces(spans)[0]!);
    expect({ type: d.faultType, step: d.step }).toEqual({ type: 'schema', step: 2 });
    expect(d.evidence[0]).toContain('required $.order_id');
  }, 30_000);

  it('arguments that do not parse, break the schema or call an undeclared tool are schema at that call; no content on the span', async () => {
    const cases: Array<[object, string]> = [
      [call('lookup_order', "{'order_id': 'A-10293'}"), 'not JSON'],
      [call('lookup_order', '{"quantity": 2}'), 'required $.order_id'],
      [call('lookup_order', '{"order_id": "A-10293", "note": "rush"}'), 'additionalProperties $'],
      [call('cancel_order', '{"order_id": "A-10293"}'), 'did not declare'],
    ];
    for (const [faulty, says] of cases) {
      const { d, chat } = await run(faulty);
      expect({ type: d.faultType, step: d.step }).toEqual({ type: 'schema', step: 2 });
      expect(d.evidence[0]).toContain(says);
      const attrs = JSON.stringify(chat[1]!.attributes);
      expect(attrs).not.toContain('A-10293');
      expect(attrs).not.toContain('rush');
      expect(attrs).not.toContain('note');
    }
  }, 30_000);

  it('garbled arguments are corrupt (not schema), a blank answer is empty, a structured answer missing a field is schema', async () => {
    let r = await run(call('lookup_order', '{"order_id": "A-10\uFFFD93"}'));
    expect({ type: r.d.faultType, step: r.d.step }).toEqual({ type: 'corrupt', step: 2 });
    r = await run(text('\n  '));
    expect({ type: r.d.faultType, step: r.d.step }).toEqual({ type: 'empty', step: 2 });
    r = await run(text('{"queue": "returns"}'), true);
    expect({ type: r.d.faultType, step: r.d.step }).toEqual({ type: 'schema', step: 2 });
    expect(r.d.evidence[0]).toContain('required $.summary');
    expect(JSON.stringify(r.chat[1]!.attributes)).not.toContain('returns');
  }, 30_000);

  it('valid arguments and a valid structured answer leave the run clean', async () => {
    expect((await run(call('lookup_order', '{"order_id": "A-10293", "quantity": 1}'))).d.faultType).toBe('none');
    expect((await run(text('{"queue": "returns", "summary": "wrong size"}'), true)).d.faultType).toBe('none');
  }, 30_000);
});
