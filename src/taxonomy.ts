/**
 * The shared vocabulary of fault types: what a diagnosis names, what a detector finding reports, and what the
 * injected ground truth is mapped to for evaluation.
 */
export const FAULT_TYPES = [
  'error',
  'timeout',
  'empty',
  'truncate',
  'corrupt',
  'schema',
  'stale',
  'semantic',
  'delay',
  'duplicate',
  'non_delivery',
  'partial',
  'none',
] as const;

export type FaultType = (typeof FAULT_TYPES)[number];

/** AgentChaos's categories, plus the inter-agent communication category of "When Messages Go Wrong". */
export type FaultCategory = 'crash' | 'omission' | 'value' | 'communication';

/** Where a fault is applied: the body's content, the transport, the SSE stream, or an agent message. */
export type FaultMode = 'content' | 'transport' | 'stream' | 'message';

export function isFaultType(v: unknown): v is FaultType {
  return typeof v === 'string' && (FAULT_TYPES as readonly string[]).includes(v);
}
