/**
 * Amazon Bedrock Converse, ConverseStream and InvokeModel (an Anthropic messages body; the other families:
 * bedrock-invoke.test.ts) through the real AWS SDK (@aws-sdk/client-bedrock-runtime, NodeHttpHandler: node:http),
 * against a loopback server answering in Bedrock's wire format (test/support/bedrock.ts): one chat span per call with
 * the GenAI attributes, no credential or signature on it, and what the application gets the same as without faultline.
 */
import {
  ConverseCommand,
  ConverseStreamCommand,
  InvokeModelCommand,
  type ConverseCommandInput,
  type ConverseCommandOutput,
  type ConverseStreamCommandInput,
} from '@aws-sdk/client-bedrock-runtime';
import { SpanStatusCode } from '@opentelemetry/api';
import { NodeHttp2Handler } from '@smithy/node-http-handler';
import { createServer, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bedrockClient,
  CONVERSE_TEXT,
  CONVERSE_TOOL,
  errorReply,
  exceptionFrame,
  FAKE_CREDENTIALS,
  jsonReply,
  MODEL,
  streamReply,
  textStream,
  toolStream,
} from '../support/bedrock';
import { loadCorpus } from '../support/corpus';
import { useLayer } from '../support/layer';
import { ours } from '../support/otel';

const layer = useLayer();

const INPUT: ConverseCommandInput = {
  modelId: MODEL,
  system: [{ text: 'You are a geography tutor.' }],
  messages: [{ role: 'user', content: [{ text: 'What is the capital of France?' }] }],
  inferenceConfig: { maxTokens: 256, temperature: 0.2, topP: 0.9, stopSequences: ['\n\nHuman:'] },
};

const TOOL_INPUT: ConverseCommandInput = {
  modelId: MODEL,
  messages: [
    { role: 'user', content: [{ text: 'Weather in Paris?' }] },
    {
      role: 'assistant',
      content: [{ toolUse: { toolUseId: 'tooluse_prev', name: 'get_weather', input: { city: 'Lyon' } } }],
    },
    {
      role: 'user',
      content: [{ toolResult: { toolUseId: 'tooluse_prev', content: [{ json: { tempC: 18 } }], status: 'success' } }],
    },
  ],
  toolConfig: {
    tools: [
      {
        toolSpec: {
          name: 'get_weather',
          description: 'Current weather for a city',
          inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
        },
      },
    ],
  },
};

/** The SDK's answer without what differs between any two calls (its timing and attempt bookkeeping). */
function answer(out: ConverseCommandOutput): unknown {
  const { $metadata, ...rest } = out;
  return { ...rest, requestId: $metadata.requestId, httpStatusCode: $metadata.httpStatusCode };
}

async function both<T>(fn: () => Promise<T>): Promise<[T, T]> {
  const instrumented = await fn();
  layer.inst.disable();
  try {
    return [instrumented, await fn()];
  } finally {
    layer.inst.enable();
  }
}

function noCredentials(attributes: object): void {
  const text = JSON.stringify(attributes);
  for (const secret of Object.values(FAKE_CREDENTIALS)) expect(text).not.toContain(secret);
  expect(text).not.toMatch(/Signature=|AWS4-HMAC-SHA256/);
}

describe('Bedrock Converse (AWS SDK, NodeHttpHandler)', () => {
  it('a text answer: one chat span with the model, parameters, finish reason and usage; the answer as without faultline', async () => {
    layer.server.respond(() => jsonReply(CONVERSE_TEXT));
    const client = bedrockClient(layer.server.url);
    const [a, b] = await both(() => client.send(new ConverseCommand(INPUT)));
    expect(answer(a)).toEqual(answer(b));
    expect(a.output?.message?.content?.[0]?.text).toBe('The capital of France is Paris.');
    // The request left as the SDK signed it: same bytes with and without faultline.
    const [sent, plain] = layer.server.requests.slice(-2);
    expect(sent!.body.equals(plain!.body)).toBe(true);

    const spans = ours(layer.otel.spans());
    expect(spans).toHaveLength(1);
    const span = spans[0]!;
    expect(span.name).toBe(`chat ${MODEL}`);
    expect(span.attributes).toMatchObject({
      'gen_ai.provider.name': 'aws.bedrock',
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': MODEL,
      'gen_ai.request.max_tokens': 256,
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.top_p': 0.9,
      'gen_ai.request.stop_sequences': ['\n\nHuman:'],
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 21,
      'gen_ai.usage.output_tokens': 9,
      'faultline.request.retry_count': 0,
      'faultline.response.output_chars': 'The capital of France is Paris.'.length,
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
    });
    expect(JSON.parse(span.attributes['gen_ai.input.messages'] as string)).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'What is the capital of France?' }] },
    ]);
    expect(JSON.parse(span.attributes['gen_ai.system_instructions'] as string)).toEqual([
      { type: 'text', content: 'You are a geography tutor.' },
    ]);
    expect(JSON.parse(span.attributes['gen_ai.output.messages'] as string)).toEqual([
      {
        role: 'assistant',
        parts: [{ type: 'text', content: 'The capital of France is Paris.' }],
        finish_reason: 'stop',
      },
    ]);
    noCredentials(span.attributes);
  });

  it('tool use: the definitions, the tool call, the tool result sent back, cache reads counted in the input tokens', async () => {
    layer.server.respond(() => jsonReply(CONVERSE_TOOL));
    const out = await bedrockClient(layer.server.url).send(new ConverseCommand(TOOL_INPUT));
    expect(out.stopReason).toBe('tool_use');
    const span = await layer.one();
    expect(span.attributes).toMatchObject({
      'gen_ai.response.finish_reasons': ['tool_call'],
      'gen_ai.usage.input_tokens': 1320,
      'gen_ai.usage.cache_read.input_tokens': 1200,
      'gen_ai.usage.output_tokens': 54,
      'faultline.request.tool_names': ['get_weather'],
      'faultline.response.tool_call_count': 1,
    });
    expect(JSON.parse(span.attributes['gen_ai.tool.definitions'] as string)).toEqual([
      {
        name: 'get_weather',
        type: 'function',
        description: 'Current weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ]);
    const input = JSON.parse(span.attributes['gen_ai.input.messages'] as string) as unknown[];
    expect(input[1]).toEqual({
      role: 'assistant',
      parts: [{ type: 'tool_call', id: 'tooluse_prev', name: 'get_weather', arguments: { city: 'Lyon' } }],
    });
    expect(input[2]).toEqual({
      role: 'user',
      parts: [{ type: 'tool_call_response', id: 'tooluse_prev', response: { tempC: 18 } }],
    });
    const output = JSON.parse(span.attributes['gen_ai.output.messages'] as string) as Array<{ parts: unknown[] }>;
    expect(output[0]!.parts[1]).toEqual({
      type: 'tool_call',
      id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q',
      name: 'get_weather',
      arguments: { city: 'Paris' },
    });
  });

  it('a model ARN (URL-encoded in the path by the SDK) is recorded decoded', async () => {
    const arn = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0';
    layer.server.respond(() => jsonReply(CONVERSE_TEXT));
    await bedrockClient(layer.server.url).send(new ConverseCommand({ ...INPUT, modelId: arn }));
    expect(layer.server.requests.at(-1)!.url).toContain('arn%3Aaws%3Abedrock');
    const span = await layer.one();
    expect(span.name).toBe(`chat ${arn}`);
    expect(span.attributes['gen_ai.request.model']).toBe(arn);
  });

  it('an error answer: the SDK throws the same exception, the span records the status and the Bedrock error type', async () => {
    layer.server.respond(() => errorReply(400, 'ValidationException', 'The provided model identifier is invalid.'));
    const client = bedrockClient(layer.server.url);
    const [a, b] = await both(() =>
      client.send(new ConverseCommand(INPUT)).then(
        () => undefined,
        (e: Error) => e,
      ),
    );
    expect(a?.name).toBe('ValidationException');
    expect(a?.message).toBe(b?.message);
    const spans = ours(layer.otel.spans());
    expect(spans).toHaveLength(1);
    expect(spans[0]!.attributes['error.type']).toBe('400');
    expect(spans[0]!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'HTTP 400 ValidationException' });
  });
});

/** `frames` joined and cut into pieces of `size` bytes: frames split across chunks anywhere. */
function cut(frames: Buffer[], size: number): Buffer[] {
  const all = Buffer.concat(frames);
  const out: Buffer[] = [];
  for (let i = 0; i < all.length; i += size) out.push(all.subarray(i, i + size));
  return out;
}

async function streamed(
  client: ReturnType<typeof bedrockClient>,
  input: ConverseStreamCommandInput,
): Promise<{ text: string; events: string[] }> {
  const out = await client.send(new ConverseStreamCommand(input));
  let text = '';
  const events: string[] = [];
  for await (const e of out.stream ?? []) {
    events.push(JSON.stringify(e));
    if (e.contentBlockDelta?.delta?.text !== undefined) text += e.contentBlockDelta.delta.text;
  }
  return { text, events };
}

describe('Bedrock ConverseStream (AWS SDK, NodeHttpHandler)', () => {
  const DELTAS = ['The capital', ' of France', ' is Paris.'];

  it('a text stream cut into 7-byte chunks: the SDK reads every event as without faultline; one span with the stream facts', async () => {
    const frames = textStream(DELTAS);
    layer.server.respond(() => streamReply(cut(frames, 7)));
    const client = bedrockClient(layer.server.url);
    const [a, b] = await both(() => streamed(client, INPUT));
    expect(a).toEqual(b);
    expect(a.text).toBe(DELTAS.join(''));
    const spans = ours(layer.otel.spans());
    expect(spans).toHaveLength(1);
    const span = spans[0]!;
    expect(span.name).toBe(`chat ${MODEL}`);
    expect(span.attributes).toMatchObject({
      'gen_ai.provider.name': 'aws.bedrock',
      'gen_ai.request.stream': true,
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 17,
      'gen_ai.usage.output_tokens': 6,
      'faultline.response.done': true,
      'faultline.response.output_chars': DELTAS.join('').length,
      'faultline.response.body_bytes': Buffer.concat(frames).length,
      'faultline.response.content_type': 'application/vnd.amazon.eventstream',
    });
    expect(span.attributes['faultline.response.malformed_events']).toBeUndefined();
    expect(JSON.parse(span.attributes['gen_ai.output.messages'] as string)).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: DELTAS.join('') }], finish_reason: 'stop' },
    ]);
    noCredentials(span.attributes);
  });

  it('a tool call streamed in fragments: the call and its arguments, finish tool_call', async () => {
    layer.server.respond(() => streamReply(cut(toolStream(), 5)));
    const { events } = await streamed(bedrockClient(layer.server.url), TOOL_INPUT);
    expect(events.length).toBe(toolStream().length);
    const span = await layer.one();
    expect(span.attributes).toMatchObject({
      'gen_ai.response.finish_reasons': ['tool_call'],
      'faultline.response.tool_call_count': 1,
      'faultline.response.done': true,
    });
    const output = JSON.parse(span.attributes['gen_ai.output.messages'] as string) as Array<{ parts: unknown[] }>;
    expect(output[0]!.parts).toEqual([
      { type: 'text', content: 'Checking the weather.' },
      { type: 'tool_call', id: 'tooluse_3fQqvH0aRkq1', name: 'get_weather', arguments: { city: 'Paris' } },
    ]);
  });

  it('an exception frame inside the 200 stream: the SDK throws it, the span records an in-band failure and no done', async () => {
    const frames = [
      ...textStream(DELTAS).slice(0, 2),
      exceptionFrame('modelStreamErrorException', 'The model stream failed.'),
    ];
    layer.server.respond(() => streamReply(frames));
    const err = await streamed(bedrockClient(layer.server.url), INPUT).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.name).toBe('ModelStreamErrorException');
    const span = await layer.one();
    expect(span.attributes).toMatchObject({
      'error.type': 'modelStreamErrorException',
      'faultline.response.done': false,
    });
  });

  it('a stream that ends mid-frame: what came before is read, the answer is not done', async () => {
    const all = Buffer.concat(textStream(DELTAS));
    layer.server.respond(() => ({ ...streamReply([all.subarray(0, all.length - 30)]), destroyAfter: true }));
    await streamed(bedrockClient(layer.server.url), INPUT).catch(() => undefined);
    const span = await layer.one();
    expect(span.attributes['faultline.response.done']).toBe(false);
    expect(span.attributes['faultline.response.output_chars']).toBe(DELTAS.join('').length);
  });
});

describe('Bedrock InvokeModel (AWS SDK, NodeHttpHandler)', () => {
  const anthropic = loadCorpus('anthropic-messages.jsonl').find(
    (r) => r.status === 200 && r.response !== undefined && r.tags.includes('text') && !r.tags.includes('tool_use'),
  )!;
  const MESSAGES = {
    anthropic_version: 'bedrock-2023-05-31',
    max_tokens: 300,
    messages: [{ role: 'user', content: 'Name the capital of France.' }],
  };
  const invoke = (body: unknown) =>
    bedrockClient(layer.server.url).send(
      new InvokeModelCommand({
        modelId: 'anthropic.claude-3-5-haiku-20241022-v1:0',
        contentType: 'application/json',
        body: JSON.stringify(body),
      }),
    );

  it('an Anthropic messages body: a chat span with the path’s model and aws.bedrock; the body the SDK returns is the server’s, byte for byte', async () => {
    const served = JSON.stringify(anthropic.response);
    layer.server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: served }));
    const [a, b] = await both(() => invoke(MESSAGES));
    expect(Buffer.from(a.body).toString()).toBe(served);
    expect(Buffer.from(b.body).toString()).toBe(served);
    const spans = ours(layer.otel.spans());
    expect(spans).toHaveLength(1);
    const r = anthropic.response as { stop_reason: string; usage: { output_tokens: number } };
    expect(spans[0]!.name).toBe('chat anthropic.claude-3-5-haiku-20241022-v1:0');
    expect(spans[0]!.attributes).toMatchObject({
      'gen_ai.provider.name': 'aws.bedrock',
      'gen_ai.request.model': 'anthropic.claude-3-5-haiku-20241022-v1:0',
      'gen_ai.request.max_tokens': 300,
      'gen_ai.response.finish_reasons': [r.stop_reason],
      'gen_ai.usage.output_tokens': r.usage.output_tokens,
    });
    noCredentials(spans[0]!.attributes);
  });

  it('a body of no family read (a Stability image request) is not ours: no span, the answer untouched', async () => {
    const served = JSON.stringify({
      result: 'success',
      artifacts: [{ seed: 1, base64: 'iVBORw0KGgo=', finishReason: 'SUCCESS' }],
    });
    layer.server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: served }));
    const out = await bedrockClient(layer.server.url).send(
      new InvokeModelCommand({
        modelId: 'stability.stable-diffusion-xl-v1',
        contentType: 'application/json',
        body: JSON.stringify({ text_prompts: [{ text: 'a lighthouse' }], cfg_scale: 10 }),
      }),
    );
    expect(Buffer.from(out.body).toString()).toBe(served);
    await new Promise((r) => setTimeout(r, 50));
    expect(ours(layer.otel.spans())).toHaveLength(0);
  });
});

describe('Bedrock over HTTP/2 (AWS SDK, NodeHttp2Handler: node:http2 client sessions)', () => {
  let h2: Http2Server;
  let url = '';
  let reply: { type: string; chunks: Buffer[] } = {
    type: 'application/json',
    chunks: [Buffer.from(JSON.stringify(CONVERSE_TEXT))],
  };
  beforeAll(async () => {
    h2 = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        void (async () => {
          res.writeHead(200, {
            'content-type': reply.type,
            'x-amzn-requestid': 'a1b2c3d4-0000-4000-8000-000000000000',
          });
          for (const c of reply.chunks) {
            res.write(c);
            await new Promise((r) => setImmediate(r));
          }
          res.end();
        })();
      });
    });
    await new Promise<void>((resolve) => h2.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(h2.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => h2.close(() => resolve())));

  it('Converse: one chat span, the answer as without faultline', async () => {
    reply = { type: 'application/json', chunks: [Buffer.from(JSON.stringify(CONVERSE_TEXT))] };
    const handler = new NodeHttp2Handler({ disableConcurrentStreams: true });
    try {
      const client = bedrockClient(url, handler as never);
      const [a, b] = await both(() => client.send(new ConverseCommand(INPUT)));
      expect(answer(a)).toEqual(answer(b));
      const spans = ours(layer.otel.spans());
      expect(spans).toHaveLength(1);
      expect(spans[0]!.attributes).toMatchObject({
        'gen_ai.provider.name': 'aws.bedrock',
        'gen_ai.request.model': MODEL,
        'gen_ai.response.finish_reasons': ['stop'],
        'gen_ai.usage.output_tokens': 9,
      });
      noCredentials(spans[0]!.attributes);
    } finally {
      handler.destroy();
    }
  });

  it('ConverseStream cut into 9-byte chunks: every event reaches the SDK, the span reads the frames', async () => {
    const DELTAS = ['Paris', ' is the', ' capital.'];
    reply = { type: 'application/vnd.amazon.eventstream', chunks: cut(textStream(DELTAS), 9) };
    const handler = new NodeHttp2Handler({ disableConcurrentStreams: true });
    try {
      const { text } = await streamed(bedrockClient(url, handler as never), INPUT);
      expect(text).toBe(DELTAS.join(''));
      const span = await layer.one();
      expect(span.attributes).toMatchObject({
        'faultline.response.done': true,
        'gen_ai.response.finish_reasons': ['stop'],
        'faultline.response.output_chars': DELTAS.join('').length,
      });
    } finally {
      handler.destroy();
    }
  });
});
