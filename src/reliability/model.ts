/**
 * ARCF's reliability model (§3.6, ../shared/papers/arcf-reliability-control.txt), computed from traces.
 *
 * A workflow is a chain of components in series — each agent, and each inter-agent edge (a handoff, an A2A or MCP
 * call) between them — and P(c) is the probability that component c does its part in a run without any failure:
 * every attempt of its LLM calls and messages succeeded (an HTTP or transport error, or a finding that counts — error
 * severity, confidence ≥ 0.6, as the guards count them — is a failure; a guard's retry or fallback means the attempt
 * before it failed). From those, for each workflow:
 *
 *     (1) R_base      = Π P(c)
 *     (2) P_retry(c)  = 1 − (1 − P(c))^k                      k attempts
 *     (3) P_comp(c)   = P_retry(c) + (1 − P_retry(c)) · P(c_fallback)
 *         R_retry = Π P_retry(c),  R_fallback = Π P_comp(c)
 *
 * set beside the completion actually observed (the task's verdict `faultline.task.success` when the trace carries
 * one, else the workflow span's status). P(c_fallback) is the success rate of the fallback attempts the traces show
 * on that component, or — when there were none — assumed equal to P(c), and said so. Rates carry 95 % Wilson
 * intervals; the workflow predictions percentile-bootstrap intervals over runs (seeded: the same traces give the same
 * report). Ground truth (`faultline.fault.*`) is never read.
 */
import { detectSpans } from '../../detectors/from-span';
import { readWorkflows, type WorkflowRun } from '../../detectors/monitors/read';
import type { Finding } from '../../detectors/types';
import { FaultlineInputError } from '../errors';
import { str, type SpanRecord, type TraceRecord } from '../traces/model';
import { bootstrap, quantile, wilson, type Interval, type Proportion } from '../stats';

export interface ReliabilityOptions {
  /** k of equation 2: attempts per component (default 3: the first and faultline's default two retries). */
  attempts?: number;
  /** Group runs by this root-span attribute as well as by workflow name (e.g. `faultline.campaign.arm`). */
  groupBy?: string;
  /** Bootstrap resamples (default 1000) and seed (default 1). */
  reps?: number;
  seed?: number;
}

/** One attempt of a call or message on a route. */
interface Attempt {
  route: string;
  ok: boolean;
  fallback: boolean;
}

/** What one component did in one run. */
interface ComponentRun {
  /** Every attempt succeeded: no failure to recover from. */
  raw: boolean;
  /** What it delivered in the end was fine (after any recovery). */
  final: boolean;
  attempts: Attempt[];
}

interface RunFacts {
  completed: boolean;
  durationMs: number;
  components: Map<string, ComponentRun>;
}

export interface ComponentReport {
  name: string;
  kind: 'agent' | 'edge';
  /** Runs it took part in. */
  runs: number;
  /** P(c): runs where it did its part without any failure. */
  p: Proportion;
  /** Runs where what it delivered was fine in the end (after retries, fallbacks, rollbacks). */
  recovered: Proportion;
  pRetry: number;
  pFallback: number;
  /** P(c_fallback): observed on fallback attempts, or assumed equal to P(c). */
  fallbackP: { p: number; observed: boolean; attempts: number };
}

export interface RouteReport {
  route: string;
  /** Attempts on the route and how many succeeded. */
  attempts: Proportion;
}

export interface WorkflowReport {
  workflow: string;
  group?: string;
  runs: number;
  observed: Proportion;
  k: number;
  base: Interval;
  retry: Interval;
  fallback: Interval;
  components: ComponentReport[];
  routes: RouteReport[];
  p95DurationMs: number;
}

export interface ReliabilityReport {
  traces: number;
  workflows: WorkflowReport[];
}

// ------------------------------------------------------------------------------------------------ per run

const SEVERITY = ['info', 'warning', 'error', 'critical'];
const counts = (f: Finding): boolean => SEVERITY.indexOf(f.severity) >= 2 && f.confidence >= 0.6;

/**
 * The attempts a span shows: its guard events (a retry or fallback follows a failed attempt), then its outcome.
 * Attempts on the call's own route are named by it (`provider:model`, `handoff A → B`); attempts on a fallback by
 * the guard's fallback label (`route→name`).
 */
function attemptsOf(span: SpanRecord, route: string, ok: boolean): Attempt[] {
  const out: Attempt[] = [];
  let current = route;
  let onFallback = false;
  for (const e of span.events) {
    if (e.name !== 'faultline.guard') continue;
    const action = str(e.attributes, 'faultline.guard.action');
    const label = str(e.attributes, 'faultline.guard.route') ?? current;
    if (action === 'retry' || action === 'resubmit' || action === 'reacquire' || action === 'fail_fast') {
      out.push({ route: current, ok: false, fallback: onFallback });
    } else if (action === 'fallback') {
      out.push({ route: current, ok: false, fallback: onFallback });
      current = label;
      onFallback = true;
    }
  }
  out.push({ route: current, ok, fallback: onFallback });
  return out;
}

function runFacts(run: WorkflowRun, findings: Map<string, Finding[]>): RunFacts {
  const components = new Map<string, ComponentRun>();
  const add = (name: string, attempts: Attempt[]): void => {
    const c = components.get(name) ?? { raw: true, final: true, attempts: [] };
    c.attempts.push(...attempts);
    if (attempts.some((a) => !a.ok)) c.raw = false;
    // What it delivered in the end is what its last call or message delivered (a re-ask that worked recovers).
    c.final = attempts[attempts.length - 1]!.ok;
    components.set(name, c);
  };
  const failedBy = (span: SpanRecord): boolean => (findings.get(span.spanId) ?? []).some(counts);
  for (const step of run.steps) {
    const obs = step.observation;
    if (!obs) continue;
    if (obs.kind === 'llm') {
      const r = obs.response;
      const ok =
        (r.status === undefined || r.status < 400) &&
        r.errorType === undefined &&
        r.aborted !== true &&
        !failedBy(step.span);
      const route = `${obs.request?.provider ?? 'llm'}:${obs.request?.model ?? r.model ?? '?'}`;
      add(
        obs.scope?.agent !== undefined ? `agent ${obs.scope.agent}` : 'calls outside agents',
        attemptsOf(step.span, route, ok),
      );
    } else {
      const m = obs.original ?? obs.delivered[0];
      if (!m) continue;
      const delivered = (obs.facts?.deliveredCount ?? obs.delivered.length) > 0;
      const ok = delivered && step.span.status.code !== 'ERROR' && !failedBy(step.span);
      const edge = `${m.source || '?'} → ${m.target || '?'}`;
      add(`edge ${edge}`, attemptsOf(step.span, `handoff ${edge}`, ok));
    }
  }
  // An agent turn that failed (its span ERROR) failed its component, whatever its calls said.
  for (const t of run.turns)
    if (!t.ok) add(`agent ${t.name}`, [{ route: `agent ${t.name}`, ok: false, fallback: false }]);
  // Agents that made no call still took part.
  for (const t of run.turns)
    if (!components.has(`agent ${t.name}`)) components.set(`agent ${t.name}`, { raw: true, final: true, attempts: [] });
  const completed = run.success ?? run.outcome === 'ok';
  return { completed, durationMs: Math.max(0, run.end - run.start), components };
}

// ------------------------------------------------------------------------------------------------ per workflow

function componentP(runs: readonly RunFacts[], name: string): number {
  let n = 0;
  let k = 0;
  for (const r of runs) {
    const c = r.components.get(name);
    if (!c) continue;
    n++;
    if (c.raw) k++;
  }
  return n === 0 ? NaN : k / n;
}

function predictions(
  runs: readonly RunFacts[],
  names: readonly string[],
  k: number,
  fallbackP: Map<string, { p: number; observed: boolean }>,
) {
  let base = 1;
  let retry = 1;
  let fallback = 1;
  for (const name of names) {
    const p = componentP(runs, name);
    if (!Number.isFinite(p)) continue;
    const pr = 1 - (1 - p) ** k;
    const fb = fallbackP.get(name);
    const pf = fb?.observed ? fb.p : p;
    base *= p;
    retry *= pr;
    fallback *= pr + (1 - pr) * pf;
  }
  return { base, retry, fallback };
}

export function reliabilityOf(
  runs: readonly WorkflowRun[],
  options: ReliabilityOptions = {},
  traces = 0,
): ReliabilityReport {
  const k = options.attempts ?? 3;
  if (!Number.isInteger(k) || k < 1)
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `attempts (k) must be a positive integer; got ${String(options.attempts)}`,
    );
  if (options.groupBy?.startsWith('faultline.fault.'))
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `--group-by ${options.groupBy}: faultline.fault.* is ground truth, which the reliability model does not read`,
    );
  const findings = new Map<TraceRecord, Map<string, Finding[]>>();
  const groups = new Map<string, { workflow: string; group?: string; facts: RunFacts[] }>();
  for (const run of runs) {
    let f = findings.get(run.trace);
    if (!f) findings.set(run.trace, (f = detectSpans(run.trace)));
    const group =
      options.groupBy !== undefined && run.root ? String(run.root.attributes[options.groupBy] ?? '(none)') : undefined;
    const key = `${run.name}\u0000${group ?? ''}`;
    const g = groups.get(key) ?? { workflow: run.name, ...(group !== undefined ? { group } : {}), facts: [] };
    g.facts.push(runFacts(run, f));
    groups.set(key, g);
  }
  const workflows: WorkflowReport[] = [];
  for (const g of groups.values()) {
    const names = [...new Set(g.facts.flatMap((r) => [...r.components.keys()]))].sort((a, b) =>
      a.startsWith('agent') === b.startsWith('agent') ? 0 : a.startsWith('agent') ? -1 : 1,
    );
    const fallbackP = new Map<string, { p: number; observed: boolean; attempts: number }>();
    const components: ComponentReport[] = names.map((name) => {
      let n = 0;
      let raw = 0;
      let fin = 0;
      let fbN = 0;
      let fbK = 0;
      for (const r of g.facts) {
        const c = r.components.get(name);
        if (!c) continue;
        n++;
        if (c.raw) raw++;
        if (c.final) fin++;
        for (const a of c.attempts) {
          if (!a.fallback) continue;
          fbN++;
          if (a.ok) fbK++;
        }
      }
      const p = wilson(raw, n);
      const fb = fbN > 0 ? { p: fbK / fbN, observed: true, attempts: fbN } : { p: p.p, observed: false, attempts: 0 };
      fallbackP.set(name, fb);
      const pRetry = 1 - (1 - p.p) ** k;
      return {
        name: name.replace(/^(agent|edge) /, ''),
        kind: name.startsWith('agent') ? 'agent' : 'edge',
        runs: n,
        p,
        recovered: wilson(fin, n),
        pRetry,
        pFallback: pRetry + (1 - pRetry) * fb.p,
        fallbackP: fb,
      };
    });
    const routes = new Map<string, { n: number; k: number }>();
    for (const r of g.facts) {
      for (const c of r.components.values()) {
        for (const a of c.attempts) {
          const x = routes.get(a.route) ?? { n: 0, k: 0 };
          x.n++;
          if (a.ok) x.k++;
          routes.set(a.route, x);
        }
      }
    }
    const stat = (which: 'base' | 'retry' | 'fallback') => (sample: readonly RunFacts[]) =>
      predictions(sample, names, k, fallbackP)[which];
    const opts = { reps: options.reps ?? 1000, seed: options.seed ?? 1 };
    const completed = g.facts.filter((r) => r.completed).length;
    workflows.push({
      workflow: g.workflow,
      ...(g.group !== undefined ? { group: g.group } : {}),
      runs: g.facts.length,
      observed: wilson(completed, g.facts.length),
      k,
      base: bootstrap(g.facts, stat('base'), opts),
      retry: bootstrap(g.facts, stat('retry'), opts),
      fallback: bootstrap(g.facts, stat('fallback'), opts),
      components,
      routes: [...routes]
        .map(([route, x]) => ({ route, attempts: wilson(x.k, x.n) }))
        .sort((a, b) => a.route.localeCompare(b.route)),
      p95DurationMs: quantile(
        g.facts.map((r) => r.durationMs),
        0.95,
      ),
    });
  }
  workflows.sort((a, b) => a.workflow.localeCompare(b.workflow) || (a.group ?? '').localeCompare(b.group ?? ''));
  return { traces, workflows };
}

/** The report over traces (read once each through the monitors' workflow reading). */
export async function reliabilityReport(
  traces: AsyncIterable<TraceRecord> | Iterable<TraceRecord>,
  options: ReliabilityOptions = {},
): Promise<ReliabilityReport> {
  const runs: WorkflowRun[] = [];
  let n = 0;
  for await (const t of traces) {
    n++;
    runs.push(...readWorkflows(t));
  }
  return reliabilityOf(runs, options, n);
}
