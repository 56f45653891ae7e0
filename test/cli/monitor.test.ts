/**
 * `faultline monitor` end to end over the built dist/: workflows run through the real stack (the openai SDK against a
 * loopback server answering a recorded corpus body, real runWorkflow / runAgent / MessageChannel, online detection as
 * register wires it, content capture off as by default), their spans written as OTLP/JSON by the real serializer.
 * Two workflows fail a MAST mode (a required step never ran: 3.1; a message outside the sender's declared targets:
 * 1.2), one is clean. The findings are read back from the online events, and judged afresh from a copy of the file
 * with those events stripped; bad input is one line and exit 2 after what could be read.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageChannel } from '../../instrumentation/agents/channel';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../instrumentation/agents/task';
import { cli, ensureBuilt } from '../campaign/support/bin';
import { loadCorpus } from '../support/corpus';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { setupWorkflowStack, type WorkflowStack } from '../support/workflow-stack';
import { otlpJson } from '../diagnosers/support/otlp-file';

const chat = loadCorpus('openai-chat.jsonl');
const TEXT = chat.find(
  (r) =>
    r.status === 200 && r.tags.includes('text') && !r.tags.includes('has_tools') && !r.tags.includes('finish_length'),
)!;

let dir = '';
let all = '';
let judged = '';
let clean = '';
let damaged = '';
const ids: Record<'early' | 'handoff' | 'complete', string> = { early: '', handoff: '', complete: '' };
let server: LlmServer;
let stack: WorkflowStack;

async function workflow(
  name: string,
  fn: () => Promise<unknown>,
  options: Parameters<typeof runWorkflow>[2] = {},
): Promise<string> {
  let traceId = '';
  await runWorkflow(
    name,
    async (span) => {
      traceId = span.spanContext().traceId;
      return fn();
    },
    options,
  );
  await stack.waitFor((s) => s.name === `invoke_workflow ${name}` && s.spanContext().traceId === traceId);
  return traceId;
}

/** The same OTLP/JSON without what the monitors recorded online: the CLI must find it again from the spans. */
function withoutDetections(json: string): string {
  const doc = JSON.parse(json) as {
    resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ name: string; events?: Array<{ name: string }> }> }> }>;
  };
  for (const rs of doc.resourceSpans)
    for (const ss of rs.scopeSpans) {
      ss.spans = ss.spans.filter((s) => s.name !== 'faultline.detection');
      for (const s of ss.spans) s.events = (s.events ?? []).filter((e) => e.name !== 'faultline.detection');
    }
  return JSON.stringify(doc);
}

beforeAll(async () => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'faultline-monitor-'));
  server = await startLlmServer(() => {
    const b = structuredClone(TEXT.response) as Record<string, unknown>;
    b.created = Math.floor(Date.now() / 1000);
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) };
  });
  const openai = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
  stack = setupWorkflowStack({ capture: false });
  const steps = ['Planner', 'Worker', 'Verifier'];
  const agents = (which: string[]) => async () => {
    for (const a of which)
      await runAgent(a, () =>
        openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${a}: go` }] }),
      );
    return { done: true };
  };
  ids.early = await workflow('early', agents(['Planner', 'Worker']), { requiredSteps: steps });
  const channel = new MessageChannel({ name: 'roles' });
  ids.handoff = await workflow('handoff', async () => {
    await runAgent('Planner', async () => 'plan', { role: 'planner', targets: ['Worker'] });
    await channel.send({ source: 'Planner', target: 'Executor', payload: { plan: ['search'] } });
  });
  ids.complete = await workflow('complete', agents(steps), { requiredSteps: steps });
  await new Promise((r) => setTimeout(r, 50));
  const spans = stack.exporter.getFinishedSpans();
  all = join(dir, 'all.json');
  writeFileSync(all, otlpJson(spans));
  judged = join(dir, 'judged.json');
  writeFileSync(judged, withoutDetections(readFileSync(all, 'utf8')));
  clean = join(dir, 'clean.json');
  writeFileSync(clean, otlpJson(spans.filter((s) => s.spanContext().traceId === ids.complete)));
  // JSON lines, one trace per line, with a damaged line after the first.
  damaged = join(dir, 'damaged.jsonl');
  const line = (id: string) => otlpJson(spans.filter((s) => s.spanContext().traceId === id));
  writeFileSync(
    damaged,
    [line(ids.early), '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":', line(ids.complete)].join('\n') + '\n',
  );
}, 60_000);
afterAll(async () => {
  await server?.close();
  await stack?.shutdown();
});

interface Out {
  summary: {
    traces: number;
    tracesWithFindings: number;
    findings: number;
    byMast: Record<string, number>;
    notObservable: Record<string, number>;
  };
  traces: Array<{
    traceId: string;
    workflows: string[];
    findings: Array<Record<string, unknown>>;
    notObservable: Array<Record<string, unknown>>;
  }>;
}

describe('faultline monitor', () => {
  it('table: one row per finding with MAST mode, ARCF type, step, agent and span; a clean trace is one none row; the summary line', async () => {
    const r = await cli(['monitor', all]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^trace\s+workflow\s+MAST mode\s+ARCF type\s+step\s+agent\s+span\s+conf\s+evidence$/);
    const row = (id: string) => lines.filter((l) => l.startsWith(id));
    expect(row(ids.early)).toHaveLength(1);
    expect(row(ids.early)[0]).toMatch(
      / early\s+3\.1 Premature termination\s+premature_termination\s+-\s+-\s+[0-9a-f]{16}\s+\d\.\d\d\s+\(online\) the workflow ended after 2 of 3 required steps; missing: Verifier$/,
    );
    expect(row(ids.handoff)).toHaveLength(1);
    expect(row(ids.handoff)[0]).toMatch(
      / handoff\s+1\.2 Disobey role specification\s+role_violation\s+1\s+Planner\s+[0-9a-f]{16}\s+0\.90\s+\(online\) agent Planner \(planner\) sent to Executor, outside its declared targets: Worker$/,
    );
    expect(row(ids.complete)).toEqual([expect.stringMatching(/ complete\s+none(\s+-){6}$/)]);
    const tail = r.stdout.trimEnd().split('\n');
    const at = tail.indexOf(
      '3 traces: 2 with findings, 1 clean; 2 findings: 1.2 Disobey role specification 1, 3.1 Premature termination 1',
    );
    expect(at).toBeGreaterThan(0);
    // Then what the spans could not show: content capture is off and no tool ran, so no tool results to compare.
    expect(tail.slice(at + 1)).toContain(
      'not observable: no_progress (1.5 Unaware of termination conditions) in 3 of 3 traces: no tool arguments or results recorded',
    );
    expect(tail.slice(at + 1).every((l) => l.startsWith('not observable: '))).toBe(true);
  });

  it('judges the spans afresh when the online findings are not in the file, and names the same modes', async () => {
    const r = await cli(['monitor', judged, '--format', 'json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Out;
    expect(out.summary).toMatchObject({
      traces: 3,
      tracesWithFindings: 2,
      findings: 2,
      byMast: { '1.2': 1, '3.1': 1 },
    });
    expect(out.summary.notObservable['no_progress 1.5']).toBe(3);
    const by = new Map(out.traces.map((t) => [t.traceId, t]));
    expect(by.get(ids.early)!.findings).toEqual([
      expect.objectContaining({
        workflow: 'early',
        mast: '3.1',
        mastName: 'Premature termination',
        failure: 'premature_termination',
        detector: 'premature_termination',
        online: false,
        evidence: 'the workflow ended after 2 of 3 required steps; missing: Verifier',
        spanName: 'invoke_workflow early',
      }),
    ]);
    const [role] = by.get(ids.handoff)!.findings;
    expect(role).toMatchObject({
      workflow: 'handoff',
      mast: '1.2',
      failure: 'role_violation',
      agent: 'Planner',
      step: 1,
      spanName: 'handoff Executor',
      confidence: 0.9,
      online: false,
    });
    expect(by.get(ids.complete)).toMatchObject({ traceId: ids.complete, workflows: ['complete'], findings: [] });
    expect(by.get(ids.complete)!.notObservable).toContainEqual({
      mast: '1.5',
      mastName: 'Unaware of termination conditions',
      failure: 'workflow_deadlock',
      faultType: 'stale',
      detector: 'no_progress',
      reason: 'no tool arguments or results recorded',
    });
  });

  it('jsonl: one object per trace per line; --fail-on-finding exits 1 on findings and 0 on a clean trace', async () => {
    const r = await cli(['monitor', all, '--format', 'jsonl', '--fail-on-finding']);
    expect(r.code).toBe(1);
    const lines = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { traceId: string; findings: unknown[] });
    expect(lines.map((l) => l.traceId).sort()).toEqual(Object.values(ids).sort());
    const ok = await cli(['monitor', clean, '--fail-on-finding']);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^1 trace: 0 with findings, 1 clean; 0 findings$/m);
  });

  it('bad input: what could be read is printed, then one line naming the bad input, exit 2', async () => {
    const r = await cli(['monitor', damaged]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain(ids.early);
    expect(r.stdout).toContain(ids.complete);
    expect(r.stdout).toMatch(/^2 traces: 1 with findings, 1 clean/m);
    expect(r.stderr).toMatch(/^✖ .*damaged\.jsonl.*line 2/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    const missing = await cli(['monitor', clean, join(dir, 'nope.json')]);
    expect(missing.code).toBe(2);
    expect(missing.stdout).toContain(ids.complete);
    expect(missing.stderr).toMatch(/^✖ .*nope\.json/);
    const none = await cli(['monitor']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^✖ no traces given/);
    const format = await cli(['monitor', clean, '--format', 'html']);
    expect(format.code).toBe(2);
    expect(format.stderr.trim().split('\n')).toHaveLength(1);
  });
});
