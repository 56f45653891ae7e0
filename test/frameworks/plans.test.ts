/**
 * The README's fault plan on framework apps (issue 14): `FAULTLINE_PLAN=plan.yaml node --import faultline/register`
 * on the Agents SDK app and the LangGraph app of ./apps, each run of the app one task. Each rule fires where it says
 * (the first text answer truncated, the planner's 2nd LLM call a 429 the client's retry gets past, the first gpt-4o
 * stream cut after 3 events), `faultline verify` reports it per task, and `faultline diagnose` names a fault type and
 * step that were injected — diagnosers see the traces without the ground truth.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SpanRecord } from '../../src/traces/model';
import { isLlmSpan } from '../../src/traces/steps';
import { runNode } from '../support/child';
import type { LlmServer } from '../support/llm-server';
import { ANSWER_TEXT, ROOT, named, parentOf, runApp, startScriptedServer, type AppRun } from './support';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

// README.md, "Inject: fault plans".
const README_PLAN = `# plan.yaml
seed: 42
rules:
  - fault: llm_truncate_single          # AgentChaos: the first eligible LLM response cut to 30 %, finish_reason length
    match: { operation: chat }
  - fault: http_429                     # a real 429 with the provider's error body and Retry-After
    match: { agent: planner, position: 2 }
  - fault: stream_cut                   # the SSE stream ends after 3 events, without a finish reason
    match: { model: "gpt-4o*" }
    params: { afterEvents: 3 }
  - fault: valid_partial                # the evidence handoff arrives valid, with required fields removed
    match: { boundary: I4 }
`;

const TEXT = ANSWER_TEXT;
const CUT = TEXT.slice(0, Math.max(1, Math.floor(TEXT.length * 0.3)));

let server: LlmServer;
let plan: string;
beforeAll(async () => {
  server = await startScriptedServer();
  plan = join(mkdtempSync(join(tmpdir(), 'faultline-plan-')), 'plan.yaml');
  writeFileSync(plan, README_PLAN);
});
afterAll(() => server?.close());

const chats = (spans: SpanRecord[], traceId: string) =>
  spans.filter((s) => s.traceId === traceId && isLlmSpan(s)).sort((a, b) => a.start - b.start);
const agentOf = (spans: SpanRecord[], s: SpanRecord) => parentOf(spans, s)?.attributes['gen_ai.agent.name'];

interface Diagnosis {
  traceId: string;
  faultType?: string;
  step?: number;
}

/** `faultline verify` and `faultline diagnose --format json` on the run's trace file. */
async function cli(r: AppRun): Promise<{ verify: string; diagnoses: Diagnosis[] }> {
  const verify = await runNode([join(ROOT, 'bin/faultline.js'), 'verify', r.tracesFile], { cwd: ROOT });
  expect(verify.code, verify.stderr).toBe(0);
  const diagnose = await runNode([join(ROOT, 'bin/faultline.js'), 'diagnose', r.tracesFile, '--format', 'json'], {
    cwd: ROOT,
  });
  expect(diagnose.code, diagnose.stderr).toBe(0);
  return { verify: verify.stdout, diagnoses: JSON.parse(diagnose.stdout) as Diagnosis[] };
}

/** The injected faults of a trace as (type, step): the step is the faulted span's index among the trace's LLM spans. */
function injected(spans: SpanRecord[], traceId: string): string[] {
  return chats(spans, traceId).flatMap((s, i) =>
    typeof s.attributes['faultline.fault.type'] === 'string'
      ? [`${s.attributes['faultline.fault.type'] as string}@${i + 1}`]
      : [],
  );
}

/** The rules that fired on the LLM calls of each workflow, as `agent:rule[:retry]`, in call order. */
function fired(spans: SpanRecord[], workflow: SpanRecord): string[] {
  return chats(spans, workflow.traceId).map((s) => {
    const rule = s.attributes['faultline.fault.rule'];
    const retry = (s.attributes['faultline.request.retry_count'] as number | undefined) ? ' (retry)' : '';
    return `${agentOf(spans, s) as string}:${typeof rule === 'string' ? rule : '-'}${retry}`;
  });
}

function expectDiagnosed(r: AppRun, diagnoses: Diagnosis[], workflows: SpanRecord[]): void {
  expect(diagnoses).toHaveLength(workflows.length);
  for (const d of diagnoses) {
    const truth = injected(r.spans, d.traceId);
    expect(truth.length).toBeGreaterThan(0);
    expect(truth).toContain(`${d.faultType}@${d.step}`);
  }
}

describe('the README plan on the Agents SDK app', () => {
  let r: AppRun;
  let workflows: SpanRecord[];
  beforeAll(async () => {
    r = await runApp('agents.mjs', server, { register: 'import', env: { FAULTLINE_PLAN: plan } });
    workflows = named(r.spans, 'invoke_workflow Agent workflow');
  });

  it('each rule fires where it says, in each run (a task each)', () => {
    expect(workflows).toHaveLength(2);
    // The run: the planner's 2nd call (its handoff) gets the 429 and the SDK's retry goes through; the first text
    // answer (the worker's) is truncated.
    expect(fired(r.spans, workflows[0])).toEqual([
      'planner:-',
      'planner:http_429',
      'planner:- (retry)',
      'worker:llm_truncate_single',
    ]);
    // The streamed run: the 429 again (its own task), and the first gpt-4o stream cut (content faults need JSON).
    expect(fired(r.spans, workflows[1])).toEqual([
      'planner:-',
      'planner:http_429',
      'planner:- (retry)',
      'worker:stream_cut',
    ]);
    expect(r.out).toMatchObject({
      json: { agent: 'worker', output: CUT },
      stream: { agent: 'worker', text: 'The capital' },
    });
  });

  it('faultline verify reports the fires per task, and faultline diagnose names an injected type and step', async () => {
    const { verify, diagnoses } = await cli(r);
    expect(verify).toContain('2/2 tasks triggered');
    for (const w of workflows) expect(verify).toContain(`✔ task ${w.attributes['faultline.task.id'] as string}`);
    expect(verify).toContain('triggered  llm_truncate_single (llm_truncate_single): fired 1');
    expect(verify).toContain('triggered  stream_cut (stream_cut): fired 1');
    expect(verify.match(/triggered {2}http_429 \(http_429\): fired 1/g)).toHaveLength(2);
    expectDiagnosed(r, diagnoses, workflows);
  });
});

describe('the README plan on the LangGraph app', () => {
  let r: AppRun;
  let workflows: SpanRecord[];
  beforeAll(async () => {
    r = await runApp('langgraph.mjs', server, { register: 'import', env: { FAULTLINE_PLAN: plan } });
    workflows = named(r.spans, 'invoke_workflow LangGraph');
  });

  it('each rule fires where it says, in each graph run (a task each)', () => {
    expect(workflows).toHaveLength(2);
    // The planner node's 2nd call gets the 429; LangChain's own retry (no retry header: the same request sent again)
    // is the same call, and, being the first text answer, it is the one truncated.
    expect(fired(r.spans, workflows[0])).toEqual([
      'planner:-',
      'planner:http_429',
      'planner:llm_truncate_single',
      'worker:-',
    ]);
    const [, faulted, retry] = chats(r.spans, workflows[0].traceId);
    expect(retry.attributes['faultline.fault.call_index']).toBe(faulted.attributes['faultline.fault.call_index']);
    expect(fired(r.spans, workflows[1])).toEqual(['planner:-', 'planner:http_429', 'planner:-', 'worker:stream_cut']);
    expect(r.out).toMatchObject({ json: { weather: CUT, answer: TEXT }, stream: { answer: 'The capital' } });
  });

  it('faultline verify reports the fires per task, and faultline diagnose names an injected type and step', async () => {
    const { verify, diagnoses } = await cli(r);
    expect(verify).toContain('2/2 tasks triggered');
    for (const w of workflows) expect(verify).toContain(`✔ task ${w.attributes['faultline.task.id'] as string}`);
    expectDiagnosed(r, diagnoses, workflows);
  });
});
