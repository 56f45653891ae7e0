/**
 * Inter-agent communication faults ("When Messages Go Wrong", docs/fault-catalog.md §2), applied between sender and
 * receiver: on the in-process channel to the AgentMessage, on A2A / MCP calls to the request message. Each transform
 * keeps the message valid JSON; when a transform has nothing to act on (no donor, no such field) it is a no-op.
 */
import { z } from 'zod';
import { timerMs } from '../duration';
import type { AgentMessage } from '../../instrumentation/types';
import type { FaultType } from '../taxonomy';
import { STRATEGIES } from './agentchaos/experiments';
import { clone } from './json';
import type { MessageEffect, MessageFault, MessageFaultContext } from './types';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function fault(
  name: string,
  type: FaultType,
  description: string,
  params: z.ZodType,
  apply: (m: AgentMessage, p: Obj, ctx: MessageFaultContext) => MessageEffect,
): MessageFault {
  return {
    name,
    base: name,
    type,
    category: 'communication',
    mode: 'message',
    target: 'message',
    strategy: STRATEGIES.single,
    fixedStrategy: false,
    description,
    params: params as unknown as z.ZodType<Record<string, unknown>>,
    apply,
  };
}

function withPayload(m: AgentMessage, payload: unknown): AgentMessage {
  return { ...m, payload };
}

function deliver(original: AgentMessage, changed: AgentMessage): MessageEffect {
  const noop = JSON.stringify(changed) === JSON.stringify(original);
  return { kind: 'deliver', messages: [changed], noop };
}

/** Walk every object in a JSON value (depth first), letting `f` edit it in place. */
function eachObject(v: unknown, f: (o: Obj) => void): void {
  if (Array.isArray(v)) v.forEach((x) => eachObject(x, f));
  else if (isObj(v)) {
    f(v);
    Object.values(v).forEach((x) => eachObject(x, f));
  }
}

/** Evidence fields the generic valid-partial operator removes (communication_interceptor.py). */
export const DEFAULT_PARTIAL_FIELDS = ['product_id', 'sku', 'observed_quantity', 'evidence'];
export const DEFAULT_KEY_DRIFT: Record<string, string> = {
  task_id: 'task_binding',
  candidate_answer: 'candidate_response',
  cart_verified: 'verified_cart',
  observed_quantity: 'quantity_seen',
  product_url: 'url',
};
export const DEFAULT_TYPE_DRIFT = [
  'state_version',
  'version',
  'candidate_answer',
  'evidence_row_indices',
  'requested_quantity',
  'observed_quantity',
  'quantity',
  'cart_verified',
];

function validPartial(m: AgentMessage, p: Obj): MessageEffect {
  const payload = clone(m.payload);
  const fields = Array.isArray(p.fields) ? (p.fields as string[]) : undefined;
  if (!fields && isObj(payload) && isObj(payload.evidence_result)) {
    // The evaluated cell (§2.5): keep the candidate answer and the first two evidence rows only.
    const out: Obj = { evidence_result: { candidate_answer: payload.evidence_result.candidate_answer } };
    if (Array.isArray(payload.visible_evidence)) out.visible_evidence = payload.visible_evidence.slice(0, 2);
    return deliver(m, withPayload(m, out));
  }
  const drop = new Set(fields ?? DEFAULT_PARTIAL_FIELDS);
  eachObject(payload, (o) => {
    for (const k of Object.keys(o)) if (drop.has(k)) delete o[k];
  });
  return deliver(m, withPayload(m, payload));
}

function swapFromDonor(m: AgentMessage, ctx: MessageFaultContext, keys: string[], mirror: boolean): MessageEffect {
  const donor = ctx.donor?.payload;
  if (!isObj(m.payload) || !isObj(donor)) return { kind: 'deliver', messages: [m], noop: true };
  const payload = clone(m.payload);
  for (const k of keys) {
    if (k in payload && k in donor && JSON.stringify(payload[k]) !== JSON.stringify(donor[k]))
      payload[k] = clone(donor[k]);
  }
  // Identity corruption keeps inner and outer consistent: the JSON-string evidence mirror is rebuilt (§2.7).
  if (mirror && typeof payload.evidence === 'string') {
    const rest = { ...payload };
    delete rest.evidence;
    payload.evidence = JSON.stringify(rest);
  }
  return deliver(m, withPayload(m, payload));
}

function keyDrift(m: AgentMessage, p: Obj): MessageEffect {
  const renames = isObj(p.renames) ? (p.renames as Record<string, string>) : DEFAULT_KEY_DRIFT;
  const payload = clone(m.payload);
  eachObject(payload, (o) => {
    for (const [from, to] of Object.entries(renames)) {
      if (from in o && !(to in o)) {
        o[to] = o[from];
        delete o[from];
      }
    }
  });
  return deliver(m, withPayload(m, payload));
}

function drift(v: unknown): unknown {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.map((x) => (typeof x === 'number' ? String(x) : x));
  if (typeof v === 'string') return [v];
  return v;
}

function typeDrift(m: AgentMessage, p: Obj): MessageEffect {
  const fields = new Set(Array.isArray(p.fields) ? (p.fields as string[]) : DEFAULT_TYPE_DRIFT);
  const payload = clone(m.payload);
  eachObject(payload, (o) => {
    for (const k of Object.keys(o)) if (fields.has(k)) o[k] = drift(o[k]);
  });
  return deliver(m, withPayload(m, payload));
}

const fieldList = z.array(z.string().min(1)).min(1);

export function communicationFaults(): MessageFault[] {
  return [
    fault(
      'non_delivery',
      'non_delivery',
      'the message is dropped: the receiver gets nothing (HTTP: the request never reaches the server; the client sees a connection reset)',
      z.strictObject({}),
      () => ({ kind: 'drop' }),
    ),
    fault(
      'deadline',
      'timeout',
      'wait the deadline, then deliver nothing (HTTP: reset after the deadline)',
      z.strictObject({
        deadlineMs: timerMs(z.number().int().min(0))
          .default(500)
          .meta({ description: 'how long the sender waits before the message is lost, in ms' }),
      }),
      (_m, p) => ({ kind: 'drop', waitMs: Number(p.deadlineMs ?? 500) }),
    ),
    fault(
      'delay',
      'delay',
      'deliver after delayMs',
      z.strictObject({
        delayMs: timerMs(z.number().int().min(0)).default(1000).meta({ description: 'added latency, in ms' }),
      }),
      (m, p) => ({ kind: 'deliver', messages: [m], waitMs: Number(p.delayMs ?? 1000) }),
    ),
    fault(
      'duplicate',
      'duplicate',
      'deliver the message twice (HTTP: the request is sent twice, the client gets the first response)',
      z.strictObject({}),
      (m) => ({
        kind: 'deliver',
        messages: [m, clone(m)],
      }),
    ),
    fault(
      'stale_replay',
      'stale',
      'the whole envelope is replaced by a stale one: by default another task’s message at the same boundary (cross-session replay), or with from: "previous" the last message to the same target in this task',
      z.strictObject({
        from: z
          .enum(['other_task', 'previous'])
          .default('other_task')
          .meta({ description: 'where the stale message comes from' }),
      }),
      (m, p, ctx) => {
        const stale = p.from === 'previous' ? ctx.previousToTarget[ctx.previousToTarget.length - 1] : ctx.donor;
        if (!stale) return { kind: 'deliver', messages: [m], noop: true };
        return deliver(m, clone(stale));
      },
    ),
    fault(
      'valid_partial',
      'partial',
      'required evidence fields removed, the message still valid: an evidence_result keeps only its candidate answer and the first two evidence rows; otherwise the fields listed (default product_id, sku, observed_quantity, evidence) are removed at any depth',
      z.strictObject({ fields: fieldList.optional().meta({ description: 'keys to remove, at any depth' }) }),
      (m, p) => validPartial(m, p),
    ),
    fault(
      'semantic_corruption',
      'semantic',
      'the evidence block (evidence_result / evidence) is swapped for a donor’s from another task at the same boundary; the outer binding is kept',
      z.strictObject({
        fields: fieldList.optional().meta({ description: 'payload keys to swap (default evidence_result, evidence)' }),
      }),
      (m, p, ctx) =>
        swapFromDonor(
          m,
          ctx,
          Array.isArray(p.fields) ? (p.fields as string[]) : ['evidence_result', 'evidence'],
          false,
        ),
    ),
    fault(
      'identity_corruption',
      'semantic',
      'the entity ids (default sku, product_id, entity_id) are swapped for a donor’s, keeping inner and outer consistent',
      z.strictObject({
        fields: fieldList.optional().meta({ description: 'payload keys holding the entity identity' }),
      }),
      (m, p, ctx) =>
        swapFromDonor(
          m,
          ctx,
          Array.isArray(p.fields) ? (p.fields as string[]) : ['sku', 'product_id', 'entity_id'],
          true,
        ),
    ),
    fault(
      'key_drift',
      'schema',
      'contract keys renamed (task_id→task_binding, candidate_answer→candidate_response, …) at any depth',
      z.strictObject({
        renames: z.record(z.string(), z.string()).optional().meta({ description: 'old key → new key' }),
      }),
      (m, p) => keyDrift(m, p),
    ),
    fault(
      'type_drift',
      'schema',
      'contract value types drift: numbers and booleans become strings, a string answer becomes a one-element list',
      z.strictObject({
        fields: fieldList
          .optional()
          .meta({ description: 'keys whose values drift (default state_version, version, candidate_answer, …)' }),
      }),
      (m, p) => typeDrift(m, p),
    ),
    fault(
      'reordering',
      'stale',
      'the previous message to the same target is delivered again after this one (newer, then older)',
      z.strictObject({}),
      (m, _p, ctx) => {
        const older = ctx.previousToTarget[ctx.previousToTarget.length - 1];
        if (!older) return { kind: 'deliver', messages: [m], noop: true };
        return { kind: 'deliver', messages: [m, clone(older)] };
      },
    ),
  ];
}
