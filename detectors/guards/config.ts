/**
 * The guard configuration: routes, each with the detectors that judge it and the actions that protect it. It can be
 * given in the plan file or a FAULTLINE_GUARDS JSON/YAML file (validated by `GuardConfigSchema`); functions (the
 * reacquire callback, zod contracts) come only through the API. Named presets serve the campaign's protection arms.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { timerMs } from '../../src/duration';
import { guardsFileFromEnv, processEnv } from '../../src/env';
import { FaultlineInputError } from '../../src/errors';
import { FAULT_TYPES } from '../../src/taxonomy';

const str = z.string().min(1);

export const RouteMatchSchema = z.strictObject({
  provider: str.optional(),
  model: str.optional(),
  agent: str.optional(),
  tool: str.optional(),
  boundary: str.optional(),
  source: str.optional(),
  host: str.optional(),
});

export const RetryPolicySchema = z.strictObject({
  maxRetries: z
    .number()
    .int()
    .min(0)
    .max(10)
    .optional()
    .meta({ description: 'retries after the first attempt (default 2)' }),
  baseDelayMs: timerMs(z.number().min(0)).optional(),
  maxDelayMs: timerMs(z.number().min(0)).optional(),
  jitter: z.enum(['full', 'equal', 'none']).optional(),
  honourRetryAfter: z.boolean().optional(),
  maxRetryAfterMs: timerMs(z.number().min(0)).optional(),
});

export const CircuitPolicySchema = z.strictObject({
  failureThreshold: z.number().int().min(1).optional(),
  coolDownMs: timerMs(z.number().min(0)).optional(),
  halfOpenProbes: z.number().int().min(1).optional(),
  minHealth: z.number().min(0).max(1).optional(),
});

export const FallbackRouteSchema = z.strictObject({
  name: str.optional(),
  /** Another endpoint, e.g. `http://127.0.0.1:4001` (default: the same origin). */
  origin: z
    .string()
    .regex(/^https?:\/\/[^/]+$/, 'an origin like https://host:port, without a path')
    .optional(),
  path: z.string().startsWith('/').optional(),
  /** Another model: the request body's `model` is rewritten. */
  model: str.optional(),
  /** ARCF's fallback score (hierarchical-fallback.ts): capability for the route's work (0..1, default 1), place in
   * the hierarchy (0 = closest; default: the list position), relative cost (any unit, lower is cheaper). */
  capability: z.number().min(0).max(1).optional(),
  tier: z.number().int().min(0).optional(),
  cost: z.number().min(0).optional(),
});

const EvidenceKind = z.enum(['string', 'number', 'integer', 'boolean', 'object', 'array']);

/** A message contract given as data (JSON Schema); zod contracts are given through the API. */
export const ContractSchema = z.strictObject({
  name: str,
  match: z.strictObject({ boundary: str.optional(), target: str.optional(), source: str.optional() }).optional(),
  schema: z.record(z.string(), z.unknown()).optional(),
  requiredEvidence: z.record(z.string(), EvidenceKind).optional(),
  evidenceMirror: str.optional(),
  identity: z.array(str).optional(),
});

export const GuardRouteSchema = z.strictObject({
  name: str.optional(),
  match: RouteMatchSchema.optional(),
  detectors: z.array(str).optional().meta({ description: 'detectors that judge this route (default: all)' }),
  on: z
    .array(z.enum(FAULT_TYPES))
    .optional()
    .meta({ description: 'fault types that count as a failure (default: all)' }),
  minSeverity: z.enum(['info', 'warning', 'error', 'critical']).optional().meta({ description: 'default error' }),
  minConfidence: z.number().min(0).max(1).optional().meta({ description: 'default 0.6' }),
  retry: z.union([RetryPolicySchema, z.literal(false)]).optional(),
  fallback: z.array(FallbackRouteSchema).optional(),
  circuit: z.union([CircuitPolicySchema, z.literal(false)]).optional(),
  onFailure: z
    .enum(['record', 'reject'])
    .optional()
    .meta({ description: 'HTTP: when recovery failed, deliver and record (default) or reject' }),
  reacquire: z
    .boolean()
    .optional()
    .meta({ description: 'channel: one guarded readback through the reacquire function' }),
  ledger: z.boolean().optional().meta({ description: 'channel: suppress duplicate deliveries of an action' }),
  resubmit: z
    .number()
    .int()
    .min(0)
    .max(2)
    .optional()
    .meta({ description: 'channel: redeliver an undelivered action request (≤ 2)' }),
  onUnrecovered: z
    .enum(['deliver', 'drop', 'reject'])
    .optional()
    .meta({ description: 'channel: a message still failing its contract (default drop)' }),
});

export const GuardConfigSchema = z.strictObject({
  routes: z.array(GuardRouteSchema).default([]),
  contracts: z.array(ContractSchema).optional(),
  ttlMs: timerMs(z.number().min(0)).optional(),
});

export type GuardRoute = z.infer<typeof GuardRouteSchema>;
export type GuardConfig = z.infer<typeof GuardConfigSchema>;
export type GuardConfigInput = z.input<typeof GuardConfigSchema>;
export type FallbackRoute = z.infer<typeof FallbackRouteSchema>;

/** Validate a guard config (plan file section, FAULTLINE_GUARDS file, API); bad input names what and where. */
export function parseGuardConfig(input: unknown, where = 'guards'): GuardConfig {
  const r = GuardConfigSchema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  throw new FaultlineInputError('FAULTLINE_PLAN_INVALID', `✖ ${issue.message} → at ${where}${path}`, {
    details: r.error.issues,
  });
}

export type GuardPresetName = 'none' | 'execution' | 'evidence' | 'both';

export interface PresetOptions {
  /** Boundary of action requests (default I2). */
  actionBoundary?: string;
  /** Boundary of evidence handoffs (default I4). */
  evidenceBoundary?: string;
}

/**
 * The campaign's protection arms ("When Messages Go Wrong" RQ4): execution guards = the action ledger (duplicate
 * suppression, ≤ 2 resubmissions of an undelivered action request, with back-off) on the action path; evidence guards
 * = the receiver contract with one guarded readback on the evidence path (contracts and the reacquire function are
 * given through the API); both = the two together.
 */
export function guardPreset(name: GuardPresetName, options: PresetOptions = {}): GuardConfig {
  const execution: GuardRoute = {
    name: 'execution',
    match: { boundary: options.actionBoundary ?? 'I2' },
    detectors: ['duplicate_delivery', 'empty_output'],
    ledger: true,
    resubmit: 2,
    retry: { maxRetries: 2, baseDelayMs: 20, maxDelayMs: 200, jitter: 'equal' },
    onUnrecovered: 'deliver',
  };
  const evidence: GuardRoute = {
    name: 'evidence',
    match: { boundary: options.evidenceBoundary ?? 'I4' },
    detectors: [
      'evidence_completeness',
      'schema_contract',
      'staleness',
      'encoding',
      'structural_truncation',
      'empty_output',
      'in_band_error',
    ],
    reacquire: true,
    onUnrecovered: 'drop',
  };
  const routes =
    name === 'execution'
      ? [execution]
      : name === 'evidence'
        ? [evidence]
        : name === 'both'
          ? [execution, evidence]
          : [];
  return { routes };
}

/**
 * Read a guard config file (JSON or YAML), e.g. the one FAULTLINE_GUARDS names. Errors name the file and the field.
 */
export function loadGuardConfig(path: string): GuardConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new FaultlineInputError(
      'FAULTLINE_FILE_NOT_FOUND',
      `✖ cannot read the guard config ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      { cause: err },
    );
  }
  let data: unknown;
  try {
    data = /\.json$/i.test(path) ? JSON.parse(text) : (require('yaml') as typeof import('yaml')).parse(text);
  } catch (err) {
    throw new FaultlineInputError(
      'FAULTLINE_PLAN_INVALID',
      `✖ ${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${(err as Error).message.split('\n')[0]}`,
      { cause: err },
    );
  }
  return parseGuardConfig(data, path);
}

/** The guard config named by FAULTLINE_GUARDS, if any (for the API; `start()` gets its guards through src/config.ts). */
export function guardConfigFromEnv(env: NodeJS.ProcessEnv = processEnv()): GuardConfig | undefined {
  const p = guardsFileFromEnv(env);
  return p ? loadGuardConfig(p) : undefined;
}
