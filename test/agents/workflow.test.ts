/**
 * A crewAI-style hierarchical session (three model calls the project writes in OpenAI's format) run as an
 * in-process multi-agent workflow: the manager's LLM call delegates to the Scorer through a MessageChannel (I2), the
 * Scorer answers with its own LLM call and hands the answer back (I3), and the manager finishes. The real OpenAI SDK
 * talks to a loopback server that answers each request with its scripted response, through the real GenAI span layer.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MessageChannel, configureChannels } from '../../instrumentation/agents/channel';
import { runAgent } from '../../instrumentation/agents/invoke-agent';
import { runWorkflow } from '../../instrumentation/agents/task';
import { installInstrumentation } from '../../instrumentation/install';
import type { AgentMessage, DeliverStep } from '../../instrumentation/types';
import { byName, parentOf, setupOtel } from './otel';
import { chatCompletion } from '../support/openai-wire';

interface ChatRecord {
  request: { model: string; messages: Array<{ role: string; content: string | null }> } & Record<string, unknown>;
  response: Record<string, unknown>;
}

/**
 * A hierarchical crew's three model calls, in crewAI's shape (written by the project, ../support/openai-wire.ts): the
 * manager delegates a question to the Scorer (a tool call), the Scorer answers, the manager concludes with JSON.
 */
const MANAGER = {
  role: 'system',
  content:
    'You are Crew Manager. You delegate work to the right coworker and ask them the right questions. Your final answer must be a JSON object.',
};
const TASK = {
  role: 'user',
  content:
    'Current Task: give an integer score between 1 and 5 for the title \'The future of support is agents\'. Your final answer must be JSON: {"score": <n>}.',
};
const QUESTION = {
  question: "What integer score between 1 and 5 would you give the title 'The future of support is agents'?",
  context: 'Judge clarity, relevance and appeal: 1 is poor, 3 is good, 5 is excellent.',
  coworker: 'Scorer',
};
const ASK_TOOL = {
  type: 'function',
  function: {
    name: 'Ask_question_to_coworker',
    description: 'Ask a coworker a question.',
    parameters: {
      type: 'object',
      properties: { question: { type: 'string' }, context: { type: 'string' }, coworker: { type: 'string' } },
      required: ['question', 'context', 'coworker'],
    },
  },
};
const SCORER_ANSWER =
  'Thought: I now can give a great answer\nFinal Answer: I would assign a score of 4 to this title: it is clear and relevant to support leaders, though a more concrete promise would make it stand out further.';
const session: ChatRecord[] = [
  {
    request: { model: 'gpt-4o', messages: [MANAGER, TASK], tools: [ASK_TOOL] },
    response: chatCompletion({
      model: 'gpt-4o-2024-08-06',
      toolCalls: [{ name: 'Ask_question_to_coworker', arguments: JSON.stringify(QUESTION) }],
    }),
  },
  {
    request: {
      model: 'gpt-4.1-mini',
      messages: [
        {
          role: 'system',
          content: 'You are Scorer. You score titles and ideas for a content agency, with a short reason.',
        },
        { role: 'user', content: `Current Task: ${QUESTION.question}\n\n${QUESTION.context}` },
      ],
    },
    response: chatCompletion({ model: 'gpt-4.1-mini-2025-04-14', text: SCORER_ANSWER }),
  },
  {
    request: {
      model: 'gpt-4o',
      tools: [ASK_TOOL],
      messages: [
        MANAGER,
        TASK,
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_askscorer0001',
              type: 'function',
              function: { name: 'Ask_question_to_coworker', arguments: JSON.stringify(QUESTION) },
            },
          ],
        } as never,
        { role: 'tool', tool_call_id: 'call_askscorer0001', content: SCORER_ANSWER } as never,
        { role: 'user', content: 'Give your final answer.' },
      ],
    },
    response: chatCompletion({ model: 'gpt-4o-2024-08-06', text: '{"score":4}' }),
  },
];

const otel = setupOtel();
const installed = installInstrumentation({ tracer: () => trace.getTracer('faultline'), captureContent: () => false });
let server: Server;
let openai: OpenAI;

beforeAll(async () => {
  expect(session).toHaveLength(3);
  // Answers each request with the session's response for the same system prompt and conversation length.
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRecord['request'];
      const hit = session.find(
        (r) =>
          r.request.messages.length === body.messages.length &&
          r.request.messages[0].content === body.messages[0].content,
      );
      res.writeHead(hit ? 200 : 404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          hit ? hit.response : { error: { message: 'no scripted answer', type: 'invalid_request_error' } },
        ),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  openai = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'sk-test', maxRetries: 0 });
});
afterEach(() => {
  otel.exporter.reset();
  configureChannels({});
});
afterAll(async () => {
  installed.uninstall();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await otel.shutdown();
});

/** The hierarchical crew: returns what the manager concluded and what it received from the Scorer. */
async function crew(channel: MessageChannel): Promise<{ final: string | null; inbox: AgentMessage[] }> {
  const inbox: AgentMessage[] = [];
  channel.on('manager', (m) => void inbox.push(m));
  channel.on('Scorer', (m) =>
    runAgent('Scorer', async () => {
      const answer = await openai.chat.completions.create(session[1].request as never);
      await channel.send({
        source: 'Scorer',
        target: 'manager',
        boundary: 'I3',
        taskId: m.taskId,
        payload: { answer: answer.choices[0].message.content, inReplyTo: m.id },
      });
    }),
  );
  return runWorkflow(
    'crew',
    () =>
      runAgent('manager', async () => {
        const first = await openai.chat.completions.create(session[0].request as never);
        const call = first.choices[0].message.tool_calls?.[0];
        if (call?.type !== 'function') throw new Error('expected a delegation tool call');
        const args = JSON.parse(call.function.arguments) as { coworker: string };
        await channel.send({
          source: 'manager',
          target: args.coworker,
          boundary: 'I2',
          taskId: 'crew-hier-1',
          payload: args,
        });
        const last = await openai.chat.completions.create(session[2].request as never);
        return { final: last.choices[0].message.content, inbox };
      }),
    { taskId: 'crew-hier-1' },
  );
}

function children(spans: ReadableSpan[], parent: ReadableSpan): string[] {
  return spans
    .filter((s) => parentOf(s) === parent.spanContext().spanId)
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
    .map((s) => s.name);
}

describe('an in-process crew with handoffs', () => {
  it('nests LLM calls under the agent that made them and handoffs under the sender', async () => {
    const { final, inbox } = await crew(new MessageChannel({ name: 'crew' }));
    expect(final).toBe('{"score":4}');
    expect(inbox).toHaveLength(1);
    expect(inbox[0].payload).toMatchObject({ answer: expect.stringContaining('I would assign a score of 4') });

    const spans = await otel.waitForSpans((s) => s.some((x) => x.name === 'invoke_workflow crew'));
    const workflow = byName(spans, 'invoke_workflow crew');
    const manager = byName(spans, 'invoke_agent manager');
    const scorer = byName(spans, 'invoke_agent Scorer');
    expect(parentOf(workflow)).toBeUndefined();
    expect(children(spans, workflow)).toEqual(['invoke_agent manager']);
    const [managerModel, scorerModel] = [session[0].request.model, session[1].request.model]; // gpt-4o, gpt-4.1-mini
    // Each delivery has its receive span; the receiver's handler (here the Scorer's turn) runs inside it.
    expect(children(spans, manager)).toEqual([
      `chat ${managerModel}`,
      'handoff Scorer',
      'receive Scorer',
      `chat ${managerModel}`,
    ]);
    expect(children(spans, byName(spans, 'receive Scorer'))).toEqual(['invoke_agent Scorer']);
    expect(children(spans, scorer)).toEqual([`chat ${scorerModel}`, 'handoff manager', 'receive manager']);
    const chats = spans.filter((s) => s.name.startsWith('chat '));
    expect(chats).toHaveLength(3);
    for (const chat of chats) expect(chat.kind).toBe(SpanKind.CLIENT);

    expect(byName(spans, 'handoff Scorer').attributes).toMatchObject({
      'faultline.message.source': 'manager',
      'faultline.message.target': 'Scorer',
      'faultline.message.boundary': 'I2',
      'faultline.message.task_id': 'crew-hier-1',
      'faultline.message.keys': ['context', 'coworker', 'question'],
      'faultline.message.delivered_count': 1,
    });
    expect(byName(spans, 'handoff manager').attributes).toMatchObject({
      'faultline.message.boundary': 'I3',
      'faultline.message.delivered_count': 1,
    });
  });

  it('lets a configured step lose the observation handoff (I3) without touching the rest', async () => {
    const loseObservations: DeliverStep = async (m, ctx, next) => {
      if (m.boundary !== 'I3') return next(m);
      ctx.span.setAttribute('faultline.fault.name', 'non_delivery');
      return [];
    };
    configureChannels({ steps: [loseObservations] });
    const { final, inbox } = await crew(new MessageChannel({ name: 'crew' }));
    expect(final).toBe('{"score":4}'); // the replayed manager does not notice: a silent failure
    expect(inbox).toEqual([]);
    const spans = await otel.waitForSpans((s) => s.some((x) => x.name === 'invoke_workflow crew'));
    expect(byName(spans, 'handoff manager').attributes).toMatchObject({
      'faultline.message.delivered_count': 0,
      'faultline.fault.name': 'non_delivery',
    });
    expect(byName(spans, 'handoff Scorer').attributes['faultline.message.delivered_count']).toBe(1);
  });
});
