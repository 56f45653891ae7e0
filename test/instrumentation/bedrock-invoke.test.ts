/**
 * Amazon Bedrock InvokeModel and InvokeModelWithResponseStream with each model family's own body (Meta Llama,
 * Mistral, Amazon Titan Text, Amazon Nova, Cohere Command R, Anthropic messages), through the real AWS SDK
 * (NodeHttpHandler: node:http) against a loopback server answering with the fixtures of test/support/bedrock.ts: one
 * span per call with the family's text, finish reason and usage, the stream's `chunk` frames read as the family's
 * events, and the bytes the SDK returns the server's.
 */
import { InvokeModelCommand, InvokeModelWithResponseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { describe, expect, it } from 'vitest';
import { bedrockClient, chunkFrame, FAKE_CREDENTIALS, INVOKE_FIXTURES, streamReply } from '../support/bedrock';
import { useLayer } from '../support/layer';

const layer = useLayer();

function noCredentials(attributes: object): void {
  const text = JSON.stringify(attributes);
  for (const secret of Object.values(FAKE_CREDENTIALS)) expect(text).not.toContain(secret);
  expect(text).not.toMatch(/Signature=|AWS4-HMAC-SHA256/);
}

const ANTHROPIC_EVENTS = [
  {
    type: 'message_start',
    message: {
      id: 'msg_bdrk_01',
      type: 'message',
      role: 'assistant',
      model: 'claude-3-5-haiku-20241022',
      content: [],
      stop_reason: null,
      usage: { input_tokens: 14, output_tokens: 1 },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'The capital of France' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ' is Paris.' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 8 } },
  {
    type: 'message_stop',
    'amazon-bedrock-invocationMetrics': {
      inputTokenCount: 14,
      outputTokenCount: 8,
      invocationLatency: 501,
      firstByteLatency: 212,
    },
  },
];

describe('InvokeModel: each family’s body', () => {
  for (const f of INVOKE_FIXTURES) {
    it(`${f.family}: one ${f.operation} span with its text, finish reason and usage; the SDK gets the server’s bytes`, async () => {
      const served = JSON.stringify(f.answer);
      // Bedrock counts the tokens in the answer's headers too.
      const counts = {
        'x-amzn-bedrock-input-token-count': String(f.usage.input),
        'x-amzn-bedrock-output-token-count': String(f.usage.output),
        'x-amzn-bedrock-invocation-latency': '412',
      };
      layer.server.respond(() => ({
        status: 200,
        headers: { 'content-type': 'application/json', ...counts },
        body: served,
      }));
      const out = await bedrockClient(layer.server.url).send(
        new InvokeModelCommand({ modelId: f.model, contentType: 'application/json', body: JSON.stringify(f.request) }),
      );
      expect(Buffer.from(out.body).toString()).toBe(served);
      const span = await layer.one();
      expect(span.name).toBe(`${f.operation} ${f.model}`);
      expect(span.attributes).toMatchObject({
        'gen_ai.provider.name': 'aws.bedrock',
        'gen_ai.operation.name': f.operation,
        'gen_ai.request.model': f.model,
        'gen_ai.response.finish_reasons': [f.finish],
        'gen_ai.usage.input_tokens': f.usage.input,
        'gen_ai.usage.output_tokens': f.usage.output,
        'faultline.response.output_chars': f.text.length,
      });
      expect(String(span.attributes['gen_ai.output.messages'])).toContain(JSON.stringify(f.text).slice(1, -1));
      noCredentials(span.attributes);
    });
  }
});

describe('InvokeModelWithResponseStream: chunk frames carrying the family’s events', () => {
  const cases = [
    ...INVOKE_FIXTURES.map((f) => ({ ...f, finish: f.finish })),
    {
      family: 'Anthropic messages',
      model: 'anthropic.claude-3-5-haiku-20241022-v1:0',
      request: {
        anthropic_version: 'bedrock-2023-05-31',
        max_tokens: 300,
        messages: [{ role: 'user', content: 'Name the capital of France.' }],
      },
      events: ANTHROPIC_EVENTS,
      text: 'The capital of France is Paris.',
      finish: 'end_turn',
      usage: { input: 14, output: 8 },
      operation: 'chat' as const,
    },
  ];
  for (const f of cases) {
    it(`${f.family}: every chunk reaches the SDK; the span reads the stream to its end`, async () => {
      const frames = f.events.map(chunkFrame);
      layer.server.respond(() => streamReply(frames));
      const out = await bedrockClient(layer.server.url).send(
        new InvokeModelWithResponseStreamCommand({
          modelId: f.model,
          contentType: 'application/json',
          body: JSON.stringify(f.request),
        }),
      );
      const got: unknown[] = [];
      for await (const e of out.body ?? [])
        if (e.chunk?.bytes) got.push(JSON.parse(Buffer.from(e.chunk.bytes).toString()));
      expect(got).toEqual(f.events);
      const span = await layer.one();
      expect(span.attributes).toMatchObject({
        'gen_ai.provider.name': 'aws.bedrock',
        'gen_ai.request.model': f.model,
        'gen_ai.request.stream': true,
        'gen_ai.response.finish_reasons': [f.finish],
        'gen_ai.usage.output_tokens': f.usage.output,
        'faultline.response.output_chars': f.text.length,
        'faultline.response.done': true,
        'faultline.response.body_bytes': Buffer.concat(frames).length,
      });
      noCredentials(span.attributes);
    });
  }

  it('a stream cut before its last chunk: the span says the answer did not end', async () => {
    const f = INVOKE_FIXTURES[0]!;
    layer.server.respond(() => streamReply(f.events.slice(0, 2).map(chunkFrame)));
    const out = await bedrockClient(layer.server.url).send(
      new InvokeModelWithResponseStreamCommand({
        modelId: f.model,
        contentType: 'application/json',
        body: JSON.stringify(f.request),
      }),
    );
    for await (const e of out.body ?? []) void e;
    const span = await layer.one();
    expect(span.attributes['faultline.response.done']).toBe(false);
    expect(span.attributes['gen_ai.response.finish_reasons']).toBeUndefined();
  });
});
