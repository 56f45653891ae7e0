/**
 * Inter-agent communication faults ("When Messages Go Wrong") on the in-process MessageChannel, on MCP tool calls
 * (real MCP client and server) and on A2A calls (real @a2a-js/sdk client and server).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Client as A2aClient } from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mcpProtocol } from '../../instrumentation/agents/mcp';
import { installInstrumentation } from '../../instrumentation/install';
import { MessageChannel } from '../../instrumentation/agents/channel';
import type { AgentMessage } from '../../instrumentation/types';
import { ATTR_FL_FAULT_NAME, ATTR_FL_FAULT_TYPE } from '../../instrumentation/semconv';
import { startA2aServer, AGENT_NAME, type A2aTestServer } from '../support/a2a-server';
import { startMcpServer, type McpTestServer } from '../support/mcp-server';
import { injectedEvents, setupHarness, type Harness } from './harness';

let h: Harness;
beforeAll(() => {
  h = setupHarness();
});
afterAll(async () => {
  await h.shutdown();
});
beforeEach(() => h.exporter.reset());

// The evidence carrier of the study (§2.4): an I4 handoff from the evidence worker to the verifier.
function evidence(task: string, answer: string, rows: number[][]) {
  return {
    source: 'EvidenceWorker',
    target: 'Verifier',
    boundary: 'I4',
    taskId: task,
    sessionId: `s-${task}`,
    version: 2,
    payload: {
      message_id: `m-${task}`,
      task_id: task,
      state_version: 2,
      evidence_result: {
        candidate_answer: answer,
        evidence_summary: `summary for ${task}`,
        evidence_row_indices: rows.map((_, i) => i),
      },
      visible_evidence: rows,
    },
  };
}
const ROWS = [
  [1, 10],
  [2, 20],
  [3, 30],
  [4, 40],
];
const rule = (
  fault: string,
  match: Record<string, unknown> = { boundary: 'I4' },
  params: Record<string, unknown> = {},
) => ({ rules: [{ fault, match, params }] });
const handoffSpans = async (n: number) =>
  (await h.waitForSpans((s) => s.filter((x) => x.name.startsWith('handoff')).length >= n)).filter((x) =>
    x.name.startsWith('handoff'),
  );

describe('in-process channel', () => {
  const channel = new MessageChannel({ name: 'crew' });

  it('non_delivery at I2 drops the action request; an I4 rule leaves I2 alone', async () => {
    const req = {
      source: 'Navigator',
      target: 'Worker',
      boundary: 'I2',
      payload: { action: 'add_to_cart', quantity: 2 },
    };
    const none = await h.task(rule('non_delivery', { boundary: 'I2' }), () => channel.send(req));
    expect(none.result).toEqual([]);
    const untouched = await h.task(rule('non_delivery', { boundary: 'I4' }), () => channel.send(req));
    expect(untouched.result).toHaveLength(1);
    const spans = await handoffSpans(2);
    const faulted = spans.filter((s) => s.attributes[ATTR_FL_FAULT_NAME] === 'non_delivery');
    expect(faulted).toHaveLength(1);
    expect(faulted[0].attributes).toMatchObject({
      [ATTR_FL_FAULT_TYPE]: 'non_delivery',
      'faultline.fault.category': 'communication',
      'faultline.fault.mode': 'message',
      'faultline.message.delivered_count': 0,
    });
  });

  it('deadline waits, then delivers nothing; delay delivers late; duplicate delivers twice', async () => {
    let t0 = Date.now();
    expect(
      (
        await h.task(rule('deadline', { boundary: 'I4' }, { deadlineMs: 150 }), () =>
          channel.send(evidence('d1', 'a', ROWS)),
        )
      ).result,
    ).toEqual([]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    t0 = Date.now();
    expect(
      (await h.task(rule('delay', { boundary: 'I4' }, { delayMs: 120 }), () => channel.send(evidence('d2', 'a', ROWS))))
        .result,
    ).toHaveLength(1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(110);
    const dup = await h.task(rule('duplicate'), () => channel.send(evidence('d3', 'a', ROWS)));
    expect(dup.result).toHaveLength(2);
    expect(dup.result[0].payload).toEqual(dup.result[1].payload);
  });

  it('valid_partial: the evidence message still parses but lacks the required fields', async () => {
    const { result } = await h.task(rule('valid_partial'), () => channel.send(evidence('vp', '42 units', ROWS)));
    const payload = JSON.parse(JSON.stringify(result[0].payload)) as Record<string, unknown>;
    expect(payload).toEqual({ evidence_result: { candidate_answer: '42 units' }, visible_evidence: ROWS.slice(0, 2) });
    expect(payload).not.toHaveProperty('task_id');
    expect(result[0].id).toBe((await handoffSpans(1))[0].attributes['faultline.message.id']);
  });

  it('semantic_corruption swaps in another task’s evidence, keeping the outer binding; with no donor it is a no-op', async () => {
    const first = await h.task(rule('semantic_corruption', { boundary: 'no-such-boundary' }), () =>
      channel.send(evidence('donor-1', 'the donor answer', [[9, 9]])),
    );
    expect(first.result).toHaveLength(1);
    const { result, taskId } = await h.task(rule('semantic_corruption'), () =>
      channel.send(evidence('victim-1', 'the right answer', ROWS)),
    );
    const p = result[0].payload as ReturnType<typeof evidence>['payload'];
    expect(p.evidence_result.candidate_answer).toBe('the donor answer');
    expect(p.task_id).toBe('victim-1');
    expect(p.message_id).toBe('m-victim-1');
    expect(h.injector.triggerReport(taskId).tasks[0].triggered).toBe(true);
    // A boundary no other task used: no donor, nothing changes, reported as a no-op.
    const lonely = { ...evidence('victim-2', 'x', ROWS), boundary: 'lonely' };
    const noop = await h.task(rule('semantic_corruption', { boundary: 'lonely' }), () => channel.send(lonely));
    expect(noop.result[0].payload).toEqual(lonely.payload);
    expect(h.injector.triggerReport(noop.taskId).tasks[0].rules[0]).toMatchObject({
      fires: 1,
      noops: 1,
      triggered: false,
    });
  });

  it('identity_corruption swaps sku/product_id for a donor’s and rebuilds the evidence mirror', async () => {
    const shop = (task: string, sku: string) => {
      const payload: Record<string, unknown> = {
        task_id: task,
        product_title: 'Mug',
        product_id: `p-${sku}`,
        sku,
        requested_quantity: 2,
        observed_quantity: 2,
        cart_verified: true,
      };
      payload.evidence = JSON.stringify(payload);
      return { source: 'EvidenceWorker', target: 'Verifier', boundary: 'evidence_handoff', taskId: task, payload };
    };
    await h.task(undefined, () => channel.send(shop('shop-a', 'SKU-A')));
    const { result } = await h.task(rule('identity_corruption', { boundary: 'evidence_handoff' }), () =>
      channel.send(shop('shop-b', 'SKU-B')),
    );
    const p = result[0].payload as Record<string, unknown>;
    expect(p).toMatchObject({ task_id: 'shop-b', sku: 'SKU-A', product_id: 'p-SKU-A' });
    expect(JSON.parse(p.evidence as string)).toMatchObject({ sku: 'SKU-A', task_id: 'shop-b' }); // inner = outer
  });

  it('stale_replay delivers another task’s whole envelope, or the previous message to the same target', async () => {
    await h.task(undefined, () => channel.send(evidence('old-task', 'old answer', ROWS)));
    const { result } = await h.task(rule('stale_replay'), () => channel.send(evidence('new-task', 'new answer', ROWS)));
    expect((result[0].payload as { task_id: string }).task_id).toBe('old-task');
    expect(result[0].taskId).toBe('old-task');
    const prev = await h.task(rule('stale_replay', { boundary: 'I4', position: 2 }, { from: 'previous' }), async () => {
      await channel.send(evidence('same', 'v1', ROWS));
      return channel.send({ ...evidence('same', 'v2', ROWS) });
    });
    expect(
      (prev.result[0].payload as { evidence_result: { candidate_answer: string } }).evidence_result.candidate_answer,
    ).toBe('v1');
  });

  it('reordering delivers the newer message, then the older one again', async () => {
    const { result } = await h.task(rule('reordering', { boundary: 'I4', position: 2 }), async () => {
      await channel.send(evidence('ro', 'v1', ROWS));
      return channel.send(evidence('ro', 'v2', ROWS));
    });
    expect(
      result.map(
        (m) => (m.payload as { evidence_result: { candidate_answer: string } }).evidence_result.candidate_answer,
      ),
    ).toEqual(['v2', 'v1']);
  });

  it('key_drift renames contract keys; type_drift changes value types', async () => {
    const k = await h.task(rule('key_drift'), () => channel.send(evidence('kd', 'a', ROWS)));
    const kp = k.result[0].payload as Record<string, Record<string, unknown>>;
    expect(kp).toHaveProperty('task_binding', 'kd');
    expect(kp).not.toHaveProperty('task_id');
    expect(kp.evidence_result).toHaveProperty('candidate_response', 'a');
    const t = await h.task(rule('type_drift'), () => channel.send(evidence('td', 'a', ROWS)));
    const tp = t.result[0].payload as {
      state_version: unknown;
      evidence_result: { candidate_answer: unknown; evidence_row_indices: unknown };
    };
    expect(tp.state_version).toBe('2');
    expect(tp.evidence_result.candidate_answer).toEqual(['a']);
    expect(tp.evidence_result.evidence_row_indices).toEqual(['0', '1', '2', '3']);
  });

  it('records sizes and hashes of original and delivered payloads, never the content when capture is off', async () => {
    await h.task(rule('valid_partial'), () => channel.send(evidence('rec', 'secret answer', ROWS)));
    const [span] = await handoffSpans(1);
    const [ev] = injectedEvents(span);
    expect(ev.attributes).toMatchObject({
      'faultline.fault.name': 'valid_partial',
      'faultline.fault.noop': false,
      'faultline.fault.call_index': 1,
    });
    expect(ev.attributes?.['faultline.fault.original.bytes']).toBeGreaterThan(
      ev.attributes?.['faultline.fault.delivered.bytes'] as number,
    );
    expect(JSON.stringify(span.attributes) + JSON.stringify(span.events)).not.toContain('secret answer');
  });
});

describe('A2A calls (real client and server)', () => {
  let server: A2aTestServer;
  let client: A2aClient;
  let sdk: typeof import('@a2a-js/sdk', { with: { 'resolution-mode': 'import' } });
  const routed = { serviceParameters: { 'x-faultline-agent': AGENT_NAME, 'x-faultline-boundary': 'I2' } };

  beforeAll(async () => {
    server = await startA2aServer();
    sdk = await import('@a2a-js/sdk');
    const { ClientFactory } = await import('@a2a-js/sdk/client');
    client = await new ClientFactory().createFromUrl(server.baseUrl);
  });
  afterAll(async () => {
    await server.close();
  });
  const send = (text: string) =>
    client.sendMessage(
      sdk.SendMessageRequest.fromJSON({
        message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
      }),
      routed,
    );

  it('non_delivery at I2 on invoke_agent: the agent never gets the message', async () => {
    const before = server.requests.length;
    const err = await h
      .task(
        { rules: [{ fault: 'non_delivery', match: { operation: 'invoke_agent', agent: AGENT_NAME, boundary: 'I2' } }] },
        () => send('quick score please'),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(server.requests.length).toBe(before);
  });

  it('delay at I2: the message arrives late, unchanged', async () => {
    const t0 = Date.now();
    const { result } = await h.task(
      { rules: [{ fault: 'delay', match: { agent: AGENT_NAME }, params: { delayMs: 150 } }] },
      () => send('quick score please'),
    );
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    expect(result).toBeDefined();
    const spans = await h.waitForSpans((s) => s.some((x) => x.attributes[ATTR_FL_FAULT_NAME] === 'delay'));
    expect(spans.find((x) => x.attributes[ATTR_FL_FAULT_NAME] === 'delay')?.attributes['faultline.fault.type']).toBe(
      'delay',
    );
  });
});

describe('MCP tool calls (real client and server)', () => {
  let server: McpTestServer;
  let client: Client;
  const args = { question: 'Score the title?', context: 'A title about AI', coworker: 'Scorer' };
  const toolRule = (fault: string, params: Record<string, unknown> = {}) => ({
    rules: [{ fault, match: { operation: 'execute_tool', tool: 'ask_question_to_coworker' }, params }],
  });

  let layer: { uninstall(): void };
  beforeAll(async () => {
    // The span layer with the MCP module only: in the default protocol list the A2A module currently claims every
    // JSON POST first (its `matches` cannot see the body), which hides MCP calls. This block tests the fault step on
    // MCP exchanges; it runs last in the file because uninstalling leaves no span layer behind.
    layer = installInstrumentation({
      tracer: () => trace.getTracer('faultline'),
      captureContent: () => false,
      protocols: [mcpProtocol],
      steps: [h.injector.httpStep],
    });
    server = await startMcpServer({ json: true });
    client = new Client({ name: 'crew-manager', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(server.url));
  });
  afterAll(async () => {
    await client.close();
    await server.close();
    layer.uninstall();
  });

  it('non_delivery: the tool call never reaches the server; the client sees a connection error', async () => {
    const before = server.toolCalls.length;
    const err = await h
      .task(toolRule('non_delivery'), () => client.callTool({ name: 'ask_question_to_coworker', arguments: args }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(server.toolCalls.length).toBe(before);
  });

  it('duplicate: the server executes the call twice, the client gets one result', async () => {
    const before = server.toolCalls.length;
    const { result } = await h.task(toolRule('duplicate'), () =>
      client.callTool({ name: 'ask_question_to_coworker', arguments: args }),
    );
    expect(result.isError).toBeFalsy();
    // The duplicate goes out after the call the client waits for: poll for it with a deadline.
    const deadline = Date.now() + 5000;
    while (server.toolCalls.length - before < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(server.toolCalls.length - before).toBe(2);
  });

  it('valid_partial removes a required argument: the call still parses, the server rejects it', async () => {
    const before = server.toolCalls.length;
    const { result } = await h.task(toolRule('valid_partial', { fields: ['context'] }), () =>
      client.callTool({ name: 'ask_question_to_coworker', arguments: args }),
    );
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toMatch(/Invalid arguments[\s\S]*context/);
    expect(server.toolCalls.length).toBe(before);
    const spans = await h.waitForSpans((s) => s.some((x) => x.attributes[ATTR_FL_FAULT_NAME] === 'valid_partial'));
    expect(spans.some((x) => x.attributes[ATTR_FL_FAULT_NAME] === 'valid_partial')).toBe(true);
  });
});

export type { AgentMessage };
