/**
 * Channel guards on the in-process message channel, faults from the real fault step ("When Messages Go Wrong"
 * operators), guards per task from the campaign presets: evidence guards (receiver contract + one guarded readback)
 * and execution guards (action ledger: duplicate suppression, resubmission).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MessageChannel } from '../../instrumentation/agents/channel';
import type { AgentMessage } from '../../instrumentation/types';
import { detectSpans } from '../../detectors/from-span';
import { guard, guardPreset, type GuardConfig } from '../../detectors/guards/index';
import type { MessageContract } from '../../detectors/types';
import { guardEvents, setupGuardHarness, toRecord, type GuardHarness } from './harness';

/** The RQ4 shopping evidence envelope (fault-catalog.md §2.4) and the receiver contract of §2.10. */
function evidencePayload(
  task: string,
  sku = 'B00P7N0320',
  productId = 'prod-7731',
  observed = 2,
): Record<string, unknown> {
  const p: Record<string, unknown> = {
    task_id: task,
    product_title: 'Anker PowerCore 10000',
    product_id: productId,
    sku,
    requested_quantity: 2,
    observed_quantity: observed,
    cart_verified: true,
  };
  p.evidence = JSON.stringify(p);
  return p;
}

const contract: MessageContract = {
  name: 'shopping-evidence',
  match: { boundary: 'I4' },
  schema: z
    .object({
      task_id: z.string(),
      sku: z.string(),
      product_id: z.string(),
      observed_quantity: z.number().int().min(0),
      cart_verified: z.boolean(),
      evidence: z.string(),
    })
    .loose(),
  requiredEvidence: {
    task_id: 'string',
    product_title: 'string',
    product_id: 'string',
    sku: 'string',
    evidence: 'string',
    requested_quantity: 'integer',
    observed_quantity: 'integer',
    cart_verified: 'boolean',
  },
  evidenceMirror: 'evidence',
  identity: ['sku', 'product_id'],
};

let h: GuardHarness;
let channel: MessageChannel;
const received: AgentMessage[] = [];
const reacquired: Array<{ id: string; findings: string[] }> = [];
let executions = 0;
let receiverTask = '';

beforeAll(() => {
  h = setupGuardHarness({
    contracts: [contract],
    sleep: async () => {},
    // The guarded readback: re-observe the cart and wrap it as a fresh envelope (version 3, EnvironmentReadback).
    reacquire: (m, findings) => {
      reacquired.push({ id: m.id, findings: findings.map((f) => f.faultType) });
      // The readback observes the receiver's own task (the delivered message may be a foreign replay).
      const task = receiverTask;
      return {
        ...m,
        id: `${m.id}-readback`,
        source: 'EnvironmentReadback',
        taskId: task,
        sessionId: `s-${task}`,
        version: 3,
        payload: evidencePayload(task),
      };
    },
  });
  channel = new MessageChannel({ name: 'shop' });
  channel.on('Verifier', (m) => void received.push(m));
  channel.on('Worker', () => void executions++);
});

afterAll(() => h.shutdown());

function sendEvidence(taskId: string, payload = evidencePayload(taskId)) {
  receiverTask = taskId;
  return channel.send({
    source: 'EvidenceWorker',
    target: 'Verifier',
    boundary: 'I4',
    taskId,
    sessionId: `s-${taskId}`,
    version: 2,
    payload,
  });
}

function sendAction(taskId: string, actionId: string) {
  return channel.send({
    source: 'Navigator',
    target: 'Worker',
    boundary: 'I2',
    taskId,
    sessionId: `s-${taskId}`,
    payload: { action_id: actionId, operation: 'add_to_cart', quantity: 2 },
  });
}

const arms: Record<string, GuardConfig> = {
  none: guardPreset('none'),
  execution: guardPreset('execution'),
  evidence: guardPreset('evidence'),
  both: guardPreset('both'),
};
let arm = 'none';
beforeAll(() => {
  h.config = () => arms[arm];
});

describe('evidence guards (receiver contract with guarded readback)', () => {
  it('an evidence message missing fields triggers one reacquisition and the receiver gets complete evidence', async () => {
    arm = 'evidence';
    received.length = 0;
    reacquired.length = 0;
    await h.task({ rules: [{ fault: 'valid_partial', match: { boundary: 'I4' } }] }, () => sendEvidence('t-partial'));
    expect(reacquired).toHaveLength(1);
    expect(reacquired[0]!.findings).toContain('partial');
    expect(received).toHaveLength(1);
    expect(received[0]!.source).toBe('EnvironmentReadback');
    expect(Object.keys(received[0]!.payload as object).sort()).toEqual(Object.keys(evidencePayload('x')).sort());
    const spans = await h.waitForSpans((s) => s.some((x) => guardEvents(x).some((e) => e.action === 'accept')));
    const handoff = spans.find((x) => guardEvents(x).some((e) => e.action === 'accept'))!;
    expect(guardEvents(handoff).map((e) => e.action)).toEqual(['reacquire', 'accept']);
  });

  it('without the evidence arm the partial message reaches the receiver (silently, as in the study)', async () => {
    arm = 'none';
    received.length = 0;
    reacquired.length = 0;
    await h.task({ rules: [{ fault: 'valid_partial', match: { boundary: 'I4' } }] }, () =>
      sendEvidence('t-partial-unguarded'),
    );
    expect(reacquired).toHaveLength(0);
    expect(received).toHaveLength(1);
    expect((received[0]!.payload as Record<string, unknown>).sku).toBeUndefined();
  });

  it('a stale replay from another task is caught by the binding and replaced by the readback', async () => {
    arm = 'evidence';
    // A donor: another task's evidence at the same boundary, then the replay in this task.
    await h.task(undefined, () => sendEvidence('t-donor', evidencePayload('t-donor', 'B0194WDVHI', 'prod-1204')));
    received.length = 0;
    reacquired.length = 0;
    await h.task({ rules: [{ fault: 'stale_replay', match: { boundary: 'I4' } }] }, () => sendEvidence('t-replayed'));
    expect(reacquired).toHaveLength(1);
    expect(reacquired[0]!.findings).toContain('stale');
    expect(received.map((m) => m.taskId)).toEqual(['t-replayed']);
  });

  it('a readback that fails again is dropped (at most one readback)', async () => {
    arm = 'evidence';
    received.length = 0;
    reacquired.length = 0;
    // Persistent exposure: the recovery delivery crosses the faulty boundary too.
    await h.task({ rules: [{ fault: 'valid_partial', strategy: 'persistent', match: { boundary: 'I4' } }] }, () =>
      sendEvidence('t-twice'),
    );
    expect(reacquired).toHaveLength(1);
    expect(received).toHaveLength(0);
  });
});

describe('execution guards (action ledger)', () => {
  it('a duplicated action executes once', async () => {
    arm = 'execution';
    executions = 0;
    const { result } = await h.task({ rules: [{ fault: 'duplicate', match: { boundary: 'I2' } }] }, () =>
      sendAction('t-dup', 'act-1'),
    );
    expect(result).toHaveLength(1);
    expect(executions).toBe(1);
    const spans = await h.waitForSpans((s) =>
      s.some((x) => guardEvents(x).some((e) => e.action === 'duplicate_suppressed')),
    );
    expect(spans.some((x) => guardEvents(x).some((e) => e.action === 'duplicate_suppressed'))).toBe(true);
  });

  it('unguarded, the duplicate executes twice', async () => {
    arm = 'none';
    executions = 0;
    await h.task({ rules: [{ fault: 'duplicate', match: { boundary: 'I2' } }] }, () =>
      sendAction('t-dup-unguarded', 'act-2'),
    );
    expect(executions).toBe(2);
  });

  it('an action request that was not delivered is resubmitted', async () => {
    arm = 'both';
    executions = 0;
    const { result } = await h.task({ rules: [{ fault: 'non_delivery', match: { boundary: 'I2' } }] }, () =>
      sendAction('t-lost', 'act-3'),
    );
    expect(result).toHaveLength(1);
    expect(executions).toBe(1);
    const spans = await h.waitForSpans((s) => s.some((x) => guardEvents(x).some((e) => e.action === 'resubmit')));
    expect(spans.flatMap((x) => guardEvents(x)).filter((e) => e.action === 'resubmit')).toHaveLength(1);
  });

  it('the wrapper ledger executes an action once and replays the stored receipt', async () => {
    let runs = 0;
    const addToCart = guard(async (id: string, qty: number) => ({ receipt: `cart-${id}-${qty}`, run: ++runs }), {
      route: 'cart',
      ledger: { key: (id) => id, binding: (_id, qty) => String(qty) },
    });
    const a = await addToCart('act-9', 2);
    const b = await addToCart('act-9', 2);
    expect(runs).toBe(1);
    expect(b).toEqual(a);
  });
});

describe('online detection on deliveries', () => {
  it('findings are recorded as faultline.detection events and read back offline without content', async () => {
    arm = 'none';
    const taskId = 't-online';
    await h.task({ rules: [{ fault: 'duplicate', match: { boundary: 'I2' } }] }, () => sendAction(taskId, 'act-4'));
    const spans = await h.waitForSpans((s) =>
      s.some(
        (x) =>
          x.attributes['faultline.message.task_id'] === taskId &&
          x.events.some((e) => e.name === 'faultline.detection'),
      ),
    );
    const handoff = spans.find((x) => x.attributes['faultline.message.task_id'] === taskId)!;
    const trace = {
      traceId: handoff.spanContext().traceId,
      spans: spans.filter((s) => s.spanContext().traceId === handoff.spanContext().traceId).map(toRecord),
    };
    const found = detectSpans(trace).get(handoff.spanContext().spanId) ?? [];
    expect(found.map((f) => f.faultType)).toContain('duplicate');
  });
});
