/**
 * An independent labelled set of inter-agent communication runs, diagnosed three ways (see support/views.ts) and
 * scored: type and step accuracy over faulty runs, false positives over clean ones.
 *
 * The runs are made here, by the real stack: faultline's instrumentation as `register` wires it (online detection
 * on), the real OTel SDK, MessageChannel workflows, the real @a2a-js/sdk client and server and the real MCP SDK client
 * and server on 127.0.0.1 — and the faults are made between sender and receiver by a delivery step of the channel's
 * own or by an HTTP proxy on the wire, never by faultline's injector. The workflows, payloads and operators are
 * written for this set (support/workflows.ts, support/operators.ts), unlike examples/. The labels live in the test;
 * the diagnoser reads the traces only.
 *
 * FAULTLINE_MSG_EVAL_SCALE=n multiplies the number of runs; FAULTLINE_MSG_EVAL_OUT=dir writes the traces (one OTLP-ish
 * JSON trace per line) and the labels there.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOnlineDetection } from '../../detectors/online';
import { FaultlineInstrumentation } from '../../instrumentation';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import type { TraceRecord } from '../../src/traces/model';
import { setupOtel, type TestOtel } from '../support/otel';
import { toTraces } from '../support/to-traces';
import { researchRun, startResearchModel, type ResearchDesk } from './support/llm-workflow';
import { int, rng } from './support/operators';
import { contentFree, newScore, rate, record, VIEWS, type Score, type ViewName } from './support/views';
import {
  FAULT_KINDS,
  factCheckRun,
  inventoryRun,
  startFactChecker,
  startInventory,
  travelRun,
  triageRun,
  type A2aAgent,
  type FaultKind,
  type Label,
  type McpTools,
  type Pool,
  type RunPlan,
  type WirePool,
} from './support/workflows';

const SCALE = Math.max(1, Number(process.env.FAULTLINE_MSG_EVAL_SCALE ?? 1));
const OUT = process.env.FAULTLINE_MSG_EVAL_OUT;

interface WorkflowSpec {
  name: string;
  /** Messages every run sends at least (faults are placed among them). */
  messages: number;
  clean: number;
  recovered: number;
  perFault: number;
  faults: readonly FaultKind[];
  run(plan: RunPlan): Promise<Label>;
}

let otel: TestOtel;
let inst: FaultlineInstrumentation;
let a2a: A2aAgent;
let mcp: McpTools;
let desk: ResearchDesk;
const labels: Label[] = [];
const traces = new Map<string, TraceRecord>();

async function pool<T>(items: readonly T[], n: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

beforeAll(async () => {
  otel = setupOtel();
  const online = createOnlineDetection();
  inst = new FaultlineInstrumentation({
    captureMessageContent: true,
    onExchangeEnd: online.onExchangeEnd,
    onDelivery: online.onDelivery,
  });
  inst.enable();
  a2a = await startFactChecker();
  mcp = await startInventory();
  desk = await startResearchModel();
  const channelPool: Pool = new Map();
  const wirePool: WirePool = new Map();
  const specs: WorkflowSpec[] = [
    {
      name: 'trip-booking',
      messages: 5,
      clean: 8,
      recovered: 4,
      perFault: 3,
      faults: FAULT_KINDS,
      run: (p) => travelRun(p, channelPool),
    },
    {
      name: 'incident-triage',
      messages: 4,
      clean: 6,
      recovered: 0,
      perFault: 2,
      faults: FAULT_KINDS,
      run: (p) => triageRun(p, channelPool),
    },
    // Every message decided by a model call (the real openai client), the researcher's also by a tool it runs.
    {
      name: 'equity-research',
      messages: 4,
      clean: 6,
      recovered: 2,
      perFault: 2,
      faults: FAULT_KINDS,
      run: (p) => researchRun(desk, p, channelPool),
    },
    {
      name: 'fact-check',
      messages: 3,
      clean: 5,
      recovered: 3,
      perFault: 2,
      faults: FAULT_KINDS,
      run: (p) => factCheckRun(a2a, p, wirePool),
    },
    // MCP calls carry no envelope to replay from another session: no stale replay there.
    {
      name: 'inventory-reservation',
      messages: 3,
      clean: 4,
      recovered: 4,
      perFault: 2,
      faults: FAULT_KINDS.filter((f) => f !== 'stale'),
      run: (p) => inventoryRun(mcp, p, wirePool),
    },
  ];
  // One unlabelled run per workflow first: the earlier runs stale replays and entity swaps draw on.
  let seed = 1000;
  for (const s of specs) await s.run({ seed: seed++ });
  const jobs: { spec: WorkflowSpec; plan: RunPlan }[] = [];
  const r = rng(20261201);
  for (const s of specs) {
    for (let i = 0; i < s.clean * SCALE; i++) jobs.push({ spec: s, plan: { seed: seed++ } });
    for (let i = 0; i < s.recovered * SCALE; i++) jobs.push({ spec: s, plan: { seed: seed++, recovered: true } });
    for (const f of s.faults)
      for (let i = 0; i < s.perFault * SCALE; i++)
        jobs.push({ spec: s, plan: { seed: seed++, fault: f, at: int(r, 1, s.messages) } });
  }
  await pool(jobs, 4, async ({ spec, plan }) => {
    labels.push(await spec.run(plan));
  });
  // Let the last server-side spans end (a duplicate's second copy may still be in flight).
  let count = -1;
  for (let i = 0; i < 100 && count !== otel.spans().length; i++) {
    count = otel.spans().length;
    await new Promise((res) => setTimeout(res, 100));
  }
  for (const t of toTraces(otel.spans())) traces.set(t.traceId, t);
  if (OUT) {
    mkdirSync(OUT, { recursive: true });
    writeFileSync(
      join(OUT, 'traces.jsonl'),
      labels.map((l) => JSON.stringify(traces.get(l.traceId))).join('\n') + '\n',
    );
    writeFileSync(join(OUT, 'labels.jsonl'), labels.map((l) => JSON.stringify(l)).join('\n') + '\n');
  }
}, 240_000);

afterAll(async () => {
  inst?.disable();
  await a2a?.close();
  await mcp?.close();
  await desk?.close();
  await otel?.shutdown();
});

async function score(view: ViewName, content: boolean, only?: (l: Label) => boolean): Promise<Score> {
  const s = newScore();
  const diagnoser = createDiagnoser('rule');
  for (const l of labels) {
    if (!l.applied || (only && !only(l))) continue;
    const t = traces.get(l.traceId);
    if (!t) throw new Error(`trace ${l.traceId} not exported`);
    const v = VIEWS[view](content ? t : contentFree(t));
    record(s, v, l, await diagnoseTrace(diagnoser, v));
  }
  return s;
}

function table(title: string, s: Score): string {
  const rows = [...s.perType]
    .sort()
    .map(
      ([t, r]) =>
        `  ${t.padEnd(13)} n=${String(r.n).padStart(3)}  type ${rate(r.type, r.n)}  step ${rate(r.step, r.n)}`,
    );
  return [
    `${title}: type ${rate(s.typeOk, s.faulty)}  step ${rate(s.stepOk, s.faulty)}  FP ${rate(s.falsePositives, s.clean)} (${s.faulty} faulty, ${s.clean} clean)`,
    ...rows,
    ...s.misses.slice(0, 40).map((m) => `    miss: ${m}`),
  ].join('\n');
}

const channelOnly = (l: Label): boolean => l.protocol === 'channel';

describe('an independent labelled set of inter-agent communication runs', () => {
  it('was generated: every planned fault applied, every trace exported', () => {
    expect(labels.filter((l) => !l.applied).map((l) => `${l.workflow} ${l.fault}@${l.at}`)).toEqual([]);
    expect(labels.every((l) => traces.has(l.traceId))).toBe(true);
    expect(labels.filter((l) => l.fault !== 'none').length).toBeGreaterThan(60);
  });

  it.each([
    {
      view: 'emitted' as const,
      content: true,
      only: channelOnly,
      what: 'MessageChannel spans as emitted (channel runs), with content',
    },
    {
      view: 'emitted' as const,
      content: false,
      only: channelOnly,
      what: 'MessageChannel spans as emitted (channel runs), content-free',
    },
    { view: 'both' as const, content: true, only: undefined, what: 'both ends, all runs, with content' },
    { view: 'both' as const, content: false, only: undefined, what: 'both ends, all runs, content-free' },
  ])('$what: type ≥ 0.90, step ≥ 0.90, false positives ≤ 0.05', async ({ view, content, only }) => {
    const s = await score(view, content, only);
    console.log(table(`${view}${content ? '' : ' (content-free)'}`, s));
    expect(s.typeOk / s.faulty).toBeGreaterThanOrEqual(0.9);
    expect(s.stepOk / s.faulty).toBeGreaterThanOrEqual(0.9);
    expect(s.falsePositives / s.clean).toBeLessThanOrEqual(0.05);
  });

  // From the receiver's end alone a message changed to another valid value can only be told from what the run
  // established before it (an identity pin); a changed value nothing earlier carried — the first message's, an
  // observation's new values — is a valid message there. Everything else meets the bar; semantic is reported.
  it('receiver-side spans only (payload as delivered), all runs: type and step ≥ 0.90 on every fault type but semantic, false positives ≤ 0.05', async () => {
    const s = await score('receiver', true);
    const rest = await score('receiver', true, (l) => l.fault !== 'semantic');
    console.log(table('receiver', s));
    console.log(
      `receiver, every fault type but semantic: type ${rate(rest.typeOk, rest.faulty)}  step ${rate(rest.stepOk, rest.faulty)}`,
    );
    expect(rest.typeOk / rest.faulty).toBeGreaterThanOrEqual(0.9);
    expect(rest.stepOk / rest.faulty).toBeGreaterThanOrEqual(0.9);
    expect(s.falsePositives / s.clean).toBeLessThanOrEqual(0.05);
    expect(s.typeOk / s.faulty).toBeGreaterThanOrEqual(0.8);
  });

  it('reports one plain span per message carrying the payload as delivered (another producer’s receiver-side record)', async () => {
    const s = await score('plain', true, channelOnly);
    console.log(table('plain delivered (channel runs)', s));
    expect(s.falsePositives / s.clean).toBeLessThanOrEqual(0.05);
  });
});
