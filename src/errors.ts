/**
 * Coded errors. Known errors are printed by the CLI as `✖ message` without a stack (exit 2 for bad input).
 * Structured details (zod issues, file positions) stay on the error as data.
 */
export type FaultlineErrorCode =
  | 'FAULTLINE_PLAN_INVALID'
  | 'FAULTLINE_PLAN_NOT_FOUND'
  | 'FAULTLINE_CONFIG_INVALID'
  | 'FAULTLINE_PRODUCTION_REFUSED'
  | 'FAULTLINE_TRACE_UNKNOWN_FORMAT'
  | 'FAULTLINE_TRACE_MALFORMED'
  | 'FAULTLINE_FILE_NOT_FOUND'
  | 'FAULTLINE_OUTPUT_UNWRITABLE'
  | 'FAULTLINE_ENDPOINT_UNREACHABLE'
  | 'FAULTLINE_LLM_OUTPUT_INVALID'
  | 'FAULTLINE_GUARD_REJECTED'
  | 'FAULTLINE_CIRCUIT_OPEN'
  | 'FAULTLINE_CONTRACT_INVALID'
  | 'FAULTLINE_WORKFLOW_DEADLINE'
  | 'FAULTLINE_VERIFICATION_FAILED'
  | 'FAULTLINE_USAGE';

export class FaultlineError extends Error {
  readonly code: FaultlineErrorCode;
  readonly details?: unknown;

  constructor(code: FaultlineErrorCode, message: string, options?: { cause?: unknown; details?: unknown }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'FaultlineError';
    this.code = code;
    this.details = options?.details;
  }
}

/** Bad user input (plans, trace files, CLI usage): exit code 2 in the CLI. */
export class FaultlineInputError extends FaultlineError {
  constructor(code: FaultlineErrorCode, message: string, options?: { cause?: unknown; details?: unknown }) {
    super(code, message, options);
    this.name = 'FaultlineInputError';
  }
}

export function isFaultlineError(e: unknown): e is FaultlineError {
  return e instanceof FaultlineError;
}
