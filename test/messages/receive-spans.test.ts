/**
 * Receive spans at the receiver: an A2A agent served by the real @a2a-js/sdk (instrumentA2aRequestHandler) called by
 * the real SDK client, and an MCP server of the real SDK (instrumentMcpServer) called by the real MCP client — both
 * through faultline's instrumentation, on 127.0.0.1 — and an MCP server in another process writing its own spans to a
 * file. The receive span records what arrived, under the sender's trace; both ends agree on a clean call; a message
 * changed on the wire (by a proxy between them) is diagnosed from the two ends, also across processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { instrumentA2aRequestHandler } from '../../instrumentation/agents/a2a-server';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../instrumentation/agents/task';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import { readTraces } from '../../src/traces/read';
import { sortSpans, type TraceRecord } from '../../src/traces/model';
import { setupOtel, type TestOtel } from '../support/otel';
import { toTraces } from '../support/to-traces';
import { rng } from './support/operators';
import { startProxy } from './support/proxy';
import {
  factCheckRun,
  inventoryRun,
  startFactChecker,
  startInventory,
  type A2aAgent,
  type McpTools,
} from './support/workflows';

const ROOT = join(__dirname, '..', '..');

let otel: TestOtel;
let inst: FaultlineInstrumentation;
let a2a: A2aAgent;
let mcp: McpTools;

beforeAll(async () => {
  otel = setupOtel();
  inst = new FaultlineInstrumentation({ captureMessageContent: false });
  inst.enable();
  a2a = await startFactChecker();
  mcp = await startInventory();
});

afterAll(async () => {
  inst.disable();
  await a2a.close();
  await mcp.close();
  await otel.shutdown();
});

function traceOf(traceId: string): TraceRecord {
  const t = toTraces(otel.spans()).find((x) => x.traceId === traceId);
  if (!t) throw new Error(`trace ${traceId} not exported`);
  return t;
}

const byKind = (spans: ReadableSpan[], kind: SpanKind): ReadableSpan[] =>
  spans.filter((s) => s.kind === kind && s.attributes['faultline.message.side'] !== undefined);

describe('A2A: the agent records what it received, under the caller’s trace', () => {
  it('one SendMessage SERVER span per message, same trace as the client span, both ends agreeing on the payload', async () => {
    const label = await factCheckRun(a2a, { seed: 7 }, new Map());
    await otel.waitForSpans(
      (s) => s.filter((x) => x.spanContext().traceId === label.traceId && x.name === 'SendMessage').length >= 3,
    );
    const spans = otel.spans().filter((s) => s.spanContext().traceId === label.traceId);
    const clients = byKind(spans, SpanKind.CLIENT);
    const servers = byKind(spans, SpanKind.SERVER);
    expect(clients).toHaveLength(3);
    expect(servers.map((s) => s.name)).toEqual(['SendMessage', 'SendMessage', 'SendMessage']);
    for (const [i, server] of servers.entries()) {
      const client = clients[i]!;
      expect(server.attributes).toMatchObject({
        'faultline.message.side': 'receive',
        'messaging.system': 'a2a',
        'a2a.method.name': 'SendMessage',
        'gen_ai.agent.name': 'FactChecker',
        // The wire message id names the message at both ends; the payload hashes agree: delivered as sent.
        'faultline.message.id': client.attributes['faultline.message.id'],
        'faultline.message.payload_hash': client.attributes['faultline.message.payload_hash'],
        'faultline.message.shape': client.attributes['faultline.message.shape'],
        // The agent declared a contract for what it accepts: checked, and recorded without values.
        'faultline.message.contract': 'valid',
      });
      expect(server.attributes['faultline.message.payload']).toBeUndefined(); // content capture is off
    }
    const d = await diagnoseTrace(createDiagnoser('rule'), traceOf(label.traceId));
    expect(d.faultType, d.evidence.join('; ')).toBe('none');
  });

  it('a value changed on the wire is named from the two ends, on the sender’s span', async () => {
    const label = await factCheckRun(a2a, { seed: 11, fault: 'semantic', at: 2 }, new Map());
    await otel.waitForSpans(
      (s) => s.filter((x) => x.spanContext().traceId === label.traceId && x.name === 'SendMessage').length >= 3,
    );
    const t = traceOf(label.traceId);
    const d = await diagnoseTrace(createDiagnoser('rule'), t);
    const client = t.spans.filter((s) => s.kind === 'CLIENT' && s.attributes['a2a.method.name'] !== undefined)[1]!;
    expect({ type: d.faultType, span: d.spanId }).toEqual({ type: 'semantic', span: client.spanId });
    const server = t.spans.find(
      (s) => s.kind === 'SERVER' && s.attributes['faultline.message.id'] === client.attributes['faultline.message.id'],
    )!;
    expect(server.attributes['faultline.message.payload_hash']).not.toBe(
      client.attributes['faultline.message.payload_hash'],
    );
  });

  it('passes the handler’s result and errors through unchanged', async () => {
    const boom = new Error('executor exploded');
    const result = { kind: 'message' };
    const handler = {
      getAgentCard: async () => ({ name: 'X' }),
      sendMessage: async (p: unknown, _ctx: unknown) => (p === 'fail' ? Promise.reject(boom) : result),
      async *sendMessageStream(_p: unknown, _ctx: unknown) {
        yield 1;
        yield 2;
      },
      getTask: async () => 'task',
    };
    const wrapped = instrumentA2aRequestHandler(handler);
    expect(await wrapped.sendMessage({ message: { messageId: 'm', parts: [] } }, undefined)).toBe(result);
    await expect(wrapped.sendMessage('fail', undefined)).rejects.toBe(boom);
    const streamed: unknown[] = [];
    for await (const x of wrapped.sendMessageStream({ message: { messageId: 's', parts: [] } }, undefined))
      streamed.push(x);
    expect(streamed).toEqual([1, 2]);
    expect(await (wrapped as typeof handler).getTask()).toBe('task');
    const failed = otel
      .spans()
      .find(
        (s) =>
          s.kind === SpanKind.SERVER &&
          s.status.code === SpanStatusCode.ERROR &&
          s.status.message === 'executor exploded',
      );
    expect(failed?.attributes['error.type']).toBe('Error');
  });
});

describe('MCP: the server records each tools/call it received, as a child of the client’s call', () => {
  it('one tools/call SERVER span per call, parented by the client span through params._meta, hashes agreeing', async () => {
    const label = await inventoryRun(mcp, { seed: 5 }, new Map());
    await otel.waitForSpans(
      (s) => s.filter((x) => x.spanContext().traceId === label.traceId && x.kind === SpanKind.SERVER).length >= 3,
    );
    const spans = otel.spans().filter((s) => s.spanContext().traceId === label.traceId);
    const clients = byKind(spans, SpanKind.CLIENT);
    const servers = byKind(spans, SpanKind.SERVER);
    expect(servers.length).toBe(clients.length);
    for (const server of servers) {
      const client = clients.find((c) => c.spanContext().spanId === server.parentSpanContext?.spanId);
      expect(client, `${server.name} is a child of its client call`).toBeDefined();
      expect(server.name).toBe(`tools/call ${String(client!.attributes['gen_ai.tool.name'])}`);
      expect(server.attributes).toMatchObject({
        'faultline.message.side': 'receive',
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        // The trace context the client's span layer added to _meta is not part of what the application sent.
        'faultline.message.payload_hash': client!.attributes['faultline.message.payload_hash'],
        'faultline.message.contract': 'valid',
      });
    }
    expect((await diagnoseTrace(createDiagnoser('rule'), traceOf(label.traceId))).faultType).toBe('none');
  });

  it('records a tool that reported failure as tool_error, and a contract the arguments break', async () => {
    const client = new McpClient({ name: 'probe', version: '1.0.0' });
    const traceId = await runWorkflow('probe', async (span) => {
      await runAgent('Planner', async () => {
        await client.connect(new StreamableHTTPClientTransport(new URL(`${mcp.url}/mcp`)));
        await client.callTool({ name: 'get_stock', arguments: { sku: 'not a sku' } });
        await client.callTool({ name: 'get_stock', arguments: { sku: 'MUG-120', extra: 1 } }).catch(() => undefined);
        await client.close();
      });
      return span.spanContext().traceId;
    });
    await otel.waitForSpans(
      (s) => s.filter((x) => x.spanContext().traceId === traceId && x.kind === SpanKind.SERVER).length >= 2,
    );
    const servers = byKind(
      otel.spans().filter((s) => s.spanContext().traceId === traceId),
      SpanKind.SERVER,
    );
    expect(servers[0]!.attributes['error.type']).toBe('tool_error');
    expect(servers[1]!.attributes['faultline.message.contract']).toBe('invalid');
    expect(servers[1]!.attributes['faultline.message.contract_issues']).toEqual(['extra:extra']);
  });
});

describe('across processes: the receiver’s spans come from its own process and file', () => {
  let child: ChildProcess;
  let dir: string;
  let url: string;

  beforeAll(async () => {
    const built = join(ROOT, 'dist', 'src', 'index.js');
    const src = join(ROOT, 'instrumentation', 'agents', 'mcp-server.ts');
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(src).mtimeMs) {
      try {
        execFileSync(
          process.execPath,
          [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
          { cwd: ROOT, stdio: 'ignore' },
        );
      } catch {
        /* type errors elsewhere in the tree still emit JavaScript */
      }
    }
    dir = mkdtempSync(join(tmpdir(), 'faultline-xproc-'));
    child = spawn(process.execPath, [join(__dirname, 'support', 'mcp-child.cjs')], {
      env: { PATH: process.env.PATH, FAULTLINE_ROOT: ROOT, FAULTLINE_CHILD_TRACES: join(dir, 'server.jsonl') },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('child did not start')), 20_000);
      child.stdout!.on('data', (c: Buffer) => {
        const m = /listening (\S+)/.exec(c.toString());
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
    });
  }, 60_000);

  afterAll(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('joins the server’s file to the client’s trace and compares the two ends: a changed argument is semantic', async () => {
    const r = rng(3);
    // The proxy changes the SKU of the second reserve call to another valid SKU.
    let calls = 0;
    const proxy = await startProxy(url, (body) => {
      if (typeof body !== 'object' || body === null || Array.isArray(body) || body.method !== 'tools/call')
        return undefined;
      if (++calls !== 2) return undefined;
      const params = body.params as { arguments: { sku: string } };
      return {
        kind: 'rewrite',
        body: {
          ...body,
          params: { ...params, arguments: { ...params.arguments, sku: `CUP-${100 + Math.floor(r() * 800)}` } },
        },
      };
    });
    const client = new McpClient({ name: 'Planner', version: '1.0.0' });
    const order = `ORD-${randomUUID().slice(0, 6)}`;
    const traceId = await runWorkflow('cross-process', async (span) => {
      await runAgent('Planner', async () => {
        await client.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
        await client.callTool({ name: 'reserve', arguments: { sku: 'MUG-120', quantity: 1, order_id: order } });
        await client.callTool({ name: 'reserve', arguments: { sku: 'LMP-204', quantity: 2, order_id: order } });
        await client.close();
      });
      return span.spanContext().traceId;
    });
    await proxy.close();
    child.kill('SIGTERM');
    await new Promise((res) => child.once('exit', res));

    const server: TraceRecord[] = [];
    for await (const t of readTraces([join(dir, 'server.jsonl')])) server.push(t);
    const theirs = server.find((t) => t.traceId === traceId);
    expect(theirs?.spans.map((s) => s.name)).toEqual(['tools/call reserve', 'tools/call reserve']);
    const ours = traceOf(traceId);
    const joined: TraceRecord = { traceId, spans: sortSpans([...ours.spans, ...theirs!.spans]) };
    const d = await diagnoseTrace(createDiagnoser('rule'), joined);
    const second = ours.spans.filter(
      (s) => s.kind === 'CLIENT' && s.attributes['mcp.method.name'] === 'tools/call',
    )[1]!;
    expect({ type: d.faultType, span: d.spanId }).toEqual({ type: 'semantic', span: second.spanId });
    // Each end alone: the client's span shows nothing; the server's, as delivered, passes its contract.
    expect((await diagnoseTrace(createDiagnoser('rule'), ours)).faultType).toBe('none');
  }, 60_000);
});
