/**
 * Hybrid diagnoser, routed by fault category as AgentChaos's analysis suggests: structural faults (error, timeout,
 * empty, truncate, corrupt, schema, delay, duplicate, non_delivery) leave hard evidence in span metadata and
 * detector findings, so the rules decide them; when the rules find nothing, or only a weak or semantic-looking
 * signal (semantic, stale, partial), the LLM reads the trace (the rules' signals are part of its rendering). When
 * the LLM is needed and cannot answer, the trace's diagnosis is an error (DiagnoserError), as for the llm diagnoser.
 */
import type { FaultType } from '../taxonomy';
import { createLlmDiagnoser, type LlmDiagnoserOptions } from './llm';
import { diagnoseByRules, type RuleDiagnoserOptions } from './rules';
import { DiagnoserError, type Diagnoser, type Diagnosis } from './types';

const STRUCTURAL: ReadonlySet<FaultType> = new Set([
  'error',
  'timeout',
  'empty',
  'truncate',
  'corrupt',
  'schema',
  'delay',
  'duplicate',
  'non_delivery',
]);

export interface HybridDiagnoserOptions extends RuleDiagnoserOptions {
  llm?: LlmDiagnoserOptions;
  /** Rules' diagnoses at or above this confidence are kept without asking the LLM. Default 0.75. */
  trustRulesAt?: number;
  /** Use this LLM diagnoser instead of creating one (tests, sharing). */
  llmDiagnoser?: Diagnoser;
}

export function routesToRules(d: Diagnosis, trustAt: number): boolean {
  return (
    d.faultType !== 'none' && d.faultType !== 'not_observable' && STRUCTURAL.has(d.faultType) && d.confidence >= trustAt
  );
}

export function createHybridDiagnoser(options: HybridDiagnoserOptions = {}): Diagnoser {
  const trustAt = options.trustRulesAt ?? 0.75;
  const llm =
    options.llmDiagnoser ??
    createLlmDiagnoser({ ...options.llm, ...(options.findings ? { findings: options.findings } : {}) });
  return {
    name: 'hybrid',
    async diagnose(trace) {
      const rules = diagnoseByRules(trace, options, 'hybrid');
      if (routesToRules(rules, trustAt))
        return { ...rules, evidence: [...rules.evidence, 'routed: structural signal, decided by rules'] };
      // The rules were not decisive: the LLM must answer. If it cannot, this trace could not be diagnosed (the
      // rejection propagates as this trace's error; a weak rules' answer is not passed off as the diagnosis).
      const asked = await llm.diagnose(trace).catch((err: unknown) => {
        throw new DiagnoserError(
          trace.traceId,
          'hybrid',
          `${err instanceof Error ? err.message : String(err)} (the rules alone said ${rules.faultType}${rules.step !== null ? ` at step ${rules.step}` : ''})`,
          { cause: err },
        );
      });
      return {
        ...asked,
        diagnoser: 'hybrid',
        evidence: [
          ...asked.evidence,
          `routed to llm (rules said ${rules.faultType}${rules.step !== null ? ` at step ${rules.step}` : ''})`,
        ],
        recovered: rules.recovered ?? [],
      };
    },
  };
}
