/** Types of generate.mjs (the generator is plain JavaScript so that `node test/monitor-eval/run.mjs` runs it as is). */
export type Mode =
  | 'step_repetition'
  | 'premature_termination'
  | 'quality_degradation'
  | 'context_overflow'
  | 'history_loss'
  | 'role_violation'
  | 'output_conflict'
  | 'timeout_deadlock'
  | 'no_progress';
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  events: Array<{
    name: string;
    timeUnixNano: string;
    attributes: Array<{ key: string; value: Record<string, unknown> }>;
  }>;
  status: { code: number; message?: string };
}
export interface LabelledRun {
  id: string;
  producer: 'semconv' | 'openllmetry';
  content: boolean;
  workflow: string;
  model: string;
  provider: string;
  label: Mode | 'clean';
  variant: string;
  evidence: 'spans' | 'content' | null;
  traceId: string;
  otlp: {
    resourceSpans: Array<{
      resource: unknown;
      scopeSpans: Array<{ scope: { name: string; version: string }; spans: OtlpSpan[] }>;
    }>;
  };
}
export const MODES: Mode[];
export const PRODUCERS: Array<'semconv' | 'openllmetry'>;
export function generateRuns(options?: { seed?: number; perMode?: number; clean?: number }): LabelledRun[];
