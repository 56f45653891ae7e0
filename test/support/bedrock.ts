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
  return new BedrockRuntimeClient({ region: 'us-east-1', endpoint: url, credentials: FAKE_CREDENTIALS, requestHandler: handler, maxAttempts: 1 });
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
      content: [{ text: "I'll look up the weather." }, { toolUse: { toolUseId: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', name: 'get_weather', input: { city: 'Paris' } } }],
    },
  },
  stopReason: 'tool_use',
  usage: { inputTokens: 120, outputTokens: 54, totalTokens: 1374, cacheReadInputTokens: 1200, cacheWriteInputTokens: 0 },
  metrics: { latencyMs: 903 },
};

export function jsonReply(body: unknown, status = 200): Reply {
  return { status, headers: { 'content-type': 'application/json', 'x-amzn-requestid': '7c3b1a52-6f0e-4a7e-9a3e-0d2f5b1e9c11' }, body: JSON.stringify(body) };
}

/** An error answer as Bedrock sends it: the type in `x-amzn-errortype`, `{"message"}` as the body. */
export function errorReply(status: number, type: string, message: string): Reply {
  return {
    status,
    headers: { 'content-type': 'application/json', 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': '0b7e4f0e-2d6c-4b43-8c1e-6f1d8e2a7b55' },
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
    eventFrame('metadata', { usage: { inputTokens: 17, outputTokens: deltas.length * 2, totalTokens: 17 + deltas.length * 2 }, metrics: { latencyMs: 388 } }),
  ];
}

/** A streamed answer with text, then a tool call whose input arrives in fragments. */
export function toolStream(): Buffer[] {
  return [
    eventFrame('messageStart', { role: 'assistant' }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Checking the weather.' } }),
    eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
    eventFrame('contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_3fQqvH0aRkq1', name: 'get_weather' } } }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":' } } }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '"Paris"}' } } }),
    eventFrame('contentBlockStop', { contentBlockIndex: 1 }),
    eventFrame('messageStop', { stopReason: 'tool_use' }),
    eventFrame('metadata', { usage: { inputTokens: 88, outputTokens: 40, totalTokens: 128 }, metrics: { latencyMs: 610 } }),
  ];
}

export function streamReply(frames: Buffer[]): Reply {
  return { status: 200, headers: { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': '3d0c6a9e-5b1f-4f7a-8e2d-9c4b7a1e6f20' }, chunks: frames };
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
