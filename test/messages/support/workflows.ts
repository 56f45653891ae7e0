/**
 * Small multi-agent workflows written for this set (unlike examples/): a trip booking and an incident triage over
 * MessageChannel, a fact check over A2A (the real @a2a-js/sdk client and server, on 127.0.0.1, a fault proxy between
 * them) and an inventory reservation over MCP (the real SDK client and server, a fault proxy between them). Faults are
 * made by a delivery step of the channel's own (a proxy inside the process, not faultline's injector) or by the HTTP
 * proxy on the wire; clean runs include recovered errors (a receiver that failed once and got the message again, a
 * 503 the client retried, a tool error the agent retried or worked around) and unusual but valid payloads (non-ASCII
 * names, empty lists, nulls, text starting with a bracket, long text, optional fields that come and go).
 *
 * The ground truth of each run is kept here, in its Label, never on a span.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import type { AgentCard } from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type { AgentExecutor } from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { a2aAgentCardInterceptor } from '../../../instrumentation/agents/a2a-client';
import { instrumentA2aRequestHandler } from '../../../instrumentation/agents/a2a-server';
import { MessageChannel } from '../../../instrumentation/agents/channel';
import { runAgent } from '../../../instrumentation/agents/invoke-agent';
import { instrumentMcpServer } from '../../../instrumentation/agents/mcp-server';
import { runWorkflow } from '../../../instrumentation/agents/task';
import type { AgentMessage, DeliverStep } from '../../../instrumentation/types';
import { applyContent, int, pick, rng, type ContentFault, type Json, type Rng } from './operators';
import { startProxy, type WireFault } from './proxy';

export type FaultKind = 'non_delivery' | 'timeout' | 'delay' | 'duplicate' | 'stale' | ContentFault;
export const FAULT_KINDS: readonly FaultKind[] = [
  'non_delivery',
  'timeout',
  'delay',
  'duplicate',
  'stale',
  'partial',
  'semantic',
  'corrupt',
  'schema',
];

export type Protocol = 'channel' | 'a2a' | 'mcp';

export interface RunPlan {
  seed: number;
  fault?: FaultKind;
  /** 1-based index of the faulted message among the run's sends. */
  at?: number;
  /** Clean runs only: a transient failure the run recovers from on its own. */
  recovered?: boolean;
}

export interface Label {
  traceId: string;
  protocol: Protocol;
  workflow: string;
  fault: FaultKind | 'none';
  /** 1-based index of the faulted message among the run's sends (the sender-side message spans in start order). */
  at?: number;
  /** The sender's span of the faulted message, when the fault point knows it (the channel's step does). */
  spanId?: string;
  /** Whether the planned fault was applied (an inapplicable one leaves the run clean and is excluded). */
  applied: boolean;
  recovered: boolean;
  note: string;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------------------------------------ payload vocabulary

const CITIES = ['Lisbon', 'Kraków', 'São Paulo', 'Zürich', '東京', 'Reykjavík', 'Nairobi', 'Montréal', 'Oslo', 'Quito'];
const NAMES = [
  'Zoë Müller',
  'Ana Lima',
  '李雷',
  'Åsa Nyström',
  "Seán O'Brien",
  'Ngozi Okafor',
  'Łukasz Wójcik',
  'Mei Tanaka',
  'Ola Nordmann',
];
const NOTES: (string | null)[] = [
  'window seat please',
  '[VIP] priority boarding',
  '',
  null,
  'Traveller uses a wheelchair 🦽 — request assistance at the gate',
  '{draft} confirm the return leg later',
  'Allergies: peanuts; vegetarian meal',
  'Long note: ' +
    'the traveller prefers morning departures and will accept one stop if the total journey stays under nine hours; '.repeat(
      3,
    ),
];
const SERVICES = ['checkout-api', 'search', 'payments', 'auth-gateway', 'inventory-sync'];
const SEVERITY = ['P1', 'P2', 'P3'];

export const code = (r: Rng, prefix: string, n: number): string =>
  `${prefix}-${Array.from({ length: n }, () => 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789'[int(r, 0, 31)]).join('')}`;
const isoAt = (base: number, offsetMin: number): string => new Date(base + offsetMin * 60_000).toISOString();

// ------------------------------------------------------------------------------------------------ the channel's proxy

/** Messages of earlier runs, per workflow and message index: what a stale replay or an entity swap draws on. */
export type Pool = Map<string, AgentMessage>;

export interface ChannelRun {
  sent: number;
  spanId?: string;
  applied: boolean;
  note: string;
  delivered: AgentMessage[];
}

/**
 * A delivery step between sender and receiver, as a proxy in the process would sit: it makes the planned fault on the
 * planned message and passes every other message on unchanged.
 */
export function channelProxy(workflow: string, plan: RunPlan, run: ChannelRun, pool: Pool): DeliverStep {
  const r = rng(plan.seed * 7919 + 1);
  return async (message, ctx, next) => {
    const index = ++run.sent;
    const donor = pool.get(`${workflow}:${index}`);
    pool.set(`${workflow}:${index}`, message);
    const passOn = async (m: AgentMessage): Promise<AgentMessage[]> => {
      const out = await next(m);
      run.delivered.push(...out);
      return out;
    };
    if (plan.fault === undefined || plan.at !== index) return passOn(message);
    run.applied = true;
    run.spanId = ctx.span.spanContext().spanId;
    switch (plan.fault) {
      case 'non_delivery':
        run.note = 'dropped';
        return [];
      case 'timeout': {
        const ms = int(r, 300, 700);
        run.note = `held ${ms} ms, then dropped`;
        await sleep(ms);
        return [];
      }
      case 'delay': {
        const ms = int(r, 300, 1200);
        run.note = `delayed ${ms} ms`;
        await sleep(ms);
        return passOn(message);
      }
      case 'duplicate':
        run.note = 'delivered twice';
        return [...(await passOn(message)), ...(await passOn(structuredClone(message)))];
      case 'stale': {
        const previous = [...run.delivered].reverse().find((m) => m.target === message.target && m.id !== message.id);
        if (previous !== undefined && r() < 0.4) {
          run.note = `replayed the earlier message ${previous.id} to ${message.target}`;
          return passOn(structuredClone(previous));
        }
        if (donor === undefined) {
          run.applied = false;
          return passOn(message);
        }
        run.note = `replayed another run's message ${donor.id}`;
        return passOn(structuredClone(donor));
      }
      default: {
        const changed = applyContent(plan.fault, r, message.payload as Json, donor?.payload as Json | undefined);
        if (changed === undefined) {
          run.applied = false;
          return passOn(message);
        }
        run.note = `${plan.fault}: ${JSON.stringify(changed).slice(0, 120)}`;
        return passOn({ ...message, payload: changed });
      }
    }
  };
}

const EVIDENCE_CONTRACT = z.strictObject({
  booking_ref: z.string().regex(/^BK-[A-Z0-9]{6}$/),
  request_id: z.string(),
  offer_id: z.string(),
  flight_no: z.string().regex(/^[A-Z]{2}\d{3,4}$/),
  price: z.number(),
  currency: z.string().length(3),
  passengers: z.array(z.string()),
  paid: z.boolean(),
  receipt: z.string(),
  note: z.string().nullable().optional(),
});

const REQUEST_CONTRACT = z.strictObject({
  request_id: z.string(),
  trip: z.strictObject({ from: z.string(), to: z.string(), date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }),
  passengers: z.array(z.strictObject({ name: z.string(), age: z.number().int() })),
  budget: z.strictObject({ amount: z.number(), currency: z.string().length(3) }),
  notes: z.string().nullable().optional(),
});
const OBSERVATION_CONTRACT = z.strictObject({
  request_id: z.string(),
  offers: z.array(
    z.strictObject({
      offer_id: z.string(),
      flight_no: z.string(),
      departs: z.string(),
      price: z.number(),
      seats_left: z.number().int(),
    }),
  ),
  searched_at: z.string(),
  cache: z.null().optional(),
});
const VERDICT_CONTRACT = z.strictObject({
  request_id: z.string(),
  booking_ref: z.string().nullable(),
  verdict: z.enum(['approved', 'rejected']),
  reasons: z.array(z.string()),
});

const ACTION_CONTRACT = z.strictObject({
  request_id: z.string(),
  offer_id: z.string().regex(/^OF-[A-Z0-9]{5}$/),
  flight_no: z.string().regex(/^[A-Z]{2}\d{3,4}$/),
  passengers: z.array(z.string()).min(1),
  price: z.number().positive(),
  currency: z.string().length(3),
});

/** Trip booking: Planner → Searcher → Planner → Booker → Auditor → Planner. */
export async function travelRun(plan: RunPlan, pool: Pool): Promise<Label> {
  const r = rng(plan.seed);
  const run: ChannelRun = { sent: 0, applied: false, note: '', delivered: [] };
  const channel = new MessageChannel({ name: 'travel', steps: [channelProxy('travel', plan, run, pool)] });
  const n = plan.seed;
  const taskId = r() < 0.5 ? `trip-${n}` : undefined;
  const sessionId = r() < 0.8 ? `trip-session-${n}` : undefined;
  const versions = new Map<string, number>();
  const envelope = (source: string, target: string, boundary: string, payload: Json): Omit<AgentMessage, 'id'> => {
    const v = (versions.get(`${source}>${target}`) ?? 0) + 1;
    versions.set(`${source}>${target}`, v);
    return {
      source,
      target,
      boundary,
      ...(taskId ? { taskId } : {}),
      ...(sessionId ? { sessionId } : {}),
      version: v,
      payload,
    };
  };
  const requestId = code(r, 'REQ', 6);
  const base = Date.UTC(2027, int(r, 0, 11), int(r, 1, 28), int(r, 5, 20));
  const passengers = Array.from({ length: int(r, 1, 3) }, () => pick(r, NAMES));
  const note = pick(r, NOTES);
  const flaky = plan.recovered === true;
  let bookerFailed = false;

  channel.on(
    'Searcher',
    (m) =>
      runAgent('Searcher', async () => {
        const p = m.payload as { request_id: string };
        await sleep(int(r, 0, 3));
        const offers = Array.from({ length: int(r, 0, 4) === 0 ? 1 : int(r, 1, 4) }, () => ({
          offer_id: code(r, 'OF', 5),
          flight_no: `${pick(r, ['LH', 'TP', 'AF', 'SK', 'LX'])}${int(r, 100, 9999)}`,
          departs: isoAt(base, int(r, 0, 600)),
          price: Math.round((80 + r() * 900) * 100) / 100,
          seats_left: int(r, 0, 9),
        }));
        await channel.send(
          envelope('Searcher', 'Planner', 'observation', {
            request_id: p.request_id,
            offers,
            searched_at: new Date().toISOString(),
            ...(r() < 0.5 ? { cache: null } : {}),
          }),
        );
      }),
    r() < 0.7 ? { contract: REQUEST_CONTRACT } : {},
  );
  channel.on(
    'Planner',
    (m) =>
      runAgent('Planner', async () => {
        if (m.boundary === 'verdict') return;
        const p = m.payload as {
          request_id?: string;
          offers?: { offer_id: string; flight_no: string; price: number }[];
        };
        const offer = p.offers?.[0];
        if (!offer) return;
        const action = envelope('Planner', 'Booker', 'action', {
          request_id: p.request_id ?? requestId,
          offer_id: offer.offer_id,
          flight_no: offer.flight_no,
          passengers,
          price: offer.price,
          currency: 'EUR',
        });
        const id = randomUUID();
        try {
          await channel.send({ ...action, id });
        } catch {
          // The Booker failed on it: send the same message again.
          await sleep(int(r, 2, 10));
          await channel.send({ ...action, id });
        }
      }),
    r() < 0.7 ? { contract: z.union([OBSERVATION_CONTRACT, VERDICT_CONTRACT]) } : {},
  );
  channel.on(
    'Booker',
    (m) =>
      runAgent('Booker', async () => {
        if (flaky && !bookerFailed) {
          bookerFailed = true;
          throw new Error('booking service restarting');
        }
        const p = m.payload as {
          request_id: string;
          offer_id: string;
          flight_no: string;
          passengers: string[];
          price: number;
          currency: string;
        };
        const ref = code(r, 'BK', 6);
        const receipt = JSON.stringify({ booking_ref: ref, flight_no: p.flight_no, price: p.price });
        await channel.send(
          envelope('Booker', 'Auditor', 'evidence', {
            booking_ref: ref,
            request_id: p.request_id,
            offer_id: p.offer_id,
            flight_no: p.flight_no,
            price: p.price,
            currency: p.currency,
            passengers: p.passengers,
            paid: true,
            receipt,
            ...(note !== null ? { note } : {}),
          }),
        );
      }),
    r() < 0.7 ? { contract: ACTION_CONTRACT } : {},
  );
  channel.on(
    'Auditor',
    (m) =>
      runAgent('Auditor', async () => {
        const ok = EVIDENCE_CONTRACT.safeParse(m.payload).success;
        const p = m.payload as { request_id?: string; booking_ref?: string };
        await channel.send(
          envelope('Auditor', 'Planner', 'verdict', {
            request_id: p.request_id ?? requestId,
            booking_ref: p.booking_ref ?? null,
            verdict: ok ? 'approved' : 'rejected',
            reasons: ok ? [] : ['evidence failed its contract'],
          }),
        );
      }),
    r() < 0.7 ? { contract: EVIDENCE_CONTRACT } : {},
  );

  const traceId = await runWorkflow(
    'trip-booking',
    async (span) => {
      await runAgent('Planner', async () => {
        const trip = { from: pick(r, CITIES), to: pick(r, CITIES), date: isoAt(base, 0).slice(0, 10) };
        await channel.send(
          envelope('Planner', 'Searcher', 'request', {
            request_id: requestId,
            trip,
            passengers: passengers.map((name) => ({ name, age: int(r, 1, 90) })),
            budget: { amount: int(r, 200, 3000), currency: 'EUR' },
            ...(r() < 0.5 ? { notes: note } : {}),
          }),
        );
      }).catch(() => undefined);
      return span.spanContext().traceId;
    },
    taskId ? { taskId } : {},
  );
  return label(traceId, 'channel', 'trip-booking', plan, run);
}

const ALERT_CONTRACT = z.strictObject({
  alert_id: z.uuid(),
  service: z.string(),
  severity: z.enum(['P1', 'P2', 'P3']),
  metrics: z.strictObject({ p99_ms: z.number().int(), error_rate: z.number() }),
  window: z.strictObject({ start: z.iso.datetime(), end: z.iso.datetime() }),
  labels: z.array(z.string()),
});
const RUNBOOK_QUERY = z.strictObject({ alert_id: z.uuid(), service: z.string(), query: z.string() });
const OBSERVATION_RUNBOOK = z.strictObject({
  alert_id: z.uuid(),
  steps: z.array(z.string()),
  owner: z.string().includes('@'),
  doc_url: z.url(),
  matched: z.boolean(),
});
const ONCALL_CONTRACT = z.strictObject({
  alert_id: z.uuid(),
  service: z.string(),
  severity: z.string(),
  summary: z.string(),
  actions: z.array(z.string()),
  runbook_url: z.string().nullable(),
});

/** Incident triage: Monitor → Triage ⇄ Runbook (one or two rounds) → OnCall. */
export async function triageRun(plan: RunPlan, pool: Pool): Promise<Label> {
  const r = rng(plan.seed);
  const run: ChannelRun = { sent: 0, applied: false, note: '', delivered: [] };
  const channel = new MessageChannel({ name: 'triage', steps: [channelProxy('triage', plan, run, pool)] });
  const alertId = randomUUID();
  const service = pick(r, SERVICES);
  const severity = pick(r, SEVERITY);
  const sessionId = `inc-${plan.seed}`;
  const rounds = int(r, 1, 2);
  const started = Date.now() - int(r, 60, 3600) * 1000;
  let round = 0;
  let version = 0;
  const msg = (source: string, target: string, boundary: string, payload: Json): Omit<AgentMessage, 'id'> => ({
    source,
    target,
    boundary,
    sessionId,
    version: ++version,
    payload,
  });

  const contracts = r() < 0.7;
  channel.on(
    'Runbook',
    (m) =>
      runAgent('Runbook', async () => {
        const p = m.payload as { alert_id: string; query: string };
        await sleep(int(r, 0, 4));
        const steps = Array.from(
          { length: int(r, 0, 4) },
          (_, i) =>
            `${i + 1}. ${pick(r, ['check the error budget', 'roll back the last deploy', 'scale the pods to 6', 'drain the bad node', 'page the database owner'])}`,
        );
        await channel.send(
          msg('Runbook', 'Triage', 'observation', {
            alert_id: p.alert_id,
            steps,
            owner: pick(r, ['sre@example.com', 'oncall-db@example.org', 'zoë@example.net']),
            doc_url: `https://runbooks.example.com/${service}/${int(r, 1, 40)}`,
            matched: steps.length > 0,
          }),
        );
      }),
    contracts ? { contract: RUNBOOK_QUERY } : {},
  );
  channel.on(
    'Triage',
    (m) =>
      runAgent('Triage', async () => {
        const p = m.payload as { alert_id: string; steps?: string[]; doc_url?: string };
        if (m.boundary === 'alert') {
          await channel.send(
            msg('Triage', 'Runbook', 'request', {
              alert_id: p.alert_id,
              service,
              query: `${severity} ${service}: ${pick(r, ['latency', 'errors', 'saturation'])}`,
            }),
          );
          return;
        }
        if (++round < rounds) {
          await channel.send(
            msg('Triage', 'Runbook', 'request', {
              alert_id: p.alert_id,
              service,
              query: `follow-up: ${pick(r, ['latency', 'errors', 'saturation'])} after step ${round}`,
            }),
          );
          return;
        }
        await channel.send(
          msg('Triage', 'OnCall', 'evidence', {
            alert_id: p.alert_id,
            service,
            severity,
            summary: pick(r, [
              'p99 latency above SLO since the 14:02 deploy',
              'error rate 4× baseline on /pay — cause: TLS cert rotation',
              'Queue backlog growing; consumers stuck on a poison message',
              'Ünïcödé in tenant names breaks the cache key',
            ]),
            actions: p.steps ?? [],
            runbook_url: p.doc_url ?? null,
          }),
        );
      }),
    contracts ? { contract: z.union([ALERT_CONTRACT, OBSERVATION_RUNBOOK]) } : {},
  );
  channel.on('OnCall', () => runAgent('OnCall', async () => undefined), r() < 0.7 ? { contract: ONCALL_CONTRACT } : {});

  const traceId = await runWorkflow('incident-triage', async (span) => {
    await runAgent('Monitor', async () => {
      await channel.send(
        msg('Monitor', 'Triage', 'alert', {
          alert_id: alertId,
          service,
          severity,
          metrics: { p99_ms: int(r, 120, 9000), error_rate: Math.round(r() * 1000) / 10000 },
          window: { start: new Date(started).toISOString(), end: new Date().toISOString() },
          labels: r() < 0.5 ? [] : ['prod', pick(r, ['eu-west-1', 'us-east-2'])],
        }),
      );
    });
    return span.spanContext().traceId;
  });
  return label(traceId, 'channel', 'incident-triage', plan, run);
}

export function label(
  traceId: string,
  protocol: Protocol,
  workflow: string,
  plan: RunPlan,
  run: { applied: boolean; note: string; spanId?: string; at?: number },
): Label {
  const at = run.at ?? plan.at;
  return {
    traceId,
    ...(run.spanId !== undefined ? { spanId: run.spanId } : {}),
    protocol,
    workflow,
    fault: plan.fault ?? 'none',
    ...(at !== undefined ? { at } : {}),
    applied: plan.fault === undefined || run.applied,
    recovered: plan.recovered === true,
    note: run.note,
  };
}

// ------------------------------------------------------------------------------------------------ A2A: fact check

type Sdk = typeof import('@a2a-js/sdk', { with: { 'resolution-mode': 'import' } });

interface ExpressApp {
  use(path: string, ...handlers: unknown[]): void;
  listen(port: number, host: string, cb: () => void): Server;
}
const express = require('express') as (() => ExpressApp) & { json(): unknown };

/** What the fact checker accepts: a claim, its evidence, or a verdict request. */
const CLAIM_CONTRACT = z.union([
  z.strictObject({
    claim_id: z.string().regex(/^CL-\d+$/),
    text: z.string().min(1),
    source_url: z.url(),
    language: z.string().length(2),
    tags: z.array(z.string()),
  }),
  z.strictObject({
    claim_id: z.string().regex(/^CL-\d+$/),
    evidence: z.array(z.strictObject({ doc_id: z.string(), quote: z.string(), score: z.number() })).min(1),
    retrieved_at: z.iso.datetime(),
  }),
  z.strictObject({
    claim_id: z.string().regex(/^CL-\d+$/),
    verdict_request: z.boolean(),
    confidence_floor: z.number(),
    reviewer: z.string().includes('@'),
    note: z.string().nullable(),
  }),
]);

export interface A2aAgent {
  endpoint: string;
  sdk: Sdk;
  close(): Promise<void>;
}

/** The fact-checking agent: a real @a2a-js/sdk server whose request handler is instrumented. */
export async function startFactChecker(): Promise<A2aAgent> {
  const sdk = await import('@a2a-js/sdk');
  const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = await import('@a2a-js/sdk/server');
  const { UserBuilder, jsonRpcHandler } = await import('@a2a-js/sdk/server/express');
  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      const data = ctx.userMessage.parts.find((p) => p.content?.$case === 'data');
      const payload = (data?.content?.$case === 'data' ? data.content.value : undefined) as
        Record<string, unknown> | undefined;
      // Some thinking: the agent's own work, after the message arrived.
      await sleep(5 + ((String(payload?.claim_id ?? '').length * 13) % 120));
      bus.publish(
        AgentEvent.message(
          sdk.Message.fromJSON({
            messageId: randomUUID(),
            contextId: ctx.contextId,
            role: 'ROLE_AGENT',
            parts: [{ data: { claim_id: payload?.claim_id ?? null, status: 'noted' } }],
          }),
        ),
      );
      bus.finished();
    },
    async cancelTask() {
      // replies are immediate
    },
  };
  const app = express();
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}/a2a/jsonrpc`;
  const card = sdk.AgentCard.fromJSON({
    name: 'FactChecker',
    description: 'Checks claims against evidence',
    version: '1.0.0',
    supportedInterfaces: [{ url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: [{ id: 'check', name: 'check claims', description: 'Checks claims', tags: ['facts'] }],
  });
  const handler = instrumentA2aRequestHandler(new DefaultRequestHandler(card, new InMemoryTaskStore(), executor), {
    contract: CLAIM_CONTRACT,
  });
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return {
    endpoint,
    sdk,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Earlier runs' wire messages, per workflow and index (stale replays draw on them). */
export type WirePool = Map<string, Json>;

type Obj = { [k: string]: Json };
const isObj = (v: Json | undefined): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

interface WireState {
  n: number;
  applied: boolean;
  note: string;
  failedOnce: boolean;
  /** The index the fault was applied at. */
  at?: number;
}

/** The proxy's decision for one message request of a run: the planned fault at the planned index. */
function wireDecision(kind: 'a2a' | 'mcp', workflow: string, plan: RunPlan, state: WireState, pool: WirePool) {
  const r = rng(plan.seed * 104729 + 3);
  let at = plan.at;
  return (body: Json): WireFault | undefined => {
    if (!isObj(body)) return undefined;
    const isMessage = kind === 'a2a' ? body.method === 'SendMessage' : body.method === 'tools/call';
    if (!isMessage || !isObj(body.params)) return undefined;
    if (plan.recovered === true && kind === 'a2a' && !state.failedOnce && state.n === 1) {
      state.failedOnce = true;
      return { kind: 'fail', status: 503 };
    }
    const index = ++state.n;
    const key = `${workflow}:${index}`;
    const donor = pool.get(key);
    pool.set(key, body.params);
    if (plan.fault === undefined || at !== index) return undefined;
    state.applied = true;
    state.at = index;
    switch (plan.fault) {
      case 'non_delivery':
        state.note = 'connection reset before the request reached the server';
        return { kind: 'drop' };
      case 'timeout':
        state.note = 'held until the client gave up';
        return { kind: 'timeout', holdMs: int(r, 500, 800) };
      case 'delay': {
        const ms = int(r, 300, 1200);
        state.note = `held ${ms} ms, then forwarded`;
        return { kind: 'delay', ms };
      }
      case 'duplicate':
        state.note = 'forwarded twice';
        return { kind: 'duplicate' };
      case 'stale': {
        if (!isObj(donor)) {
          state.applied = false;
          return undefined;
        }
        state.note = 'replayed another run’s message';
        return { kind: 'rewrite', body: { ...body, params: donor } };
      }
      default: {
        const params = structuredClone(body.params);
        const holder =
          kind === 'a2a'
            ? firstDataPart(params)
            : isObj(params.arguments)
              ? { obj: params, key: 'arguments' }
              : undefined;
        const donorHolder =
          kind === 'a2a' && isObj(donor)
            ? firstDataPart(donor)
            : isObj(donor) && isObj(donor.arguments)
              ? { obj: donor, key: 'arguments' }
              : undefined;
        const changed = holder
          ? applyContent(
              plan.fault,
              r,
              holder.obj[holder.key]!,
              donorHolder ? donorHolder.obj[donorHolder.key] : undefined,
            )
          : undefined;
        if (!holder || changed === undefined) {
          // Nothing to change in this message (a one-key call cannot lose keys): the next message gets the fault.
          state.applied = false;
          at = index + 1;
          return undefined;
        }
        holder.obj[holder.key] = changed;
        state.note = `${plan.fault}: ${JSON.stringify(changed).slice(0, 120)}`;
        return { kind: 'rewrite', body: { ...body, params } };
      }
    }
  };
}

function firstDataPart(params: Obj): { obj: Obj; key: string } | undefined {
  const message = params.message;
  if (!isObj(message) || !Array.isArray(message.parts)) return undefined;
  const part = message.parts.find((p) => isObj(p) && 'data' in p);
  return isObj(part) ? { obj: part, key: 'data' } : undefined;
}

/** Fact check over A2A: the Coordinator sends a claim, its evidence and a verdict request to the FactChecker. */
export async function factCheckRun(agent: A2aAgent, plan: RunPlan, pool: WirePool): Promise<Label> {
  const r = rng(plan.seed);
  const state: WireState = { n: 0, applied: false, note: '', failedOnce: false };
  const proxy = await startProxy(
    agent.endpoint.replace(/\/a2a\/jsonrpc$/, ''),
    wireDecision('a2a', 'fact-check', plan, state, pool),
  );
  try {
    const { ClientFactory, ClientFactoryOptions } = await import('@a2a-js/sdk/client');
    const card: AgentCard = agent.sdk.AgentCard.fromJSON({
      name: 'FactChecker',
      description: 'Checks claims against evidence',
      version: '1.0.0',
      supportedInterfaces: [{ url: `${proxy.url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: false, pushNotifications: false },
      defaultInputModes: ['application/json'],
      defaultOutputModes: ['application/json'],
      skills: [],
    });
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        clientConfig: { interceptors: [a2aAgentCardInterceptor()] },
      }),
    );
    const client = await factory.createFromAgentCard(card);
    const contextId = randomUUID();
    const claimId = `CL-${int(r, 1000, 99999)}`;
    const lang = pick(r, ['en', 'de', 'ja', 'pt']);
    const messages: Json[] = [
      {
        claim_id: claimId,
        text: pick(r, [
          'The Eiffel Tower is 330 m tall.',
          'Reykjavík is the northernmost capital.',
          '東京の人口は1400万人を超える。',
          'A ação subiu 12% em março.',
          '[citation needed] bees can recognise faces',
        ]),
        source_url: `https://news.example.org/${int(r, 2020, 2027)}/${int(r, 1, 12)}/story-${int(r, 1, 999)}`,
        language: lang,
        tags: r() < 0.4 ? [] : ['science'],
      },
      {
        claim_id: claimId,
        evidence: Array.from({ length: int(r, 1, 3) }, () => ({
          doc_id: `DOC-${int(r, 10000, 99999)}`,
          quote: pick(r, [
            'measured at 330 metres including antennas',
            'Nuuk is further north but is not a sovereign capital',
            'census data, 2020',
            'no source found',
          ]),
          score: Math.round(r() * 100) / 100,
        })),
        retrieved_at: new Date().toISOString(),
      },
      {
        claim_id: claimId,
        verdict_request: true,
        confidence_floor: Math.round((0.5 + r() * 0.4) * 100) / 100,
        reviewer: pick(r, ['ana@example.com', 'zoë.m@example.de', 'li.lei@example.cn']),
        note: r() < 0.5 ? null : 'urgent',
      },
    ];
    const traceId = await runWorkflow('fact-check', async (span) => {
      await runAgent('Coordinator', async () => {
        for (const data of messages) {
          const params = agent.sdk.SendMessageRequest.fromJSON({
            message: { messageId: randomUUID(), contextId, role: 'ROLE_USER', parts: [{ data }] },
          });
          for (let attempt = 0; attempt < 2; attempt++) {
            try {
              await client.sendMessage(params, { signal: AbortSignal.timeout(2000) });
              break;
            } catch (err) {
              // A server error is worth one retry; a lost or timed-out request is given up.
              if (!/503|Service Unavailable/i.test(String((err as Error)?.message ?? err))) break;
            }
          }
          await sleep(int(r, 1, 5));
        }
      });
      return span.spanContext().traceId;
    });
    return label(traceId, 'a2a', 'fact-check', plan, state);
  } finally {
    await proxy.close();
  }
}

// ------------------------------------------------------------------------------------------------ MCP: inventory

export interface McpTools {
  url: string;
  close(): Promise<void>;
}

const SHAPES = {
  get_stock: { sku: z.string() },
  reserve: { sku: z.string(), quantity: z.number().int(), order_id: z.string() },
  confirm: { reservation_id: z.string(), order_id: z.string() },
  search: { query: z.string() },
};

/** Orders whose first call fails once (a transient tool error the agent retries). */
const flakyOrders = new Set<string>();

export async function startInventory(): Promise<McpTools> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const stock = new Map<string, number>();
  const newSession = async (): Promise<StreamableHTTPServerTransport> => {
    const mcp = instrumentMcpServer(new McpServer({ name: 'inventory', version: '1.0.0' }), {
      contracts: Object.fromEntries(Object.entries(SHAPES).map(([k, v]) => [k, z.strictObject(v)])),
    });
    const text = (v: unknown) => ({ content: [{ type: 'text' as const, text: JSON.stringify(v) }] });
    mcp.registerTool('get_stock', { description: 'Units in stock', inputSchema: SHAPES.get_stock }, async ({ sku }) => {
      if (!/^[A-Z]{3}-\d{3}$/.test(sku)) return { isError: true, ...text({ error: `unknown sku ${sku}` }) };
      return text({ sku, available: stock.get(sku) ?? 40, warehouse: 'LIS-2' });
    });
    mcp.registerTool(
      'reserve',
      { description: 'Reserve units', inputSchema: SHAPES.reserve },
      async ({ sku, quantity, order_id }) => {
        if (flakyOrders.delete(order_id)) return { isError: true, ...text({ error: 'inventory store busy, retry' }) };
        stock.set(sku, (stock.get(sku) ?? 40) - quantity);
        return text({ reservation_id: `RSV-${order_id}-${quantity}`, sku, quantity });
      },
    );
    mcp.registerTool(
      'confirm',
      { description: 'Confirm a reservation', inputSchema: SHAPES.confirm },
      async ({ reservation_id }) => text({ reservation_id, status: 'confirmed' }),
    );
    mcp.registerTool('search', { description: 'Search the catalogue', inputSchema: SHAPES.search }, async () =>
      text({ skus: ['MUG-120', 'LMP-204'] }),
    );
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        transports.set(id, transport);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
    };
    await mcp.connect(transport);
    return transport;
  };
  const readJson = (req: IncomingMessage): Promise<unknown> =>
    new Promise((resolve) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined);
        } catch {
          resolve(undefined);
        }
      });
    });
  const server = createServer((req, res) => {
    void (async () => {
      const sid = req.headers['mcp-session-id'];
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
      if (!transport && req.method === 'POST' && isInitializeRequest(body)) transport = await newSession();
      if (!transport) {
        res.writeHead(400).end('no session');
        return;
      }
      await transport.handleRequest(req, res, body);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      for (const t of transports.values()) await t.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Inventory reservation over MCP: check stock, reserve, confirm (and, sometimes, search after an unknown SKU). */
export async function inventoryRun(tools: McpTools, plan: RunPlan, pool: WirePool): Promise<Label> {
  const r = rng(plan.seed);
  const state: WireState = { n: 0, applied: false, note: '', failedOnce: false };
  const proxy = await startProxy(tools.url, wireDecision('mcp', 'inventory', plan, state, pool));
  const orderId = `ORD-${plan.seed}-${int(r, 100, 999)}`;
  const sku = `${pick(r, ['MUG', 'LMP', 'PEN', 'CUP', 'BAG'])}-${int(r, 100, 999)}`;
  const typo = plan.recovered === true && r() < 0.5;
  if (plan.recovered === true && !typo) flakyOrders.add(orderId);
  const client = new McpClient({ name: 'Planner', version: '1.0.0' });
  try {
    const traceId = await runWorkflow('inventory-reservation', async (span) => {
      await runAgent('Planner', async () => {
        await client.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)));
        const call = async (
          name: string,
          args: Record<string, unknown>,
        ): Promise<{ isError?: boolean; content?: unknown } | undefined> => {
          try {
            return (await client.callTool({ name, arguments: args }, undefined, { timeout: 2000 })) as {
              isError?: boolean;
              content?: unknown;
            };
          } catch {
            return undefined;
          }
        };
        const parse = (res: { content?: unknown } | undefined): Record<string, unknown> => {
          const first = Array.isArray(res?.content) ? (res.content[0] as { text?: string } | undefined) : undefined;
          try {
            return JSON.parse(first?.text ?? '{}') as Record<string, unknown>;
          } catch {
            return {};
          }
        };
        let item = sku;
        // Sometimes the agent also checks an alternative product first (a second entity of its own choosing).
        if (r() < 0.3)
          await call('get_stock', { sku: `${pick(r, ['MUG', 'LMP', 'PEN', 'CUP', 'BAG'])}-${int(r, 100, 999)}` });
        const stock = await call('get_stock', { sku: typo ? sku.toLowerCase() : sku });
        if (stock?.isError) {
          // An unknown SKU: the agent looks it up and carries on with what the search found.
          await call('search', { query: sku.toLowerCase() });
          await call('get_stock', { sku });
          item = sku;
        }
        const qty = int(r, 1, 6);
        let reserved = await call('reserve', { sku: item, quantity: qty, order_id: orderId });
        if (reserved?.isError) reserved = await call('reserve', { sku: item, quantity: qty, order_id: orderId });
        const rid = parse(reserved).reservation_id;
        await call('confirm', {
          reservation_id: typeof rid === 'string' ? rid : `RSV-${orderId}-${qty}`,
          order_id: orderId,
        });
        await client.close();
      });
      return span.spanContext().traceId;
    });
    return label(traceId, 'mcp', 'inventory-reservation', plan, state);
  } finally {
    await client.close().catch(() => undefined);
    await proxy.close();
  }
}
