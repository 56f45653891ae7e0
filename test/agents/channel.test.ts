import { createHash } from 'node:crypto';
import { DiagLogLevel, SpanKind, SpanStatusCode, diag, trace } from '@opentelemetry/api';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MessageChannel, configureChannels } from '../../instrumentation/agents/channel';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { canonicalJson, payloadHash } from '../../instrumentation/agents/message';
import { withTask } from '../../instrumentation/agents/task';
import type { AgentMessage, DeliverStep, DeliveryContext } from '../../instrumentation/types';
import { FaultlineError } from '../../src/errors';
import { attrs, byName, parentOf, setupOtel } from './otel';

const otel = setupOtel();
const diagErrors: string[] = [];
diag.setLogger(
  {
    error: (...args: unknown[]) => diagErrors.push(args.map(String).join(' ')),
    warn: () => undefined,
    info: () => undefined,
    debug: () => undefined,
    verbose: () => undefined,
  },
  DiagLogLevel.WARN,
);
beforeEach(() => {
  diagErrors.length = 0;
  configureChannels({});
});
afterEach(() => otel.exporter.reset());
afterAll(() => otel.shutdown());

/** An I4 evidence handoff shaped like the "When Messages Go Wrong" carrier. */
function evidence(overrides: Partial<AgentMessage> = {}): AgentMessage<Record<string, unknown>> {
  return {
    id: 'msg-41-009',
    source: 'navigator',
    target: 'judge',
    boundary: 'I4',
    taskId: 'admin-41',
    sessionId: 'sess-9',
    version: 3,
    payload: { sku: 'B07-XL', evidence_result: { rows: [3, 5], total: 12.5 }, candidate_answer: 'Kings Cross' },
    ...overrides,
  } as AgentMessage<Record<string, unknown>>;
}

function sha16(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** The content-free shape of evidence()'s payload: key paths, kinds, formats and sizes, no values. */
const SHAPE = [
  '$=obj:3',
  'sku=str:ident:6',
  'evidence_result=obj:2',
  'evidence_result.rows=arr:2',
  'evidence_result.rows[]=num:int',
  'evidence_result.total=num:dec',
  'candidate_answer=str:text:11',
];

const handoffs = (): ReturnType<typeof otel.spans> => otel.spans().filter((s) => s.name.startsWith('handoff '));

const duplicate: DeliverStep = async (m, _ctx, next) => [...(await next(m)), ...(await next(m))];
const drop: DeliverStep = async () => [];

describe('MessageChannel without steps', () => {
  it('delivers the message once, unchanged, and records a handoff span', async () => {
    const received: AgentMessage[] = [];
    const channel = new MessageChannel().on('judge', (m) => void received.push(m));
    const sent = evidence();
    const delivered = await channel.send(sent);

    expect(delivered).toHaveLength(1);
    expect(received).toEqual(delivered);
    expect(delivered[0].payload).toBe(sent.payload); // same object: no copy, no re-serialisation
    expect(delivered[0]).toMatchObject({ ...sent, sentAt: expect.any(Number) });

    const span = byName(otel.spans(), 'handoff judge');
    expect(span.kind).toBe(SpanKind.INTERNAL);
    const canonical = '{"candidate_answer":"Kings Cross","evidence_result":{"rows":[3,5],"total":12.5},"sku":"B07-XL"}';
    const hash = sha16(canonical);
    expect(attrs(span)).toEqual({
      'faultline.message.id': 'msg-41-009',
      'faultline.message.source': 'navigator',
      'faultline.message.target': 'judge',
      'faultline.message.boundary': 'I4',
      'faultline.message.task_id': 'admin-41',
      'faultline.message.session_id': 'sess-9',
      'faultline.message.version': 3,
      'faultline.message.keys': ['candidate_answer', 'evidence_result', 'sku'],
      'faultline.message.shape': SHAPE,
      'faultline.message.payload_bytes': Buffer.byteLength(canonical),
      'faultline.message.payload_hash': hash,
      'faultline.message.side': 'send',
      'faultline.message.sent_at': delivered[0].sentAt,
      'faultline.message.delivered_count': 1,
      'faultline.message.delivered_hashes': [hash],
      'gen_ai.conversation.id': 'sess-9',
    });
    expect(span.status.code).toBe(SpanStatusCode.UNSET);

    // What the receiver got: the same facts from its end, linked to the sender's span.
    const receiveSpan = byName(otel.spans(), 'receive judge');
    expect(receiveSpan.kind).toBe(SpanKind.CONSUMER);
    expect(receiveSpan.links.map((l) => l.context.spanId)).toEqual([span.spanContext().spanId]);
    expect(attrs(receiveSpan)).toEqual({
      'faultline.message.id': 'msg-41-009',
      'faultline.message.source': 'navigator',
      'faultline.message.target': 'judge',
      'faultline.message.boundary': 'I4',
      'faultline.message.task_id': 'admin-41',
      'faultline.message.session_id': 'sess-9',
      'faultline.message.version': 3,
      'faultline.message.keys': ['candidate_answer', 'evidence_result', 'sku'],
      'faultline.message.shape': SHAPE,
      'faultline.message.payload_bytes': Buffer.byteLength(canonical),
      'faultline.message.payload_hash': hash,
      'faultline.message.side': 'receive',
      'faultline.message.sent_at': delivered[0].sentAt,
      'faultline.message.copy': 0,
      'messaging.system': 'faultline',
      'messaging.operation.type': 'receive',
      'messaging.destination.name': 'judge',
      'messaging.message.id': 'msg-41-009',
      'messaging.message.body.size': Buffer.byteLength(canonical),
    });
  });

  it('generates a message id and sentAt when missing, and takes the task id from the task scope', async () => {
    const channel = new MessageChannel();
    const before = Date.now();
    const [m] = await withTask('task-3', () => channel.send({ source: 'planner', target: 'worker', payload: 'do it' }));
    expect(m.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(m.sentAt).toBeGreaterThanOrEqual(before);
    expect(m.taskId).toBeUndefined(); // the message itself is not changed
    const span = byName(otel.spans(), 'handoff worker');
    expect(span.attributes['faultline.message.id']).toBe(m.id);
    expect(span.attributes['faultline.message.task_id']).toBe('task-3');
    expect(span.attributes['faultline.message.keys']).toEqual([]);
  });

  it('records the payload only with content capture on', async () => {
    await new MessageChannel({ captureMessageContent: true }).send(evidence({ payload: { b: 1, a: [true, null] } }));
    expect(byName(otel.spans(), 'handoff judge').attributes['faultline.message.payload']).toBe(
      '{"a":[true,null],"b":1}',
    );
    otel.exporter.reset();
    configureChannels({ captureMessageContent: true });
    await new MessageChannel({ captureMessageContent: false }).send(evidence());
    expect(byName(otel.spans(), 'handoff judge').attributes['faultline.message.payload']).toBeUndefined();
  });

  it('nests the handoff under the sending agent', async () => {
    const channel = new MessageChannel();
    await runAgent('navigator', () => channel.send(evidence()));
    const spans = otel.spans();
    expect(parentOf(byName(spans, 'handoff judge'))).toBe(byName(spans, 'invoke_agent navigator').spanContext().spanId);
  });

  it('passes a receiver error to the sender unchanged, after the span ended', async () => {
    const boom = new Error('receiver failed');
    const channel = new MessageChannel().on('judge', () => {
      throw boom;
    });
    await expect(channel.send(evidence())).rejects.toBe(boom);
    expect(byName(otel.spans(), 'handoff judge').status.code).toBe(SpanStatusCode.UNSET);
  });

  it('rejects malformed messages with a coded error', async () => {
    const channel = new MessageChannel();
    // @ts-expect-error deliberate misuse
    await expect(channel.send({ source: 'a', payload: 1 })).rejects.toThrow(
      /message\.target must be a non-empty string/,
    );
    // @ts-expect-error deliberate misuse
    await expect(channel.send(null)).rejects.toMatchObject({ code: 'FAULTLINE_USAGE' });
    expect(otel.spans()).toHaveLength(0);
  });
});

describe('MessageChannel steps', () => {
  it('runs steps outermost first around the identity delivery', async () => {
    const order: string[] = [];
    const tag =
      (name: string): DeliverStep =>
      async (m, _ctx, next) => {
        order.push(`${name}>`);
        const out = await next(m);
        order.push(`<${name}`);
        return out;
      };
    await new MessageChannel({ steps: [tag('guard'), tag('fault')] }).send(evidence());
    expect(order).toEqual(['guard>', 'fault>', '<fault', '<guard']);
  });

  it('delivers zero, one or more messages, and the receiver sees each', async () => {
    const received: string[] = [];
    const dup = new MessageChannel({ steps: [duplicate] }).on('judge', (m) => void received.push(m.id));
    expect(await dup.send(evidence())).toHaveLength(2);
    expect(received).toEqual(['msg-41-009', 'msg-41-009']);

    received.length = 0;
    const lossy = new MessageChannel({ steps: [drop] }).on('judge', (m) => void received.push(m.id));
    expect(await lossy.send(evidence())).toEqual([]);
    expect(received).toEqual([]);

    const [dupSpan, dropSpan] = handoffs();
    expect(dupSpan.attributes['faultline.message.delivered_count']).toBe(2);
    expect(dropSpan.attributes['faultline.message.delivered_count']).toBe(0);
    expect(dropSpan.attributes['faultline.message.delivered_hashes']).toEqual([]);
    // One receive span per copy the receiver got (none for the lost message), each naming its copy.
    const receives = otel.spans().filter((s) => s.name === 'receive judge');
    expect(receives.map((r) => r.attributes['faultline.message.copy'])).toEqual([0, 1]);
    expect(receives.every((r) => r.links[0]?.context.spanId === dupSpan.spanContext().spanId)).toBe(true);
  });

  it('records the hash of a changed payload and routes a misrouted message to its new target', async () => {
    const corrupt: DeliverStep = (m, _ctx, next) =>
      next({ ...m, target: 'auditor', payload: { ...(m.payload as object), sku: 'B07-XS' } });
    const got: Record<string, AgentMessage[]> = { judge: [], auditor: [] };
    const channel = new MessageChannel({ steps: [corrupt] })
      .on('judge', (m) => void got.judge.push(m))
      .on('auditor', (m) => void got.auditor.push(m));
    const sent = evidence();
    await channel.send(sent);
    expect(got.judge).toEqual([]);
    expect(got.auditor).toHaveLength(1);
    const span = byName(otel.spans(), 'handoff judge');
    expect(span.attributes['faultline.message.payload_hash']).toBe(payloadHash(sent.payload));
    expect(span.attributes['faultline.message.delivered_hashes']).toEqual([payloadHash(got.auditor[0].payload)]);
    expect(payloadHash(got.auditor[0].payload)).not.toBe(payloadHash(sent.payload));
  });

  it('records how a delivered copy differs: keys and content-free changes, payloads only with content capture', async () => {
    // Removes a key, renames one, retypes one, shortens a list and changes a value at depth: one of each change.
    const alter: DeliverStep = (m, _ctx, next) => {
      const p = m.payload as {
        sku: string;
        evidence_result: { rows: number[]; total: number };
        candidate_answer: string;
      };
      return next({
        ...m,
        payload: {
          answer: p.candidate_answer,
          evidence_result: { rows: [p.evidence_result.rows[0]], total: String(p.evidence_result.total) },
          note: 'x',
        },
      });
    };
    await new MessageChannel({ steps: [alter] }).send(evidence());
    await new MessageChannel({ steps: [alter], captureMessageContent: true }).send(evidence());
    const [plain, captured] = handoffs();
    expect(plain.attributes['faultline.message.delivered_keys']).toEqual(['answer', 'evidence_result', 'note']);
    expect(plain.attributes['faultline.message.delivered_changes']).toEqual([
      'added:answer',
      'added:note',
      'length:evidence_result.rows',
      'removed:candidate_answer',
      'removed:sku',
      'type:evidence_result.total',
    ]);
    // Content-free: no value of the payload reaches the span without content capture.
    expect(JSON.stringify(plain.attributes)).not.toMatch(/B07-XL|Kings Cross|12\.5/);
    expect(plain.attributes['faultline.message.delivered_payloads']).toBeUndefined();
    // Same envelope: no envelope lists.
    for (const k of ['ids', 'task_ids', 'session_ids', 'versions'])
      expect(plain.attributes[`faultline.message.delivered_${k}`]).toBeUndefined();
    expect(JSON.parse((captured.attributes['faultline.message.delivered_payloads'] as string[])[0])).toEqual({
      answer: 'Kings Cross',
      evidence_result: { rows: [3], total: '12.5' },
      note: 'x',
    });
  });

  it('records the envelope of each copy when a copy is another message (a replay of another task, an older version)', async () => {
    const older = evidence({
      id: 'msg-40-001',
      taskId: 'admin-40',
      sessionId: 'sess-8',
      version: 1,
      payload: { sku: 'A01', evidence_result: { rows: [1], total: 1 }, candidate_answer: 'Euston' },
    });
    const replay: DeliverStep = async (m, _ctx, next) => [...(await next(m)), ...(await next(older))];
    await new MessageChannel({ steps: [replay] }).send(evidence());
    const a = otel.spans()[0].attributes;
    expect(a['faultline.message.delivered_count']).toBe(2);
    expect(a['faultline.message.delivered_ids']).toEqual(['msg-41-009', 'msg-40-001']);
    expect(a['faultline.message.delivered_task_ids']).toEqual(['admin-41', 'admin-40']);
    expect(a['faultline.message.delivered_session_ids']).toEqual(['sess-9', 'sess-8']);
    expect(a['faultline.message.delivered_versions']).toEqual(['3', '1']);
    expect(a['faultline.message.delivered_changes']).toEqual([
      'length:evidence_result.rows',
      'value:candidate_answer',
      'value:evidence_result.rows[]',
      'value:evidence_result.total',
      'value:sku',
    ]);
  });

  it('records what crossed the channel even when an outer step (a guard) replaced it before the receiver', async () => {
    const fault: DeliverStep = (m, _ctx, next) => next({ ...m, payload: { candidate_answer: 'Kings Cross' } });
    const readback: DeliverStep = async (m, _ctx, next) => {
      await next(m); // the changed copy crosses the channel and fails the guard's check...
      return next({ ...m, id: 'msg-41-010', version: 4 }); // ...so the guard fetches a fresh one
    };
    const delivered = await new MessageChannel({ steps: [readback, fault] }).send(evidence());
    expect(delivered.map((m) => m.id)).toEqual(['msg-41-010']);
    const a = otel.spans()[0].attributes;
    expect(a['faultline.message.delivered_count']).toBe(1); // what the receiver got
    expect(a['faultline.message.delivered_ids']).toEqual(['msg-41-009', 'msg-41-010']); // what crossed the channel
    expect(a['faultline.message.delivered_changes']).toEqual(['removed:evidence_result', 'removed:sku']);
  });

  it('takes steps and onDelivery from configureChannels, read at send time', async () => {
    const channel = new MessageChannel({ name: 'evidence' }); // created before the configuration
    const calls: Array<{ ctx: DeliveryContext; original: AgentMessage; delivered: AgentMessage[] }> = [];
    configureChannels({
      steps: [duplicate],
      onDelivery: (ctx, original, delivered) => calls.push({ ctx, original, delivered }),
    });
    const delivered = await channel.send(evidence());
    expect(delivered).toHaveLength(2);
    expect(calls).toHaveLength(1);
    expect(calls[0].original.id).toBe('msg-41-009');
    expect(calls[0].delivered).toBe(delivered);
    expect(calls[0].ctx.channel).toBe('evidence');
    const span = byName(otel.spans(), 'handoff judge');
    expect(calls[0].ctx.span.spanContext().spanId).toBe(span.spanContext().spanId);
    // Own options win over the defaults.
    expect(await new MessageChannel({ steps: [] }).send(evidence())).toHaveLength(1);
    configureChannels({});
    expect(await channel.send(evidence())).toHaveLength(1);
  });

  it('lets steps record on the handoff span, and spans they start nest under it', async () => {
    const marking: DeliverStep = async (m, ctx, next) => {
      ctx.span.setAttribute('faultline.fault.name', 'non_delivery');
      ctx.notes.set('fired', true);
      trace.getTracer('test').startSpan('step work').end();
      return next(m);
    };
    await new MessageChannel({ steps: [marking] }).send(evidence());
    const spans = otel.spans();
    const handoff = byName(spans, 'handoff judge');
    expect(handoff.attributes['faultline.fault.name']).toBe('non_delivery');
    expect(parentOf(byName(spans, 'step work'))).toBe(handoff.spanContext().spanId);
  });

  it('delivers the original once when a step has an internal error, and reports it through diag', async () => {
    const buggy: DeliverStep = async (m, _ctx, next) => {
      await next(m);
      throw new TypeError('cannot read properties of undefined');
    };
    const received: AgentMessage[] = [];
    const sent = evidence();
    const delivered = await new MessageChannel({ steps: [duplicate, buggy] })
      .on('judge', (m) => void received.push(m))
      .send(sent);
    expect(delivered).toHaveLength(1);
    expect(received).toHaveLength(1);
    expect(received[0].payload).toBe(sent.payload);
    expect(diagErrors.join('\n')).toMatch(/internal error in a delivery step of channel "default"/);
    expect(byName(otel.spans(), 'handoff judge').attributes['faultline.message.delivered_count']).toBe(1);
  });

  it('treats a step that returns something other than messages as an internal error', async () => {
    const wrong = (async () => 'oops') as unknown as DeliverStep;
    expect(await new MessageChannel({ steps: [wrong] }).send(evidence())).toHaveLength(1);
    expect(diagErrors).toHaveLength(1);
  });

  it('passes a deliberate FaultlineError (a guard rejection) to the sender and marks the span', async () => {
    const reject: DeliverStep = async () => {
      throw new FaultlineError('FAULTLINE_GUARD_REJECTED', 'stale version 2 < 3');
    };
    let handled = false;
    const channel = new MessageChannel({ steps: [reject] }).on('judge', () => {
      handled = true;
    });
    await expect(channel.send(evidence())).rejects.toMatchObject({ code: 'FAULTLINE_GUARD_REJECTED' });
    expect(handled).toBe(false);
    const span = byName(otel.spans(), 'handoff judge');
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'stale version 2 < 3' });
    expect(span.attributes['error.type']).toBe('FAULTLINE_GUARD_REJECTED');
    expect(diagErrors).toEqual([]);
  });

  it('survives an onDelivery listener that throws', async () => {
    const delivered = await new MessageChannel({
      onDelivery: () => {
        throw new Error('detector bug');
      },
    }).send(evidence());
    expect(delivered).toHaveLength(1);
    expect(diagErrors.join('\n')).toMatch(/onDelivery/);
    expect(otel.spans().map((s) => s.name)).toEqual(['handoff judge', 'receive judge']);
  });
});

describe('payload hashing', () => {
  it('is independent of key order and matches sha256 of the sorted JSON', () => {
    const a = { z: 1, a: { y: [1, { c: 2, b: 3 }], x: 'é' } };
    const b = { a: { x: 'é', y: [1, { b: 3, c: 2 }] }, z: 1 };
    expect(canonicalJson(a)).toBe('{"a":{"x":"é","y":[1,{"b":3,"c":2}]},"z":1}');
    expect(payloadHash(a)).toBe(payloadHash(b));
    expect(payloadHash(a)).toBe(sha16('{"a":{"x":"é","y":[1,{"b":3,"c":2}]},"z":1}'));
  });

  it('gives no hash for a payload JSON cannot represent, instead of failing', async () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(payloadHash(cyclic)).toBeUndefined();
    expect(payloadHash({ n: 1n })).toBeUndefined();
    const delivered = await new MessageChannel().send(evidence({ payload: cyclic }));
    expect(delivered[0].payload).toBe(cyclic);
    const span = byName(otel.spans(), 'handoff judge');
    expect(span.attributes['faultline.message.payload_hash']).toBeUndefined();
    expect(span.attributes['faultline.message.keys']).toEqual(['a', 'self']);
  });
});
