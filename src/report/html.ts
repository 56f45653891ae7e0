/**
 * `faultline eval --html`: one self-contained HTML file (no external JS/CSS) with inline SVG charts — per-type
 * accuracy bars and a confusion-matrix heatmap per diagnoser. AgentChaos's published figures get a section of their
 * own, labelled as another dataset and input (src/evaluation/agentchaos.ts), not bars beside ours.
 */
import {
  AGENTCHAOS_KAPPA,
  AGENTCHAOS_LLM,
  AGENTCHAOS_RULE,
  PUBLISHED_NOTE,
  PUBLISHED_TITLE,
} from '../evaluation/agentchaos';
import type { DiagnoserScore, EvalReport } from '../evaluation/evaluate';
import type { ConfusionMatrix } from '../evaluation/confusion';
import { VERSION } from '../version';

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);
}

const COLORS = ['#2563eb', '#16a34a', '#9333ea', '#ea580c'];

interface Series {
  label: string;
  color: string;
  values: (number | undefined)[];
}

/** Grouped vertical bars, 0..100 %. */
export function barChart(title: string, groups: string[], series: Series[]): string {
  const barW = 14;
  const gap = 18;
  const groupW = series.length * barW + gap;
  const h = 220;
  const top = 30;
  const left = 40;
  const w = Math.max(left + groups.length * groupW + 20, left + series.length * 150);
  const y = (v: number): number => top + h - (v / 100) * h;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="${escapeHtml(title)}" width="${w}" height="${top + h + 70}" viewBox="0 0 ${w} ${top + h + 70}">`,
  );
  parts.push(`<text x="${left}" y="18" font-size="13" font-weight="600">${escapeHtml(title)}</text>`);
  for (const t of [0, 25, 50, 75, 90, 100]) {
    parts.push(
      `<line x1="${left}" x2="${w - 10}" y1="${y(t)}" y2="${y(t)}" stroke="${t === 90 ? '#ef4444' : '#e5e7eb'}" ${t === 90 ? 'stroke-dasharray="4 3"' : ''}/>`,
    );
    parts.push(`<text x="${left - 6}" y="${y(t) + 4}" font-size="10" text-anchor="end">${t}</text>`);
  }
  groups.forEach((g, gi) => {
    const x0 = left + gi * groupW + gap / 2;
    series.forEach((s, si) => {
      const v = s.values[gi];
      if (v === undefined || Number.isNaN(v)) return;
      const x = x0 + si * barW;
      parts.push(
        `<rect x="${x}" y="${y(v)}" width="${barW - 2}" height="${top + h - y(v)}" fill="${s.color}"><title>${escapeHtml(`${s.label} · ${g}: ${v.toFixed(2)}%`)}</title></rect>`,
      );
    });
    parts.push(
      `<text x="${x0 + (series.length * barW) / 2}" y="${top + h + 14}" font-size="10" text-anchor="middle">${escapeHtml(g)}</text>`,
    );
  });
  series.forEach((s, si) => {
    const lx = left + si * 150;
    parts.push(
      `<rect x="${lx}" y="${top + h + 34}" width="10" height="10" fill="${s.color}"/><text x="${lx + 14}" y="${top + h + 43}" font-size="11">${escapeHtml(s.label)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('');
}

/** Heatmap of a confusion matrix (row-normalised shading, counts printed). */
export function heatmap(title: string, m: ConfusionMatrix): string {
  const cell = 34;
  const left = 100;
  const top = 90;
  const n = m.labels.length;
  // Wide enough for the title (under 8.5 px a character in bold 13 px) as well as the grid.
  const w = Math.max(left + n * cell + 10, 8 + Math.ceil(title.length * 8.5));
  const h = top + n * cell + 10;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="${escapeHtml(title)}" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">`,
  ];
  parts.push(`<text x="4" y="16" font-size="13" font-weight="600">${escapeHtml(title)}</text>`);
  m.labels.forEach((l, j) => {
    const x = left + j * cell + cell / 2;
    parts.push(
      `<text x="${x}" y="${top - 6}" font-size="10" transform="rotate(-45 ${x} ${top - 6})">${escapeHtml(l)}</text>`,
    );
  });
  m.labels.forEach((l, i) => {
    const rowTotal = m.counts[i]!.reduce((a, b) => a + b, 0) || 1;
    parts.push(
      `<text x="${left - 6}" y="${top + i * cell + cell / 2 + 4}" font-size="10" text-anchor="end">${escapeHtml(l)}</text>`,
    );
    m.counts[i]!.forEach((count, j) => {
      const share = count / rowTotal;
      const hue = i === j ? 140 : 0;
      const fill = count === 0 ? '#f9fafb' : `hsl(${hue} 70% ${Math.round(92 - share * 52)}%)`;
      parts.push(
        `<rect x="${left + j * cell}" y="${top + i * cell}" width="${cell - 1}" height="${cell - 1}" fill="${fill}"><title>${escapeHtml(`truth ${l} → ${m.labels[j]}: ${count}`)}</title></rect>`,
      );
      if (count > 0)
        parts.push(
          `<text x="${left + j * cell + cell / 2}" y="${top + i * cell + cell / 2 + 4}" font-size="10" text-anchor="middle">${count}</text>`,
        );
    });
  });
  parts.push('</svg>');
  return parts.join('');
}

function scoreTable(report: EvalReport): string {
  const rows = report.diagnosers
    .map(
      (d) =>
        `<tr><td>${escapeHtml(d.diagnoser)} (faultline)</td><td>${d.accuracy.typeAccuracy.toFixed(2)}</td><td>${d.accuracy.stepAccuracy.toFixed(2)}</td><td>${d.accuracy.n}</td><td>${d.falsePositives.rate.toFixed(2)} (${d.falsePositives.falsePositives}/${d.falsePositives.clean})</td><td>${d.msPerTrace}</td></tr>`,
    )
    .join('');
  return `<table><thead><tr><th>diagnoser</th><th>type acc %</th><th>step acc %</th><th>faulty traces</th><th>FP on clean %</th><th>ms/trace</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function perTypeTable(d: DiagnoserScore): string {
  const rows = d.accuracy.perType
    .map(
      (r) =>
        `<tr><td>${escapeHtml(r.faultType)}</td><td>${r.n}</td><td>${r.typeAccuracy.toFixed(2)}</td><td>${r.stepAccuracy.toFixed(2)}</td></tr>`,
    )
    .join('');
  return `<table><thead><tr><th>fault type</th><th>n</th><th>type %</th><th>step %</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** AgentChaos's published figures, in a section of their own: another dataset and another input than the report's. */
function publishedTable(): string {
  const types = [...new Set([...Object.keys(AGENTCHAOS_RULE.perType), ...Object.keys(AGENTCHAOS_LLM.perType)])];
  const row = (name: string, p: typeof AGENTCHAOS_RULE): string =>
    `<tr class="ref"><td>${name}</td><td>${p.typeAccuracy}</td><td>${p.stepAccuracy}</td>${types.map((t) => `<td>${p.perType[t] ? `${p.perType[t].type} / ${p.perType[t].step}` : '–'}</td>`).join('')}</tr>`;
  return `<h2>${escapeHtml(PUBLISHED_TITLE)}</h2><p class="muted">${escapeHtml(PUBLISHED_NOTE)}; rule vs LLM kappa: type ${AGENTCHAOS_KAPPA.type}, step ${AGENTCHAOS_KAPPA.step}.</p>
<table><thead><tr><th>AgentChaos diagnoser</th><th>type acc %</th><th>step acc %</th>${types.map((t) => `<th>${escapeHtml(t)} type / step</th>`).join('')}</tr></thead><tbody>${row('AgentChaos rule', AGENTCHAOS_RULE)}${row('AgentChaos LLM', AGENTCHAOS_LLM)}</tbody></table>`;
}

export function evalHtml(report: EvalReport, options: { title?: string; generatedAt?: Date } = {}): string {
  const title = options.title ?? 'faultline diagnosis evaluation';
  // Types in the union of every diagnoser's per-type rows, taxonomy-ish order by count.
  const types = [...new Set(report.diagnosers.flatMap((d) => d.accuracy.perType.map((r) => r.faultType)))];
  const mk = (pick: 'typeAccuracy' | 'stepAccuracy'): string =>
    barChart(
      pick === 'typeAccuracy'
        ? 'Fault-type accuracy by injected type (%)'
        : 'Faulty-step accuracy by injected type (%)',
      types,
      [
        ...report.diagnosers.map((d, i) => ({
          label: `faultline ${d.diagnoser}`,
          color: COLORS[i % COLORS.length]!,
          values: types.map((t) => d.accuracy.perType.find((r) => r.faultType === t)?.[pick]),
        })),
      ],
    );
  const kappa = report.kappa.length
    ? `<h2>Cohen's kappa between diagnosers</h2><table><thead><tr><th>pair</th><th>type κ</th><th>step κ</th><th>n</th></tr></thead><tbody>${report.kappa
        .map(
          (k) =>
            `<tr><td>${escapeHtml(`${k.a} vs ${k.b}`)}</td><td>${k.type}</td><td>${k.step}</td><td>${k.n}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '';
  const per = report.diagnosers
    .map(
      (d) =>
        `<h2>${escapeHtml(d.diagnoser)}: per fault type</h2>${perTypeTable(d)}<div class="chart">${heatmap(`Confusion matrix — ${d.diagnoser} (rows truth, columns diagnosis)`, d.confusion)}</div>`,
    )
    .join('');
  const at = (options.generatedAt ?? new Date()).toISOString();
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#111827}
h1{font-size:1.5rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #e5e7eb;padding:.25rem .6rem;text-align:right}
td:first-child,th:first-child{text-align:left}tr.ref td{color:#6b7280;font-style:italic}.chart{overflow-x:auto;margin:1rem 0}
.muted{color:#6b7280}
</style></head><body>
<h1>${escapeHtml(title)}</h1>
<p class="muted">${report.traces} traces: ${report.faulty} faulty, ${report.clean} clean, ${report.untriggered} untriggered (excluded from accuracy, as AgentChaos filters untriggered tasks); ${report.spans} spans. faultline ${VERSION}, ${escapeHtml(at)}.</p>
<h2>Overall</h2>${scoreTable(report)}
<div class="chart">${mk('typeAccuracy')}</div>
<div class="chart">${mk('stepAccuracy')}</div>
${kappa}
${per}
${publishedTable()}
<p class="muted">AgentChaos figures: "Chaos Engineering for Agent Systems via Programmatic Fault Injection" (ASE 2026) §5.4, Table 9; their diagnosers read only the final agent text. The dashed red line marks 90 %.</p>
</body></html>
`;
}
