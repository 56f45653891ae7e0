/**
 * Reject: the typed errors a guarded call fails with. Both are coded FaultlineErrors the agent can catch
 * (`err.code === 'FAULTLINE_GUARD_REJECTED'`), with the findings that caused the rejection kept as data.
 */
import { FaultlineError } from '../../src/errors';
import type { Finding } from '../types';

export class GuardRejectedError extends FaultlineError {
  readonly route: string;
  readonly findings: readonly Finding[];
  constructor(route: string, findings: readonly Finding[], message?: string) {
    const first = findings[0];
    super(
      'FAULTLINE_GUARD_REJECTED',
      message ??
        `faultline guard rejected the response on route ${route}: ${first ? `${first.faultType} (${first.detector}: ${first.evidence})` : 'unrecovered fault'}`,
      { details: { route, findings } },
    );
    this.name = 'GuardRejectedError';
    this.route = route;
    this.findings = findings;
  }
}

export class CircuitOpenError extends FaultlineError {
  readonly route: string;
  readonly retryInMs: number;
  constructor(route: string, retryInMs: number) {
    super(
      'FAULTLINE_CIRCUIT_OPEN',
      `faultline circuit for route ${route} is open; next probe in ${Math.ceil(retryInMs)} ms`,
      { details: { route, retryInMs } },
    );
    this.name = 'CircuitOpenError';
    this.route = route;
    this.retryInMs = retryInMs;
  }
}

export function isGuardRejection(e: unknown): e is GuardRejectedError | CircuitOpenError {
  return e instanceof GuardRejectedError || e instanceof CircuitOpenError;
}
