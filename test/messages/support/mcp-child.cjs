/**
 * An MCP server in a process of its own: the real MCP SDK server (Streamable HTTP, JSON responses), instrumented with
 * faultline's built instrumentMcpServer, its spans written by the real OTel SDK to the OTLP/JSON-lines file named by
 * FAULTLINE_CHILD_TRACES. Prints `listening <url>` on stdout; flushes and exits on SIGTERM.
 */
'use strict';
const { randomUUID } = require('node:crypto');
const { createServer } = require('node:http');
const { trace, context, propagation } = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { W3CTraceContextPropagator } = require('@opentelemetry/core');
const { BasicTracerProvider, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { z } = require('zod');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');
const root = process.env.FAULTLINE_ROOT;
const { FileSpanExporter, instrumentMcpServer } = require(`${root}/dist/src/index.js`);

const provider = new BasicTracerProvider({
  spanProcessors: [
    new SimpleSpanProcessor(new FileSpanExporter({ path: process.env.FAULTLINE_CHILD_TRACES, announce: false })),
  ],
});
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(provider);
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

const shape = { sku: z.string(), quantity: z.number().int(), order_id: z.string() };
const transports = new Map();
async function session() {
  const mcp = instrumentMcpServer(new McpServer({ name: 'warehouse', version: '1.0.0' }), {
    contracts: { reserve: z.strictObject(shape) },
    captureMessageContent: true,
  });
  mcp.registerTool(
    'reserve',
    { description: 'Reserve units', inputSchema: shape },
    async ({ sku, quantity, order_id }) => ({
      content: [{ type: 'text', text: JSON.stringify({ reservation_id: `RSV-${order_id}`, sku, quantity }) }],
    }),
  );
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: true,
    onsessioninitialized: (id) => transports.set(id, transport),
  });
  await mcp.connect(transport);
  return transport;
}
function readJson(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined);
      } catch {
        resolve(undefined);
      }
    });
  });
}
const server = createServer((req, res) => {
  (async () => {
    const sid = req.headers['mcp-session-id'];
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    let t = typeof sid === 'string' ? transports.get(sid) : undefined;
    if (!t && req.method === 'POST' && isInitializeRequest(body)) t = await session();
    if (!t) return void res.writeHead(400).end('no session');
    await t.handleRequest(req, res, body);
  })().catch(() => res.destroy());
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', async () => {
  server.closeAllConnections();
  server.close();
  await provider.forceFlush();
  await provider.shutdown();
  process.exit(0);
});
