/**
 * A diagnosis in one sentence a user can read: what went wrong, in which agent's which call, and the evidence; then
 * what the run recovered from on its own.
 */
import type { FaultType } from '../taxonomy';
import type { Diagnosis } from './types';

const WHAT: Record<Exclude<FaultType, 'none'>, string> = {
  error: 'failed',
  timeout: 'timed out',
  empty: 'returned nothing usable',
  truncate: 'was cut short',
  corrupt: 'came back garbled',
  schema: 'came back in the wrong shape',
  stale: 'delivered something stale',
  semantic: 'carried a wrong value',
  delay: 'arrived late',
  duplicate: 'was delivered more than once',
  non_delivery: 'was never delivered',
  partial: 'arrived incomplete',
};

function where(d: Diagnosis): string {
  const step = d.step !== null ? `${d.stepKind === 'message' ? 'message' : 'LLM call'} ${d.step}` : 'span';
  const name = d.spanName ? ` "${d.spanName}"` : '';
  const agent = d.agent ? ` of agent ${d.agent}` : '';
  return `${step}${name}${agent}`;
}

export function describeFault(d: Diagnosis, evidence: string): string {
  const recovered = (d.recovered ?? []).map(
    (r) =>
      `${r.spanName}${r.agent ? ` (${r.agent})` : ''} ${r.faultType === 'timeout' ? 'timed out' : 'failed'} and ${r.how}`,
  );
  const tail =
    recovered.length > 0
      ? ` Recovered on its own: ${recovered.slice(0, 3).join('; ')}${recovered.length > 3 ? `; and ${recovered.length - 3} more` : ''}.`
      : '';
  if (d.faultType === 'none') return `No fault found.${tail}`;
  if (d.faultType === 'not_observable') {
    return `Something went wrong that this trace cannot name (not observable)${evidence ? `: ${evidence.replace(/\.$/, '')}` : ''}. Turn on message-content capture in the producer (or run under faultline's instrumentation, which records content-free verdicts) to tell the fault.${tail}`;
  }
  const what = WHAT[d.faultType];
  const text = `The ${where(d)} ${what} (${d.faultType})${evidence ? `: ${evidence.replace(/\.$/, '')}` : ''}.`;
  return text.charAt(0).toUpperCase() + text.slice(1) + tail;
}
