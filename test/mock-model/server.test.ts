import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockModel, type MockModel } from '../../src/mock-model/server';
import { formatSections } from '../../src/mock-model/protocol';

let model: MockModel;
let client: OpenAI;

beforeAll(async () => {
  model = await startMockModel();
  client = new OpenAI({ baseURL: model.baseURL, apiKey: 'test-key', maxRetries: 0 });
});
afterAll(() => model.close());

const planner = { role: 'system' as const, content: 'You are the Planner agent. Reply with a JSON plan.' };
const task = (text: string) => ({ role: 'user' as const, content: formatSections({ Task: text }) });

describe('embedded mock model (real openai SDK)', () => {
  it('answers JSON chat completions with realistic shape, reading the task from the conversation', async () => {
    const res = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [planner, task('Add exactly 7 units of "Desk Lamp" to the cart and place the order.')],
    });
    expect(res.object).toBe('chat.completion');
    expect(res.id).toMatch(/^chatcmpl-/);
    expect(res.model).toBe('gpt-test');
    expect(res.choices[0].finish_reason).toBe('stop');
    expect(res.usage?.total_tokens).toBe((res.usage?.prompt_tokens ?? 0) + (res.usage?.completion_tokens ?? 0));
    const plan = JSON.parse(res.choices[0].message.content ?? '');
    // The quantity and product come from the task text, not from a fixture.
    expect(plan).toMatchObject({ family: 'shopping', product: 'Desk Lamp', quantity: 7 });
  });

  it('is deterministic for the same request', async () => {
    const req = { model: 'm', messages: [planner, task('Implement the JavaScript function sumEven(numbers) ...')] };
    const a = await client.chat.completions.create(req);
    const b = await client.chat.completions.create(req);
    expect(a.id).toBe(b.id);
    expect(a.choices[0].message.content).toBe(b.choices[0].message.content);
    expect(JSON.parse(a.choices[0].message.content ?? '')).toMatchObject({
      family: 'coding',
      function: 'sumEven',
      file: 'sumEven.js',
    });
  });

  it('streams SSE with tool-call deltas and a usage chunk that the SDK reassembles', async () => {
    const worker = { role: 'system' as const, content: 'You are the Worker agent. Use the tools.' };
    const plan = {
      role: 'user' as const,
      content: formatSections({ Plan: JSON.stringify({ family: 'shopping', product: 'Desk Lamp', quantity: 2 }) }),
    };
    const tools = ['search_product', 'add_to_cart', 'view_cart'].map((name) => ({
      type: 'function' as const,
      function: { name, parameters: { type: 'object', properties: {} } },
    }));
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [worker, plan],
      tools,
      stream: true,
      stream_options: { include_usage: true },
    });
    let name = '';
    let args = '';
    let finish: string | null = null;
    let chunks = 0;
    let usage: unknown;
    for await (const chunk of stream) {
      chunks++;
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (!choice) continue;
      for (const tc of choice.delta.tool_calls ?? []) {
        name += tc.function?.name ?? '';
        args += tc.function?.arguments ?? '';
      }
      finish = choice.finish_reason ?? finish;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(finish).toBe('tool_calls');
    expect(name).toBe('search_product');
    expect(JSON.parse(args)).toEqual({ query: 'Desk Lamp' });
    expect(usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
  });

  it('streams text content in several chunks that concatenate to the JSON answer', async () => {
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [planner, task('Add exactly 2 units of "Wireless Mouse" to the cart and place the order.')],
      stream: true,
    });
    let text = '';
    let n = 0;
    for await (const c of stream) {
      n++;
      text += c.choices[0]?.delta.content ?? '';
    }
    expect(n).toBeGreaterThan(3);
    expect(JSON.parse(text)).toMatchObject({ product: 'Wireless Mouse', quantity: 2 });
  });

  it('returns OpenAI error bodies the SDK raises as typed errors', async () => {
    const err = await client.chat.completions.create({ model: 'm', messages: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/messages/);
  });
});
