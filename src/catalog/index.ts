/**
 * The fault catalog: every fault a plan can name. The 65 AgentChaos configurations (content faults), the transport
 * and streaming faults that real clients see, and the inter-agent communication faults.
 */
import { agentChaosFaults } from './agentchaos/experiments';
import { communicationFaults } from './communication';
import { streamFaults } from './stream';
import { transportFaults } from './transport';
import type { FaultDefinition } from './types';

export type * from './types';

const ALL: readonly FaultDefinition[] = [
  ...agentChaosFaults(),
  ...transportFaults(),
  ...streamFaults(),
  ...communicationFaults(),
];
const BY_NAME = new Map(ALL.map((f) => [f.name, f]));

/** Every fault name, in catalog order. */
export const FAULT_NAMES: readonly string[] = ALL.map((f) => f.name);

export function listFaults(): readonly FaultDefinition[] {
  return ALL;
}

export function getFault(name: string): FaultDefinition | undefined {
  return BY_NAME.get(name);
}

/** The closest catalog name (Levenshtein), for "did you mean" messages. */
export function nearestFaultName(name: string): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const n of FAULT_NAMES) {
    const d = levenshtein(name, n);
    if (d < bestD) {
      bestD = d;
      best = n;
    }
  }
  return bestD <= Math.max(3, Math.floor(name.length / 3)) ? best : undefined;
}

function levenshtein(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0];
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j];
      dp[j] = Math.min(dp[j] + 1, dp[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length];
}
