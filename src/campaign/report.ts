/**
 * Campaign reports: terminal tables (DIAGNOSE's table helper) and a self-contained HTML page with inline SVG charts.
 */
import { table } from '../report/colors';
import { isSilent, type CampaignSummary, type CellStats, type Rate, type RunRecord } from './analysis';

export interface ReportMeta {
  preset: string;
  startedAt: string;
  wallMs: number;
  /** What ran: `model X` (example workloads), `command …` (a command campaign). */
  model: string;
  interrupted: boolean;
  tracesFile: string;
  /** What the runs vary besides the fault: the example topologies, or a command campaign's tasks (default topology). */
  dimension?: 'topology' | 'task';
  /** Why the campaign stopped early, when it did (interrupted, budget reached). */
  stopped?: string;
}

function dimOf(s: CampaignSummary, meta: ReportMeta): { name: string; rows: CellStats[]; grid: CellStats[] } {
  return meta.dimension === 'task'
    ? { name: 'task', rows: s.main.byTask, grid: s.main.byConditionTask }
    : { name: 'topology', rows: s.main.byTopology, grid: s.main.byConditionTopology };
}

const stoppedText = (meta: ReportMeta): string =>
  meta.stopped
    ? ` (${meta.stopped.toUpperCase()} — partial results)`
    : meta.interrupted
      ? ' (INTERRUPTED — partial results)'
      : '';

const pct = (r: Rate | undefined): string => (r?.rate === undefined ? '–' : `${(100 * r.rate).toFixed(1)}%`);
const pp = (v: number | undefined): string => (v === undefined ? '–' : `${v >= 0 ? '+' : ''}${v.toFixed(1)}`);
const frac = (r: Rate): string => `${r.k}/${r.n}`;

function statsRows(rows: CellStats[], split = false): string[][] {
  return rows.map((s) => {
    const keys = split ? s.key.split(' | ') : [s.key];
    return [
      ...keys,
      String(s.pairs),
      pct(s.cleanPass),
      pct(s.faultPass),
      pp(s.deltaPass),
      `${pct(s.ccl)} (${frac(s.ccl)})`,
      `${pct(s.silent)} (${frac(s.silent)})`,
      String(s.untriggered),
    ];
  });
}

const HEAD = [
  'pairs',
  'clean pass@1',
  'fault pass@1',
  'Δpass@1 (pp)',
  'clean-cond. loss',
  'silent / failures',
  'untriggered',
];
const RIGHT = (offset: number) => new Set([0, 1, 2, 3, 4, 5, 6].map((i) => i + offset));

/** The tables printed on the terminal. */
export function renderText(s: CampaignSummary, meta: ReportMeta): string {
  const out: string[] = [];
  const dim = dimOf(s, meta);
  out.push(
    `faultline campaign "${meta.preset}"${stoppedText(meta)}: ${s.runs} runs (${s.faultedRuns} faulted, ${s.cleanRuns} clean) in ${(meta.wallMs / 1000).toFixed(1)} s — ${meta.model}`,
  );
  out.push(`clean pass@1 ${pct(s.clean)} (${frac(s.clean)}); untriggered faulted runs excluded: ${s.untriggered}`);
  // A campaign of only the ARCF study (--preset arcf) has no main matrix: its table follows instead.
  if (s.main.byCondition.length > 0) {
    out.push('', 'Main matrix — by fault condition');
    out.push(table(['condition', ...HEAD], statsRows(s.main.byCondition), RIGHT(1)));
    out.push('', `Main matrix — by ${dim.name}`);
    out.push(table([dim.name, ...HEAD], statsRows(dim.rows), RIGHT(1)));
    out.push('', `Clean-conditional loss per ${dim.name} × fault`);
    out.push(cclGrid(dim.grid, dim.name));
  }
  if (s.main.byStrategy.length > 0) {
    out.push('', 'AgentChaos content faults — single vs persistent');
    out.push(table(['strategy', ...HEAD], statsRows(s.main.byStrategy), RIGHT(1)));
  }
  if (s.protection.length > 0) {
    out.push('', 'Protection study — fault pass@1 by arm (none / execution guards / evidence guards / both)');
    out.push(protectionGrid(s));
  }
  return out.join('\n');
}

function grid(rowsKeys: string[], colKeys: string[], cell: (r: string, c: string) => string, corner: string): string {
  return table(
    [corner, ...colKeys],
    rowsKeys.map((r) => [r, ...colKeys.map((c) => cell(r, c))]),
    new Set(colKeys.map((_, i) => i + 1)),
  );
}

function split(rows: CellStats[]): {
  rows: string[];
  cols: string[];
  get: (r: string, c: string) => CellStats | undefined;
} {
  const rowsK: string[] = [];
  const cols: string[] = [];
  for (const s of rows) {
    const [a, b] = s.key.split(' | ');
    if (!rowsK.includes(a)) rowsK.push(a);
    if (!cols.includes(b)) cols.push(b);
  }
  return { rows: rowsK, cols, get: (r, c) => rows.find((s) => s.key === `${r} | ${c}`) };
}

function cclGrid(rows: CellStats[], dim: string): string {
  const g = split(rows);
  return grid(g.rows, g.cols, (r, c) => pct(g.get(r, c)?.ccl), `condition \\ ${dim}`);
}

function protectionGrid(s: CampaignSummary): string {
  const g = split(s.protection);
  return grid(
    g.rows,
    g.cols,
    (r, c) => {
      const st = g.get(r, c);
      return st ? `${pct(st.faultPass)} (${frac(st.faultPass)})` : '–';
    },
    'condition \\ arm',
  );
}

// ------------------------------------------------------------------------------------------------ HTML

const esc = (s: string): string =>
  s.replace(/[&<>"]/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[ch] as string);

/** Horizontal bar chart, values in 0..1 (one bar per label, optional second series). */
function barChart(
  title: string,
  items: { label: string; a?: number; b?: number }[],
  legend: [string, string?],
): string {
  const rowH = 22;
  const labelW = 220;
  const barW = 360;
  const h = items.length * rowH + 40;
  const bars = items
    .map((it, i) => {
      const y = 30 + i * rowH;
      const a = it.a ?? 0;
      const b = it.b;
      const aBar = `<rect x="${labelW}" y="${y}" width="${(a * barW).toFixed(1)}" height="${b === undefined ? 16 : 8}" fill="#3b82f6"><title>${esc(legend[0])}: ${(100 * a).toFixed(1)}%</title></rect>`;
      const bBar =
        b === undefined
          ? ''
          : `<rect x="${labelW}" y="${y + 8}" width="${(b * barW).toFixed(1)}" height="8" fill="#f97316"><title>${esc(legend[1] ?? '')}: ${(100 * b).toFixed(1)}%</title></rect>`;
      const val = `<text x="${labelW + barW + 6}" y="${y + 12}" font-size="11">${it.a === undefined ? '–' : `${(100 * a).toFixed(0)}%`}${b === undefined ? '' : ` / ${(100 * b).toFixed(0)}%`}</text>`;
      return `<text x="${labelW - 6}" y="${y + 12}" font-size="12" text-anchor="end">${esc(it.label)}</text>${aBar}${bBar}${val}`;
    })
    .join('');
  const leg = `<rect x="${labelW}" y="8" width="10" height="10" fill="#3b82f6"/><text x="${labelW + 14}" y="17" font-size="11">${esc(legend[0])}</text>${
    legend[1]
      ? `<rect x="${labelW + 160}" y="8" width="10" height="10" fill="#f97316"/><text x="${labelW + 174}" y="17" font-size="11">${esc(legend[1])}</text>`
      : ''
  }`;
  return `<figure><figcaption>${esc(title)}</figcaption><svg xmlns="http://www.w3.org/2000/svg" width="${labelW + barW + 80}" height="${h}" role="img">${leg}${bars}</svg></figure>`;
}

function htmlTable(head: string[], rows: string[][]): string {
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

export function renderHtml(s: CampaignSummary, meta: ReportMeta, records: readonly RunRecord[] = []): string {
  const parts: string[] = [];
  const dim = dimOf(s, meta);
  parts.push(`<h1>faultline campaign — ${esc(meta.preset)}</h1>`);
  parts.push(
    `<p>${s.runs} runs (${s.faultedRuns} faulted, ${s.cleanRuns} matched clean) · ${(meta.wallMs / 1000).toFixed(1)} s · ${esc(meta.model)} · started ${esc(meta.startedAt)}${
      meta.stopped
        ? ` · <strong>${esc(meta.stopped)}: partial results</strong>`
        : meta.interrupted
          ? ' · <strong>interrupted: partial results</strong>'
          : ''
    }<br>clean pass@1 ${pct(s.clean)} · untriggered faulted runs excluded: ${s.untriggered} · labelled traces: <code>${esc(meta.tracesFile)}</code></p>`,
  );
  parts.push(
    barChart(
      'pass@1 by fault condition (clean twins vs faulted)',
      s.main.byCondition.map((c) => ({ label: c.key, a: c.cleanPass.rate, b: c.faultPass.rate })),
      ['clean', 'faulted'],
    ),
  );
  parts.push(htmlTable(['condition', ...HEAD], statsRows(s.main.byCondition)));
  parts.push(
    barChart(
      `Fault pass@1 by ${dim.name}`,
      dim.rows.map((c) => ({ label: c.key, a: c.faultPass.rate, b: c.ccl.rate })),
      ['fault pass@1', 'clean-conditional loss'],
    ),
  );
  parts.push(htmlTable([dim.name, ...HEAD], statsRows(dim.rows)));
  parts.push(`<h2>Clean-conditional loss per ${dim.name} × fault</h2>`);
  parts.push(htmlTable(['condition', dim.name, ...HEAD], statsRows(dim.grid, true)));
  parts.push(
    barChart(
      'Silent-failure rate (silent / failed) by condition',
      s.main.byCondition.map((c) => ({ label: c.key, a: c.silent.rate })),
      ['silent / failures'],
    ),
  );
  const silent = records.filter(isSilent);
  if (silent.length > 0) {
    parts.push(
      `<h2>Silent failures (${silent.length})</h2><p>Failed runs the system accepted with no detection, guard or error signal. Look them up in the trace file by trace id.</p>`,
    );
    parts.push(
      htmlTable(
        meta.dimension === 'task'
          ? ['condition', 'task', 'repetition', 'outcome', 'trace id']
          : ['condition', 'family', 'task', 'topology', 'arm', 'outcome', 'trace id'],
        silent
          .slice(0, 100)
          .map((r) =>
            meta.dimension === 'task'
              ? [r.condition, r.task, String(r.rep), r.reason, r.traceId ?? '–']
              : [r.condition, r.family ?? '–', r.task, r.topology ?? '–', r.arm, r.reason, r.traceId ?? '–'],
          ),
      ),
    );
  }
  if (s.main.byStrategy.length > 0) {
    parts.push('<h2>AgentChaos content faults: single vs persistent</h2>');
    parts.push(htmlTable(['strategy', ...HEAD], statsRows(s.main.byStrategy)));
  }
  if (s.protection.length > 0) {
    parts.push('<h2>Protection study</h2>');
    parts.push(
      barChart(
        'Fault pass@1 per condition and protection arm',
        s.protection.map((c) => ({ label: c.key, a: c.faultPass.rate })),
        ['fault pass@1'],
      ),
    );
    parts.push(htmlTable(['condition', 'arm', ...HEAD], statsRows(s.protection, true)));
  }
  parts.push(
    '<h2>Definitions</h2><p>Δpass@1 = clean pass@1 − fault pass@1 over applied matched pairs (percentage points). Clean-conditional loss = P(faulted run fails | matched clean run succeeded). A silent failure is a failed faulted run whose deciding agent accepted (for a command: exited 0), with no faultline.detection event, no faultline.guard event and no ERROR span in its trace. Untriggered runs (the fault never fired) are excluded with their clean twin. See docs/campaigns.md.</p>',
  );
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>faultline campaign — ${esc(meta.preset)}</title><style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#111}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}
th{background:#f4f4f5}figure{margin:1rem 0}figcaption{font-weight:600;margin-bottom:.25rem}code{background:#f4f4f5;padding:0 3px}
</style></head><body>${parts.join('\n')}</body></html>\n`;
}
