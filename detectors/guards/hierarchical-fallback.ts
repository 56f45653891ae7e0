/**
 * Hierarchical fallback selection (ARCF §4.4, eq. 5, ../shared/papers/arcf-reliability-control.txt): once retries
 * are used up, every candidate fallback is scored
 *
 *     score(a) = w1·H(a) + w2·Cap(a) + w3·HierBonus(a) + w4·Cost(a),   w = 0.40, 0.30, 0.20, 0.10
 *
 * and the best one takes the call. H is the route health faultline already keeps (the recent success rate, 1 for a
 * route with no history, exported as `faultline.route.health`); Cap is the candidate's declared capability for the
 * route's work (0..1, default 1); HierBonus rewards candidates close in the hierarchy: 1 / (1 + tier), the tier
 * defaulting to the candidate's place in the list (so the list order is the hierarchy when nothing else is said);
 * Cost rewards the cheaper: 1 − cost / max cost among the candidates (0.5 for all when none gives a cost).
 * A candidate whose circuit is open is not considered.
 */
import type { FallbackRoute } from './config';

export interface FallbackWeights {
  reliability: number;
  capability: number;
  hierarchy: number;
  cost: number;
}

/** ARCF's weights. */
export const ARCF_WEIGHTS: FallbackWeights = { reliability: 0.4, capability: 0.3, hierarchy: 0.2, cost: 0.1 };

export interface ScoredFallback {
  index: number;
  fallback: FallbackRoute;
  score: number;
  terms: { health: number; capability: number; hierarchy: number; cost: number };
}

/** Score the candidates (those `eligible` admits), best first; ties keep the list order. */
export function scoreFallbacks(
  list: readonly FallbackRoute[],
  health: (index: number) => number,
  eligible: (index: number) => boolean,
  weights: FallbackWeights = ARCF_WEIGHTS,
): ScoredFallback[] {
  const costs = list.map((f) => f.cost).filter((c): c is number => typeof c === 'number');
  const maxCost = costs.length > 0 ? Math.max(...costs) : 0;
  const out: ScoredFallback[] = [];
  list.forEach((fallback, index) => {
    if (!eligible(index)) return;
    const terms = {
      health: clamp(health(index)),
      capability: clamp(fallback.capability ?? 1),
      hierarchy: 1 / (1 + (fallback.tier ?? index)),
      cost: maxCost > 0 ? clamp(1 - (fallback.cost ?? maxCost) / maxCost) : 0.5,
    };
    const score =
      weights.reliability * terms.health +
      weights.capability * terms.capability +
      weights.hierarchy * terms.hierarchy +
      weights.cost * terms.cost;
    out.push({ index, fallback, score, terms });
  });
  return out.sort((a, b) => b.score - a.score || a.index - b.index);
}

const clamp = (x: number): number => (Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);
