/**
 * The A2A and MCP protocol modules on their own: what they recognise, and how their readers fold wire bytes (split
 * anywhere, cut short, not JSON at all) into span attributes. The end-to-end tests drive them through the real
 * interceptor; these pin the edge cases a live server will not produce on demand.
 */
import { SpanKind, context, trace } from '@opentelemetry/api';
import { afterAll, describe, expect, it } from 'vitest';
import { a2aProtocol } from '../../instrumentation/agents/a2a';
import { mcpProtocol } from '../../instrumentation/agents/mcp';
import type { ProtocolModule, ProtocolStart } from '../../instrumentation/internal-types';
import type { Exchange } from '../../instrumentation/types';
import { setupOtel } from './otel';

const otel = setupOtel();
afterAll(() => otel.shutdown());

const URL_A2A = new URL('http://agents.internal:8080/a2a/jsonrpc');
const URL_MCP = new URL('https://tools.example.com/mcp');

function exchangeFor(module: ProtocolModule, url: URL, body: unknown, start: ProtocolStart): Exchange {
  const span = trace.getTracer('test').startSpan(start.name, { kind: start.kind });
  return {
    protocol: module.protocol,
    span,
    context: trace.setSpan(context.active(), span),
    operation: start.operation,
    provider: start.provider,
    url,
    method: 'POST',
    requestBody: Buffer.from(JSON.stringify(body)),
    request: body,
    stream: start.stream,
    message: start.message,
    attempt: 0,
    notes: new Map(),
  };
}

/** Run a response through a module's reader, cutting the body into chunks of `chunkSize` bytes. */
function read(
  module: ProtocolModule,
  url: URL,
  body: unknown,
  response: { status?: number; contentType: string; body: string; chunkSize?: number },
  failure?: { errorType?: string; aborted?: boolean },
  capture = false,
) {
  const start = module.start(url, body, {}, capture);
  if (start === undefined) throw new Error('not recognised');
  const exchange = exchangeFor(module, url, body, start);
  const reader = module.reader(exchange, capture);
  reader.onStart(response.status ?? 200, { 'content-type': response.contentType });
  const bytes = Buffer.from(response.body);
  const size = response.chunkSize ?? bytes.length;
  for (let i = 0; i < bytes.length; i += size) reader.onData(bytes.subarray(i, i + size));
  if (failure === undefined) reader.onEnd();
  const out = reader.finish(exchange, failure, 12);
  exchange.span.end();
  return { start, ...out };
}

function sse(...messages: unknown[]): string {
  return messages.map((m) => `event: message\r\ndata: ${JSON.stringify(m)}\r\n\r\n`).join('');
}

const v1Send = {
  jsonrpc: '2.0',
  id: 7,
  method: 'SendStreamingMessage',
  params: { message: { messageId: 'm-1', contextId: 'ctx-1', role: 'ROLE_USER', parts: [{ text: 'score this' }] } },
};
const v1Events = [
  {
    jsonrpc: '2.0',
    id: 7,
    result: { task: { id: 't-1', contextId: 'ctx-1', status: { state: 'TASK_STATE_SUBMITTED' } } },
  },
  {
    jsonrpc: '2.0',
    id: 7,
    result: { statusUpdate: { taskId: 't-1', contextId: 'ctx-1', status: { state: 'TASK_STATE_WORKING' } } },
  },
  {
    jsonrpc: '2.0',
    id: 7,
    result: {
      artifactUpdate: { taskId: 't-1', contextId: 'ctx-1', artifact: { artifactId: 'a', parts: [{ text: 'Sc' }] } },
    },
  },
  {
    jsonrpc: '2.0',
    id: 7,
    result: {
      artifactUpdate: {
        taskId: 't-1',
        contextId: 'ctx-1',
        append: true,
        artifact: { artifactId: 'a', parts: [{ text: 'ore: 4' }] },
      },
    },
  },
  {
    jsonrpc: '2.0',
    id: 7,
    result: { statusUpdate: { taskId: 't-1', contextId: 'ctx-1', status: { state: 'TASK_STATE_COMPLETED' } } },
  },
];

describe('a2aProtocol recognition', () => {
  it('matches POSTs only, and starts only for the A2A send/stream/get methods of either version', () => {
    expect(a2aProtocol.matches('GET', new URL('http://a/.well-known/agent-card.json'))).toBe(false);
    expect(a2aProtocol.matches('POST', URL_A2A)).toBe(true);
    const started = (method: string, params: unknown = {}) =>
      a2aProtocol.start(URL_A2A, { jsonrpc: '2.0', id: 1, method, params }, {}, false)?.attributes['a2a.method.name'];
    expect(started('message/send')).toBe('SendMessage');
    expect(started('message/stream')).toBe('SendStreamingMessage');
    expect(started('tasks/get', { id: 't' })).toBe('GetTask');
    expect(started('SendMessage')).toBe('SendMessage');
    expect(started('SendStreamingMessage')).toBe('SendStreamingMessage');
    expect(started('GetTask', { id: 't' })).toBe('GetTask');
    for (const other of ['tools/call', 'initialize', 'tasks/cancel', 'CancelTask', 'ListTasks'])
      expect(started(other)).toBeUndefined();
    expect(a2aProtocol.start(URL_A2A, [{ jsonrpc: '2.0', id: 1, method: 'SendMessage' }], {}, false)).toBeUndefined();
    expect(a2aProtocol.start(URL_A2A, { model: 'gpt-4o', messages: [] }, {}, false)).toBeUndefined();
    expect(a2aProtocol.start(URL_A2A, undefined, {}, false)).toBeUndefined();
  });

  it('rules out a non-JSON POST before its body is read, when the headers are known', () => {
    const upload = new URL('http://files.internal/upload');
    const sse = { accept: 'application/json, text/event-stream' };
    for (const module of [a2aProtocol, mcpProtocol]) {
      const matches = (headers: Record<string, string> | undefined, method = 'POST') =>
        module.matches(method, upload, headers);
      expect(matches({ ...sse, 'content-type': 'multipart/form-data; boundary=x' })).toBe(false);
      expect(matches({ ...sse, 'content-type': 'application/octet-stream' })).toBe(false);
      expect(matches({ ...sse, 'content-type': 'application/json' })).toBe(true);
      expect(matches({ ...sse, 'Content-Type': 'application/a2a+json; charset=utf-8' })).toBe(true);
      expect(matches({ ...sse })).toBe(true);
      expect(matches(undefined)).toBe(true);
      expect(matches({ ...sse, 'content-type': 'application/json' }, 'PUT')).toBe(false);
    }
    // MCP's transport requires clients to accept an SSE answer; after initialize they also send its headers.
    expect(mcpProtocol.matches('POST', upload, { 'content-type': 'application/json' })).toBe(false);
    expect(
      mcpProtocol.matches('POST', upload, { 'content-type': 'application/json', 'mcp-protocol-version': '2025-06-18' }),
    ).toBe(true);
    expect(a2aProtocol.matches('POST', upload, { 'content-type': 'application/json' })).toBe(true);
  });

  it('rules out a JSON body that is no JSON-RPC request from its bytes, before it is parsed', () => {
    const url = new URL('http://api.internal/api/bulk');
    const bulk = Buffer.from(
      JSON.stringify({ rows: Array.from({ length: 1000 }, (_, i) => ({ id: i, text: 'x'.repeat(40) })) }),
    );
    for (const module of [a2aProtocol, mcpProtocol]) {
      expect(module.sniff?.(bulk, url)).toBe(false);
      expect(
        module.sniff?.(Buffer.from('  {"method":"tools/call","params":{"name":"x"},"jsonrpc":"2.0","id":1}'), url),
      ).toBe(true);
      expect(module.sniff?.(Buffer.from('[{"jsonrpc":"2.0"}]'), url)).toBe(false);
    }
    // The REST binding has no jsonrpc member: its path says it.
    const rest = Buffer.from(JSON.stringify({ message: { messageId: 'm', role: 'ROLE_USER', parts: [] } }));
    expect(a2aProtocol.sniff?.(rest, new URL('http://a/a2a/rest/message:send'))).toBe(true);
    expect(a2aProtocol.sniff?.(rest, url)).toBe(false);
  });

  it('recognises the REST send/stream paths only with a SendMessageRequest body', () => {
    const body = { message: { messageId: 'm-2', role: 'ROLE_USER', parts: [{ text: 'hi' }] } };
    const send = a2aProtocol.start(new URL('http://a/a2a/rest/message:send'), body, {}, false);
    expect(send?.attributes).toMatchObject({
      'a2a.method.name': 'SendMessage',
      'a2a.protocol.version': '1.0',
      'a2a.message.id': 'm-2',
    });
    expect(send?.stream).toBe(false);
    const legacy = a2aProtocol.start(new URL('http://a/v1/message:stream'), body, {}, false);
    expect(legacy).toMatchObject({
      stream: true,
      attributes: { 'a2a.method.name': 'SendStreamingMessage', 'a2a.protocol.version': '0.3' },
    });
    expect(a2aProtocol.start(new URL('http://a/a2a/rest/message:send'), { text: 'hi' }, {}, false)).toBeUndefined();
    expect(a2aProtocol.start(new URL('http://a/api/messages'), body, {}, false)).toBeUndefined();
  });

  it('starts a CLIENT span with the a2a.* and message attributes known from the request', () => {
    const start = a2aProtocol.start(
      URL_A2A,
      v1Send,
      { 'X-Faultline-Agent': ' Scorer ', 'x-faultline-boundary': 'I4' },
      false,
    );
    expect(start).toMatchObject({
      name: 'invoke_agent Scorer',
      kind: SpanKind.CLIENT,
      stream: true,
      operation: 'invoke_agent',
    });
    expect(start?.attributes).toMatchObject({
      'a2a.method.name': 'SendStreamingMessage',
      'a2a.message.id': 'm-1',
      'gen_ai.conversation.id': 'ctx-1',
      'gen_ai.agent.name': 'Scorer',
      'server.address': 'agents.internal',
      'server.port': 8080,
      'jsonrpc.request.id': '7',
      'faultline.message.id': 'm-1',
      'faultline.message.target': 'Scorer',
      'faultline.message.boundary': 'I4',
      'faultline.message.session_id': 'ctx-1',
      'faultline.message.keys': ['message'],
    });
    expect(start?.message).toMatchObject({
      id: 'm-1',
      target: 'Scorer',
      boundary: 'I4',
      sessionId: 'ctx-1',
      payload: v1Send.params,
    });
  });
});

describe('a2aProtocol reader', () => {
  it('folds a v1.0 stream into task id, final state and done, however the bytes are split', () => {
    const body = sse(...v1Events);
    for (const chunkSize of [1, 3, 17, body.length]) {
      const { attributes, outcome, error } = read(
        a2aProtocol,
        URL_A2A,
        v1Send,
        { contentType: 'text/event-stream', body, chunkSize },
        undefined,
        true,
      );
      expect(attributes).toMatchObject({
        'a2a.task.id': 't-1',
        'a2a.task.state': 'TASK_STATE_COMPLETED',
        'faultline.response.done': true,
        'faultline.response.chunk_count': 5,
        'faultline.response.body_bytes': Buffer.byteLength(body),
      });
      // Appended artifact chunks are joined in the captured output.
      expect(JSON.parse(String(attributes['gen_ai.output.messages']))).toEqual([
        {
          role: 'assistant',
          parts: [
            { type: 'text', content: 'Sc' },
            { type: 'text', content: 'ore: 4' },
          ],
        },
      ]);
      expect(outcome.result).toHaveLength(5);
      expect(error).toBeUndefined();
    }
  });

  it('reports a stream cut short as not done, in its last state', () => {
    const body = sse(...v1Events.slice(0, 3)) + 'data: {"jsonrpc":"2.0","id":7,"result":{"statusUp';
    const { attributes, error } = read(a2aProtocol, URL_A2A, v1Send, { contentType: 'text/event-stream', body });
    expect(attributes).toMatchObject({
      'a2a.task.state': 'TASK_STATE_WORKING',
      'faultline.response.done': false,
      'faultline.response.chunk_count': 3,
    });
    expect(attributes['error.type']).toBeUndefined();
    expect(error).toBeUndefined();
  });

  it('normalises v0.3 results (kind-tagged, kebab-case states, final flag)', () => {
    const legacy = { ...v1Send, method: 'message/stream' };
    const body = sse(
      { jsonrpc: '2.0', id: 7, result: { kind: 'task', id: 't-9', contextId: 'c-9', status: { state: 'submitted' } } },
      {
        jsonrpc: '2.0',
        id: 7,
        result: {
          kind: 'status-update',
          taskId: 't-9',
          contextId: 'c-9',
          status: { state: 'input-required' },
          final: true,
        },
      },
    );
    const { start, attributes } = read(a2aProtocol, URL_A2A, legacy, { contentType: 'text/event-stream', body });
    expect(start.attributes['a2a.protocol.version']).toBe('0.3');
    expect(attributes).toMatchObject({
      'a2a.task.id': 't-9',
      'a2a.task.state': 'TASK_STATE_INPUT_REQUIRED',
      'faultline.response.done': true,
    });
  });

  it('reports HTTP errors, unparsable bodies, transport failures and aborts', () => {
    const send = { ...v1Send, method: 'SendMessage' };
    const html = read(a2aProtocol, URL_A2A, send, {
      status: 502,
      contentType: 'text/html',
      body: '<html>Bad gateway</html>',
    });
    expect(html.attributes).toMatchObject({
      'error.type': '502',
      'http.response.status_code': 502,
      'faultline.response.content_type': 'text/html',
    });
    expect(html.error).toBe('HTTP 502');
    expect(html.outcome).toMatchObject({ status: 502, errorType: '502', durationMs: 12 });

    const reset = read(
      a2aProtocol,
      URL_A2A,
      send,
      { contentType: 'application/json', body: '{"jsonrpc":"2.0","id":7,"res' },
      { errorType: 'UND_ERR_SOCKET' },
    );
    expect(reset.attributes['error.type']).toBe('UND_ERR_SOCKET');

    const aborted = read(a2aProtocol, URL_A2A, send, { contentType: 'application/json', body: '' }, { aborted: true });
    expect(aborted.attributes['error.type']).toBeUndefined();
    expect(aborted.error).toBeUndefined();

    const rpc = read(a2aProtocol, URL_A2A, send, {
      contentType: 'application/json',
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        error: { code: -32602, message: 'Invalid params: missing "message"' },
      }),
    });
    expect(rpc.attributes).toMatchObject({ 'error.type': '-32602', 'rpc.response.status_code': '-32602' });
    // The server's error message may echo the request: only with capture on.
    expect(rpc.error).toBe('JSON-RPC error -32602');
  });
});

describe('mcpProtocol', () => {
  const call = {
    jsonrpc: '2.0',
    id: 3,
    method: 'tools/call',
    params: { name: 'get_weather', arguments: { city: 'Lisbon' }, _meta: { progressToken: 9 } },
  };

  it('starts only for tools/call requests with a tool name', () => {
    expect(mcpProtocol.matches('GET', URL_MCP)).toBe(false);
    expect(mcpProtocol.start(URL_MCP, call, {}, false)?.name).toBe('execute_tool get_weather');
    for (const body of [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', method: 'tools/call', params: { name: 'x' } }, // a notification: no id, no response
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: {} },
      [call],
      { jsonrpc: '2.0', id: 5, method: 'SendMessage', params: {} },
    ]) {
      expect(mcpProtocol.start(URL_MCP, body, {}, false)).toBeUndefined();
    }
  });

  it('puts the trace context into params._meta, keeping everything else', () => {
    const start = mcpProtocol.start(
      URL_MCP,
      call,
      { 'mcp-session-id': 's-1', 'mcp-protocol-version': '2025-06-18' },
      false,
    );
    expect(start?.attributes).toMatchObject({
      'mcp.session.id': 's-1',
      'mcp.protocol.version': '2025-06-18',
      'server.address': 'tools.example.com',
      'server.port': 443,
    });
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const rewritten = JSON.parse(String(start?.rewriteBody?.(tp, 'vendor=1')));
    expect(rewritten).toEqual({
      ...call,
      params: { ...call.params, _meta: { progressToken: 9, traceparent: tp, tracestate: 'vendor=1' } },
    });
    // The parsed request the interceptor handed over is not modified.
    expect(call.params._meta).toEqual({ progressToken: 9 });
    const own = { ...call, params: { ...call.params, _meta: { traceparent: tp } } };
    expect(mcpProtocol.start(URL_MCP, own, {}, false)?.rewriteBody?.('00-1-2-01', undefined)).toBeUndefined();
  });

  it('finds the response to its request among notifications in an SSE stream, split anywhere', () => {
    const result = { content: [{ type: 'text', text: 'Sunny, 24°C' }], isError: false };
    const body = sse(
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 9, progress: 1 } },
      { jsonrpc: '2.0', id: 99, result: { other: true } },
      { jsonrpc: '2.0', id: 3, result },
    );
    for (const chunkSize of [1, 5, body.length]) {
      const out = read(
        mcpProtocol,
        URL_MCP,
        call,
        { contentType: 'text/event-stream', body, chunkSize },
        undefined,
        true,
      );
      expect(out.outcome.result).toEqual(result);
      expect(out.attributes).toMatchObject({
        'faultline.response.chunk_count': 3,
        'gen_ai.tool.call.result': JSON.stringify(result),
      });
      expect(out.attributes['error.type']).toBeUndefined();
    }
  });

  it('reports tool errors, JSON-RPC errors and HTTP errors', () => {
    const toolError = read(mcpProtocol, URL_MCP, call, {
      contentType: 'application/json',
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 3,
        result: { isError: true, content: [{ type: 'text', text: 'city not found' }] },
      }),
    });
    expect(toolError.attributes['error.type']).toBe('tool_error');
    expect(toolError.error).toBe('tool_error');

    const rpc = read(mcpProtocol, URL_MCP, call, {
      contentType: 'application/json',
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'Unknown tool: get_weather' } }),
    });
    expect(rpc.attributes).toMatchObject({ 'error.type': '-32602', 'rpc.response.status_code': '-32602' });
    expect(rpc.outcome.result).toEqual({ code: -32602, message: 'Unknown tool: get_weather' });

    const http = read(mcpProtocol, URL_MCP, call, {
      status: 404,
      contentType: 'application/json',
      body: '{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}',
    });
    expect(http.attributes['error.type']).toBe('404');
  });
});
