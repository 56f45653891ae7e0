/**
 * Inter-agent message faults, diagnosed from traces made by the real stack: a MessageChannel workflow (plan → action →
 * observation → two evidence handoffs → judgment) under faultline's instrumentation and the real injector's channel
 * step, exported by the real OTel SDK. Each communication fault of the catalog is injected at I4 (or I2), the trace is
 * diagnosed by the rule diagnoser (offline detectors included) with the ground truth stripped, and the diagnosis must
 * name the fault's type at the faulted handoff — identically with and without the ground truth. Both ways traces
 * reach a diagnoser are covered: content-free spans with online detection, and captured content.
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageChannel } from '../../instrumentation/agents/channel';
import { runWorkflow } from '../../instrumentation/agents/task';
import { EVENT_FL_FAULT_INJECTED } from '../../instrumentation/semconv';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import type { FaultPlanInput } from '../../src/plan/schema';
import type { TraceRecord } from '../../src/traces/model';
import { setupStack, type Stack } from './support/stack';
import { toTraces } from '../support/to-traces';

interface Product {
  title: string;
  id: string;
  sku: string;
  quantity: number;
}
const MUG: Product = { title: 'Blue Ceramic Mug', id: 'P-1001', sku: 'MUG-BLU-12', quantity: 3 };
const LAMP: Product = { title: 'Brass Desk Lamp', id: 'P-2040', sku: 'LMP-BRS-01', quantity: 1 };

/** The evidence carrier of the example workflows: the findings, provenance, and a JSON mirror of the findings. */
function evidencePayload(p: Product, observed: number) {
  const fields = {
    product_title: p.title,
    product_id: p.id,
    sku: p.sku,
    requested_quantity: p.quantity,
    observed_quantity: observed,
    cart_verified: observed === p.quantity,
  };
  return { ...fields, source: 'Worker', evidence: JSON.stringify(fields) };
}

let runs = 0;

/** One task of a shopping workflow; every handoff goes through `channel`. Returns the trace id. */
async function shoppingTask(channel: MessageChannel, product: Product): Promise<string> {
  const taskId = `shop-${process.pid}-${++runs}`;
  const sessionId = `session-${taskId}`;
  const envelope = (
    source: string,
    target: string,
    boundary: string,
    version: number,
    payload: Record<string, unknown>,
  ) => ({
    source,
    target,
    boundary,
    taskId,
    sessionId,
    version,
    payload: { task_id: taskId, session_id: sessionId, ...payload },
  });
  // The OTel JS SDK stamps a span's start with Date.now() (whole milliseconds), and the normalised model orders spans
  // by start: an agent's few milliseconds of work between handoffs keep their causal order visible, as in real runs.
  const send: typeof channel.send = async (m) => {
    await new Promise((r) => setTimeout(r, 2));
    return channel.send(m);
  };
  return runWorkflow(
    'shopping-sequential',
    async (span) => {
      await send(
        envelope('Planner', 'Worker', 'I1', 1, {
          plan: `add ${product.quantity} × ${product.sku} to the cart, then verify`,
        }),
      );
      const action = await send(
        envelope('Worker', 'Executor', 'I2', 1, {
          action_id: `${taskId}:1`,
          operation: 'add_to_cart',
          sku: product.sku,
          quantity: product.quantity,
        }),
      );
      for (const _ of action)
        await send(
          envelope('Executor', 'Worker', 'I3', 1, {
            action_id: `${taskId}:1`,
            ok: true,
            cart_quantity: product.quantity,
          }),
        );
      // An interim report, then the verified evidence: two I4 handoffs on the same edge.
      await send(envelope('Worker', 'Verifier', 'I4', 1, evidencePayload(product, product.quantity - 1)));
      const got = await send(envelope('Worker', 'Verifier', 'I4', 2, evidencePayload(product, product.quantity)));
      await send(envelope('Verifier', 'Decision', 'judgment', 1, { verdict: got.length > 0 ? 'accept' : 'reject' }));
      return span.spanContext().traceId;
    },
    { taskId },
  );
}

const rule = (fault: string, match: Record<string, unknown>, params: Record<string, unknown> = {}): FaultPlanInput => ({
  rules: [{ fault, match, params }],
});

/** Every communication fault of the catalog, with the fault type the diagnosis must name. */
const CASES: { name: string; plan: FaultPlanInput; expected: string }[] = [
  { name: 'valid_partial', plan: rule('valid_partial', { boundary: 'I4' }), expected: 'partial' },
  { name: 'semantic_corruption', plan: rule('semantic_corruption', { boundary: 'I4' }), expected: 'semantic' },
  { name: 'identity_corruption', plan: rule('identity_corruption', { boundary: 'I4' }), expected: 'semantic' },
  { name: 'stale_replay (another task)', plan: rule('stale_replay', { boundary: 'I4' }), expected: 'stale' },
  {
    name: 'stale_replay (previous)',
    plan: rule('stale_replay', { boundary: 'I4', position: 2 }, { from: 'previous' }),
    expected: 'stale',
  },
  { name: 'reordering', plan: rule('reordering', { boundary: 'I4', position: 2 }), expected: 'stale' },
  { name: 'key_drift', plan: rule('key_drift', { boundary: 'I4' }), expected: 'schema' },
  { name: 'type_drift', plan: rule('type_drift', { boundary: 'I4' }), expected: 'schema' },
  { name: 'duplicate', plan: rule('duplicate', { boundary: 'I2' }), expected: 'duplicate' },
  { name: 'non_delivery', plan: rule('non_delivery', { boundary: 'I4' }), expected: 'non_delivery' },
  { name: 'deadline', plan: rule('deadline', { boundary: 'I4' }, { deadlineMs: 300 }), expected: 'timeout' },
];

function isInjected(s: { events: readonly { name: string }[] }): boolean {
  return s.events.some((e) => e.name === EVENT_FL_FAULT_INJECTED);
}

describe.each([
  { mode: 'content-free spans + online detection', captureMessageContent: false, onlineDetection: true },
  { mode: 'captured content + offline detectors', captureMessageContent: true, onlineDetection: false },
])('message faults through the real channel and injector ($mode)', (options) => {
  let stack: Stack;
  let channel: MessageChannel;
  const traces = new Map<string, TraceRecord>();
  const runsByCase = new Map<string, string>();
  let cleanTrace = '';

  beforeAll(async () => {
    stack = setupStack(options);
    channel = new MessageChannel({ name: 'workflow' });
    // A donor task first: stale replays and semantic / identity corruption take another task's message at the boundary.
    stack.plan = rule('delay', { boundary: 'no-such-boundary' });
    await shoppingTask(channel, LAMP);
    stack.plan = undefined;
    cleanTrace = await shoppingTask(channel, MUG);
    for (const c of CASES) {
      stack.plan = c.plan;
      runsByCase.set(c.name, await shoppingTask(channel, MUG));
    }
    stack.plan = undefined;
    const ids = new Set([cleanTrace, ...runsByCase.values()]);
    const done = (spans: ReadableSpan[]) =>
      [...ids].every((id) =>
        spans.some((s) => s.spanContext().traceId === id && s.name === 'invoke_workflow shopping-sequential'),
      );
    const spans = await stack.waitForSpans(done, 10_000);
    for (const t of toTraces(spans)) traces.set(t.traceId, t);
  }, 60_000);

  afterAll(async () => {
    await stack.shutdown();
  });

  it.each(CASES)(
    '$name is diagnosed as $expected at the faulted handoff, identically with and without ground truth',
    async (c) => {
      const trace = traces.get(runsByCase.get(c.name)!);
      expect(trace, 'trace exported').toBeDefined();
      const injected = trace!.spans.filter(isInjected);
      expect(injected, 'the fault fired once').toHaveLength(1);
      const diagnoser = createDiagnoser('rule');
      const stripped = await diagnoseTrace(diagnoser, trace!);
      const withTruth = await diagnoser.diagnose(trace!);
      expect(withTruth).toEqual(stripped);
      expect({ type: stripped.faultType, span: stripped.spanId, kind: stripped.stepKind }).toEqual({
        type: c.expected,
        span: injected[0]!.spanId,
        kind: 'message',
      });
    },
  );

  it('a clean run of the same workflow is diagnosed as none, and its handoffs carry no delivered-copy facts', async () => {
    const trace = traces.get(cleanTrace)!;
    expect(trace.spans.some(isInjected)).toBe(false);
    const d = await diagnoseTrace(createDiagnoser('rule'), trace);
    expect(d.faultType).toBe('none');
    const handoffs = trace.spans.filter((s) => s.name.startsWith('handoff '));
    expect(handoffs).toHaveLength(6);
    for (const h of handoffs) {
      expect(Object.keys(h.attributes).filter((k) => k.startsWith('faultline.message.delivered_'))).toEqual([
        'faultline.message.delivered_count',
        'faultline.message.delivered_hashes',
      ]);
    }
  });

  it('records what was delivered: keys and content-free changes always, payloads only with content capture', () => {
    const partial = traces.get(runsByCase.get('valid_partial')!)!.spans.find(isInjected)!;
    const a = partial.attributes;
    expect(a['faultline.message.delivered_keys']).toEqual(
      ['cart_verified', 'requested_quantity', 'product_title', 'session_id', 'source', 'task_id'].sort(),
    );
    expect(a['faultline.message.delivered_changes']).toEqual([
      'removed:evidence',
      'removed:observed_quantity',
      'removed:product_id',
      'removed:sku',
    ]);
    if (options.captureMessageContent) {
      const [payload] = a['faultline.message.delivered_payloads'] as string[];
      expect(JSON.parse(payload!)).not.toHaveProperty('sku');
    } else {
      expect(a['faultline.message.delivered_payloads']).toBeUndefined();
      expect(JSON.stringify(a)).not.toContain(MUG.sku); // content-free: key paths only, never values
    }
    const stale = traces.get(runsByCase.get('stale_replay (another task)')!)!.spans.find(isInjected)!.attributes;
    expect(stale['faultline.message.delivered_task_ids']).toEqual([
      expect.not.stringMatching(String(stale['faultline.message.task_id'])),
    ]);
  });
});
