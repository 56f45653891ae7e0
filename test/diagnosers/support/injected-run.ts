/**
 * Diagnosis of traces made by the real fault-injection stack: the real openai client, faultline's instrumentation and
 * injector (FaultInjectionSpanProcessor + HTTP fault step), the real OTel SDK, and a loopback server answering
 * with chat completions the project writes in OpenAI's format (../../support/openai-wire.ts). Each task is a small multi-agent workflow (planner → worker with a tool call → reviewer);
 * a plan per task injects one catalog fault at a random position. The spans are normalised, and `evaluate` scores the
 * rule diagnoser against the ground truth the injector recorded (stripped before diagnosis).
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { runAgent } from '../../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../../instrumentation/agents/task';
import { createDiagnoser } from '../../../src/diagnosers/index';
import { evaluate, type EvalReport } from '../../../src/evaluation/evaluate';
import { evalText } from '../../../src/report/eval-text';
import { startLlmServer, type LlmServer } from '../../support/llm-server';
import { chatCompletion, type AnswerSpec } from '../../support/openai-wire';
import { setupStack, type Stack } from './stack';
import { toTraces } from '../../support/to-traces';

/** One model call of the workflow: what the agent sends and what the model answers. */
interface Step {
  request: Record<string, unknown>;
  answer: AnswerSpec;
}

const DELEGATION_TOOLS = ['delegate_work_to_coworker', 'ask_question_to_coworker'].map((name) => ({
  type: 'function',
  function: {
    name,
    description: `${name.replaceAll('_', ' ')}: hand a task or a question to one of the coworkers, with all the context they need.`,
    parameters: {
      type: 'object',
      properties: { question: { type: 'string' }, context: { type: 'string' }, coworker: { type: 'string' } },
      required: ['question', 'context', 'coworker'],
    },
  },
}));

const sys = (role: string) => ({
  role: 'system',
  content: `You are ${role} of a small content agency. Work carefully, answer in full sentences and give your complete final answer.`,
});

/** The planner: a researcher's plan of the article. */
const PLAN: Step = {
  request: {
    model: 'gpt-4o',
    messages: [
      sys('the researcher'),
      {
        role: 'user',
        content:
          'List the three angles an article on AI agents in customer support should cover, with one line of evidence for each.',
      },
    ],
  },
  answer: {
    model: 'gpt-4o-2024-05-13',
    inputTokens: 190,
    text:
      'Thought: I can give a complete answer now.\nFinal Answer: The article should cover three angles. First, speed: ' +
      'support teams that route routine tickets to an agent answer most of them within minutes instead of hours. Second, ' +
      'quality: an agent that cites the help-centre page it used lets a reviewer check every answer before it is sent. ' +
      'Third, limits: refunds, legal complaints and angry customers still need a person, and the hand-over must keep the ' +
      'whole conversation so that nobody has to repeat themselves. Each angle deserves a short example from a real team.',
  },
};

/** The worker's tool call: a question to a coworker. */
const ASK: Step = {
  request: {
    model: 'gpt-4o',
    tool_choice: 'auto',
    tools: DELEGATION_TOOLS,
    messages: [
      sys('the editor'),
      { role: 'user', content: 'Before writing, check with the scorer how strong the working title is.' },
    ],
  },
  answer: {
    model: 'gpt-4o-2024-08-06',
    inputTokens: 540,
    outputTokens: 96,
    toolCalls: [
      {
        name: 'ask_question_to_coworker',
        arguments: JSON.stringify({
          question:
            "Given the working title 'Agents at the help desk: faster answers, same care', what score from 1 to 5 would you give it?",
          context:
            'Score the title on clarity, relevance to support leaders and how much it makes them want to read on: 1 is poor, 3 is good and 5 is excellent.',
          coworker: 'Scorer',
        }),
      },
    ],
  },
};

/** The worker's answer after the tool result: a long text with non-ASCII characters (mojibake changes it). */
const DRAFT: Step = {
  request: {
    model: 'gpt-4.1-mini',
    tool_choice: 'auto',
    tools: DELEGATION_TOOLS,
    messages: [
      sys('the editor'),
      { role: 'user', content: 'Write the opening section of the article on AI agents at the help desk.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_scoretitle01',
            type: 'function',
            function: {
              name: 'ask_question_to_coworker',
              arguments: '{"question":"Score the title","context":"1 to 5","coworker":"Scorer"}',
            },
          },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_scoretitle01',
        content: 'Score: 4. The title is clear and speaks to support leaders; “same care” answers their first worry.',
      },
      { role: 'user', content: 'Now write the section itself.' },
    ],
  },
  answer: {
    model: 'gpt-4.1-mini-2025-04-14',
    inputTokens: 680,
    text:
      'Agents at the Help Desk: Faster Answers, Same Care\n\nA customer writes at 2 a.m. about a parcel that never ' +
      'arrived. Ten years ago the message waited for the morning shift; today an agent reads it, finds the order, checks ' +
      'the carrier’s tracking page and answers within a minute — with the same courtesy a seasoned colleague would show. ' +
      'That is the promise support leaders hear about, and it is worth separating what holds from what does not.\n\n' +
      'What holds is speed on routine work. Address changes, delivery questions and password resets follow a handful of ' +
      'patterns, and an agent that can look things up handles them well. Teams that measured it report that most of these ' +
      'tickets close without a person touching them, and that the people freed from them spend the time on the cases ' +
      'that need judgement: a café owner whose card terminal failed on a Saturday, a customer in Zürich billed twice.\n\n' +
      'What does not hold is the idea that an agent can be left alone. It needs the help-centre pages it may quote, a ' +
      'clear list of what it must never promise, and a hand-over that passes the whole conversation to a person. When ' +
      'those are in place, customers rarely notice where the agent stops and the colleague begins — which is the point.',
  },
};

/** The reviewer's verdict: a long text. */
const REVIEW: Step = {
  request: {
    model: 'gpt-4.1-mini',
    messages: [
      sys('the senior writer'),
      {
        role: 'user',
        content: 'Review the opening section and say, paragraph by paragraph, what works and what to change.',
      },
    ],
  },
  answer: {
    model: 'gpt-4.1-mini-2025-04-14',
    inputTokens: 200,
    text:
      'The opening works because it starts with a single customer and a concrete hour, which makes the promise tangible ' +
      'before any claim is made. Keep it. The second sentence could lose the “ten years ago” framing, since readers in ' +
      'support know the night-shift problem well and the contrast slows the start down a little.\n\n' +
      'The second paragraph carries the evidence. It would be stronger with one number from a named team, even a rough ' +
      'one, because “most of these tickets” invites the question of how many. The examples at the end of the paragraph ' +
      'are good: they show the kind of case that needs a person without lecturing about it.\n\n' +
      'The third paragraph is the most useful for the readers we want. The three conditions — pages to quote, promises ' +
      'to avoid and a full hand-over — are exactly what a support leader would put on a checklist, so consider setting ' +
      'them out as a short list. The last sentence lands well and should stay as it is. Overall the section is ready ' +
      'after these small changes, and the tone matches the rest of the series.',
  },
};

/** Faults by catalog name; AgentChaos names carry their strategy. Each runs `reps` tasks at random positions. */
export const FAULTS = [
  'llm_error_single',
  'llm_timeout_single',
  'llm_empty_single',
  'llm_truncate_single',
  'llm_corrupt_single',
  'llm_schema_single',
  'tool_error_single',
  'tool_timeout_single',
  'tool_empty_single',
  'tool_truncate_single',
  'tool_corrupt_single',
  'tool_schema_single',
  'llm_truncate_burst',
  'llm_error_pos_mid',
  'llm_schema_pos_late',
  'compound_content_filter',
  'compound_max_tokens',
  'compound_proxy_html',
  'compound_stale_cache',
  'http_503',
  'http_429',
];
export const REPS = 3;
export const CLEAN = 20;

let h: Stack;
let server: LlmServer;
let client: OpenAI;
let queue: Step[] = [];

function rand(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
}

async function workflow(name: string, condition?: string): Promise<void> {
  // planner: text; worker: tool call, then text; reviewer: text. Errors are swallowed the way agents carry on.
  queue = [PLAN, ASK, DRAFT, REVIEW];
  const call = async (r: Step) => {
    try {
      await client.chat.completions.create(r.request as never);
    } catch {
      /* the agent carries on */
    }
  };
  await runWorkflow(
    name,
    async () => {
      await runAgent('planner', () => call(PLAN));
      await runAgent('worker', async () => {
        await call(ASK);
        await call(DRAFT);
      });
      await runAgent('reviewer', () => call(REVIEW));
    },
    condition ? { attributes: { 'faultline.fault.condition': condition } } : {},
  );
}

/**
 * Run the fault matrix and the clean tasks through the real stack and evaluate the rule diagnoser.
 * `online`: the production default (no content; online detection events); `content`: captured content read by the
 * offline detectors.
 */
export async function runInjected(MODE: 'online' | 'content'): Promise<EvalReport> {
  h = setupStack(
    MODE === 'content'
      ? { captureMessageContent: true, onlineDetection: false }
      : { captureMessageContent: false, onlineDetection: true },
  );
  // Served as a live provider would: a fresh id and `created` time in every answer.
  server = await startLlmServer(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatCompletion(queue.shift()!.answer)),
  }));
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
  const r = rand(20261129);
  for (const fault of FAULTS) {
    for (let i = 0; i < REPS; i++) {
      const position = 1 + Math.floor(r() * 4);
      const fixed = fault.includes('_pos_') || fault.startsWith('compound_') || fault.endsWith('_burst');
      h.plan = { seed: 42, rules: [{ fault, match: fixed ? { operation: 'chat' } : { operation: 'chat', position } }] };
      await workflow(fault, fault);
    }
  }
  h.plan = undefined;
  for (let i = 0; i < CLEAN; i++) await workflow('clean');
  const spans: ReadableSpan[] = await h.waitForSpans(
    (s) => s.filter((x) => x.name.startsWith('invoke_workflow')).length >= FAULTS.length * REPS + CLEAN,
    10_000,
  );
  const report = await evaluate(toTraces(spans), [createDiagnoser('rule')]);
  process.stdout.write(evalText(report));
  if (process.env.FAULTLINE_TEST_DEBUG) {
    for (const row of report.rows) {
      const p = row.predictions.rule;
      if (p && (p.faultType !== row.truth.faultType || p.spanId !== row.truth.spanId)) {
        process.stdout.write(
          `${row.truth.name ?? row.truth.condition ?? 'clean'} ${row.truth.faultType}@${row.truth.step} -> ${p.faultType}@${p.step}: ${p.evidence.join(' | ')}\n`,
        );
      }
    }
  }
  await server.close();
  await h.shutdown();
  return report;
}
