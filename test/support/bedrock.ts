/**
 * Amazon Bedrock runtime answers for the loopback server, in the wire format of AWS's API reference (Converse,
 * ConverseStream, the error shapes: `x-amzn-errortype` and a `{"message"}` body), written by the project; no Bedrock
 * traffic is recorded in the shared corpus. The event-stream frames are encoded with the AWS SDK's own codec
 * (@smithy/core's EventStreamCodec), not faultline's, so a test reads faultline's parser against AWS's encoder.
 * Bedrock pads each stream event with a `p` field of random length (hiding the token lengths): so do these.
 */
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { createServer as createH2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Reply } from './llm-server';

/** Static fake credentials: the SDK signs with them, a test checks none of them reaches a span. */
export const FAKE_CREDENTIALS = {
  accessKeyId: 'AKIAFAULTLINETEST000',
  secretAccessKey: 'fake/secret/key/for/the/loopback/test0000',
  sessionToken: 'FwoFAKEsessionTOKENforTHEloopbackTEST',
};

export function bedrockClient(url: string, handler: NodeHttpHandler = new NodeHttpHandler()): BedrockRuntimeClient {
  return new BedrockRuntimeClient({
    region: 'us-east-1',
    endpoint: url,
    credentials: FAKE_CREDENTIALS,
    requestHandler: handler,
    maxAttempts: 1,
  });
}

export const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';

/** A Converse answer with text (the shape of the API reference's example). */
export const CONVERSE_TEXT = {
  output: { message: { role: 'assistant', content: [{ text: 'The capital of France is Paris.' }] } },
  stopReason: 'end_turn',
  usage: { inputTokens: 21, outputTokens: 9, totalTokens: 30 },
  metrics: { latencyMs: 412 },
};

/** A Converse answer that calls a tool, prompt cache read on. */
export const CONVERSE_TOOL = {
  output: {
    message: {
      role: 'assistant',
      content: [
        { text: "I'll look up the weather." },
        { toolUse: { toolUseId: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', name: 'get_weather', input: { city: 'Paris' } } },
      ],
    },
  },
  stopReason: 'tool_use',
  usage: {
    inputTokens: 120,
    outputTokens: 54,
    totalTokens: 1374,
    cacheReadInputTokens: 1200,
    cacheWriteInputTokens: 0,
  },
  metrics: { latencyMs: 903 },
};

export function jsonReply(body: unknown, status = 200): Reply {
  return {
    status,
    headers: { 'content-type': 'application/json', 'x-amzn-requestid': '7c3b1a52-6f0e-4a7e-9a3e-0d2f5b1e9c11' },
    body: JSON.stringify(body),
  };
}

/** An error answer as Bedrock sends it: the type in `x-amzn-errortype`, `{"message"}` as the body. */
export function errorReply(status: number, type: string, message: string): Reply {
  return {
    status,
    headers: {
      'content-type': 'application/json',
      'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
      'x-amzn-requestid': '0b7e4f0e-2d6c-4b43-8c1e-6f1d8e2a7b55',
    },
    body: JSON.stringify({ message }),
  };
}

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (s) => new Uint8Array(Buffer.from(s, 'utf8')),
);

let pad = 0;
/** Bedrock's `p` padding: letters of a varying length. */
function padding(): string {
  pad = (pad + 7) % 23;
  return 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'.slice(0, 3 + pad);
}

/** One ConverseStream event as an event-stream frame. */
export function eventFrame(type: string, payload: Record<string, unknown>): Buffer {
  return Buffer.from(
    codec.encode({
      headers: {
        ':event-type': { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
        ':message-type': { type: 'string', value: 'event' },
      },
      body: new Uint8Array(Buffer.from(JSON.stringify({ ...payload, p: padding() }))),
    }),
  );
}

/** An exception inside a stream (`:message-type exception`), as Bedrock sends modelStreamErrorException. */
export function exceptionFrame(type: string, message: string): Buffer {
  return Buffer.from(
    codec.encode({
      headers: {
        ':exception-type': { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
        ':message-type': { type: 'string', value: 'exception' },
      },
      body: new Uint8Array(Buffer.from(JSON.stringify({ message }))),
    }),
  );
}

/** A text answer streamed: messageStart, text deltas, contentBlockStop, messageStop, metadata. */
export function textStream(deltas: string[], stopReason = 'end_turn'): Buffer[] {
  return [
    eventFrame('messageStart', { role: 'assistant' }),
    ...deltas.map((text) => eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text } })),
    eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
    eventFrame('messageStop', { stopReason }),
    eventFrame('metadata', {
      usage: { inputTokens: 17, outputTokens: deltas.length * 2, totalTokens: 17 + deltas.length * 2 },
      metrics: { latencyMs: 388 },
    }),
  ];
}

/** A streamed answer with text, then a tool call whose input arrives in fragments. */
export function toolStream(): Buffer[] {
  return [
    eventFrame('messageStart', { role: 'assistant' }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Checking the weather.' } }),
    eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
    eventFrame('contentBlockStart', {
      contentBlockIndex: 1,
      start: { toolUse: { toolUseId: 'tooluse_3fQqvH0aRkq1', name: 'get_weather' } },
    }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":' } } }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '"Paris"}' } } }),
    eventFrame('contentBlockStop', { contentBlockIndex: 1 }),
    eventFrame('messageStop', { stopReason: 'tool_use' }),
    eventFrame('metadata', {
      usage: { inputTokens: 88, outputTokens: 40, totalTokens: 128 },
      metrics: { latencyMs: 610 },
    }),
  ];
}

export function streamReply(frames: Buffer[]): Reply {
  return {
    status: 200,
    headers: {
      'content-type': 'application/vnd.amazon.eventstream',
      'x-amzn-requestid': '3d0c6a9e-5b1f-4f7a-8e2d-9c4b7a1e6f20',
    },
    chunks: frames,
  };
}

/** A loopback HTTP/2 (h2c) server answering each request with `reply(path)`, chunk by chunk, once its body has arrived. */
export interface BedrockH2Server {
  url: string;
  /** Request bodies that arrived whole (a request cancelled before its body was sent is not one). */
  bodies: Buffer[];
  respond(fn: (path: string) => Reply): void;
  close(): Promise<void>;
}

export async function startBedrockH2Server(reply: (path: string) => Reply): Promise<BedrockH2Server> {
  let current = reply;
  const bodies: Buffer[] = [];
  const server = createH2Server((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      const r = current(req.url);
      void (async () => {
        res.writeHead(r.status ?? 200, r.headers ?? {});
        for (const c of r.chunks ?? [r.body ?? '']) {
          if (res.destroyed) return;
          res.write(c);
          await new Promise((done) => setImmediate(done));
        }
        res.end();
      })();
    });
    req.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    respond: (fn) => (current = fn),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// ------------------------------------------------------------------------------------------------ InvokeModel families

/**
 * InvokeModel request and answer bodies of each model family, in the shapes of the Bedrock user guide's model
 * parameter pages (Meta Llama, Mistral AI text completion, Amazon Titan Text, Amazon Nova, Cohere Command R), with
 * each family's stream events for InvokeModelWithResponseStream (the last one carrying
 * `amazon-bedrock-invocationMetrics`). Written by the project: no Bedrock traffic is recorded in the shared corpus.
 */
export interface InvokeFixture {
  family: string;
  model: string;
  request: Record<string, unknown>;
  answer: Record<string, unknown>;
  /** The events of the same answer streamed. */
  events: Array<Record<string, unknown>>;
  text: string;
  finish: string;
  usage: { input: number; output: number };
  operation: 'chat' | 'text_completion';
}

const metrics = (input: number, output: number) => ({
  'amazon-bedrock-invocationMetrics': {
    inputTokenCount: input,
    outputTokenCount: output,
    invocationLatency: 412,
    firstByteLatency: 130,
  },
});

export const INVOKE_FIXTURES: InvokeFixture[] = [
  {
    family: 'Meta Llama',
    model: 'meta.llama3-1-70b-instruct-v1:0',
    request: {
      prompt:
        '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\nName the capital of France.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n',
      max_gen_len: 128,
      temperature: 0.5,
      top_p: 0.9,
    },
    answer: {
      generation: 'The capital of France is Paris.',
      prompt_token_count: 24,
      generation_token_count: 8,
      stop_reason: 'stop',
    },
    events: [
      { generation: 'The capital', prompt_token_count: 24, generation_token_count: 2, stop_reason: null },
      { generation: ' of France is', prompt_token_count: null, generation_token_count: 5, stop_reason: null },
      {
        generation: ' Paris.',
        prompt_token_count: null,
        generation_token_count: 8,
        stop_reason: 'stop',
        ...metrics(24, 8),
      },
    ],
    text: 'The capital of France is Paris.',
    finish: 'stop',
    usage: { input: 24, output: 8 },
    operation: 'text_completion',
  },
  {
    family: 'Mistral',
    model: 'mistral.mistral-7b-instruct-v0:2',
    request: {
      prompt: '<s>[INST] Name the capital of France. [/INST]',
      max_tokens: 200,
      temperature: 0.5,
      top_p: 0.9,
      top_k: 50,
    },
    answer: { outputs: [{ text: ' The capital of France is Paris.', stop_reason: 'stop' }] },
    events: [
      { outputs: [{ text: ' The capital', stop_reason: null }] },
      { outputs: [{ text: ' of France is Paris.', stop_reason: 'stop' }], ...metrics(19, 9) },
    ],
    text: ' The capital of France is Paris.',
    finish: 'stop',
    usage: { input: 19, output: 9 },
    operation: 'text_completion',
  },
  {
    family: 'Amazon Titan Text',
    model: 'amazon.titan-text-express-v1',
    request: {
      inputText: 'Name the capital of France.',
      textGenerationConfig: { maxTokenCount: 512, temperature: 0, topP: 0.9, stopSequences: [] },
    },
    answer: {
      inputTextTokenCount: 7,
      results: [{ tokenCount: 8, outputText: '\nThe capital of France is Paris.', completionReason: 'FINISH' }],
    },
    events: [
      {
        outputText: '\nThe capital of France',
        index: 0,
        totalOutputTextTokenCount: 5,
        completionReason: null,
        inputTextTokenCount: 7,
      },
      {
        outputText: ' is Paris.',
        index: 0,
        totalOutputTextTokenCount: 8,
        completionReason: 'FINISH',
        inputTextTokenCount: null,
        ...metrics(7, 8),
      },
    ],
    text: '\nThe capital of France is Paris.',
    finish: 'stop',
    usage: { input: 7, output: 8 },
    operation: 'text_completion',
  },
  {
    family: 'Amazon Nova',
    model: 'us.amazon.nova-lite-v1:0',
    request: {
      schemaVersion: 'messages-v1',
      system: [{ text: 'Answer briefly.' }],
      messages: [{ role: 'user', content: [{ text: 'Name the capital of France.' }] }],
      inferenceConfig: { maxTokens: 300, temperature: 0.3, topP: 0.9 },
    },
    answer: {
      output: { message: { role: 'assistant', content: [{ text: 'The capital of France is Paris.' }] } },
      stopReason: 'end_turn',
      usage: { inputTokens: 12, outputTokens: 8, totalTokens: 20 },
    },
    events: [
      { messageStart: { role: 'assistant' } },
      { contentBlockDelta: { delta: { text: 'The capital of France' }, contentBlockIndex: 0 } },
      { contentBlockDelta: { delta: { text: ' is Paris.' }, contentBlockIndex: 0 } },
      { contentBlockStop: { contentBlockIndex: 0 } },
      { messageStop: { stopReason: 'end_turn' } },
      { metadata: { usage: { inputTokens: 12, outputTokens: 8 }, metrics: {}, trace: {} }, ...metrics(12, 8) },
    ],
    text: 'The capital of France is Paris.',
    finish: 'stop',
    usage: { input: 12, output: 8 },
    operation: 'chat',
  },
  {
    family: 'Cohere Command R',
    model: 'cohere.command-r-plus-v1:0',
    request: {
      message: 'Name the capital of France.',
      chat_history: [
        { role: 'USER', message: 'Hello' },
        { role: 'CHATBOT', message: 'Hi! How can I help?' },
      ],
      max_tokens: 200,
      temperature: 0.3,
      p: 0.75,
    },
    answer: {
      response_id: '5f3b1c0e-9c43-4a8e-8d1e-2b9f0c6a7d21',
      text: 'The capital of France is Paris.',
      generation_id: 'c2a6e5f0-1b7d-4f4e-9a3c-7e8d9f0a1b2c',
      chat_history: [],
      finish_reason: 'COMPLETE',
      meta: { billed_units: { input_tokens: 14, output_tokens: 8 } },
    },
    events: [
      { is_finished: false, event_type: 'stream-start', generation_id: 'c2a6e5f0-1b7d-4f4e-9a3c-7e8d9f0a1b2c' },
      { is_finished: false, event_type: 'text-generation', text: 'The capital of France' },
      { is_finished: false, event_type: 'text-generation', text: ' is Paris.' },
      {
        is_finished: true,
        event_type: 'stream-end',
        response: { text: 'The capital of France is Paris.', finish_reason: 'COMPLETE' },
        finish_reason: 'COMPLETE',
        ...metrics(14, 8),
      },
    ],
    text: 'The capital of France is Paris.',
    finish: 'stop',
    usage: { input: 14, output: 8 },
    operation: 'chat',
  },
];

/** One InvokeModelWithResponseStream event: a `chunk` frame whose `bytes` are the family event's JSON, base64. */
export function chunkFrame(event: Record<string, unknown>): Buffer {
  return eventFrame('chunk', { bytes: Buffer.from(JSON.stringify(event)).toString('base64') });
}
