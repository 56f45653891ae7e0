/**
 * The workflow monitors, each on a workflow where its failure mode occurs and on the same workflow where it does not:
 * real openai SDK calls against a loopback server answering recorded corpus bodies, real runWorkflow / runAgent /
 * MessageChannel, online detection wired as register wires it. Each finding must appear online (a
 * `faultline.detection` event naming its ARCF type and MAST mode) and be found again offline over the exported
 * trace (monitorTrace), also with content capture off where the mode is observable without content.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { MessageChannel } from '../../instrumentation/agents/channel';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../instrumentation/agents/task';
import { monitorTrace, type MonitorFinding } from '../../detectors/monitors/offline';
import { loadCorpus, type CorpusRecord } from '../support/corpus';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { detections, setupWorkflowStack, type WorkflowStack } from '../support/workflow-stack';
import { toTraces } from '../support/to-traces';

const chat = loadCorpus('openai-chat.jsonl');
const byId = (id: string): CorpusRecord => chat.find((r) => r.id === id)!;
/** A plain text answer of a few hundred characters. */
const TEXT = chat.find(
  (r) =>
    r.status === 200 &&
    r.tags.includes('text') &&
    !r.tags.includes('has_tools') &&
    !r.tags.includes('finish_length') &&
    ((r.response as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content?.length ?? 0) >
      300,
)!;
/** The crewAI CEO agent of test_cache_hitting_between_agents: offered delegation tools and a multiplier, it multiplies. */
const CEO = byId('ec1c44cb2318');
/** A one-tool call (`add`). */
const ADD = byId('7a9be3221cc1');
/** An answer the provider cut at the token limit. */
const CUT = chat.find((r) => r.status === 200 && r.tags.includes('finish_length') && !r.tags.includes('has_tools'))!;

const body = (r: CorpusRecord, patch: (b: Record<string, unknown>) => void = () => {}): string => {
  const b = structuredClone(r.response) as Record<string, unknown>;
  b.created = Math.floor(Date.now() / 1000);
  patch(b);
  return JSON.stringify(b);
};

let server: LlmServer;
let openai: OpenAI;
let stack: WorkflowStack;
let replies: string[] = [];

beforeAll(async () => {
  server = await startLlmServer(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: replies.shift() ?? body(TEXT),
  }));
  openai = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
});
afterAll(() => server.close());

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;
const ask = (messages: Msg[], extra: Record<string, unknown> = {}) =>
  openai.chat.completions.create({
    model: 'gpt-4o-mini',
    messages,
    ...extra,
  } as never) as unknown as Promise<OpenAI.Chat.Completions.ChatCompletion>;
const user = (content: string): Msg => ({ role: 'user', content });

/** Run a workflow; return the online findings (every span of its trace) and the offline ones. */
async function observe(name: string, fn: () => Promise<unknown>, options: Parameters<typeof runWorkflow>[2] = {}) {
  let traceId = '';
  await runWorkflow(
    name,
    async (span) => {
      traceId = span.spanContext().traceId;
      return fn();
    },
    options,
  ).catch(() => undefined);
  const spans = await stack.waitFor((s) => s.name === `invoke_workflow ${name}` && s.spanContext().traceId === traceId);
  const mine = spans.filter((s) => s.spanContext().traceId === traceId);
  const online = mine
    .flatMap((s: ReadableSpan) => detections(s))
    .filter((d) => d['faultline.detection.failure'] !== undefined);
  const traces = toTraces(mine);
  const offline: MonitorFinding[] = traces.flatMap((t) => monitorTrace(t).flatMap((w) => w.findings));
  // Judged afresh from the spans alone, without the findings recorded online.
  const judged: MonitorFinding[] = traces.flatMap((t) =>
    monitorTrace(t, { includeOnline: false }).flatMap((w) => w.findings),
  );
  return { online, offline, judged };
}

const names = (fs: Array<{ detector: string; failure?: string; mast?: string }>) =>
  fs.map((f) => `${f.detector}/${f.failure}/${f.mast}`).sort();
const onlineNames = (ds: Array<Record<string, unknown>>) =>
  ds
    .map(
      (d) =>
        `${String(d['faultline.detection.detector'])}/${String(d['faultline.detection.failure'])}/${String(d['faultline.detection.mast_mode'])}`,
    )
    .sort();

for (const capture of [true, false]) {
  describe(`workflow monitors (content capture ${capture ? 'on' : 'off'})`, () => {
    beforeAll(() => {
      stack = setupWorkflowStack({ capture });
    });
    afterAll(() => stack.shutdown());
    beforeEach(() => {
      replies = [];
      stack.reset();
    });

    it("role violation: a tool outside the agent's declared tools (a recorded crewAI CEO calling its multiplier)", async () => {
      const req = CEO.request as { messages: Msg[]; tools: unknown[] };
      const run = (tools: string[]) =>
        observe('ceo', () =>
          runAgent('CEO', () => (replies.push(body(CEO)), ask(req.messages, { tools: req.tools })), {
            role: 'manager',
            tools,
          }),
        );
      const bad = await run(['Delegate_work_to_coworker', 'Ask_question_to_coworker']);
      expect(onlineNames(bad.online)).toEqual(['role_violation/role_violation/1.2']);
      expect(bad.online[0]!['faultline.detection.evidence']).toBe(
        'agent CEO (manager) called tool multiplier, outside its declared tools: Delegate_work_to_coworker, Ask_question_to_coworker',
      );
      // Offline, the tool name is in the output messages: only with content.
      expect(names(bad.judged)).toEqual(capture ? ['role_violation/role_violation/1.2'] : []);
      const ok = await run(['multiplier', 'Delegate_work_to_coworker', 'Ask_question_to_coworker']);
      expect(ok.online).toEqual([]);
      expect(ok.judged).toEqual([]);
    });

    it("role violation: a message to an agent outside the sender's declared targets (content-free)", async () => {
      const channel = new MessageChannel({ name: 'roles' });
      const run = (target: string) =>
        observe('handoff', async () => {
          await runAgent('Planner', async () => 'plan', { role: 'planner', targets: ['Worker'] });
          await channel.send({ source: 'Planner', target, payload: { plan: ['search'] } });
        });
      const bad = await run('Executor');
      expect(onlineNames(bad.online)).toEqual(['role_violation/role_violation/1.2']);
      expect(names(bad.judged)).toEqual(['role_violation/role_violation/1.2']);
      const ok = await run('Worker');
      expect([...ok.online, ...ok.judged]).toEqual([]);
    });

    it('step repetition: the same request answered three times; twice is not a loop', async () => {
      const run = (times: number) =>
        observe('repeat', () =>
          runAgent('Poller', async () => {
            for (let i = 0; i < times; i++) await ask([user('Is the build green yet?')]);
          }),
        );
      const bad = await run(3);
      expect(onlineNames(bad.online)).toEqual(['repetition/infinite_loop/1.3']);
      expect(bad.online[0]!['faultline.detection.evidence']).toBe(
        'the same request was sent 3 times in the task, answered each time (agent Poller)',
      );
      // Offline without content the requests cannot be told apart, so nothing is claimed.
      expect(names(bad.judged)).toEqual(capture ? ['repetition/infinite_loop/1.3'] : []);
      const ok = await run(2);
      expect([...ok.online, ...ok.judged]).toEqual([]);
    });

    it('step repetition: the same tool call three times in a row; calls that make progress are not a loop', async () => {
      const req = ADD.request as { messages: Msg[]; tools: unknown[] };
      const run = (args: (i: number) => string) =>
        observe('tools', () =>
          runAgent('Calculator', async () => {
            const messages = [...req.messages];
            for (let i = 0; i < 3; i++) {
              replies.push(
                body(ADD, (b) => {
                  const tc = (
                    b.choices as Array<{ message: { tool_calls: Array<{ function: { arguments: string } }> } }>
                  )[0]!.message.tool_calls[0]!;
                  tc.function.arguments = args(i);
                }),
              );
              const r = await ask(messages, { tools: req.tools });
              const call = r.choices[0]!.message.tool_calls![0]!;
              messages.push(r.choices[0]!.message as Msg, { role: 'tool', tool_call_id: call.id, content: '42' });
            }
          }),
        );
      const bad = await run(() => '{"a": 2, "b": 40}');
      expect(onlineNames(bad.online)).toEqual(['repetition/infinite_loop/1.3']);
      expect(bad.online[0]!['faultline.detection.evidence']).toBe(
        'the same tool call (add) with the same arguments 3 times in a row (agent Calculator)',
      );
      expect(names(bad.judged)).toEqual(capture ? ['repetition/infinite_loop/1.3'] : []);
      const ok = await run((i) => `{"a": ${i}, "b": 40}`);
      expect([...ok.online, ...ok.judged]).toEqual([]);
    });

    it('step repetition: a handoff cycle A → B → A with the same messages (content-free)', async () => {
      const channel = new MessageChannel({ name: 'cycle' });
      const run = (rounds: number, vary: boolean) =>
        observe('cycle', async () => {
          for (let i = 0; i < rounds; i++) {
            await channel.send({ source: 'Writer', target: 'Critic', payload: { draft: vary ? `v${i}` : 'v1' } });
            await channel.send({
              source: 'Critic',
              target: 'Writer',
              payload: { notes: vary ? `n${i}` : 'tighten it' },
            });
          }
        });
      const bad = await run(3, false);
      expect(onlineNames(bad.online)).toContain('repetition/infinite_loop/1.3');
      expect(names(bad.judged)).toContain('repetition/infinite_loop/1.3');
      const ok = await run(3, true);
      expect([...ok.online, ...ok.judged]).toEqual([]);
    });

    it('conversation reset and loss of history within one agent turn; a growing conversation is clean', async () => {
      const turn = (sizes: number[]) =>
        observe('history', () =>
          runAgent('Assistant', async () => {
            for (const [k, n] of sizes.entries()) {
              // A model answers different questions differently (the same answer thrice is a loop of its own).
              replies.push(
                body(
                  TEXT,
                  (b) => ((b.choices as Array<{ message: { content: string } }>)[0]!.message.content += ` (${k})`),
                ),
              );
              const messages: Msg[] = [];
              for (let i = 0; i < n; i++)
                messages.push(i % 2 === 0 ? user(`question ${i}`) : { role: 'assistant', content: `answer ${i}` });
              await ask(messages);
            }
          }),
        );
      const reset = await turn([1, 3, 5, 1]);
      expect(onlineNames(reset.online)).toEqual(['history_loss/context_overflow/2.1']);
      expect(names(reset.judged)).toEqual(['history_loss/context_overflow/2.1']);
      const lost = await turn([1, 3, 5, 7, 3]);
      expect(onlineNames(lost.online)).toEqual(['history_loss/context_overflow/1.4']);
      expect(lost.online[0]!['faultline.detection.evidence']).toBe(
        "Assistant's request carried 3 messages after 7 in the same turn: 4 dropped",
      );
      const ok = await turn([1, 3, 5, 7]);
      expect([...ok.online, ...ok.judged]).toEqual([]);
    });

    it('context overflow: the provider refuses the input as too long, or the input fills the window', async () => {
      // OpenAI's documented error for an over-long input (shape of the corpus's recorded error bodies).
      const refused = JSON.stringify({
        error: {
          message:
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens. Please reduce the length of the messages.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      });
      const over = await observe('overflow', () =>
        runAgent('Summariser', async () => {
          server.respond(() => ({ status: 400, headers: { 'content-type': 'application/json' }, body: refused }));
          await ask([user('summarise the attached logs')]).catch(() => undefined);
        }),
      );
      server.respond(() => ({
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: replies.shift() ?? body(TEXT),
      }));
      expect(onlineNames(over.online)).toEqual(['context_overflow/context_overflow/1.4']);
      expect(names(over.judged)).toEqual(['context_overflow/context_overflow/1.4']);
      // A real answer whose usage shows the input at 97 % of gpt-4's 8192-token window.
      const full = await observe('full', () =>
        runAgent('Summariser', async () => {
          replies.push(body(TEXT, (b) => ((b.usage as Record<string, number>).prompt_tokens = 7950)));
          await openai.chat.completions.create({ model: 'gpt-4', messages: [user('summarise the attached logs')] });
        }),
      );
      expect(onlineNames(full.online)).toEqual(['context_overflow/context_overflow/1.4']);
      expect(full.online[0]!['faultline.detection.evidence']).toBe(
        "input of 7950 tokens fills 97% of gpt-4's 8192-token context window",
      );
      expect(names(full.judged)).toEqual(['context_overflow/context_overflow/1.4']);
      const ok = await observe('fits', () =>
        runAgent('Summariser', () => openai.chat.completions.create({ model: 'gpt-4', messages: [user('summarise')] })),
      );
      expect([...ok.online, ...ok.judged]).toEqual([]);
    });

    it('output conflict: the decision maker is told two skus by two agents (where payloads are seen)', async () => {
      const channel = new MessageChannel({ name: 'conflict' });
      const run = (sku: string) =>
        observe('conflict', async () => {
          await channel.send({
            source: 'Worker',
            target: 'Decision',
            payload: { product_id: 'P-1001', sku: 'MUG-BLU-12' },
          });
          await channel.send({
            source: 'Verifier',
            target: 'Decision',
            payload: { verdict: 'accept', evidence: { product_id: 'P-1001', sku } },
          });
        });
      const bad = await run('MUG-BLU-16');
      expect(onlineNames(bad.online)).toEqual(['output_conflict/output_conflict/2.5']);
      expect(names(bad.judged)).toEqual(capture ? ['output_conflict/output_conflict/2.5'] : []);
      const ok = await run('MUG-BLU-12');
      expect([...ok.online, ...ok.judged]).toEqual([]);
    });

    it("quality degradation: an agent's run far below its own earlier runs in the task", async () => {
      const run = (last: string) =>
        observe('quality', async () => {
          // The Writer drafts four sections, one agent turn each (each draft its own text).
          for (let i = 0; i < 3; i++) {
            replies.push(
              body(
                TEXT,
                (b) => ((b.choices as Array<{ message: { content: string } }>)[0]!.message.content += ` (draft ${i})`),
              ),
            );
            await runAgent('Writer', () => ask([user(`section ${i}`)]));
          }
          replies.push(
            body(TEXT, (b) => ((b.choices as Array<{ message: { content: string } }>)[0]!.message.content = last)),
          );
          await runAgent('Writer', () => ask([user('section 4')]));
        });
      const bad = await run('OK.');
      expect(onlineNames(bad.online)).toEqual(['quality_degradation/quality_degradation/3.2']);
      expect(names(bad.judged)).toEqual(['quality_degradation/quality_degradation/3.2']);
      const full = (TEXT.response as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;
      const ok = await run(full.slice(0, Math.ceil(full.length * 0.8)));
      expect([...ok.online, ...ok.judged]).toEqual([]);
    });

    it('premature termination: a required step never ran, or the workflow ended on a cut answer', async () => {
      const steps = ['Planner', 'Worker', 'Verifier'];
      const agents = (which: string[]) => async () => {
        for (const a of which) await runAgent(a, () => ask([user(`${a}: go`)]));
        return { done: true };
      };
      const missing = await observe('early', agents(['Planner', 'Worker']), { requiredSteps: steps });
      expect(onlineNames(missing.online)).toEqual(['premature_termination/premature_termination/3.1']);
      expect(missing.online[0]!['faultline.detection.evidence']).toBe(
        'the workflow ended after 2 of 3 required steps; missing: Verifier',
      );
      const cut = await observe(
        'cut',
        async () => {
          for (const a of steps) {
            if (a === 'Verifier') replies.push(body(CUT));
            await runAgent(a, () => ask([user(`${a}: go`)]));
          }
          return { done: true };
        },
        { requiredSteps: steps },
      );
      expect(onlineNames(cut.online)).toEqual(['premature_termination/premature_termination/3.1']);
      expect(String(cut.online[0]!['faultline.detection.evidence'])).toMatch(
        /^the workflow ended on an incomplete final output: its last answer \(Verifier\) was cut by the token limit \(finish reason length\)$/,
      );
      const ok = await observe('complete', agents(steps), { requiredSteps: steps });
      expect([...ok.online, ...ok.judged]).toEqual([]);
      // Offline, from the workflow span's end facts: the same findings, found again or read back.
      expect(names(missing.offline)).toEqual(['premature_termination/premature_termination/3.1']);
      expect(names(cut.offline)).toEqual(['premature_termination/premature_termination/3.1']);
    });

    it('timeout: a workflow that ends after its deadline', async () => {
      const late = await observe('late', () => runAgent('Slow', () => new Promise((r) => setTimeout(r, 300))), {
        deadlineMs: 50,
      });
      // At the deadline nothing had completed (no progress); at the end it was late.
      expect(onlineNames(late.online)).toEqual([
        'workflow_progress/timeout/1.5',
        'workflow_progress/workflow_deadlock/1.5',
      ]);
      expect(names(late.judged)).toEqual(['workflow_progress/timeout/1.5', 'workflow_progress/workflow_deadlock/1.5']);
      const ok = await observe('on-time', () => runAgent('Quick', () => new Promise((r) => setTimeout(r, 5))), {
        deadlineMs: 5000,
      });
      expect([...ok.online, ...ok.judged]).toEqual([]);
    });
  });
}
