/**
 * Message detectors against the catalog's inter-agent communication faults, on RQ4-shaped shopping evidence
 * envelopes ("When Messages Go Wrong", fault-catalog.md §2.4/§2.10). Two views: the channel's (original and
 * delivered known, as online detection sees them) and the receiver's alone (registered contract only).
 */
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { runDetectors } from '../../detectors/index';
import type { DetectionContext, MessageContract, MessageObservation, Observation } from '../../detectors/types';
import { getFault } from '../../src/catalog/index';
import type { MessageFault } from '../../src/catalog/types';
import type { AgentMessage } from '../../instrumentation/types';

function evidence(task: string, session: string, sku: string, productId: string, version = 2): AgentMessage {
  const payload: Record<string, unknown> = {
    task_id: task,
    product_title: 'Anker PowerCore 10000 portable charger',
    product_id: productId,
    sku,
    requested_quantity: 2,
    observed_quantity: 2,
    cart_verified: true,
  };
  payload.evidence = JSON.stringify(payload);
  return {
    id: `ev-${task}-${version}`,
    source: 'EvidenceWorker',
    target: 'Verifier',
    boundary: 'I4',
    taskId: task,
    sessionId: session,
    version,
    sentAt: 1_700_000_000_000,
    payload,
  };
}

const contract: MessageContract = {
  name: 'shopping-evidence',
  match: { boundary: 'I4' },
  schema: z.object({
    task_id: z.string(),
    product_title: z.string(),
    product_id: z.string(),
    sku: z.string(),
    requested_quantity: z.number().int(),
    observed_quantity: z.number().int().min(0),
    cart_verified: z.boolean(),
    evidence: z.string(),
  }),
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

const original = evidence('task-41', 'sess-41', 'B00P7N0320', 'prod-7731');
const donor = evidence('task-17', 'sess-17', 'B0194WDVHI', 'prod-1204');
const previous = { ...evidence('task-41', 'sess-41', 'B00P7N0320', 'prod-7731', 1), id: 'ev-task-41-1' };
/** The pre-action observation the identity pin refers to. */
const preAction: MessageObservation = {
  kind: 'message',
  hasContent: true,
  delivered: [
    {
      id: 'obs-1',
      source: 'Worker',
      target: 'Navigator',
      boundary: 'I3',
      taskId: 'task-41',
      payload: { sku: 'B00P7N0320', product_id: 'prod-7731' },
    },
  ],
};

function run(name: string, view: 'channel' | 'receiver') {
  const fault = getFault(name) as MessageFault;
  const effect = fault.apply(structuredClone(original), fault.params.parse({}), {
    previousToTarget: [previous],
    donor,
  });
  const delivered = effect.kind === 'deliver' ? effect.messages : [];
  const wait = effect.waitMs ?? 0;
  const obs: MessageObservation = {
    kind: 'message',
    hasContent: true,
    delivered,
    latencyMs: 2 + wait,
    deadlineMs: 500,
  };
  if (view === 'channel') obs.original = original;
  const earlier: Observation[] = [preAction, { kind: 'message', hasContent: true, delivered: [previous] }];
  const ctx: DetectionContext = {
    earlier,
    contracts: [contract],
    binding: { taskId: 'task-41', sessionId: 'sess-41', minVersion: 2 },
    now: 1_700_000_000_100,
  };
  return { fault, findings: runDetectors(obs, ctx), noop: effect.kind === 'deliver' && effect.noop === true };
}

const names = [
  'non_delivery',
  'deadline',
  'delay',
  'duplicate',
  'stale_replay',
  'valid_partial',
  'semantic_corruption',
  'identity_corruption',
  'key_drift',
  'type_drift',
  'reordering',
];

describe('message faults, channel view (online: original and delivered)', () => {
  test('a clean delivery has no finding', () => {
    const obs: MessageObservation = {
      kind: 'message',
      hasContent: true,
      original,
      delivered: [structuredClone(original)],
      latencyMs: 3,
      deadlineMs: 500,
    };
    expect(
      runDetectors(obs, {
        earlier: [preAction],
        contracts: [contract],
        binding: { taskId: 'task-41', sessionId: 'sess-41', minVersion: 2 },
        now: 1_700_000_000_100,
      }),
    ).toEqual([]);
  });
  test.each(names)('%s is detected with its fault type', (name) => {
    const { fault, findings, noop } = run(name, 'channel');
    expect(noop).toBe(false);
    expect(findings.map((f) => f.faultType)).toContain(fault.type);
  });
});

describe('message faults, receiver view (contract only, no original)', () => {
  // What a receiver can tell on its own: the receiver contract of fault-catalog.md §2.10.
  const receiverVisible = [
    'valid_partial',
    'stale_replay',
    'semantic_corruption',
    'identity_corruption',
    'key_drift',
    'type_drift',
    'duplicate',
    'reordering',
  ];
  test.each(receiverVisible)('%s is detected', (name) => {
    const { findings } = run(name, 'receiver');
    expect(findings.length).toBeGreaterThan(0);
  });
  test('identity corruption is caught by the identity pin even though inner and outer agree', () => {
    const { findings } = run('identity_corruption', 'receiver');
    expect(findings.find((f) => f.detector === 'evidence_completeness' && /identity/.test(f.evidence))).toBeDefined();
  });
  test('semantic corruption with a swapped mirror is an inner/outer disagreement', () => {
    const m = structuredClone(original);
    (m.payload as Record<string, unknown>).evidence = (donor.payload as Record<string, unknown>).evidence;
    const obs: MessageObservation = { kind: 'message', hasContent: true, delivered: [m] };
    const f = runDetectors(obs, { earlier: [], contracts: [contract], now: 0 });
    expect(f.map((x) => x.evidence).join('\n')).toMatch(/inner and outer evidence disagree on .*product_id/);
  });
});
