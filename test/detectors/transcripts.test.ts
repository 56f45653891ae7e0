/**
 * The workflow monitors on the corpus's human-labelled multi-agent transcripts (`agent-transcripts.jsonl`), turned
 * into spans by the documented converter (detectors/monitors/transcripts.ts):
 *  - MAST/MAD (19 traces, three annotators per mode): per MAST mode, the monitors' verdict (the mode named by a
 *    finding) against the annotators' majority, beside the annotators' own agreement on the same records;
 *  - Who&When (184 failure logs, the agent and step that caused the failure): what the monitors flag, and whether
 *    their first finding names that agent and step, beside the trivial baselines.
 * The tables go to docs/monitors.md with FAULTLINE_WRITE_TABLES=1. Nothing here is tuned to the labels: the
 * monitors are the same as everywhere, and these traces are judged as they come.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAST_MODES, mastModeOfLabel, type MastModeId } from '../../detectors/monitors/mast';
import { monitorTrace, type MonitorFinding } from '../../detectors/monitors/offline';
import { readWorkflows } from '../../detectors/monitors/read';
import { transcriptMessages, transcriptTrace, type TranscriptRecord } from '../../detectors/monitors/transcripts';
import { cohenKappa } from '../../src/evaluation/kappa';
import { CORPUS_DIR } from '../support/corpus';

interface Labelled extends TranscriptRecord {
  labels: { annotations?: Array<Record<string, unknown>>; mistake_agent?: string; mistake_step?: string };
}

const records = readFileSync(join(CORPUS_DIR, 'agent-transcripts.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  // Two annotator votes are recorded as a bare NaN (not JSON): read as missing.
  .map((l) => JSON.parse(l.replace(/("annotator_\d"): NaN/g, '$1: null')) as Labelled);
const mast = records.filter((r) => r.dataset === 'mast_mad_human_labelled');
const ww = records.filter((r) => r.dataset === 'who_and_when');

const findingsOf = (r: TranscriptRecord): MonitorFinding[] | undefined => {
  const t = transcriptTrace(r);
  return t ? monitorTrace(t, { includeOnline: false }).flatMap((w) => w.findings) : undefined;
};

/** Per final MAST mode, the annotators' three votes (modes of draft taxonomies are matched by name). */
function votes(r: Labelled): Map<MastModeId, boolean[]> {
  const out = new Map<MastModeId, boolean[]>();
  for (const a of r.labels.annotations ?? []) {
    const mode = mastModeOfLabel(String(a['failure mode'] ?? ''));
    if (!mode) continue;
    out.set(
      mode,
      [1, 2, 3].map((i) =>
        typeof a[`annotator_${i}`] === 'boolean' ? (a[`annotator_${i}`] as boolean) : undefined,
      ) as boolean[],
    );
  }
  return out;
}

const pct = (x: number): string => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : '–');
const k2 = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '–');
/** Cohen's κ, or NaN when both raters gave one label only (κ is undefined: no variation to agree on). */
const kappa = (a: readonly string[], b: readonly string[]): number =>
  new Set(a).size === 1 && new Set(b).size === 1 ? NaN : cohenKappa(a, b);

describe('the transcript converter', () => {
  it('turns every Who&When log and the MAST traces of every system it knows into traces the monitors read', () => {
    const converted = ww.filter((r) => transcriptTrace(r) !== undefined);
    expect(converted.length).toBe(ww.length);
    for (const r of ww.slice(0, 20)) {
      const t = transcriptTrace(r)!;
      const [run] = readWorkflows(t);
      expect(run!.steps.filter((s) => s.observation?.kind === 'llm').length).toBe(
        transcriptMessages(r).filter((m) => m.text !== '').length,
      );
    }
    const mastConverted = mast.filter((r) => transcriptTrace(r) !== undefined);
    // Every system's log format splits into messages.
    expect(new Set(mastConverted.map((r) => r.mas_name))).toEqual(new Set(mast.map((r) => r.mas_name)));
    expect(mastConverted.length).toBe(mast.length);
  });
});

describe('agreement with the human labels', () => {
  it('computes the tables (and writes them to docs/monitors.md with FAULTLINE_WRITE_TABLES=1)', () => {
    // ---- MAST/MAD: per mode, monitors vs the annotators' majority; the annotators' own pairwise agreement.
    const perRecord = mast.map((r) => ({
      r,
      v: votes(r),
      named: new Set((findingsOf(r) ?? []).map((f) => f.mast).filter((m): m is MastModeId => m !== undefined)),
    }));
    const rows: string[][] = [];
    const allHuman: string[] = [];
    const allMonitor: string[] = [];
    const pairs: Array<[string[], string[]]> = [
      [[], []],
      [[], []],
      [[], []],
    ];
    for (const mode of MAST_MODES) {
      const judged = perRecord.filter((x) => x.v.has(mode.id));
      if (judged.length === 0) {
        rows.push([`${mode.id} ${mode.name}`, '0', '–', '–', '–', '–', '–']);
        continue;
      }
      // The majority of the votes cast (a missing vote is not a no).
      const human = judged.map((x) => {
        const cast = x.v.get(mode.id)!.filter((v) => v !== undefined);
        return cast.filter(Boolean).length * 2 > cast.length ? 'y' : 'n';
      });
      const monitor = judged.map((x) => (x.named.has(mode.id) ? 'y' : 'n'));
      const agree = human.filter((h, i) => h === monitor[i]).length;
      const a = judged.map((x) => x.v.get(mode.id)!);
      // Pairs of annotators over the records where both voted.
      const pairKappa = (x: number, y: number): number => {
        const both = a.filter((v) => v[x] !== undefined && v[y] !== undefined);
        return kappa(
          both.map((v) => String(v[x])),
          both.map((v) => String(v[y])),
        );
      };
      const annot = [pairKappa(0, 1), pairKappa(0, 2), pairKappa(1, 2)];
      for (const [i, [x, y]] of [
        [0, 1],
        [0, 2],
        [1, 2],
      ].entries()) {
        const both = a.filter((v) => v[x!] !== undefined && v[y!] !== undefined);
        pairs[i]![0].push(...both.map((v) => String(v[x!])));
        pairs[i]![1].push(...both.map((v) => String(v[y!])));
      }
      allHuman.push(...human);
      allMonitor.push(...monitor);
      rows.push([
        `${mode.id} ${mode.name}`,
        String(judged.length),
        String(human.filter((h) => h === 'y').length),
        String(monitor.filter((m) => m === 'y').length),
        `${pct(agree / judged.length)} (${agree}/${judged.length})`,
        k2(kappa(human, monitor)),
        k2(
          annot.some(Number.isFinite) ? annot.filter(Number.isFinite).reduce((s, x, _, l) => s + x / l.length, 0) : NaN,
        ),
      ]);
    }
    const annotatorKappa = pairs.map(([x, y]) => kappa(x, y));
    const mastTable = [
      '| MAST mode | records labelled | human: present (majority of 3) | monitors: named | agreement | κ monitors vs majority | κ between annotators (mean of 3 pairs) |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...rows.map((r) => `| ${r.join(' | ')} |`),
      `| all modes (record × mode) | ${allHuman.length} | ${allHuman.filter((h) => h === 'y').length} | ${allMonitor.filter((m) => m === 'y').length} | ${pct(allHuman.filter((h, i) => h === allMonitor[i]).length / allHuman.length)} | ${k2(kappa(allHuman, allMonitor))} | ${k2(annotatorKappa.reduce((s, x) => s + x, 0) / 3)} |`,
    ].join('\n');

    // ---- Who&When: what is flagged, and whether the first finding names the mistake's agent and step.
    let flagged = 0;
    let agentHit = 0;
    let stepHit = 0;
    const byMode = new Map<string, number>();
    const firstAgentBaseline = { hits: 0 };
    for (const r of ww) {
      const f = findingsOf(r) ?? [];
      const messages = transcriptMessages(r);
      const mistakeAgent = r.labels.mistake_agent;
      const mistakeStep = Number(r.labels.mistake_step);
      if (messages[0]?.agent === mistakeAgent) firstAgentBaseline.hits++;
      for (const m of new Set(f.map((x) => x.mast))) byMode.set(String(m), (byMode.get(String(m)) ?? 0) + 1);
      const first = f.filter((x) => x.step !== undefined).sort((a, b) => a.step! - b.step!)[0];
      if (f.length === 0) continue;
      flagged++;
      if (!first) continue;
      const msg = messages.filter((m) => m.text !== '' || (m.toolCalls?.length ?? 0) > 0)[first.step! - 1];
      if (msg?.agent === mistakeAgent) agentHit++;
      if (msg?.index === mistakeStep) stepHit++;
    }
    const modes =
      [...byMode]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([m, n]) => `${m}: ${n}`)
        .join(', ') || 'none';
    const wwTable = [
      '| Who&When (184 failure logs) | value |',
      '|---|---:|',
      `| logs with at least one monitor finding | ${flagged} (${pct(flagged / ww.length)}) |`,
      `| MAST modes named (logs) | ${modes} |`,
      `| first finding names the mistake agent | ${agentHit} of ${flagged} flagged (${pct(agentHit / Math.max(1, flagged))}) |`,
      `| first finding at the mistake step | ${stepHit} of ${flagged} flagged (${pct(stepHit / Math.max(1, flagged))}) |`,
      `| trivial baseline: the first speaker is the mistake agent | ${firstAgentBaseline.hits} of ${ww.length} (${pct(firstAgentBaseline.hits / ww.length)}) |`,
    ].join('\n');

    const text = `<!-- transcripts:start (generated by FAULTLINE_WRITE_TABLES=1 npx vitest run test/detectors/transcripts.test.ts) -->\n**MAST/MAD human-labelled traces** (${mast.length} traces; labels of the four annotation rounds matched to the final 14 modes by name)\n\n${mastTable}\n\n**Who&When**\n\n${wwTable}\n<!-- transcripts:end -->`;
    console.log(text);
    if (process.env.FAULTLINE_WRITE_TABLES === '1') {
      const path = `${process.cwd()}/docs/monitors.md`;
      const doc = readFileSync(path, 'utf8');
      writeFileSync(path, doc.replace(/<!-- transcripts:start[\s\S]*?<!-- transcripts:end -->/, text));
    }
    expect(rows.length).toBe(14);
  });
});
