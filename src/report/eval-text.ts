/**
 * The `faultline eval` terminal report: overall accuracy, per-type table, confusion, kappa, FP. AgentChaos's published
 * figures come last, in their own section labelled as what they are: another dataset (AgentChaos's benchmark tasks)
 * diagnosed from another input (the final agent text), so not a row of the same table as ours.
 */
import {
  AGENTCHAOS_KAPPA,
  AGENTCHAOS_LLM,
  AGENTCHAOS_RULE,
  PUBLISHED_NOTE,
  PUBLISHED_TITLE,
} from '../evaluation/agentchaos';
import type { EvalReport } from '../evaluation/evaluate';
import { colors as makeColors, table } from './colors';

const f = (x: number): string => (Number.isNaN(x) ? 'n/a' : x.toFixed(2));

export function evalText(report: EvalReport, color = false): string {
  const c = makeColors(color);
  const out: string[] = [];
  out.push(
    c.bold('faultline eval') +
      ` — ${report.traces} traces: ${report.faulty} faulty, ${report.clean} clean, ${report.untriggered} untriggered (excluded), ${report.spans} spans`,
    '',
  );
  out.push(
    table(
      ['diagnoser', 'type acc %', 'step acc %', 'faulty', 'FP on clean %', 'clean', 'ms/trace'],
      [
        ...report.diagnosers.map((d) => [
          d.diagnoser,
          f(d.accuracy.typeAccuracy),
          f(d.accuracy.stepAccuracy),
          String(d.accuracy.n),
          f(d.falsePositives.rate),
          String(d.falsePositives.clean),
          String(d.msPerTrace),
        ]),
      ],
      new Set([1, 2, 3, 4, 5, 6]),
    ),
  );
  for (const d of report.diagnosers) {
    out.push('', c.bold(`Per fault type — ${d.diagnoser}`));
    out.push(
      table(
        ['fault type', 'n', 'type %', 'step %'],
        d.accuracy.perType.map((r) => {
          const tcol = r.typeAccuracy >= 90 ? c.green(f(r.typeAccuracy)) : c.yellow(f(r.typeAccuracy));
          return [r.faultType, String(r.n), tcol, f(r.stepAccuracy)];
        }),
        new Set([1, 2, 3]),
      ),
    );
    const m = d.confusion;
    if (m.labels.length > 0) {
      out.push('', c.bold(`Confusion — ${d.diagnoser}`) + c.dim(' (rows: truth, columns: diagnosis)'));
      out.push(
        table(
          ['truth \\ diag', ...m.labels],
          m.labels.map((l, i) => [
            l,
            ...m.counts[i]!.map((n, j) => (n === 0 ? c.dim('.') : i === j ? c.green(String(n)) : c.red(String(n)))),
          ]),
          new Set(m.labels.map((_, i) => i + 1)),
        ),
      );
    }
  }
  if (report.kappa.length > 0) {
    out.push('', c.bold("Cohen's kappa between diagnosers"));
    out.push(
      table(
        ['pair', 'type κ', 'step κ', 'n'],
        report.kappa.map((k) => [`${k.a} vs ${k.b}`, f(k.type), f(k.step), String(k.n)]),
        new Set([1, 2, 3]),
      ),
    );
  }
  const types = [...new Set(report.diagnosers.flatMap((d) => d.accuracy.perType.map((r) => r.faultType)))].filter(
    (t) => AGENTCHAOS_RULE.perType[t] || AGENTCHAOS_LLM.perType[t],
  );
  out.push('', c.bold(PUBLISHED_TITLE) + c.dim(` ${PUBLISHED_NOTE}`));
  out.push(
    table(
      ['AgentChaos diagnoser', 'type acc %', 'step acc %', ...types.map((t) => `${t} type/step`)],
      [
        ['AgentChaos rule', AGENTCHAOS_RULE],
        ['AgentChaos LLM', AGENTCHAOS_LLM],
      ].map(([name, p]) => {
        const fig = p as typeof AGENTCHAOS_RULE;
        return [
          c.dim(name as string),
          c.dim(f(fig.typeAccuracy)),
          c.dim(f(fig.stepAccuracy)),
          ...types.map((t) => (fig.perType[t] ? c.dim(`${f(fig.perType[t].type)} / ${f(fig.perType[t].step)}`) : '-')),
        ];
      }),
      new Set([1, 2]),
    ),
    c.dim(`AgentChaos rule vs LLM kappa: type ${AGENTCHAOS_KAPPA.type}, step ${AGENTCHAOS_KAPPA.step}`),
  );
  return out.join('\n') + '\n';
}

/** JSON form of the report (rows included, so results can be re-analysed). */
export function evalJson(report: EvalReport): string {
  return JSON.stringify(report, null, 2) + '\n';
}
