/**
 * Faults on calls faultline sees through node:http and node:http2 (instrumentation/node-http.ts): the AWS SDK's
 * default NodeHttpHandler and its NodeHttp2Handler, against loopback servers answering in Bedrock's wire format
 * (test/support/bedrock.ts). The same fault step as the fetch path (src/inject/http-step.ts) decides; the SDK parses
 * what it delivers as a real answer (a 429 is a ThrottlingException with Bedrock's message, the request never sent).
 * With no plan the application reads its own IncomingMessage, the bytes the server sent.
 */
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  InvokeModelCommand,
  InvokeModelWithResponseStreamCommand,
  ServiceUnavailableException,
  ThrottlingException,
  type ConverseCommandInput,
} from '@aws-sdk/client-bedrock-runtime';
import { trace } from '@opentelemetry/api';
import { NodeHttp2Handler, NodeHttpHandler } from '@smithy/node-http-handler';
import http, { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ATTR_FL_FAULT_MODE, ATTR_HTTP_RESPONSE_STATUS_CODE } from '../../instrumentation/semconv';
import { diagnoseByRules, stripGroundTruth } from '../../src/diagnosers';
import { triggerReportFromSpans } from '../../src/inject/verify';
import {
  bedrockClient,
  chunkFrame,
  CONVERSE_TEXT,
  FAKE_CREDENTIALS,
  INVOKE_FIXTURES,
  jsonReply,
  MODEL,
  startBedrockH2Server,
  streamReply,
  textStream,
  type BedrockH2Server,
  type InvokeFixture,
} from '../support/bedrock';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { toTraces } from '../support/to-traces';
import { callSpans, faultName, setupHarness, type Harness } from './harness';

let h: Harness;
let server: LlmServer;
let h2: BedrockH2Server;

beforeAll(async () => {
  h = setupHarness();
  server = await startLlmServer(() => jsonReply(CONVERSE_TEXT));
  h2 = await startBedrockH2Server(() => jsonReply(CONVERSE_TEXT));
});
afterAll(async () => {
  await server.close();
  await h2.close();
  await h.shutdown();
});
beforeEach(() => {
  h.exporter.reset();
  server.requests.length = 0;
  h2.bodies.length = 0;
});

const INPUT: ConverseCommandInput = {
  modelId: MODEL,
  messages: [{ role: 'user', content: [{ text: 'What is the capital of France?' }] }],
};
const plan = (fault: string, params: Record<string, unknown> = {}) => ({
  rules: [{ fault, params, match: { provider: 'aws.bedrock' } }],
});
const spansOf = async (n: number) => callSpans(await h.waitForSpans((s) => callSpans(s).length >= n));

function noCredentials(attributes: object): void {
  const text = JSON.stringify(attributes);
  for (const secret of Object.values(FAKE_CREDENTIALS)) expect(text).not.toContain(secret);
  expect(text).not.toMatch(/Signature=|AWS4-HMAC-SHA256/);
}

/** A Converse call signed by hand-made headers, sent with http.request: the raw IncomingMessage and its bytes. */
function rawConverse(url: string): Promise<{ res: IncomingMessage; port: number | undefined; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const path = `/model/${encodeURIComponent(MODEL)}/converse`;
    const req = http.request(
      `${url}${path}`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'AWS4-HMAC-SHA256 Credential=AKIAFAULTLINETEST000/x, Signature=abc',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        const port = res.socket?.remotePort;
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ res, port, bytes: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(INPUT));
  });
}

describe('faults on Bedrock through node:http (AWS SDK, NodeHttpHandler)', () => {
  it('no rule for the call: the application reads its own IncomingMessage, the server’s bytes', async () => {
    const { result } = await h.task({ rules: [{ fault: 'http_429', match: { provider: 'openai' } }] }, () =>
      rawConverse(server.url),
    );
    expect(result.bytes.toString()).toBe(JSON.stringify(CONVERSE_TEXT));
    // Node's own response object, on the socket to the server: not one of faultline's making.
    expect(result.port).toBe(server.port);
    expect(result.res.rawHeaders).toContain('x-amzn-requestid');
    expect(server.requests).toHaveLength(1);
    const [span] = await spansOf(1);
    expect(faultName(span!)).toBeUndefined();
    expect(span!.attributes['gen_ai.provider.name']).toBe('aws.bedrock');
  });

  it('http_429 reaches the SDK as ThrottlingException with Bedrock’s message; the request never left', async () => {
    const err = await h
      .task(plan('http_429', { retryAfterS: 0 }), () => bedrockClient(server.url).send(new ConverseCommand(INPUT)))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ThrottlingException);
    const e = err as ThrottlingException;
    expect(e.$metadata.httpStatusCode).toBe(429);
    expect(e.message).toMatch(/exceeding the account quotas for Amazon Bedrock/);
    expect(server.requests).toHaveLength(0);
    const [span] = await spansOf(1);
    expect(faultName(span!)).toBe('http_429');
    expect(span!.attributes).toMatchObject({
      [ATTR_HTTP_RESPONSE_STATUS_CODE]: 429,
      [ATTR_FL_FAULT_MODE]: 'transport',
      'gen_ai.provider.name': 'aws.bedrock',
    });
    noCredentials(span!.attributes);
  });

  it('the SDK’s own retry gets past one 429 on a keep-alive agent: the second attempt reaches the server', async () => {
    const client = new BedrockRuntimeClient({
      region: 'us-east-1',
      endpoint: server.url,
      credentials: FAKE_CREDENTIALS,
      requestHandler: new NodeHttpHandler({ httpAgent: new http.Agent({ keepAlive: true }) }),
      maxAttempts: 2,
    });
    const { result } = await h.task(plan('http_429', { retryAfterS: 0 }), () =>
      client.send(new ConverseCommand(INPUT)),
    );
    expect(result.output?.message?.content?.[0]?.text).toBe('The capital of France is Paris.');
    expect(server.requests).toHaveLength(1);
    const spans = await spansOf(2);
    expect(faultName(spans[0]!)).toBe('http_429');
    expect(faultName(spans[1]!)).toBeUndefined();
    client.destroy();
  });

  it('http_503 reaches the SDK as ServiceUnavailableException', async () => {
    const err = await h
      .task(plan('http_503'), () => bedrockClient(server.url).send(new ConverseCommand(INPUT)))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceUnavailableException);
    expect((err as ServiceUnavailableException).$metadata.httpStatusCode).toBe(503);
  });

  it('conn_reset reaches the SDK as a socket error', async () => {
    const err = await h
      .task(plan('conn_reset'), () => bedrockClient(server.url).send(new ConverseCommand(INPUT)))
      .catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('ECONNRESET');
    expect(server.requests).toHaveLength(0);
  });

  it('slow_first_byte: the answer is the server’s, later; the request was sent once the delay was over', async () => {
    const t0 = Date.now();
    const { result } = await h.task(plan('slow_first_byte', { delayMs: 300 }), () =>
      bedrockClient(server.url).send(new ConverseCommand(INPUT)),
    );
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(result.output?.message?.content?.[0]?.text).toBe('The capital of France is Paris.');
    expect(server.requests).toHaveLength(1);
    // What the SDK signed went out as it signed it.
    expect(server.requests[0]!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 /);
    expect(JSON.parse(server.requests[0]!.body.toString())).toMatchObject({ messages: INPUT.messages });
  });

  it('timeout_hang: held until the application gives up (its abort signal)', async () => {
    const t0 = Date.now();
    const err = await h
      .task(plan('timeout_hang'), () =>
        bedrockClient(server.url).send(new ConverseCommand(INPUT), { abortSignal: AbortSignal.timeout(200) }),
      )
      .catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    const [span] = await spansOf(1);
    expect(faultName(span!)).toBe('timeout_hang');
    expect(server.requests).toHaveLength(0);
  });

  it('llm_truncate_single: the SDK reads the Converse answer cut to 30 %, stopReason max_tokens, usage kept', async () => {
    const { result } = await h.task(plan('llm_truncate_single'), () =>
      bedrockClient(server.url).send(new ConverseCommand(INPUT)),
    );
    const full = 'The capital of France is Paris.';
    expect(result.output?.message?.content?.[0]?.text).toBe(full.slice(0, Math.max(1, Math.floor(full.length * 0.3))));
    expect(result.stopReason).toBe('max_tokens');
    expect(result.usage).toEqual(CONVERSE_TEXT.usage);
    expect(result.$metadata.requestId).toBe('7c3b1a52-6f0e-4a7e-9a3e-0d2f5b1e9c11');
    const [span] = await spansOf(1);
    expect(faultName(span!)).toBe('llm_truncate_single');
    expect(span!.attributes['gen_ai.response.finish_reasons']).toEqual(['length']);
  });

  it('verify and diagnose on the trace: the 429 on the 2nd Bedrock call is the triggered rule, diagnosed as an error at step 2', async () => {
    const rules = [{ fault: 'http_429', match: { provider: 'aws.bedrock', position: 2 }, params: { retryAfterS: 0 } }];
    const { result } = await h.task({ rules }, () =>
      trace.getTracer('app').startActiveSpan('run', async (root) => {
        const c = bedrockClient(server.url);
        await c.send(new ConverseCommand(INPUT));
        const second = await c.send(new ConverseCommand(INPUT)).then(
          () => undefined,
          (e: unknown) => e,
        );
        root.end();
        return second;
      }),
    );
    expect(result).toBeInstanceOf(ThrottlingException);
    const spans = await spansOf(2);
    const all = await h.waitForSpans((s) => s.some((x) => x.name === 'run'));
    const [trace0] = toTraces(all.filter((x) => x.spanContext().traceId === spans[0]!.spanContext().traceId));
    const report = triggerReportFromSpans(trace0!.spans);
    expect(report.tasks[0]!.rules).toEqual([expect.objectContaining({ rule: 'http_429', fires: 1, triggered: true })]);
    expect(diagnoseByRules(stripGroundTruth(trace0!))).toMatchObject({
      faultType: 'error',
      step: 2,
      spanId: spans[1]!.spanContext().spanId,
    });
  });
});

describe('faults on Bedrock through node:http2 (AWS SDK, NodeHttp2Handler)', () => {
  it('no plan: the answer is the server’s', async () => {
    const handler = new NodeHttp2Handler({ disableConcurrentStreams: true });
    try {
      const { result } = await h.task(undefined, () =>
        bedrockClient(h2.url, handler as never).send(new ConverseCommand(INPUT)),
      );
      expect(result.output?.message?.content?.[0]?.text).toBe('The capital of France is Paris.');
      expect(h2.bodies).toHaveLength(1);
    } finally {
      handler.destroy();
    }
  });

  it('llm_truncate_single: the SDK reads the Converse answer cut to 30 %', async () => {
    const handler = new NodeHttp2Handler({ disableConcurrentStreams: true });
    try {
      const { result } = await h.task(plan('llm_truncate_single'), () =>
        bedrockClient(h2.url, handler as never).send(new ConverseCommand(INPUT)),
      );
      expect(result.output?.message?.content?.[0]?.text).toBe('The capital of France is Paris.'.slice(0, 9));
      expect(result.stopReason).toBe('max_tokens');
      expect(h2.bodies).toHaveLength(1);
    } finally {
      handler.destroy();
    }
  });

  it('http_429 reaches the SDK as ThrottlingException; the request body was never sent', async () => {
    const handler = new NodeHttp2Handler({ disableConcurrentStreams: true });
    try {
      const err = await h
        .task(plan('http_429', { retryAfterS: 0 }), () =>
          bedrockClient(h2.url, handler as never).send(new ConverseCommand(INPUT)),
        )
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ThrottlingException);
      expect((err as ThrottlingException).$metadata.httpStatusCode).toBe(429);
      expect(h2.bodies).toHaveLength(0);
      const [span] = await spansOf(1);
      expect(faultName(span!)).toBe('http_429');
      noCredentials(span!.attributes);
    } finally {
      handler.destroy();
    }
  });
});

/** A ConverseStream read to its end: the text, the stop reason, and how it ended. */
async function readStream(
  client: ReturnType<typeof bedrockClient>,
  opts: { abortSignal?: AbortSignal } = {},
): Promise<{ text: string; stop?: string; events: string[]; error?: string }> {
  const out = await client.send(new ConverseStreamCommand(INPUT), opts);
  const r: { text: string; stop?: string; events: string[]; error?: string } = { text: '', events: [] };
  try {
    for await (const e of out.stream ?? []) {
      r.events.push(Object.keys(e)[0]!);
      r.text += e.contentBlockDelta?.delta?.text ?? '';
      r.stop ??= e.messageStop?.stopReason;
    }
  } catch (err) {
    r.error = (err as Error).name;
  }
  return r;
}

const DELTAS = ['Paris', ' is the', ' capital.'];

describe('stream faults on ConverseStream: whole event-stream frames rewritten, valid CRCs', () => {
  const transports = [
    { name: 'NodeHttpHandler', client: () => ({ client: bedrockClient(server.url), done: () => {} }) },
    {
      name: 'NodeHttp2Handler',
      client: () => {
        const handler = new NodeHttp2Handler({ disableConcurrentStreams: true });
        return { client: bedrockClient(h2.url, handler as never), done: () => handler.destroy() };
      },
    },
  ];
  beforeAll(() => {
    server.respond(() => streamReply(textStream(DELTAS)));
    h2.respond(() => streamReply(textStream(DELTAS)));
  });
  afterAll(() => {
    server.respond(() => jsonReply(CONVERSE_TEXT));
    h2.respond(() => jsonReply(CONVERSE_TEXT));
  });

  for (const t of transports) {
    it(`${t.name}: no plan, every event as sent`, async () => {
      const { client, done } = t.client();
      try {
        const { result } = await h.task(undefined, () => readStream(client));
        expect(result).toEqual({
          text: DELTAS.join(''),
          stop: 'end_turn',
          events: [
            'messageStart',
            'contentBlockDelta',
            'contentBlockDelta',
            'contentBlockDelta',
            'contentBlockStop',
            'messageStop',
            'metadata',
          ],
        });
      } finally {
        done();
      }
    });

    it(`${t.name}: stream_cut after 2 events — the SDK’s stream ends cleanly with one delta and no stop; verify names it`, async () => {
      const { client, done } = t.client();
      try {
        const { result, taskId } = await h.task(plan('stream_cut', { afterEvents: 2 }), () => readStream(client));
        expect(result).toEqual({ text: 'Paris', events: ['messageStart', 'contentBlockDelta'] });
        expect(h.injector.triggerReport(taskId).tasks[0]!.rules[0]).toMatchObject({
          rule: 'stream_cut',
          fires: 1,
          triggered: true,
        });
        const [span] = await spansOf(1);
        expect(faultName(span!)).toBe('stream_cut');
        expect(span!.attributes).toMatchObject({
          'faultline.response.done': false,
          'faultline.response.output_chars': 'Paris'.length,
        });
        expect(span!.attributes['gen_ai.response.finish_reasons']).toBeUndefined();
      } finally {
        done();
      }
    });

    it(`${t.name}: stream_cut with reset — the SDK’s stream fails mid-answer`, async () => {
      const { client, done } = t.client();
      try {
        const { result } = await h.task(plan('stream_cut', { afterEvents: 2, reset: true }), () =>
          readStream(client).catch((e: unknown) => ({ text: '', events: [], error: (e as Error).name })),
        );
        expect(result.text).toBe('Paris');
        expect(result.error).toBeDefined();
      } finally {
        done();
      }
    });

    it(`${t.name}: stream_corrupt_chunk — the 2nd event’s delta garbled in a frame the SDK accepts`, async () => {
      const { client, done } = t.client();
      try {
        const { result } = await h.task(plan('stream_corrupt_chunk', { eventIndex: 2 }), () => readStream(client));
        expect(result.text).toBe(`Pa\uFFFD${DELTAS.slice(1).join('')}`);
        expect(result.stop).toBe('end_turn');
      } finally {
        done();
      }
    });

    it(`${t.name}: stream_drop_done — no messageStop, no metadata: the answer ends without its stop reason`, async () => {
      const { client, done } = t.client();
      try {
        const { result } = await h.task(plan('stream_drop_done'), () => readStream(client));
        expect(result).toEqual({
          text: DELTAS.join(''),
          events: ['messageStart', 'contentBlockDelta', 'contentBlockDelta', 'contentBlockDelta', 'contentBlockStop'],
        });
        const [span] = await spansOf(1);
        expect(span!.attributes['faultline.response.done']).toBe(false);
      } finally {
        done();
      }
    });

    it(`${t.name}: stream_stall held until the application aborts`, async () => {
      const { client, done } = t.client();
      try {
        const t0 = Date.now();
        const { result } = await h.task(plan('stream_stall', { afterEvents: 2 }), () =>
          readStream(client, { abortSignal: AbortSignal.timeout(300) }).catch((e: unknown) => ({
            text: '',
            events: [],
            error: (e as Error).name,
          })),
        );
        expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
        expect(result.error).toBeDefined();
      } finally {
        done();
      }
    });
  }
});

describe('faults on InvokeModel and InvokeModelWithResponseStream (NodeHttpHandler)', () => {
  const llama = INVOKE_FIXTURES.find((f) => f.family === 'Meta Llama')!;
  const nova = INVOKE_FIXTURES.find((f) => f.family === 'Amazon Nova')!;
  const streamOf = async (f: InvokeFixture): Promise<Array<Record<string, unknown>>> => {
    const out = await bedrockClient(server.url).send(
      new InvokeModelWithResponseStreamCommand({
        modelId: f.model,
        contentType: 'application/json',
        body: JSON.stringify(f.request),
      }),
    );
    const got: Array<Record<string, unknown>> = [];
    for await (const e of out.body ?? [])
      if (e.chunk?.bytes) got.push(JSON.parse(Buffer.from(e.chunk.bytes).toString()) as Record<string, unknown>);
    return got;
  };
  afterAll(() => server.respond(() => jsonReply(CONVERSE_TEXT)));

  it('llm_truncate_single on a Nova InvokeModel answer: the body the SDK returns is cut to 30 %, stopReason max_tokens', async () => {
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(nova.answer),
    }));
    const { result } = await h.task(plan('llm_truncate_single'), () =>
      bedrockClient(server.url).send(
        new InvokeModelCommand({
          modelId: nova.model,
          contentType: 'application/json',
          body: JSON.stringify(nova.request),
        }),
      ),
    );
    const body = JSON.parse(Buffer.from(result.body).toString()) as {
      output: { message: { content: Array<{ text: string }> } };
      stopReason: string;
      usage: unknown;
    };
    expect(body.output.message.content[0]!.text).toBe(
      nova.text.slice(0, Math.max(1, Math.floor(nova.text.length * 0.3))),
    );
    expect(body.stopReason).toBe('max_tokens');
    expect(body.usage).toEqual(nova.answer.usage);
  });

  it('stream_cut after 2 chunks of a Llama stream: the SDK gets the first two, no stop_reason', async () => {
    server.respond(() => streamReply(llama.events.map(chunkFrame)));
    const { result } = await h.task(plan('stream_cut', { afterEvents: 2 }), () => streamOf(llama));
    expect(result).toEqual(llama.events.slice(0, 2));
    const [span] = await spansOf(1);
    expect(faultName(span!)).toBe('stream_cut');
    expect(span!.attributes['faultline.response.done']).toBe(false);
  });

  it('stream_corrupt_chunk: the 2nd chunk’s generation garbled inside a valid frame and valid base64 JSON', async () => {
    server.respond(() => streamReply(llama.events.map(chunkFrame)));
    const { result } = await h.task(plan('stream_corrupt_chunk', { eventIndex: 2 }), () => streamOf(llama));
    expect(result).toHaveLength(llama.events.length);
    const g = llama.events[1]!.generation as string;
    expect(result[1]).toEqual({ ...llama.events[1], generation: `${g.slice(0, Math.floor(g.length / 2))}\uFFFD` });
    expect(result[2]).toEqual(llama.events[2]);
  });

  it('stream_drop_done: the last chunk (with the invocation metrics) never arrives', async () => {
    server.respond(() => streamReply(llama.events.map(chunkFrame)));
    const { result } = await h.task(plan('stream_drop_done'), () => streamOf(llama));
    expect(result).toEqual(llama.events.slice(0, -1));
  });
});
