/**
 * MCP tool calls through the real GenAI span layer: the real MCP client (StreamableHTTPClientTransport over global
 * fetch) against a real McpServer on 127.0.0.1, answering with JSON and with SSE.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { mcpProtocol } from '../../instrumentation/agents/mcp';
import { runWorkflow } from '../../instrumentation/agents/task';
import { installInstrumentation } from '../../instrumentation/install';
import type { Exchange, ExchangeOutcome } from '../../instrumentation/types';
import { startMcpServer, type McpTestServer } from '../support/mcp-server';
import { byName, parentOf, setupOtel } from './otel';

/** Arguments of a crewAI-style delegation call (`ask_question_to_coworker`: question, context, coworker). */
const delegation = {
  question:
    "Given the working title 'Agents at the help desk: faster answers, same care', what integer score from 1 to 5 would you give it?",
  context:
    'Score the title on clarity, relevance to support leaders and how much it makes them want to read on: 1 is poor, 3 is good, 5 is excellent.',
  coworker: 'Scorer',
};

const otel = setupOtel();
let capture = false;
const exchanges: Array<{ exchange: Exchange; outcome: ExchangeOutcome }> = [];
// The MCP module alone: with the built-in list, the interceptor currently offers a JSON-RPC POST only to the first
// module whose `matches` accepts it (A2A), see mcp-default-wiring.test.ts.
const installed = installInstrumentation({
  tracer: () => trace.getTracer('faultline'),
  captureContent: () => capture,
  onExchangeEnd: (exchange, outcome) => exchanges.push({ exchange, outcome }),
  protocols: [mcpProtocol],
});
afterEach(() => {
  otel.exporter.reset();
  exchanges.length = 0;
  capture = false;
});
afterAll(async () => {
  installed.uninstall();
  await otel.shutdown();
});

async function connect(server: McpTestServer): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'crew-manager', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(server.url);
  await client.connect(transport);
  return { client, transport };
}

function ours(spans: ReadableSpan[]): ReadableSpan[] {
  return spans.filter((s) => s.name.startsWith('execute_tool'));
}

for (const mode of ['json', 'sse'] as const) {
  describe(`MCP tools/call, ${mode} responses`, () => {
    let server: McpTestServer;
    let client: Client;
    let transport: StreamableHTTPClientTransport;
    beforeAll(async () => {
      server = await startMcpServer({ json: mode === 'json' });
      ({ client, transport } = await connect(server));
    });
    afterAll(async () => {
      await client.close();
      await server.close();
    });

    it('makes one execute_tool CLIENT span under the calling agent, and nothing for the other MCP messages', async () => {
      const spansBefore = otel.spans().length;
      expect(spansBefore).toBe(0); // initialize, notifications/initialized: no span of ours
      const result = await runWorkflow(
        'crew',
        () => runAgent('manager', () => client.callTool({ name: 'ask_question_to_coworker', arguments: delegation })),
        { taskId: 'crew-task-1' },
      );
      expect(result.content).toEqual([
        { type: 'text', text: `${delegation.coworker}: I would score it 4 (very good).` },
      ]);
      await client.listTools();

      const spans = await otel.waitForSpans((s) => s.some((x) => x.name === 'invoke_workflow crew'));
      expect(spans.map((s) => s.name).sort()).toEqual([
        'execute_tool ask_question_to_coworker',
        'invoke_agent manager',
        'invoke_workflow crew',
      ]);
      expect(server.methods).toContain('tools/list');
      const span = byName(spans, 'execute_tool ask_question_to_coworker');
      expect(span.kind).toBe(SpanKind.CLIENT);
      expect(parentOf(span)).toBe(byName(spans, 'invoke_agent manager').spanContext().spanId);
      expect(span.status.code).toBe(SpanStatusCode.UNSET);

      const seen = server.toolCalls.at(-1);
      const sentId = (JSON.parse(seen?.rawBody ?? '{}') as { id: number }).id;
      expect(span.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'ask_question_to_coworker',
        'jsonrpc.request.id': String(sentId),
        'mcp.session.id': transport.sessionId,
        'mcp.protocol.version': transport.protocolVersion,
        'server.address': '127.0.0.1',
        'server.port': Number(server.url.port),
        'faultline.message.source': 'manager',
        'faultline.message.target': 'ask_question_to_coworker',
        'faultline.message.task_id': 'crew-task-1',
        'faultline.message.session_id': transport.sessionId,
        'faultline.message.keys': ['arguments', 'name'],
        'faultline.message.payload_hash': expect.stringMatching(/^[0-9a-f]{16}$/),
        'faultline.response.content_type': mode === 'json' ? 'application/json' : 'text/event-stream',
      });
      expect(span.attributes['mcp.protocol.version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(span.attributes['faultline.message.id']).toMatch(/^[0-9a-f-]{36}$/);
      // Content is opt-in.
      for (const key of ['gen_ai.tool.call.arguments', 'gen_ai.tool.call.result', 'faultline.message.payload']) {
        expect(span.attributes[key]).toBeUndefined();
      }
      // The outcome handed to online detectors is the CallToolResult the application received.
      expect(exchanges.map((e) => e.exchange.protocol)).toEqual(['mcp']);
      expect(exchanges[0].outcome.result).toEqual(result);
      expect(exchanges[0].exchange.message).toMatchObject({ source: 'manager', target: 'ask_question_to_coworker' });
    });

    it('propagates the span context to the server in params._meta', async () => {
      await runAgent('manager', () => client.callTool({ name: 'ask_question_to_coworker', arguments: delegation }));
      const spans = await otel.waitForSpans((s) => s.length === 2);
      const ctx = byName(spans, 'execute_tool ask_question_to_coworker').spanContext();
      const seen = server.toolCalls.at(-1);
      expect(seen?.meta).toEqual({ traceparent: `00-${ctx.traceId}-${ctx.spanId}-01` });
      expect(seen?.arguments).toEqual(delegation);
    });

    it('keeps the other _meta keys, and an application traceparent wins', async () => {
      await client.callTool({ name: 'ask_question_to_coworker', arguments: delegation }, undefined, {
        onprogress: () => undefined,
      });
      let seen = server.toolCalls.at(-1);
      expect(Object.keys(seen?.meta ?? {}).sort()).toEqual(['progressToken', 'traceparent']);

      const own = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      await client.callTool({ name: 'ask_question_to_coworker', arguments: delegation, _meta: { traceparent: own } });
      seen = server.toolCalls.at(-1);
      expect(seen?.meta).toEqual({ traceparent: own });
      expect(JSON.parse(seen?.rawBody ?? '{}')).toMatchObject({ params: { _meta: { traceparent: own } } });
    });

    it('reads the result after notifications in the same response stream', async () => {
      const result = await client.callTool({
        name: 'score_title',
        arguments: { title: 'The impact of AI in the future of work' },
      });
      expect(result.content).toEqual([{ type: 'text', text: '4' }]);
      const [span] = ours(await otel.waitForSpans((s) => ours(s).length === 1));
      expect(span.name).toBe('execute_tool score_title');
      expect(span.status.code).toBe(SpanStatusCode.UNSET);
      if (mode === 'sse') {
        // The logging notification and the result: two events of one stream.
        expect(span.attributes['faultline.response.chunk_count']).toBe(2);
      }
      expect(exchanges[0].outcome.result).toEqual(result);
    });

    it('marks a tool that reports failure with error.type tool_error', async () => {
      const result = await client.callTool({ name: 'lookup_order', arguments: { id: 'A-1009' } });
      expect(result.isError).toBe(true);
      const [span] = ours(await otel.waitForSpans((s) => ours(s).length === 1));
      expect(span.attributes['error.type']).toBe('tool_error');
      expect(span.status.code).toBe(SpanStatusCode.ERROR);
    });

    it('reports an unknown tool the way the server answers it (McpServer 1.32: a tool error, not a JSON-RPC error)', async () => {
      await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).resolves.toMatchObject({ isError: true });
      const [span] = ours(await otel.waitForSpans((s) => ours(s).length === 1));
      expect(span.name).toBe('execute_tool no_such_tool');
      expect(span.attributes['error.type']).toBe('tool_error');
    });

    it('records arguments and result when content capture is on', async () => {
      capture = true;
      const result = await client.callTool({ name: 'ask_question_to_coworker', arguments: delegation });
      const [span] = ours(await otel.waitForSpans((s) => ours(s).length === 1));
      expect(JSON.parse(String(span.attributes['gen_ai.tool.call.arguments']))).toEqual(delegation);
      expect(JSON.parse(String(span.attributes['gen_ai.tool.call.result']))).toEqual(result);
      expect(JSON.parse(String(span.attributes['faultline.message.payload']))).toMatchObject({
        name: 'ask_question_to_coworker',
        arguments: delegation,
      });
    });
  });
}
