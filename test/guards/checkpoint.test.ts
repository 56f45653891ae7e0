/**
 * Checkpoint-based state recovery through a real workflow: three agent steps calling the real openai SDK against a
 * loopback server answering a recorded completion, the fault from the real fault step, the checkpoint guard around
 * `runWorkflow`. A severe fault after a checkpoint rolls back and resumes from it: the steps before it are not run
 * again (the server counts the calls, the steps count their runs). Every path ends: tests have deadlines.
 */
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkpoint, WorkflowDeadlineError } from '../../instrumentation/agents/declarations';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../instrumentation/agents/task';
import { checkpoints, fileStore, memoryStore } from '../../detectors/guards/checkpoint';
import { CHAT_PLAIN } from '../support/chat-exchanges';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { checkpointActions, detections, setupWorkflowStack, type WorkflowStack } from '../support/workflow-stack';

const TEXT = CHAT_PLAIN;
const fresh = (): string => JSON.stringify({ ...(TEXT.response as object), created: Math.floor(Date.now() / 1000) });

let stack: WorkflowStack;
let server: LlmServer;
let openai: OpenAI;

beforeAll(async () => {
  stack = setupWorkflowStack();
  server = await startLlmServer(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: fresh(),
  }));
  // No SDK retries: a server error reaches the step, as a crash would.
  openai = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
  await stack.shutdown();
});
beforeEach(() => {
  stack.plan = undefined;
  stack.reset();
});

const ask = async (agent: string): Promise<string> =>
  runAgent(agent, async () => {
    const r = await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: `${agent}: do your part` }],
    });
    return r.choices[0]?.message.content ?? '';
  });

/** Plan → work → report, each a checkpointed agent step; counts how often each step really ran. */
function pipeline(runs: Record<string, number>) {
  const step = (name: string) => async () => {
    runs[name] = (runs[name] ?? 0) + 1;
    return { [name]: await ask(name) };
  };
  return async () => {
    const plan = await checkpoint('plan', step('planner'));
    const work = await checkpoint('work', step('worker'));
    const report = await checkpoint('report', step('reporter'));
    return { ...plan, ...work, ...report };
  };
}

describe('checkpoint rollback', () => {
  it('a severe fault after two checkpoints resumes from the last one; the work before it is not redone', async () => {
    // The third LLM call of the task (the reporter's) fails with HTTP 500 once.
    stack.plan = { rules: [{ fault: 'http_500', match: { operation: 'chat', position: 3 } }] };
    const runs: Record<string, number> = {};
    const before = server.requests.length;
    const result = await runWorkflow('report', pipeline(runs), {
      taskId: `ckpt-${Date.now()}`,
      checkpoints: checkpoints(),
    });
    expect(Object.keys(result)).toEqual(['planner', 'worker', 'reporter']);
    expect(runs).toEqual({ planner: 1, worker: 1, reporter: 2 });
    // The fault step answers the failed call itself: the server saw the planner, the worker and the reporter's
    // second call — the planner and the worker were not called again.
    expect(server.requests.length - before).toBe(3);
    const spans = await stack.waitFor((s) => s.name === 'invoke_workflow report');
    expect(
      spans.filter(
        (s) =>
          s.attributes['gen_ai.operation.name'] === 'chat' &&
          s.spanContext().traceId === spans.find((x) => x.name === 'invoke_workflow report')!.spanContext().traceId,
      ),
    ).toHaveLength(4);
    const wf = spans.find((s) => s.name === 'invoke_workflow report')!;
    expect(checkpointActions(wf)).toEqual([
      'saved:plan',
      'saved:work',
      'rollback:work',
      'restored:plan',
      'restored:work',
      'saved:report',
    ]);
    expect(wf.status.code).not.toBe(2);
    expect(wf.attributes['faultline.workflow.completed_steps']).toEqual([
      'planner',
      'plan',
      'worker',
      'work',
      'plan',
      'work',
      'reporter',
      'report',
    ]);
  });

  it('without the guard the same fault fails the workflow (the baseline)', async () => {
    stack.plan = { rules: [{ fault: 'http_500', match: { operation: 'chat', position: 3 } }] };
    const runs: Record<string, number> = {};
    await expect(runWorkflow('report', pipeline(runs), { taskId: `base-${Date.now()}` })).rejects.toThrow(/500/);
    expect(runs).toEqual({ planner: 1, worker: 1, reporter: 1 });
  });

  it("ARCF's cost criterion: with θ = 0 no rollback is worth it, and the error is the application's own", async () => {
    stack.plan = { rules: [{ fault: 'http_500', match: { operation: 'chat', position: 3 } }] };
    const runs: Record<string, number> = {};
    const err = await runWorkflow('report', pipeline(runs), {
      taskId: `theta-${Date.now()}`,
      checkpoints: checkpoints({ theta: 0 }),
    }).catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(500);
    expect(runs.reporter).toBe(1);
    const wf = (await stack.waitFor((s) => s.name === 'invoke_workflow report')).find(
      (s) => s.name === 'invoke_workflow report',
    )!;
    const noRollback = wf.events.find((e) => e.attributes?.['faultline.checkpoint.action'] === 'no_rollback');
    expect(String(noRollback?.attributes?.['faultline.checkpoint.reason'])).toMatch(
      /re-execution cost \d+ > θ·value 0/,
    );
  });

  it('a persistent failure ends after maxRollbacks resumes, with the last error', async () => {
    stack.plan = {
      rules: [{ fault: 'http_503', strategy: 'persistent', match: { operation: 'chat', position: [3, 4, 5, 6, 7] } }],
    };
    const runs: Record<string, number> = {};
    await expect(
      runWorkflow('report', pipeline(runs), {
        taskId: `persist-${Date.now()}`,
        checkpoints: checkpoints({ maxRollbacks: 2 }),
      }),
    ).rejects.toMatchObject({ status: 503 });
    expect(runs).toEqual({ planner: 1, worker: 1, reporter: 3 });
  }, 10_000);

  it('a rollback that would miss the deadline is refused', async () => {
    stack.plan = { rules: [{ fault: 'http_500', match: { operation: 'chat', position: 3 } }] };
    const runs: Record<string, number> = {};
    // The cost function says resuming would take a minute; the deadline is 30 s.
    const guard = checkpoints({ cost: () => 60_000, value: () => 1e9 });
    await expect(
      runWorkflow('report', pipeline(runs), { taskId: `late-${Date.now()}`, deadlineMs: 30_000, checkpoints: guard }),
    ).rejects.toMatchObject({ status: 500 });
    expect(runs.reporter).toBe(1);
  });

  it('a step that fails verification is run again, then rolls back to the checkpoint its input came from', async () => {
    let works = 0;
    let verdicts = 0;
    const body = async () => {
      const plan = await checkpoint('plan', async () => ({ plan: await ask('planner') }));
      // The worker's first two outputs are bad; the rollback to 'plan' makes it run again after the retry.
      const work = await checkpoint('work', async () => ({ n: ++works }), {
        verify: (s) => ({ ok: s.n >= 3, reason: 'evidence incomplete' }),
        retries: 1,
        rollbackTo: 'plan',
      });
      verdicts++;
      return { ...plan, ...work };
    };
    const before = server.requests.length;
    const result = await runWorkflow('verified', body, { taskId: `verify-${Date.now()}`, checkpoints: checkpoints() });
    expect(result.n).toBe(3);
    expect(verdicts).toBe(1);
    // The planner's call was made once: 'plan' was restored, not redone.
    expect(server.requests.length - before).toBe(1);
    const wf = (await stack.waitFor((s) => s.name === 'invoke_workflow verified')).find(
      (s) => s.name === 'invoke_workflow verified',
    )!;
    expect(checkpointActions(wf)).toEqual([
      'saved:plan',
      'verify_failed:work',
      'verify_failed:work',
      'rollback:plan',
      'restored:plan',
      'saved:work',
    ]);
  });
});

describe('checkpoint stores', () => {
  it('a file store survives the process: the same task run again resumes where it failed, and completion clears it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'faultline-ckpt-'));
    const file = join(dir, 'checkpoints.json');
    const taskId = `file-${Date.now()}`;
    // First run: the reporter fails and no rollback is allowed: the workflow fails, its checkpoints stay on disk.
    stack.plan = { rules: [{ fault: 'http_500', match: { operation: 'chat', position: 3 } }] };
    const first: Record<string, number> = {};
    await expect(
      runWorkflow('report', pipeline(first), { taskId, checkpoints: checkpoints({ store: file, maxRollbacks: 0 }) }),
    ).rejects.toMatchObject({ status: 500 });
    const saved = JSON.parse(readFileSync(file, 'utf8')) as {
      workflows: Record<string, { checkpoints: Array<{ name: string }> }>;
    };
    expect(saved.workflows[`report:${taskId}`]?.checkpoints.map((c) => c.name)).toEqual(['plan', 'work']);
    // Second run, a new store object on the same file (as a restarted process has): plan and work are restored.
    stack.plan = undefined;
    const second: Record<string, number> = {};
    const result = await runWorkflow('report', pipeline(second), {
      taskId,
      checkpoints: checkpoints({ store: fileStore(file) }),
    });
    expect(Object.keys(result)).toEqual(['planner', 'worker', 'reporter']);
    expect(second).toEqual({ reporter: 1 });
    expect(JSON.parse(readFileSync(file, 'utf8')).workflows).toEqual({});
    expect(existsSync(`${file}.${process.pid}.tmp`)).toBe(false);
  });

  it('memory states are copies: changing a returned state does not change the checkpoint', async () => {
    const store = memoryStore();
    const taskId = `copy-${Date.now()}`;
    let attempt = 0;
    const out = await runWorkflow(
      'copies',
      async () => {
        const s = await checkpoint('s', () => ({ items: [1] }));
        s.items.push(2);
        if (++attempt === 1) throw new Error('severe');
        return s;
      },
      { taskId, checkpoints: checkpoints({ store }) },
    );
    expect(out.items).toEqual([1, 2]);
    expect(attempt).toBe(2);
  });

  it('an unwritable file store is refused when it is made, naming the file', () => {
    expect(() => fileStore('/proc/faultline/checkpoints.json')).toThrow(
      /cannot write the checkpoint file \/proc\/faultline\/checkpoints.json/,
    );
  });
});

describe('deadline', () => {
  it('onDeadline abort ends a hung workflow with WorkflowDeadlineError, and the monitor names it on the workflow span', async () => {
    const started = Date.now();
    const hung = runWorkflow(
      'hung',
      () => runAgent('Planner', () => runAgent('Worker', () => new Promise<never>(() => {}))),
      { taskId: `hung-${Date.now()}`, deadlineMs: 150, onDeadline: 'abort', requiredSteps: ['Planner', 'Worker'] },
    );
    await expect(hung).rejects.toBeInstanceOf(WorkflowDeadlineError);
    expect(Date.now() - started).toBeLessThan(2000);
    const wf = (await stack.waitFor((s) => s.name === 'invoke_workflow hung')).find(
      (s) => s.name === 'invoke_workflow hung',
    )!;
    const found = detections(wf);
    expect(found).toContainEqual(
      expect.objectContaining({
        'faultline.detection.failure': 'workflow_deadlock',
        'faultline.detection.mast_mode': '1.5',
        'faultline.detection.evidence': expect.stringMatching(/no step completed; open agent turns: Planner, Worker/),
      }),
    );
    expect(found).toContainEqual(
      expect.objectContaining({
        'faultline.detection.failure': 'premature_termination',
        'faultline.detection.mast_mode': '3.1',
      }),
    );
    expect(wf.status.code).toBe(2);
  }, 5000);
});
