/**
 * `operation: model` (issue 26) on real clients, not hand-written attributes: the real @google/genai
 * generateContent (JSON and alt=sse stream) and the real openai `responses.create` (JSON and stream) against a
 * loopback server, under a plan whose rules select by `match: { operation: model }` alone (a content fault for JSON
 * answers, a stream fault for streams). Gemini spans
 * are `generate_content` and Responses spans `chat`, so a selector that knew only one name would miss the other.
 * The bodies are written here in each API's documented wire format (no recorded corpus needed).
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startLlmServer, type LlmServer, type Reply, type SeenRequest } from '../support/llm-server';
import { callSpans, setupHarness, type Harness } from './harness';

const ANSWER = 'The capital of France is Paris, a city on the Seine.';
const sse = (events: unknown[]) => events.map((e) => `data: ${JSON.stringify(e)}\n\n`);

function geminiReply(stream: boolean): Reply {
  const chunk = (text: string, finish?: string) => ({
    candidates: [
      { content: { role: 'model', parts: [{ text }] }, index: 0, ...(finish ? { finishReason: finish } : {}) },
    ],
    usageMetadata: { promptTokenCount: 8, candidatesTokenCount: 12, totalTokenCount: 20 },
    modelVersion: 'gemini-2.5-flash',
  });
  if (!stream) return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(chunk(ANSWER, 'STOP')) };
  return {
    headers: { 'content-type': 'text/event-stream' },
    chunks: sse([chunk(ANSWER.slice(0, 20)), chunk(ANSWER.slice(20), 'STOP')]),
  };
}

function responsesReply(stream: boolean): Reply {
  const message = {
    id: 'msg_1',
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: ANSWER, annotations: [] }],
  };
  const response = (status: string, output: unknown[]) => ({
    id: 'resp_1',
    object: 'response',
    created_at: 1_700_000_000,
    status,
    model: 'gpt-4o-2024-08-06',
    output,
    usage: { input_tokens: 8, output_tokens: 12, total_tokens: 20 },
  });
  if (!stream)
    return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(response('completed', [message])) };
  const events = [
    { type: 'response.created', sequence_number: 0, response: response('in_progress', []) },
    {
      type: 'response.output_item.added',
      sequence_number: 1,
      output_index: 0,
      item: { ...message, status: 'in_progress', content: [] },
    },
    {
      type: 'response.content_part.added',
      sequence_number: 2,
      item_id: 'msg_1',
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] },
    },
    {
      type: 'response.output_text.delta',
      sequence_number: 3,
      item_id: 'msg_1',
      output_index: 0,
      content_index: 0,
      delta: ANSWER,
    },
    {
      type: 'response.output_text.done',
      sequence_number: 4,
      item_id: 'msg_1',
      output_index: 0,
      content_index: 0,
      text: ANSWER,
    },
    { type: 'response.output_item.done', sequence_number: 5, output_index: 0, item: message },
    { type: 'response.completed', sequence_number: 6, response: response('completed', [message]) },
  ];
  return {
    headers: { 'content-type': 'text/event-stream' },
    chunks: events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`),
  };
}

function answer(req: SeenRequest): Reply {
  const url = req.url;
  if (url.includes(':streamGenerateContent')) return geminiReply(true);
  if (url.includes(':generateContent')) return geminiReply(false);
  const body = JSON.parse(req.body.toString('utf8') || '{}') as { stream?: boolean };
  return responsesReply(body.stream === true);
}

let h: Harness;
let server: LlmServer;
beforeAll(async () => {
  h = setupHarness();
  server = await startLlmServer(answer);
});
afterAll(async () => {
  await server.close();
  await h.shutdown();
});
beforeEach(() => h.exporter.reset());

// Content faults act on whole JSON answers and stream faults on streams, so the plan has one of each, both
// selecting by the operation class alone: each call meets the one that applies to its format.
const PLAN = {
  rules: [
    { fault: 'llm_truncate_single', match: { operation: 'model' } },
    { fault: 'stream_cut', match: { operation: 'model' }, params: { afterEvents: 1 } },
  ],
};

/** The one model call's span, once it has ended: its operation name and the fault attributes on it. */
async function fired(): Promise<Record<string, unknown>> {
  const spans = callSpans(await h.waitForSpans((s) => callSpans(s).length >= 1));
  expect(spans).toHaveLength(1);
  const a = spans[0]!.attributes;
  return {
    op: a['gen_ai.operation.name'],
    fault: a['faultline.fault.name'],
    rule: a['faultline.fault.rule'],
    mode: a['faultline.fault.mode'],
  };
}

describe('operation: model selects real Gemini and Responses calls', () => {
  const gemini = async () => {
    const { GoogleGenAI } = await import('@google/genai');
    return new GoogleGenAI({ apiKey: 'test-key', httpOptions: { baseUrl: server.url } });
  };
  const openai = () => new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
  const expected = (op: string, fault = 'llm_truncate_single', mode = 'content') => ({ op, fault, rule: fault, mode });

  it('@google/genai generateContent (JSON)', async () => {
    const ai = await gemini();
    const { result } = await h.task(
      PLAN,
      async () => (await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'capital of France?' })).text,
    );
    expect(await fired()).toEqual(expected('generate_content'));
    expect(result!.length).toBeLessThan(ANSWER.length);
  });

  it('@google/genai generateContentStream (alt=sse)', async () => {
    const ai = await gemini();
    const { result } = await h.task(PLAN, async () => {
      let text = '';
      for await (const c of await ai.models.generateContentStream({
        model: 'gemini-2.5-flash',
        contents: 'capital of France?',
      }))
        text += c.text ?? '';
      return text;
    });
    expect(await fired()).toEqual(expected('generate_content', 'stream_cut', 'stream'));
    expect(result.length).toBeLessThan(ANSWER.length);
  });

  it('openai responses.create (JSON)', async () => {
    const { result } = await h.task(
      PLAN,
      async () => (await openai().responses.create({ model: 'gpt-4o', input: 'capital of France?' })).output_text,
    );
    expect(await fired()).toEqual(expected('chat'));
    expect(result.length).toBeLessThan(ANSWER.length);
  });

  it('openai responses.create (stream)', async () => {
    const { result } = await h.task(PLAN, async () => {
      let text = '';
      for await (const e of await openai().responses.create({
        model: 'gpt-4o',
        input: 'capital of France?',
        stream: true,
      })) {
        if (e.type === 'response.output_text.delta') text += e.delta;
      }
      return text;
    });
    expect(await fired()).toEqual(expected('chat', 'stream_cut', 'stream'));
    expect(result.length).toBeLessThan(ANSWER.length);
  });
});
