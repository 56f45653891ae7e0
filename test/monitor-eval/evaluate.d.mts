/** Types of evaluate.mjs. */
import type { LabelledRun, Mode } from './generate.mjs';
export interface TraceOutput {
  traceId: string;
  findings: Array<{ mast: string | null; failure: string | null; detector: string; [k: string]: unknown }>;
  [k: string]: unknown;
}
export interface Cell {
  content: boolean;
  mode: Mode;
  n: number;
  hits: number;
  notObservable: number;
  recall?: number;
  observableN: number;
  observableRecall?: number;
  precision?: number;
  named: number;
}
export interface Totals {
  content: boolean;
  faulted: number;
  accuracy?: number;
  hits: number;
  observable: number;
  observableAccuracy?: number;
  declaredNotObservable: number;
  accuracyOfDeclaredObservable?: number;
  clean: number;
  falsePositives: number;
  fpRate?: number;
  fpVariants: string[];
}
export interface Score {
  judged: Array<{
    run: LabelledRun;
    read: boolean;
    findings: number;
    predicted: Set<Mode>;
    hit: boolean;
    notObservable: boolean;
  }>;
  cells: Cell[];
  totals: [Totals, Totals];
  unread: number;
}
export const MODE_TITLES: Record<Mode, string>;
export function modesOf(f: {
  mast?: string | null;
  failure?: string | null;
  detector?: string | null;
  faultType?: string | null;
}): Set<Mode>;
export function notObservableOf(trace: unknown): Set<Mode>;
export function writeRuns(runs: LabelledRun[], dir?: string): { dir: string; files: string[] };
export function runMonitor(files: string[]): { code: number | null; stderr: string; traces: TraceOutput[] };
export function score(runs: LabelledRun[], traces: TraceOutput[]): Score;
export function renderTables(s: Score, meta: { runs: number; producers: string[]; seed: number }): string;
export function evaluate(options?: { seed?: number; keep?: boolean; clean?: number }): {
  runs: LabelledRun[];
  files: string[];
  monitor: ReturnType<typeof runMonitor>;
  score: Score;
  tables: string;
  dir: string;
};
