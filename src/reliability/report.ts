/** The reliability report as terminal tables and as JSON. */
import { table } from '../report/colors';
import type { ReliabilityReport, WorkflowReport } from './model';
import type { Interval } from '../stats';

const pct = (x: number): string => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '–');
const ci = (i: Interval): string =>
  Number.isFinite(i.lo) && Number.isFinite(i.hi) ? `[${pct(i.lo)}, ${pct(i.hi)}]` : '';
const rate = (i: Interval & { k?: number; n?: number }): string =>
  `${pct(i.p)} ${ci(i)}${i.n !== undefined ? ` (${i.k}/${i.n})` : ''}`.trim();

function workflowText(w: WorkflowReport): string {
  const title = `${w.workflow}${w.group !== undefined ? ` [${w.group}]` : ''}: ${w.runs} run${w.runs === 1 ? '' : 's'}, P95 ${Math.round(w.p95DurationMs)} ms`;
  const summary = table(
    ['', 'completion', '95 % interval'],
    [
      ['observed', pct(w.observed.p), `${ci(w.observed)} (${w.observed.k}/${w.observed.n})`],
      ['(1) R_base = Π P(c)', pct(w.base.p), ci(w.base)],
      [`(2) with k = ${w.k} attempts`, pct(w.retry.p), ci(w.retry)],
      ['(3) with fallback', pct(w.fallback.p), ci(w.fallback)],
    ],
    new Set([1]),
  );
  const comps = table(
    [
      'component',
      'runs',
      'P(c) without failure',
      'delivered after recovery',
      `P_retry (k=${w.k})`,
      'P(fallback)',
      'P_composite',
    ],
    w.components.map((c) => [
      `${c.kind} ${c.name}`,
      String(c.runs),
      rate(c.p),
      rate(c.recovered),
      pct(c.pRetry),
      c.fallbackP.observed ? `${pct(c.fallbackP.p)} (${c.fallbackP.attempts} seen)` : `${pct(c.fallbackP.p)} (assumed)`,
      pct(c.pFallback),
    ]),
    new Set([1]),
  );
  const routes = table(
    ['route', 'attempt success'],
    w.routes.map((r) => [r.route, rate(r.attempts)]),
  );
  return [title, summary, '', comps, '', routes].join('\n');
}

export function reliabilityText(r: ReliabilityReport): string {
  if (r.workflows.length === 0) return `${r.traces} trace${r.traces === 1 ? '' : 's'} read; no workflow found\n`;
  const head = `ARCF reliability model over ${r.traces} trace${r.traces === 1 ? '' : 's'} (${r.workflows.length} workflow group${r.workflows.length === 1 ? '' : 's'}); components in series, 95 % intervals`;
  return `${[head, ...r.workflows.map(workflowText)].join('\n\n')}\n`;
}

export function reliabilityJson(r: ReliabilityReport): unknown {
  return r;
}
