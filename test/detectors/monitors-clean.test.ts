/**
 * False positives of the workflow monitors where nothing went wrong:
 *  - every task of the example workflows in every topology, clean (what a campaign's clean twins are), online and
 *    judged again offline;
 *  - the corpus's six recorded crewAI hierarchical sessions (a manager delegating to coworkers: real requests and
 *    real answers), replayed call by call through the openai SDK against a loopback server, each agent execution one
 *    agent turn as crewAI runs them, each session one workflow.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectModel, FAMILIES, runTask, TOPOLOGIES, type ModelConnection } from '../../examples';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../instrumentation/agents/task';
import { monitorTrace } from '../../detectors/monitors/offline';
import { CORPUS_DIR } from '../support/corpus';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { detections, setupWorkflowStack, type WorkflowStack } from '../support/workflow-stack';
import { toTraces } from '../support/to-traces';

let stack: WorkflowStack;
beforeAll(() => {
  stack = setupWorkflowStack({ capture: true });
});
afterAll(() => stack.shutdown());

function monitorFindings(traceId: string): { online: string[]; offline: string[] } {
  const spans = stack.exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
  const online = spans
    .flatMap(detections)
    .filter((d) => d['faultline.detection.failure'] !== undefined)
    .map((d) => `${String(d['faultline.detection.detector'])}: ${String(d['faultline.detection.evidence'])}`);
  const offline = toTraces(spans).flatMap((t) =>
    monitorTrace(t, { includeOnline: false }).flatMap((w) => w.findings.map((f) => `${f.detector}: ${f.evidence}`)),
  );
  return { online, offline };
}

describe('the example workflows, clean: no monitor finding', () => {
  let llm: ModelConnection;
  beforeAll(async () => {
    llm = await connectModel({ env: {} });
  });
  afterAll(() => llm.close());

  for (const family of Object.values(FAMILIES)) {
    it(`${family.name}: every task × topology`, async () => {
      let runs = 0;
      for (const topology of TOPOLOGIES) {
        for (const task of family.tasks) {
          const run = await runTask({ family, task, topology, llm });
          expect(run.outcome.success).toBe(true);
          await stack.waitFor((s) => s.spanContext().traceId === run.traceId && s.name.startsWith('invoke_workflow'));
          expect(monitorFindings(run.traceId!), `${task.id} × ${topology}`).toEqual({ online: [], offline: [] });
          runs++;
        }
      }
      expect(runs).toBe(family.tasks.length * TOPOLOGIES.length);
    });
  }
});

interface Session {
  id: string;
  calls: Array<{
    request: { messages: Array<{ role: string; content?: unknown }>; tools?: unknown[]; model?: string };
    response: unknown;
  }>;
}

/** The crewAI role of a call: the "You are X." its system prompt opens with. */
const roleOf = (c: Session['calls'][number]): string =>
  /^You are ([^.]+)\./.exec(String(c.request.messages.find((m) => m.role === 'system')?.content ?? ''))?.[1] ?? 'agent';

/** Whether a request continues the previous one of the same agent (the same conversation, one message or more longer). */
const continues = (prev: Session['calls'][number] | undefined, next: Session['calls'][number]): boolean =>
  prev !== undefined &&
  next.request.messages.length > prev.request.messages.length &&
  JSON.stringify(next.request.messages.slice(0, prev.request.messages.length)) ===
    JSON.stringify(prev.request.messages);

type Call = Session['calls'][number];
interface Turn {
  role: string;
  items: Array<Call | Turn>;
  last: Call;
}

/**
 * The agent executions of a session, as crewAI runs them: a call that continues its role's open conversation joins
 * that turn (and the turns opened inside it since are over); any other call opens a turn inside the innermost open one
 * — a coworker delegated to from the manager's turn — or, for a role whose conversation starts over, a new top-level
 * turn (crewAI's next task).
 */
function turns(calls: readonly Call[]): Turn[] {
  const top: Turn[] = [];
  const open: Turn[] = [];
  for (const call of calls) {
    const role = roleOf(call);
    const i = open.findIndex((t) => t.role === role && continues(t.last, call));
    if (i >= 0) {
      open.splice(i + 1);
      open[i]!.items.push(call);
      open[i]!.last = call;
      continue;
    }
    const own = open.findIndex((t) => t.role === role);
    if (own >= 0) open.splice(own);
    const t: Turn = { role, items: [call], last: call };
    if (open.length === 0) top.push(t);
    else open[open.length - 1]!.items.push(t);
    open.push(t);
  }
  return top;
}

describe('recorded crewAI hierarchical sessions, replayed: no monitor finding', () => {
  const sessions = readFileSync(join(CORPUS_DIR, 'agent-transcripts.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.includes('"crewai_hierarchical_session"'))
    .map((l) => JSON.parse(l) as Session);
  let server: LlmServer;
  let openai: OpenAI;
  const queue: string[] = [];
  beforeAll(async () => {
    server = await startLlmServer(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: queue.shift() ?? '{}',
    }));
    openai = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => server.close());

  it(`all ${sessions.length} sessions`, async () => {
    expect(sessions.length).toBe(6);
    for (const session of sessions) {
      let traceId = '';
      const tree = turns(session.calls);
      const replay = (t: Turn): Promise<void> =>
        runAgent(t.role, async () => {
          for (const item of t.items) {
            if ('role' in item) await replay(item);
            else {
              queue.push(JSON.stringify({ ...(item.response as object), created: Math.floor(Date.now() / 1000) }));
              await openai.chat.completions.create(item.request as never);
            }
          }
        });
      await runWorkflow(`crew ${session.id}`, async (span) => {
        traceId = span.spanContext().traceId;
        for (const t of tree) await replay(t);
      });
      await stack.waitFor((s) => s.spanContext().traceId === traceId && s.name.startsWith('invoke_workflow'));
      expect(monitorFindings(traceId), session.id).toEqual({ online: [], offline: [] });
    }
  });
});
