/**
 * Hybrid diagnoser, routed by fault category as AgentChaos's analysis suggests: structural faults (error, timeout,
 * empty, truncate, corrupt, schema, delay, duplicate, non_delivery) leave hard evidence in span metadata and
 * detector findings, so the rules decide them; when the rules find nothing, or only a weak or semantic-looking
 * signal (semantic, stale, partial), the LLM reads the trace (the rules' signals are part of its rendering).
 */
import type { FaultType } from '../taxonomy';
import { createLlmDiagnoser, type LlmDiagnoserOptions } from './llm';
import { diagnoseByRules, type RuleDiagnoserOptions } from './rules';
import type { Diagnoser, Diagnosis } from './types';

const STRUCTURAL: ReadonlySet<FaultType> = new Set(['error', 'timeout', 'empty', 'truncate', 'corrupt', 'schema', 'delay', 'duplicate', 'non_delivery']);

export interface HybridDiagnoserOptions extends RuleDiagnoserOptions {
  llm?: LlmDiagnoserOptions;
  /** Rules' diagnoses at or above this confidence are kept without asking the LLM. Default 0.75. */
  trustRulesAt?: number;
  /** Use this LLM diagnoser instead of creating one (tests, sharing). */
  llmDiagnoser?: Diagnoser;
}

export function routesToRules(d: Diagnosis, trustAt: number): boolean {
  return d.faultType !== 'none' && STRUCTURAL.has(d.faultType) && d.confidence >= trustAt;
}

export function createHybridDiagnoser(options: HybridDiagnoserOptions = {}): Diagnoser {
  const trustAt = options.trustRulesAt ?? 0.75;
  const llm = options.llmDiagnoser ?? createLlmDiagnoser({ ...options.llm, ...(options.findings ? { findings: options.findings } : {}) });
  return {
    name: 'hybrid',
    async diagnose(trace) {
      const rules = diagnoseByRules(trace, options, 'hybrid');
      if (routesToRules(rules, trustAt)) return { ...rules, evidence: [...rules.evidence, 'routed: structural signal, decided by rules'] };
      const asked = await llm.diagnose(trace);
      if (asked.confidence === 0 && asked.faultType === 'none') {
        // The LLM failed: the rules' answer is better than nothing.
        return { ...rules, evidence: [...rules.evidence, ...asked.evidence] };
      }
      return { ...asked, diagnoser: 'hybrid', evidence: [...asked.evidence, `routed to llm (rules said ${rules.faultType}${rules.step !== null ? ` at step ${rules.step}` : ''})`] };
    },
  };
}
