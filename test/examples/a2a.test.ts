/**
 * The A2A variant: the evidence handoff travels over real A2A JSON-RPC HTTP (@a2a-js/sdk client and server), traced
 * by faultline's interceptor, with the campaign harness (real OTel SDK + fault injector) around it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectModel, runTask, shopping, type ModelConnection } from '../../examples';
import { a2aEvidenceTransport, startEvidenceInbox, type EvidenceInbox } from '../../examples/a2a/evidence-over-a2a';
import type { EvidenceTransport } from '../../examples/agents/workflow';
import { createHarness, type Harness } from '../../src/campaign/harness';
import { planFor, CONDITIONS } from '../../src/campaign/matrix';

let llm: ModelConnection;
let inbox: EvidenceInbox;
let transport: EvidenceTransport;
let harness: Harness;

beforeAll(async () => {
  harness = await createHarness();
  llm = await connectModel({ env: {} });
  inbox = await startEvidenceInbox();
  transport = await a2aEvidenceTransport(inbox);
});
afterAll(async () => {
  await inbox?.close();
  await llm?.close();
  await harness?.shutdown();
});

async function run(taskId: string, plan?: ReturnType<typeof planFor>) {
  const task = shopping.tasks[0];
  harness.prepare(taskId, { arm: 'none', family: shopping, task, ...(plan ? { plan } : {}) });
  const result = await runTask({
    family: shopping,
    task,
    topology: 'sequential',
    llm,
    taskId,
    evidenceTransport: transport,
  });
  const spans = await harness.take(result.traceId as string);
  return { result, spans };
}

describe('evidence handoff over A2A', () => {
  it('succeeds clean, and the handoff is an A2A invoke_agent CLIENT span at boundary I4', async () => {
    const before = inbox.received.length;
    const { result, spans } = await run('a2a-clean');
    expect(result.outcome.success).toBe(true);
    expect(inbox.received.length).toBe(before + 1);
    expect(inbox.received[before]).toMatchObject({ task_id: 'a2a-clean', sku: 'MUG-BLU-12', observed_quantity: 3 });
    const a2a = spans.find((s) => s.attributes['a2a.method.name'] === 'SendMessage');
    expect(a2a?.name).toBe('invoke_agent Verifier');
    expect(a2a?.attributes['faultline.message.boundary']).toBe('I4');
  });

  it('a non-delivery fault on the A2A call loses the evidence and the task fails', async () => {
    const { result, spans } = await run('a2a-drop', planFor(CONDITIONS['non_delivery@I4']));
    expect(result.outcome.success).toBe(false);
    expect(result.decision?.decision).toBe('reject');
    const a2a = spans.find((s) => s.attributes['a2a.method.name'] === 'SendMessage');
    expect(a2a?.events.some((e) => e.name === 'faultline.fault.injected')).toBe(true);
  });
});
