/**
 * MCP and A2A through the interceptor's built-in protocol list, as `register` installs it. Both speak JSON-RPC over
 * POST at any path, so both modules `match` every POST and only the body tells them apart: the interceptor must offer
 * a request to the next matching module when one's `start` declines it (protocols.ts: "the first whose `matches` and
 * `start` accept a request wins").
 */
import { trace } from '@opentelemetry/api';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, expect, it } from 'vitest';
import { installInstrumentation } from '../../instrumentation/install';
import { startMcpServer } from '../support/mcp-server';
import { setupOtel } from './otel';

const otel = setupOtel();
const installed = installInstrumentation({ tracer: () => trace.getTracer('faultline'), captureContent: () => false });
afterAll(async () => {
  installed.uninstall();
  await otel.shutdown();
});

it('gives a tools/call POST to the MCP module even though the A2A module is asked first', async () => {
  const server = await startMcpServer({ json: true });
  const client = new Client({ name: 'crew-manager', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(server.url));
    await client.callTool({ name: 'score_title', arguments: { title: 'The impact of AI in the future of work' } });
    const spans = await otel.waitForSpans((s) => s.length > 0, 2000);
    expect(spans.map((s) => s.name)).toEqual(['execute_tool score_title']);
  } finally {
    await client.close();
    await server.close();
  }
});
