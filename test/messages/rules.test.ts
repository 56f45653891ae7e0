/**
 * The message-fault rules: how a delivered copy differs from a reference, judged from the value changes themselves
 * (message-change.ts), and the trace-level reading of messages from either end (messages.ts) — through the real
 * MessageChannel and OTel SDK, with its spans as emitted, reduced to the receiver's end, or both.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { MessageChannel } from '../../instrumentation/agents/channel';
import { payloadShape, stringFormat } from '../../instrumentation/agents/shape';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../instrumentation/agents/task';
import type { AgentMessage, DeliverStep } from '../../instrumentation/types';
import { z } from 'zod';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import { isFaultableSpan } from '../../src/plan/processor';
import { detectSpans } from '../../detectors/from-span';
import { messageObservation, viewTrace } from '../../src/traces/view';
import {
  classifyChanges,
  compareContent,
  compareShapes,
  contractVerdict,
  intrinsicVerdict,
} from '../../src/diagnosers/message-change';
import type { TraceRecord } from '../../src/traces/model';
import { setupOtel } from '../support/otel';
import { toTraces } from '../support/to-traces';
import { emitted, receiverSide } from './support/views';

const otel = setupOtel();
afterEach(() => otel.exporter.reset());
afterAll(() => otel.shutdown());

const SENT = {
  order_id: 'ORD-4711',
  sku: 'MUG-BLU-12',
  title: 'Blue Ceramic Mug',
  quantity: 3,
  price: 12.5,
  shipped: false,
  ship_by: '2027-03-14',
  tracking_url: 'https://track.example.com/ORD-4711',
  notes: 'leave at the door',
  receipt: '{"order_id":"ORD-4711","quantity":3}',
  lines: [
    { sku: 'MUG-BLU-12', qty: 3 },
    { sku: 'CUP-RED-02', qty: 1 },
  ],
};
const type = (got: unknown): string | undefined => compareContent(SENT, got)?.faultType;

describe('how a copy differs, from the value changes themselves', () => {
  it('semantic: another valid value of the same type and format, whatever the key is called', () => {
    expect(type({ ...SENT, sku: 'LMP-BRS-07' })).toBe('semantic'); // another entity
    expect(type({ ...SENT, title: 'Brass Desk Lamp' })).toBe('semantic'); // a key no workflow names an entity
    expect(type({ ...SENT, quantity: 4 })).toBe('semantic'); // a wrong number
    expect(type({ ...SENT, shipped: true })).toBe('semantic');
    expect(type({ ...SENT, ship_by: '2028-03-14' })).toBe('semantic');
    expect(type({ ...SENT, notes: 'ring the bell' })).toBe('semantic');
  });

  it('corrupt: a value no longer valid — garbled, a broken JSON text or format, cut short, a structure turned to text', () => {
    expect(type({ ...SENT, title: Buffer.from('Blue Ceramic Müg', 'utf8').toString('latin1') })).toBe('corrupt');
    expect(type({ ...SENT, sku: 'MUG-B\u2603LU-12' })).toBe('corrupt');
    expect(type({ ...SENT, title: 'Blue Cer\ufffdmic Mug' })).toBe('corrupt');
    expect(type({ ...SENT, receipt: '{"order_id":"ORD-47' })).toBe('corrupt');
    expect(type({ ...SENT, ship_by: '2027-03-14x' })).toBe('corrupt');
    expect(type({ ...SENT, tracking_url: 'track example com' })).toBe('corrupt');
    expect(type({ ...SENT, notes: 'leave at th' })).toBe('corrupt');
    expect(compareContent(SENT, '{"order_id":"ORD-4711","sku":')?.faultType).toBe('corrupt');
  });

  it('schema: keys renamed, a type changed', () => {
    const { sku, ...rest } = SENT;
    expect(type({ ...rest, item_code: sku })).toBe('schema');
    expect(type({ ...SENT, quantity: '3' })).toBe('schema');
    expect(type({ ...SENT, sku: ['MUG-BLU-12'] })).toBe('schema');
    expect(type({ ...SENT, lines: JSON.stringify(SENT.lines) })).toBe('schema');
  });

  it('partial: keys gone, lists shortened or emptied, the rest intact', () => {
    const { sku: _s, price: _p, ...rest } = SENT;
    expect(type(rest)).toBe('partial');
    expect(type({ ...SENT, lines: SENT.lines.slice(0, 1) })).toBe('partial');
    expect(type({ ...SENT, notes: '' })).toBe('partial');
    // An embedded JSON document is a value: another valid one (here with a key less) is another value.
    expect(type({ ...SENT, receipt: '{"order_id":"ORD-4711"}' })).toBe('semantic');
  });

  it('the content-free shapes of both ends say the same without any value', () => {
    const shape = (v: unknown): string[] => payloadShape(v);
    const s = shape(SENT);
    expect(JSON.stringify(s)).not.toMatch(/MUG|Ceramic|4711|door/); // keys, kinds, formats and sizes only
    expect(compareShapes(s, shape({ ...SENT, sku: 'LMP-BRS-07' })).faultType).toBe('semantic');
    expect(compareShapes(s, shape({ ...SENT, title: 'Blue Cer\ufffdmic Mug' })).faultType).toBe('corrupt');
    expect(compareShapes(s, shape({ ...SENT, ship_by: '14/03/2027' })).faultType).toBe('corrupt');
    expect(compareShapes(s, shape({ ...SENT, quantity: '3' })).faultType).toBe('schema');
    const { sku, ...rest } = SENT;
    expect(compareShapes(s, shape({ ...rest, item_code: sku })).faultType).toBe('schema');
    expect(compareShapes(s, shape(rest)).faultType).toBe('partial');
    // A list's later elements count too.
    expect(
      compareShapes(s, shape({ ...SENT, lines: [SENT.lines[0], { sku: 'CUP-R\ufffdD-02', qty: 1 }] })).faultType,
    ).toBe('corrupt');
    expect(classifyChanges(['value:title'])?.faultType).toBe('semantic');
    expect(classifyChanges(['removed:sku', 'added:item_code'])?.faultType).toBe('schema');
  });

  it('formats: unusual but valid text is not garbled', () => {
    for (const ok of [
      'Zoë Müller',
      '東京の人口は1400万人',
      'Ngozi Okafor 🚀',
      '[INFO] done',
      '{draft} later',
      '⚠️ Warning: low stock',
      'naïve café — 5 €',
    ]) {
      expect(stringFormat(ok), ok).not.toBe('garbled');
      expect(stringFormat(ok), ok).not.toBe('broken_json');
    }
    expect(
      intrinsicVerdict({ ok: true, value: { name: 'Zoë', tags: [], note: null }, text: '' }, undefined),
    ).toBeUndefined();
    expect(intrinsicVerdict({ ok: true, value: { name: 'ZoÃ«' }, text: '' }, undefined)?.faultType).toBe('corrupt');
    expect(contractVerdict(['missing:sku'])?.faultType).toBe('partial');
    expect(contractVerdict(['missing:sku', 'extra:item_code'])?.faultType).toBe('schema');
    expect(contractVerdict(['value:sku'])?.faultType).toBe('corrupt');
  });
});

// ------------------------------------------------------------------------------------------------ from either end

interface Run {
  trace: TraceRecord;
  /** The handoff span of each send, in order. */
  sends: string[];
}

/** A three-step run over a channel with the given step: Picker → Packer → Shipper → Auditor. */
async function run(
  step?: DeliverStep,
  options: { failOnce?: boolean; contract?: unknown; capture?: boolean; order?: object; shipperSets?: object } = {},
): Promise<Run> {
  const channel = new MessageChannel({
    name: 'warehouse',
    captureMessageContent: options.capture === true,
    ...(step ? { steps: [step] } : {}),
  });
  let failed = false;
  const order = options.order ?? { order_id: 'ORD-4711', sku: 'MUG-BLU-12', quantity: 3 };
  channel.on('Packer', (m) =>
    runAgent('Packer', () =>
      channel.send({
        source: 'Packer',
        target: 'Shipper',
        sessionId: 's-1',
        version: 1,
        payload: { ...(m.payload as object), box: 'B-12' },
      }),
    ),
  );
  channel.on(
    'Shipper',
    (m) =>
      runAgent('Shipper', async () => {
        if (options.failOnce && !failed) {
          failed = true;
          throw new Error('label printer offline');
        }
        await channel.send({
          source: 'Shipper',
          target: 'Auditor',
          sessionId: 's-1',
          version: 1,
          payload: { ...(m.payload as object), tracking: 'TRK-889901', ...options.shipperSets },
        });
      }),
    options.contract !== undefined ? { contract: options.contract } : {},
  );
  channel.on('Auditor', () => undefined);
  const traceId = await runWorkflow('warehouse', async (span) => {
    await runAgent('Picker', async () => {
      const first = { source: 'Picker', target: 'Packer', sessionId: 's-1', version: 1, payload: order };
      await channel.send(first);
    });
    return span.spanContext().traceId;
  });
  const trace = toTraces(otel.spans()).find((t) => t.traceId === traceId)!;
  // In causal order (nested sends can share a start millisecond, so not by start time).
  const sends = ['handoff Packer', 'handoff Shipper', 'handoff Auditor'].map(
    (n) => trace.spans.find((s) => s.name === n)?.spanId ?? '',
  );
  return { trace, sends };
}

const diagnose = (t: TraceRecord) => diagnoseTrace(createDiagnoser('rule'), t);
const atSecond = (
  fn: (m: AgentMessage, next: (m: AgentMessage) => Promise<AgentMessage[]>) => Promise<AgentMessage[]>,
): DeliverStep => {
  let n = 0;
  return (m, _ctx, next) => (++n === 2 ? fn(m, next) : next(m));
};

describe('message faults from either end', () => {
  it('a clean run is none from each end', async () => {
    const { trace } = await run();
    for (const t of [trace, emitted(trace), receiverSide(trace)]) expect((await diagnose(t)).faultType).toBe('none');
  });

  it('a value changed in transit: semantic from both ends and from the sender span as emitted; from the receiver’s end, only against what the run established', async () => {
    const swap = (): DeliverStep =>
      atSecond((m, next) => next({ ...m, payload: { ...(m.payload as object), sku: 'LMP-BRS-07' } }));
    const { trace, sends } = await run(swap());
    expect(await diagnose(trace)).toMatchObject({ faultType: 'semantic', spanId: sends[1] });
    expect(await diagnose(emitted(trace))).toMatchObject({ faultType: 'semantic', spanId: sends[1] });
    // Content-free, from the receiver's end only, a valid other SKU is a valid message: nothing to compare it with.
    expect((await diagnose(receiverSide(trace))).faultType).toBe('none');
    // With the payload as delivered: the Packer received order ORD-4711 for MUG-BLU-12 and sent on another SKU for
    // the same order — an identity its sender never received.
    const captured = await run(swap(), { capture: true });
    expect(await diagnose(receiverSide(captured.trace))).toMatchObject({
      faultType: 'semantic',
      spanId: captured.sends[1],
    });
  });

  it('an agent’s own value under a key earlier messages carried (a new date, a figure it computed) is no change', async () => {
    // Amounts and dates are attributes an agent decides, not identities of what the run is about: from the
    // receiver's end the Shipper's earlier ship-by date and its own total contradict nothing.
    const order = { order_id: 'ORD-4711', sku: 'MUG-BLU-12', quantity: 3, price: 12.5, ship_by: '2027-03-14' };
    const { trace } = await run(undefined, {
      capture: true,
      order,
      shipperSets: { price: 37.5, ship_by: '2027-03-12' },
    });
    for (const t of [trace, emitted(trace), receiverSide(trace)]) expect((await diagnose(t)).faultType).toBe('none');
  });

  it('keys missing: the receiver’s own contract names it from its end alone', async () => {
    const contract = z.strictObject({ order_id: z.string(), sku: z.string(), quantity: z.number(), box: z.string() });
    const { trace, sends } = await run(
      atSecond((m, next) => next({ ...m, payload: { order_id: 'ORD-4711', box: 'B-12' } })),
      { contract },
    );
    const receive = trace.spans.find((s) => s.name === 'receive Shipper')!;
    expect(receive.attributes['faultline.message.contract_issues']).toEqual(['missing:sku', 'missing:quantity']);
    expect(await diagnose(receiverSide(trace))).toMatchObject({ faultType: 'partial', spanId: sends[1] });
    expect(await diagnose(trace)).toMatchObject({ faultType: 'partial', spanId: sends[1] });
  });

  it('delivered twice, an older message in its place, nothing at all: named from the receiver’s end with a plain send record', async () => {
    const dup = await run(atSecond(async (m, next) => [...(await next(m)), ...(await next(structuredClone(m)))]));
    const dd = await diagnose(receiverSide(dup.trace));
    expect(dd, JSON.stringify(dd)).toMatchObject({ faultType: 'duplicate', spanId: dup.sends[1] });
    const old: AgentMessage = {
      id: 'msg-from-yesterday',
      source: 'Packer',
      target: 'Shipper',
      sessionId: 's-0',
      version: 1,
      sentAt: Date.now() - 86_400_000,
      payload: { order_id: 'ORD-4000', sku: 'PEN-BLK-01', quantity: 9, box: 'B-01' },
    };
    const stale = await run(atSecond((_m, next) => next(old)));
    expect(await diagnose(receiverSide(stale.trace))).toMatchObject({ faultType: 'stale', spanId: stale.sends[1] });
    const lost = await run(atSecond(async () => []));
    expect(await diagnose(receiverSide(lost.trace))).toMatchObject({
      faultType: 'non_delivery',
      spanId: lost.sends[1],
    });
  });

  it('a late but delivered message is delay, judged against the trace’s own deliveries', async () => {
    const { trace, sends } = await run(
      atSecond(async (m, next) => {
        await new Promise((r) => setTimeout(r, 450));
        return next(m);
      }),
    );
    for (const t of [trace, emitted(trace), receiverSide(trace)])
      expect(await diagnose(t)).toMatchObject({ faultType: 'delay', spanId: sends[1] });
  });

  it('a receiver that failed once and got the message again is recovered, not the run’s fault', async () => {
    const channelRun = async (): Promise<TraceRecord> => {
      const channel = new MessageChannel();
      let failed = false;
      channel.on('Shipper', () =>
        runAgent('Shipper', () => {
          if (!failed) {
            failed = true;
            throw new Error('label printer offline');
          }
        }),
      );
      const traceId = await runWorkflow('retry', async (span) => {
        await runAgent('Packer', async () => {
          const m = { id: 'pkg-1', source: 'Packer', target: 'Shipper', payload: { order_id: 'ORD-4711' } };
          await channel.send(m).catch(() => channel.send(m));
        });
        return span.spanContext().traceId;
      });
      return toTraces(otel.spans()).find((t) => t.traceId === traceId)!;
    };
    const t = await channelRun();
    expect(t.spans.filter((s) => s.kind === 'CONSUMER' && s.status.code === 'ERROR')).toHaveLength(1);
    for (const v of [t, emitted(t), receiverSide(t)]) {
      const d = await diagnose(v);
      expect(d.faultType).toBe('none');
      expect(d.evidence.join(' ')).toMatch(/recovered/);
    }
  });

  it('the detectors read a receive span as a delivery: one observation per message, from whichever ends the trace holds', async () => {
    const { trace } = await run(undefined, { capture: true });
    const receives = new Set(
      trace.spans.filter((s) => s.attributes['faultline.message.side'] === 'receive').map((s) => s.spanId),
    );
    expect(receives.size).toBe(3);
    const receiverOnly: TraceRecord = {
      traceId: trace.traceId,
      spans: trace.spans.filter((s) => !s.name.startsWith('handoff ')),
    };
    for (const t of [trace, receiverSide(trace), receiverOnly]) {
      const findings = [...detectSpans(t, { includeOnline: false })].flatMap(([id, fs]) =>
        fs.map((f) => ({ id, ...f })),
      );
      expect(findings.filter((f) => f.faultType !== 'none')).toEqual([]);
    }
    // With the sender's span in the trace the message is observed on it, with the receive span's copy.
    const x = viewTrace(receiverSide(trace)).exchanges[0]!;
    expect(x.receives).toHaveLength(1);
    expect(messageObservation(x)).toMatchObject({
      spanId: x.send!.span.spanId,
      hasContent: true,
      facts: { deliveredCount: 1 },
    });
    // Without it, the receive span is the message: one copy delivered.
    const alone = viewTrace(receiverOnly).exchanges[0]!;
    expect(messageObservation(alone)).toMatchObject({
      spanId: alone.receives[0]!.span.spanId,
      delivered: [{ payload: { order_id: 'ORD-4711' } }],
      facts: { deliveredCount: 1 },
    });
    const lost = await run(
      atSecond(async () => []),
      { capture: true },
    );
    const lostFindings = detectSpans(receiverSide(lost.trace), { includeOnline: false });
    // A plain send record says nothing about delivery, so no detector reads it as lost; the rules know the channel's
    // receiver records every delivery and none came.
    expect([...lostFindings.values()].flat().filter((f) => f.faultType === 'non_delivery')).toEqual([]);
    expect(await diagnose(receiverSide(lost.trace))).toMatchObject({
      faultType: 'non_delivery',
      spanId: lost.sends[1],
    });
  });

  it('a receive span is never where the fault plan applies faults', async () => {
    const { trace } = await run();
    const receive = trace.spans.find((s) => s.kind === 'CONSUMER')!;
    expect(receive.kind).toBe('CONSUMER');
    expect(isFaultableSpan('faultline', receive.attributes as Record<string, string | number | boolean>)).toBe(false);
  });
});
