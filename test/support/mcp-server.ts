/**
 * A real MCP server (McpServer + StreamableHTTPServerTransport, stateful sessions) on 127.0.0.1:0, for tests that
 * drive it with the real MCP client. It answers tools/call either with a JSON body or with an SSE stream (the
 * transport's two modes), and records what each tool call received (arguments, `_meta`, headers).
 *
 * Tools:
 *  - `ask_question_to_coworker` {question, context, coworker}: answers with text (crewAI's delegation tool, with the
 *    arguments of a recorded crewAI call from the corpus in the tests).
 *  - `score_title` {title}: sends a logging notification first (on an SSE response it rides in the same stream), then
 *    answers.
 *  - `lookup_order` {id}: fails as a tool (CallToolResult.isError).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export interface ToolCallSeen {
  tool: string;
  arguments: unknown;
  meta: Record<string, unknown> | undefined;
  /** Raw request body bytes as the server received them. */
  rawBody: string;
}

export interface McpTestServer {
  url: URL;
  /** Every tools/call the server handled, in order. */
  toolCalls: ToolCallSeen[];
  /** Every JSON-RPC method posted, in order (initialize, notifications/initialized, tools/list, tools/call, …). */
  methods: string[];
  close(): Promise<void>;
}

export async function startMcpServer(options: { json: boolean }): Promise<McpTestServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const toolCalls: ToolCallSeen[] = [];
  const methods: string[] = [];
  let lastRawBody = '';

  const newSession = async (): Promise<StreamableHTTPServerTransport> => {
    const mcp = new McpServer({ name: 'crew-tools', version: '1.0.0' }, { capabilities: { logging: {} } });
    mcp.registerTool(
      'ask_question_to_coworker',
      {
        description: 'Ask a specific question to a coworker',
        inputSchema: { question: z.string(), context: z.string(), coworker: z.string() },
      },
      async (args, extra) => {
        toolCalls.push({ tool: 'ask_question_to_coworker', arguments: args, meta: extra._meta, rawBody: lastRawBody });
        return { content: [{ type: 'text', text: `${args.coworker}: I would score it 4 (very good).` }] };
      },
    );
    mcp.registerTool(
      'score_title',
      { description: 'Score a title from 1 to 5', inputSchema: { title: z.string() } },
      async (args, extra) => {
        toolCalls.push({ tool: 'score_title', arguments: args, meta: extra._meta, rawBody: lastRawBody });
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'scoring…' } });
        return { content: [{ type: 'text', text: '4' }], structuredContent: undefined };
      },
    );
    mcp.registerTool(
      'lookup_order',
      { description: 'Look up an order', inputSchema: { id: z.string() } },
      async (args, extra) => {
        toolCalls.push({ tool: 'lookup_order', arguments: args, meta: extra._meta, rawBody: lastRawBody });
        return { isError: true, content: [{ type: 'text', text: `order ${args.id} not found` }] };
      },
    );
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: options.json,
      onsessioninitialized: (id) => {
        transports.set(id, transport);
      },
    });
    await mcp.connect(transport);
    return transport;
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = req.method === 'POST' ? await readBody(req) : '';
      const body: unknown = raw === '' ? undefined : JSON.parse(raw);
      if (body !== null && typeof body === 'object' && 'method' in body) methods.push(String(body.method));
      lastRawBody = raw;
      const sessionId = req.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
      if (transport === undefined && req.method === 'POST' && isInitializeRequest(body)) transport = await newSession();
      if (transport === undefined) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'No valid session' }, id: null }));
        return;
      }
      await transport.handleRequest(req, res, body);
    })().catch((err: unknown) => {
      res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    toolCalls,
    methods,
    async close() {
      for (const t of transports.values()) await t.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
