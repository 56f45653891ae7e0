/**
 * Scores `faultline monitor` on the labelled set (generate.mjs): writes each run as an OTLP JSON file, runs the real
 * CLI from dist/ over them (`--format jsonl`), and counts per mode and content setting what the monitors named.
 *
 * How a finding is read: by its MAST mode and ARCF type (the vocabularies every finding carries, docs/monitors.md),
 * never by its wording. A finding names every evaluation mode whose vocabulary it uses:
 *  step repetition ← ARCF infinite_loop or MAST 1.3;  premature termination ← premature_termination or 3.1;
 *  quality degradation ← quality_degradation;  context overflow ← context_overflow (not from a history detector);
 *  history loss ← MAST 2.1, 1.4 other than context_overflow, or a history detector;  role violation ← role_violation
 *  or 1.2;  output conflict ← output_conflict;  timeout / deadlock ← timeout, or workflow_deadlock of fault type
 *  `timeout` (agents waiting until a deadline);  no progress ← workflow_deadlock of any other fault type (ARCF's
 *  "deadlock / no progress" without a wait: work that goes on and gets nowhere). A loop (infinite_loop, 1.3) names
 *  step repetition only: MAST keeps repeating a step (1.3) apart from not knowing when to stop (1.5).
 * A run is a hit when its labelled mode is among the modes its findings name; any other mode named is a false
 * prediction of that mode (precision). A clean run with any finding at all is a false positive. When the monitor's
 * output says a mode is not observable for a trace (any field of the trace's JSON whose name mentions "observ"),
 * a faulted run of that mode that was not named is counted apart, as "not observable", not as a miss.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODES, generateRuns } from './generate.mjs';

const ROOT = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', '..');

export const MODE_TITLES = {
  step_repetition: 'step repetition (1.3)',
  premature_termination: 'premature termination (3.1)',
  quality_degradation: 'quality degradation / output collapse',
  context_overflow: 'context overflow',
  history_loss: 'history loss / conversation reset (1.4, 2.1)',
  role_violation: 'role violation (1.2)',
  output_conflict: 'output conflict',
  timeout_deadlock: 'timeout / deadlock',
  no_progress: 'no progress',
};

/** The evaluation modes a finding (or a not-observable entry) names. */
export function modesOf(f) {
  const failure = f.failure ?? '';
  const mast = f.mast ?? '';
  const detector = String(f.detector ?? '');
  const out = new Set();
  if (failure === 'infinite_loop' || mast === '1.3') out.add('step_repetition');
  if (failure === 'premature_termination' || mast === '3.1') out.add('premature_termination');
  if (failure === 'quality_degradation') out.add('quality_degradation');
  const historyDetector = /history|reset/i.test(detector);
  if (failure === 'context_overflow' && !historyDetector) out.add('context_overflow');
  if (mast === '2.1' || (mast === '1.4' && failure !== 'context_overflow') || historyDetector) out.add('history_loss');
  if (failure === 'role_violation' || mast === '1.2') out.add('role_violation');
  if (failure === 'output_conflict') out.add('output_conflict');
  const waited = f.faultType === undefined || f.faultType === null || f.faultType === 'timeout';
  if (failure === 'timeout' || (failure === 'workflow_deadlock' && waited)) out.add('timeout_deadlock');
  if (failure === 'workflow_deadlock' && !waited) out.add('no_progress');
  return out;
}

/** Modes the monitor's output declares not observable for a trace, whatever shape the declaration takes. */
export function notObservableOf(traceJson) {
  const out = new Set();
  const read = (v) => {
    if (typeof v === 'string') {
      if (MODES.includes(v)) out.add(v);
      else for (const m of modesOf(/^\d\.\d$/.test(v) ? { mast: v } : { failure: v, detector: v })) out.add(m);
    } else if (Array.isArray(v)) v.forEach(read);
    else if (v && typeof v === 'object') {
      if ('mast' in v || 'failure' in v || 'mode' in v || 'detector' in v) {
        for (const m of modesOf({
          mast: v.mast ?? (/^\d\.\d$/.test(String(v.mode)) ? v.mode : undefined),
          failure: v.failure ?? v.mode,
          detector: v.detector,
          faultType: v.faultType,
        }))
          out.add(m);
      } else Object.values(v).forEach(read);
    }
  };
  const walk = (o) => {
    if (!o || typeof o !== 'object') return;
    for (const [k, v] of Object.entries(o)) {
      if (/observ/i.test(k) && !/^observed$/i.test(k)) read(v);
      else if (k !== 'findings' && typeof v === 'object') walk(v);
    }
  };
  walk(traceJson);
  return out;
}

/** Writes the runs as OTLP JSON files in a fresh temporary directory. */
export function writeRuns(runs, dir = mkdtempSync(join(tmpdir(), 'faultline-monitor-eval-'))) {
  const files = runs.map((r) => {
    const file = join(dir, `${r.id}.otlp.json`);
    writeFileSync(file, JSON.stringify(r.otlp));
    return file;
  });
  return { dir, files };
}

/** Runs `faultline monitor --format jsonl` (dist/) over the files: one JSON object per trace. */
export function runMonitor(files) {
  const cli = join(ROOT, 'bin', 'faultline.js');
  const r = spawnSync(process.execPath, [cli, 'monitor', ...files, '--format', 'jsonl'], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, NO_COLOR: '1' },
  });
  if (r.error) throw r.error;
  const traces = r.stdout
    .split('\n')
    .filter((l) => l.trim().startsWith('{'))
    .map((l) => JSON.parse(l));
  return { code: r.status, stderr: r.stderr, traces };
}

const ratio = (k, n) => (n === 0 ? undefined : k / n);

/** Scores the monitor's output against the labels. */
export function score(runs, traces) {
  const byTrace = new Map(traces.map((t) => [t.traceId, t]));
  const judged = runs.map((r) => {
    const t = byTrace.get(r.traceId);
    const predicted = new Set();
    for (const f of t?.findings ?? []) for (const m of modesOf(f)) predicted.add(m);
    const notObservable = t ? notObservableOf(t) : new Set();
    const hit = r.label !== 'clean' && predicted.has(r.label);
    return {
      run: r,
      read: t !== undefined,
      findings: t?.findings.length ?? 0,
      predicted,
      hit,
      notObservable: r.label !== 'clean' && !hit && notObservable.has(r.label),
    };
  });
  const cells = [];
  for (const content of [true, false]) {
    const set = judged.filter((j) => j.run.content === content);
    for (const mode of MODES) {
      const runsOf = set.filter((j) => j.run.label === mode);
      const named = set.filter((j) => j.predicted.has(mode));
      const observable = runsOf.filter((j) => j.run.evidence === 'spans' || content);
      cells.push({
        content,
        mode,
        n: runsOf.length,
        hits: runsOf.filter((j) => j.hit).length,
        notObservable: runsOf.filter((j) => j.notObservable).length,
        recall: ratio(runsOf.filter((j) => j.hit).length, runsOf.length),
        /** Recall over the runs whose fault leaves evidence without content (by the set's design). */
        observableN: observable.length,
        observableRecall: ratio(observable.filter((j) => j.hit).length, observable.length),
        precision: ratio(named.filter((j) => j.run.label === mode).length, named.length),
        named: named.length,
      });
    }
  }
  const totals = [true, false].map((content) => {
    const set = judged.filter((j) => j.run.content === content);
    const faulted = set.filter((j) => j.run.label !== 'clean');
    const clean = set.filter((j) => j.run.label === 'clean');
    const observable = faulted.filter((j) => content || j.run.evidence === 'spans');
    const declared = faulted.filter((j) => !j.notObservable);
    return {
      content,
      faulted: faulted.length,
      accuracy: ratio(faulted.filter((j) => j.hit).length, faulted.length),
      hits: faulted.filter((j) => j.hit).length,
      observable: observable.length,
      observableAccuracy: ratio(observable.filter((j) => j.hit).length, observable.length),
      declaredNotObservable: faulted.length - declared.length,
      accuracyOfDeclaredObservable: ratio(declared.filter((j) => j.hit).length, declared.length),
      clean: clean.length,
      falsePositives: clean.filter((j) => j.findings > 0).length,
      fpRate: ratio(clean.filter((j) => j.findings > 0).length, clean.length),
      fpVariants: [...new Set(clean.filter((j) => j.findings > 0).map((j) => j.run.variant))],
    };
  });
  return { judged, cells, totals, unread: judged.filter((j) => !j.read).length };
}

const pct = (x) => (x === undefined ? '–' : x.toFixed(2));

/** The tables, in Markdown, for docs/monitors.md. */
export function renderTables(s, meta) {
  const out = [];
  out.push(
    `${meta.runs} runs (${meta.producers.join(', ')}; content on and off), seed ${meta.seed}; ${s.unread} not read.`,
    '',
  );
  out.push('| | content captured | content not captured |', '|---|--:|--:|');
  const [on, off] = s.totals;
  out.push(
    `| mode accuracy on faulted runs | **${pct(on.accuracy)}** (${on.hits}/${on.faulted}) | **${pct(off.accuracy)}** (${off.hits}/${off.faulted}) |`,
  );
  out.push(
    `| of the runs whose fault shows without content | ${pct(on.observableAccuracy)} (${on.observable}) | ${pct(off.observableAccuracy)} (${off.observable}) |`,
  );
  out.push(
    `| faulted runs the monitor declared not observable | ${on.declaredNotObservable} | ${off.declaredNotObservable} |`,
  );
  out.push(
    `| accuracy on the rest | ${pct(on.accuracyOfDeclaredObservable)} | ${pct(off.accuracyOfDeclaredObservable)} |`,
  );
  out.push(
    `| false positives on clean runs | ${pct(on.fpRate)} (${on.falsePositives}/${on.clean}) | ${pct(off.fpRate)} (${off.falsePositives}/${off.clean}) |`,
  );
  out.push('');
  out.push(
    '| mode | recall (content) | precision (content) | recall (no content) | of observable (no content) | precision (no content) | not observable (declared, no content) |',
    '|---|--:|--:|--:|--:|--:|--:|',
  );
  for (const mode of MODES) {
    const a = s.cells.find((c) => c.content && c.mode === mode);
    const b = s.cells.find((c) => !c.content && c.mode === mode);
    out.push(
      `| ${MODE_TITLES[mode]} | ${pct(a.recall)} (${a.hits}/${a.n}) | ${pct(a.precision)} (${a.named}) | ${pct(b.recall)} (${b.hits}/${b.n}) | ${b.observableN ? `${pct(b.observableRecall)} (${b.observableN})` : '– (0)'} | ${pct(b.precision)} (${b.named}) | ${b.notObservable} |`,
    );
  }
  const fps = [...new Set([...on.fpVariants, ...off.fpVariants])];
  out.push('', `Clean-run variants with a finding: ${fps.length ? fps.join(', ') : 'none'}.`);
  return out.join('\n');
}

/** Generates, writes, monitors and scores: the whole evaluation. */
export function evaluate({ seed = 28, keep = false, clean } = {}) {
  const runs = generateRuns({ seed, ...(clean !== undefined ? { clean } : {}) });
  const { dir, files } = writeRuns(runs);
  try {
    const monitor = runMonitor(files);
    const s = score(runs, monitor.traces);
    return {
      runs,
      files,
      monitor,
      score: s,
      tables: renderTables(s, { runs: runs.length, producers: [...new Set(runs.map((r) => r.producer))], seed }),
      dir,
    };
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}
