/**
 * A2A calls through the real GenAI span layer: the real @a2a-js/sdk clients (the v1.0 ClientFactory client and the
 * v0.3 compat JSON-RPC transport, both over global fetch) against a real A2A agent on 127.0.0.1.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Client } from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { a2aAgentCardInterceptor } from '../../instrumentation/agents/a2a-client';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { payloadHash } from '../../instrumentation/agents/message';
import { runWorkflow } from '../../instrumentation/agents/task';
import { installInstrumentation } from '../../instrumentation/install';
import type { Exchange, ExchangeOutcome } from '../../instrumentation/types';
import { AGENT_NAME, startA2aServer, type A2aTestServer } from '../support/a2a-server';
import { byName, parentOf, setupOtel } from './otel';

const otel = setupOtel();
let capture = false;
const exchanges: Array<{ exchange: Exchange; outcome: ExchangeOutcome }> = [];
const installed = installInstrumentation({
  tracer: () => trace.getTracer('faultline'),
  captureContent: () => capture,
  onExchangeEnd: (exchange, outcome) => exchanges.push({ exchange, outcome }),
});

let server: A2aTestServer;
let client: Client;
let sdk: typeof import('@a2a-js/sdk', { with: { 'resolution-mode': 'import' } });
const QUESTION =
  "Given the title 'The impact of AI in the future of work', what integer score between 1-5 would you assign to it?";
const routed = { serviceParameters: { 'x-faultline-agent': AGENT_NAME, 'x-faultline-boundary': 'I2' } };

beforeAll(async () => {
  server = await startA2aServer();
  sdk = await import('@a2a-js/sdk');
  const { ClientFactory } = await import('@a2a-js/sdk/client');
  client = await new ClientFactory().createFromUrl(server.baseUrl);
});
afterEach(() => {
  otel.exporter.reset();
  exchanges.length = 0;
  capture = false;
});
afterAll(async () => {
  installed.uninstall();
  await server.close();
  await otel.shutdown();
});

function request(text: string, ids: { contextId?: string; taskId?: string } = {}) {
  return sdk.SendMessageRequest.fromJSON({
    message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...ids },
  });
}

function a2aSpans(spans: ReadableSpan[]): ReadableSpan[] {
  return spans.filter((s) => s.attributes['a2a.method.name'] !== undefined);
}

async function oneA2aSpan(): Promise<ReadableSpan> {
  const spans = await otel.waitForSpans((s) => a2aSpans(s).length >= 1);
  const found = a2aSpans(spans);
  expect(found).toHaveLength(1);
  return found[0];
}

describe('A2A v1.0 JSON-RPC client', () => {
  it('makes one invoke_agent CLIENT span per SendMessage, under the calling agent, and none for the agent card', async () => {
    const params = request(QUESTION);
    const task = await runWorkflow('crew', () => runAgent('manager', () => client.sendMessage(params, routed)), {
      taskId: 'crew-task-2',
    });
    expect('status' in task && task.status?.state).toBe(sdk.TaskState.TASK_STATE_COMPLETED);
    if (!('status' in task)) throw new Error('expected a task');

    const spans = await otel.waitForSpans((s) => s.some((x) => x.name === 'invoke_workflow crew'));
    expect(spans.map((s) => s.name).sort()).toEqual([
      'invoke_agent Scorer',
      'invoke_agent manager',
      'invoke_workflow crew',
    ]);
    const span = byName(spans, 'invoke_agent Scorer');
    expect(span.kind).toBe(SpanKind.CLIENT);
    expect(parentOf(span)).toBe(byName(spans, 'invoke_agent manager').spanContext().spanId);
    expect(span.status.code).toBe(SpanStatusCode.UNSET);

    const sent = JSON.parse(server.requests.at(-1)?.rawBody ?? '{}') as { id: number; method: string; params: unknown };
    expect(sent.method).toBe('SendMessage');
    const messageId = params.message?.messageId;
    expect(span.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'Scorer',
      'a2a.method.name': 'SendMessage',
      'a2a.protocol.version': '1.0',
      'a2a.message.id': messageId,
      'a2a.task.id': task.id,
      'a2a.task.state': 'TASK_STATE_COMPLETED',
      'gen_ai.conversation.id': task.contextId,
      'jsonrpc.request.id': String(sent.id),
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(server.baseUrl).port),
      'http.response.status_code': 200,
      'faultline.message.id': messageId,
      'faultline.message.source': 'manager',
      'faultline.message.target': 'Scorer',
      'faultline.message.boundary': 'I2',
      'faultline.message.task_id': 'crew-task-2',
      // What the server received hashes to what we recorded: the request went out as the application sent it.
      'faultline.message.payload_hash': payloadHash(sent.params),
      'faultline.response.content_type': 'application/json',
    });
    expect(span.attributes['faultline.message.keys']).toContain('message');
    for (const key of ['gen_ai.input.messages', 'gen_ai.output.messages', 'faultline.message.payload']) {
      expect(span.attributes[key]).toBeUndefined();
    }
    expect(server.requests.at(-1)?.rawBody).not.toContain('traceparent');
    expect(exchanges.map((e) => e.exchange.protocol)).toEqual(['a2a']);
    expect(exchanges[0].outcome.result).toMatchObject({ task: { id: task.id } });
  });

  it('reads a SendStreamingMessage SSE response event by event', async () => {
    const events: unknown[] = [];
    for await (const event of client.sendMessageStream(request(QUESTION), routed)) events.push(event);
    expect(events.length).toBeGreaterThanOrEqual(3);
    const span = await oneA2aSpan();
    expect(span.name).toBe('invoke_agent Scorer');
    expect(span.attributes).toMatchObject({
      'a2a.method.name': 'SendStreamingMessage',
      'a2a.task.state': 'TASK_STATE_COMPLETED',
      'faultline.response.content_type': 'text/event-stream',
      'faultline.response.chunk_count': events.length,
      'faultline.response.done': true,
    });
    expect(span.attributes['a2a.task.id']).toMatch(/.+/);
    expect(exchanges[0].outcome.result).toHaveLength(events.length);
  });

  it('records GetTask with the task id asked for', async () => {
    const task = await client.sendMessage(request(QUESTION), routed);
    if (!('status' in task)) throw new Error('expected a task');
    otel.exporter.reset();
    await client.getTask(sdk.GetTaskRequest.fromJSON({ id: task.id }), routed);
    const span = await oneA2aSpan();
    expect(span.attributes).toMatchObject({
      'a2a.method.name': 'GetTask',
      'a2a.task.id': task.id,
      'a2a.task.state': 'TASK_STATE_COMPLETED',
    });
    expect(span.attributes['a2a.message.id']).toBeUndefined();
    // The A2A task is the server's; faultline.message.task_id is the run's task scope (none here).
    expect(span.attributes['faultline.message.task_id']).toBeUndefined();
  });

  it('records a JSON-RPC error with its code, and the application gets the SDK error unchanged', async () => {
    const err = await client.getTask(sdk.GetTaskRequest.fromJSON({ id: 'no-such-task' }), routed).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    const span = await oneA2aSpan();
    // TaskNotFoundError is -32001 in the A2A JSON-RPC binding.
    expect(exchanges[0].outcome.result).toMatchObject({ code: -32001 });
    expect(span.attributes['error.type']).toBe('-32001');
    expect(span.attributes['rpc.response.status_code']).toBe('-32001');
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'JSON-RPC error -32001' });
  });

  it('names the span "invoke_agent" and targets host:port when the agent is not named', async () => {
    await client.sendMessage(request('quick question'));
    const span = await oneA2aSpan();
    expect(span.name).toBe('invoke_agent');
    expect(span.attributes['gen_ai.agent.name']).toBeUndefined();
    expect(span.attributes['faultline.message.target']).toBe(new URL(server.baseUrl).host);
    expect(span.attributes['faultline.message.source']).toBeUndefined();
    // A direct Message reply: no task state, and the context id comes back with it.
    expect(span.attributes['a2a.task.state']).toBeUndefined();
    expect(span.attributes['gen_ai.conversation.id']).toMatch(/.+/);
  });

  it('records the request and reply as GenAI messages when content capture is on', async () => {
    capture = true;
    await client.sendMessage(request(QUESTION), routed);
    const span = await oneA2aSpan();
    expect(JSON.parse(String(span.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: QUESTION }] },
    ]);
    const output = JSON.parse(String(span.attributes['gen_ai.output.messages'])) as Array<{
      role: string;
      parts: Array<{ content: string }>;
    }>;
    expect(output[0].role).toBe('assistant');
    expect(output[0].parts[0].content).toMatch(/^Score: 4 \(very good\)/);
    expect(JSON.parse(String(span.attributes['faultline.message.payload']))).toMatchObject({
      message: { parts: [{ text: QUESTION }] },
    });
  });

  it('never records credentials', async () => {
    capture = true;
    await client.sendMessage(request(QUESTION), {
      serviceParameters: {
        ...routed.serviceParameters,
        authorization: 'Bearer sk-secret-123',
        'x-api-key': 'sk-secret-456',
      },
    });
    const span = await oneA2aSpan();
    expect(server.requests.at(-1)?.headers.authorization).toBe('Bearer sk-secret-123');
    expect(JSON.stringify(span.attributes)).not.toMatch(/sk-secret/);
  });
});

describe('A2A v0.3 JSON-RPC client (message/send, message/stream, tasks/get)', () => {
  it('recognises the v0.3 method names and reports v1.0 names and TASK_STATE_* states', async () => {
    const { LegacyJsonRpcTransport } = await import('@a2a-js/sdk/compat/v0_3/client');
    const legacy = new LegacyJsonRpcTransport({ endpoint: server.endpoint });
    const params = request(QUESTION);
    const task = await runAgent('manager', () => legacy.sendMessage(params, routed));
    if (!('status' in task)) throw new Error('expected a task');
    expect(JSON.parse(server.requests.at(-1)?.rawBody ?? '{}')).toMatchObject({ method: 'message/send' });
    let span = await oneA2aSpan();
    expect(span.name).toBe('invoke_agent Scorer');
    expect(span.attributes).toMatchObject({
      'a2a.method.name': 'SendMessage',
      'a2a.protocol.version': '0.3',
      'a2a.message.id': params.message?.messageId,
      'a2a.task.id': task.id,
      'a2a.task.state': 'TASK_STATE_COMPLETED',
      'faultline.message.source': 'manager',
    });

    otel.exporter.reset();
    const events: unknown[] = [];
    for await (const e of legacy.sendMessageStream(request(QUESTION), routed)) events.push(e);
    expect(JSON.parse(server.requests.at(-1)?.rawBody ?? '{}')).toMatchObject({ method: 'message/stream' });
    span = await oneA2aSpan();
    expect(span.attributes).toMatchObject({
      'a2a.method.name': 'SendStreamingMessage',
      'a2a.task.state': 'TASK_STATE_COMPLETED',
      'faultline.response.done': true,
      'faultline.response.chunk_count': events.length,
    });

    otel.exporter.reset();
    await legacy.getTask(sdk.GetTaskRequest.fromJSON({ id: task.id }), routed);
    expect(JSON.parse(server.requests.at(-1)?.rawBody ?? '{}')).toMatchObject({ method: 'tasks/get' });
    span = await oneA2aSpan();
    expect(span.attributes).toMatchObject({
      'a2a.method.name': 'GetTask',
      'a2a.task.id': task.id,
      'a2a.task.state': 'TASK_STATE_COMPLETED',
    });
  });
});

describe('A2A HTTP+JSON (REST) client', () => {
  it('recognises message:send and message:stream and reads their bare (non-JSON-RPC) results', async () => {
    const { ClientFactory, ClientFactoryOptions } = await import('@a2a-js/sdk/client');
    const rest = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ['HTTP+JSON'] }),
    ).createFromUrl(server.baseUrl);
    expect(rest.transport.protocolName).toBe('HTTP+JSON');
    const task = await runAgent('manager', () => rest.sendMessage(request(QUESTION), routed));
    if (!('status' in task)) throw new Error('expected a task');
    expect(server.requests.at(-1)?.headers['content-type']).toMatch(/json/);
    let span = await oneA2aSpan();
    expect(span.name).toBe('invoke_agent Scorer');
    expect(span.attributes).toMatchObject({
      'a2a.method.name': 'SendMessage',
      'a2a.protocol.version': '1.0',
      'a2a.task.id': task.id,
      'a2a.task.state': 'TASK_STATE_COMPLETED',
      'faultline.message.source': 'manager',
    });
    expect(span.attributes['jsonrpc.request.id']).toBeUndefined();

    otel.exporter.reset();
    const events: unknown[] = [];
    for await (const e of rest.sendMessageStream(request(QUESTION), routed)) events.push(e);
    span = await oneA2aSpan();
    expect(span.attributes).toMatchObject({
      'a2a.method.name': 'SendStreamingMessage',
      'a2a.task.state': 'TASK_STATE_COMPLETED',
      'faultline.response.done': true,
      'faultline.response.chunk_count': events.length,
    });

    // GET /tasks/{id} has no body to recognise it by: it passes through with no span of ours.
    otel.exporter.reset();
    await rest.getTask(sdk.GetTaskRequest.fromJSON({ id: task.id }), routed);
    expect(otel.spans()).toEqual([]);
  });
});

describe('a2aAgentCardInterceptor', () => {
  it('names the remote agent from the Agent Card the client holds; per-call headers still win', async () => {
    const { ClientFactory, ClientFactoryOptions } = await import('@a2a-js/sdk/client');
    const named = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        clientConfig: { interceptors: [a2aAgentCardInterceptor({ boundary: 'I2' })] },
      }),
    ).createFromUrl(server.baseUrl);
    await named.sendMessage(request('quick question'));
    let span = await oneA2aSpan();
    expect(span.name).toBe(`invoke_agent ${server.card.name}`);
    expect(span.attributes).toMatchObject({
      'gen_ai.agent.name': 'Scorer',
      'faultline.message.target': 'Scorer',
      'faultline.message.boundary': 'I2',
    });

    otel.exporter.reset();
    await named.sendMessage(request('quick question'), {
      serviceParameters: { 'X-Faultline-Agent': 'scorer-eu', 'x-faultline-boundary': 'I4' },
    });
    span = await oneA2aSpan();
    expect(span.name).toBe('invoke_agent scorer-eu');
    expect(span.attributes['faultline.message.boundary']).toBe('I4');
  });
});
