/**
 * The app's own tracer provider is complete at its flush (issue 26): with a NodeTracerProvider the app set up and
 * FaultlineInstrumentation registered on it, `forceFlush()` right after a call returns has the chat span, though
 * faultline ends it after the app had its answer (its reading is off the critical path). JSON and streamed, through
 * the real openai client against a loopback server; the fixtures are written here in OpenAI's wire format.
 */
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { startLlmServer, type LlmServer } from '../support/llm-server';

const MODEL = 'gpt-4o-mini';
const completion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: MODEL,
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
};
const chunk = (delta: object, finish: string | null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-2', object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** Keeps what it was given past its shutdown (the in-memory exporter forgets it there). */
class KeepingExporter extends InMemorySpanExporter {
  readonly kept: ReadableSpan[] = [];
  override export(spans: ReadableSpan[], done: Parameters<InMemorySpanExporter['export']>[1]): void {
    this.kept.push(...spans);
    super.export(spans, done);
  }
}

let server: LlmServer;
beforeAll(async () => {
  server = await startLlmServer((req) => {
    const body = JSON.parse(req.body.toString()) as { stream?: boolean };
    if (!body.stream) return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion) };
    return {
      headers: { 'content-type': 'text/event-stream' },
      chunks: [
        chunk({ role: 'assistant', content: 'Hel' }, null),
        chunk({ content: 'lo.' }, null),
        chunk({}, 'stop'),
        'data: [DONE]\n\n',
      ],
    };
  });
});
afterAll(async () => {
  await server.close();
});

async function withOwnProvider(
  run: (client: OpenAI) => Promise<void>,
  flush: (p: NodeTracerProvider) => Promise<void>,
): Promise<string[]> {
  const exporter = new KeepingExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const unregister = registerInstrumentations({
    instrumentations: [new FaultlineInstrumentation()],
    tracerProvider: provider,
  });
  try {
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
    await run(client);
    await flush(provider); // at once: no timer, no setImmediate in between
    return exporter.kept.filter((s) => s.instrumentationScope.name === 'faultline').map((s) => s.name);
  } finally {
    unregister();
    await provider.shutdown();
  }
}

describe("the app's own provider, flushed right after a call", () => {
  it('JSON: forceFlush has the chat span', async () => {
    const names = await withOwnProvider(
      async (client) => {
        const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
        expect(r.choices[0]?.message.content).toBe('Hello.');
      },
      (p) => p.forceFlush(),
    );
    expect(names).toEqual([`chat ${MODEL}`]);
  });

  it('streamed: forceFlush has the chat span', async () => {
    const names = await withOwnProvider(
      async (client) => {
        let text = '';
        for await (const c of await client.chat.completions.create({
          model: MODEL,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }))
          text += c.choices[0]?.delta.content ?? '';
        expect(text).toBe('Hello.');
      },
      (p) => p.forceFlush(),
    );
    expect(names).toEqual([`chat ${MODEL}`]);
  });

  it('shutdown has the chat span too', async () => {
    const names = await withOwnProvider(
      async (client) => {
        await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
      },
      (p) => p.shutdown(),
    );
    expect(names).toEqual([`chat ${MODEL}`]);
  });
});
