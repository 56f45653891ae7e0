/**
 * Failed calls: an HTTP error status, a transport timeout or a connection error. The call's span already says it
 * failed; the finding names the fault type (timeout vs error) so guards and diagnosers share one vocabulary.
 */
import type { Detector, Finding, LlmObservation, Observation } from './types';

const TIMEOUT = /timeout|timed.?out|ETIMEDOUT|UND_ERR_(HEADERS|BODY|CONNECT)_TIMEOUT|DEADLINE/i;

export function callFaultType(
  status: number | undefined,
  errorType: string | undefined,
): 'timeout' | 'error' | undefined {
  if ((errorType !== undefined && TIMEOUT.test(errorType)) || status === 408 || status === 504) return 'timeout';
  if ((status !== undefined && status >= 400) || errorType !== undefined) return 'error';
  return undefined;
}

export const callErrorDetector: Detector = {
  name: 'call_error',
  applies: (obs) => obs.kind === 'llm' && (obs.response.errorType !== undefined || (obs.response.status ?? 0) >= 400),
  detect(obs: Observation): Finding[] {
    const r = (obs as LlmObservation).response;
    const type = callFaultType(r.status, r.errorType);
    if (!type) return [];
    return [
      {
        detector: 'call_error',
        faultType: type,
        severity: 'error',
        confidence: 0.95,
        evidence: `call failed: ${r.errorType ?? `HTTP ${r.status}`}`,
        location: { spanId: obs.spanId },
      },
    ];
  },
};
