/**
 * Ready-made exchanges for the tests that need a chat call, not a particular one: built from the project-written
 * wire bodies (openai-wire.ts, anthropic-wire.ts), in the shape of a recorded exchange so that corpusReply serves
 * them. Each is made once per test file, so its ids stay fixed within the file (as a record's do).
 *
 *   CHAT_TEXT        OpenAI chat completion, JSON: a four-paragraph text answer (non-ASCII characters included) to a
 *                    request whose history holds a tool call and its result
 *   CHAT_PLAIN       OpenAI chat completion, JSON: a one-paragraph text answer to a system prompt and a question (no tools)
 *   CHAT_TOOL_CALL   OpenAI chat completion, JSON: one tool call
 *   CHAT_STREAM      OpenAI chat completion streamed with `stream_options.include_usage`: text, usage chunk, [DONE]
 *   CHAT_STREAM_PLAIN  the same without the usage chunk (no stream_options)
 *   ANTHROPIC_TEXT / ANTHROPIC_TEXT_SSE   Anthropic message, JSON and streamed: a text answer each
 */
import { message, messageStream } from './anthropic-wire';
import { chatCompletion, chatCompletionStream } from './openai-wire';
import { exchange } from './wire-text';

const DELEGATE = {
  type: 'function',
  function: {
    name: 'delegate_work_to_coworker',
    description: 'Delegate a task to a coworker, with everything they need to know to do it.',
    parameters: {
      type: 'object',
      properties: { task: { type: 'string' }, context: { type: 'string' }, coworker: { type: 'string' } },
      required: ['task', 'context', 'coworker'],
    },
  },
};

/** The text answer of CHAT_TEXT (four paragraphs, with “quotes”, an em dash and accented letters). */
export const CHAT_TEXT_ANSWER =
  'Agents at the Help Desk: Faster Answers, Same Care\n\nA customer writes at 2 a.m. about a parcel that never arrived. ' +
  'Ten years ago the message waited for the morning shift; today an agent reads it, finds the order, checks the ' +
  'carrier’s tracking page and answers within a minute — with the courtesy a seasoned colleague would show.\n\n' +
  'What holds is speed on routine work. Address changes, delivery questions and password resets follow a handful of ' +
  'patterns, and an agent that can look things up handles them well, which frees people for the cases that need ' +
  'judgement: a café owner whose card terminal failed on a Saturday, a customer in Zürich billed twice.\n\n' +
  'What does not hold is the idea that an agent can be left alone. It needs the help-centre pages it may quote, a ' +
  'clear list of what it must never promise, and a hand-over that passes the whole conversation to a person.\n\n' +
  'When those are in place, customers rarely notice where the agent stops and the colleague begins — which is the point.';

export const CHAT_TEXT = exchange({
  endpoint: '/v1/chat/completions',
  tags: ['text', 'has_tools', 'tool_result_in_request', 'system_prompt'],
  request: {
    model: 'gpt-4.1-mini',
    tool_choice: 'auto',
    tools: [DELEGATE],
    messages: [
      {
        role: 'system',
        content: 'You are the editor of a content agency. Make sure every article the writers deliver is excellent.',
      },
      {
        role: 'user',
        content:
          'Current task: write a four-paragraph article about AI agents at the help desk. Return the complete article.',
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_delegatedraft01',
            type: 'function',
            function: {
              name: 'delegate_work_to_coworker',
              arguments:
                '{"task":"Draft the article","context":"Four paragraphs on AI agents at the help desk","coworker":"Senior Writer"}',
            },
          },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_delegatedraft01',
        content: 'Draft delivered: four paragraphs on speed, quality, limits and hand-over, ready for review.',
      },
      { role: 'user', content: 'Now give the final article.' },
    ],
  },
  response: chatCompletion({
    model: 'gpt-4.1-mini-2025-04-14',
    text: CHAT_TEXT_ANSWER,
    inputTokens: 412,
    outputTokens: 236,
  }),
});

/** The text answer of CHAT_PLAIN. */
export const CHAT_PLAIN_ANSWER =
  'Final Answer: Support teams that let an agent take the routine tickets answer most of them within minutes, and the ' +
  'people freed from them spend the time on the cases that need judgement. The agent quotes the help-centre page it ' +
  'used, so a reviewer can check an answer before it is sent, and it hands refunds and complaints to a person.';

export const CHAT_PLAIN = exchange({
  endpoint: '/v1/chat/completions',
  tags: ['text', 'system_prompt'],
  request: {
    model: 'gpt-4o',
    messages: [
      {
        role: 'system',
        content: 'You are an expert researcher in customer support technology. Give your complete final answer.',
      },
      { role: 'user', content: 'In one paragraph: what changes when a support team adopts an AI agent?' },
    ],
  },
  response: chatCompletion({ model: 'gpt-4o-2024-05-13', text: CHAT_PLAIN_ANSWER, inputTokens: 52 }),
});

export const CHAT_TOOL_CALL = exchange({
  endpoint: '/v1/chat/completions',
  tags: ['tool_calls', 'has_tools'],
  request: {
    model: 'gpt-4o',
    tool_choice: 'auto',
    tools: [DELEGATE],
    messages: [
      { role: 'system', content: 'You are the editor of a content agency.' },
      { role: 'user', content: 'Have the senior writer draft the article on AI agents.' },
    ],
  },
  response: chatCompletion({
    model: 'gpt-4o-2024-08-06',
    toolCalls: [
      {
        name: 'delegate_work_to_coworker',
        arguments:
          '{"task":"Draft a four-paragraph article on AI agents at the help desk","context":"For support leaders; practical, with examples","coworker":"Senior Writer"}',
      },
    ],
    inputTokens: 180,
    outputTokens: 52,
  }),
});

/** The text of CHAT_STREAM and CHAT_STREAM_PLAIN. */
export const CHAT_STREAM_ANSWER =
  'The winner of the World Cup in 2022 was Argentina, after a final against France decided on penalties.';
const streamRequest = {
  model: 'gpt-4o',
  messages: [{ role: 'user', content: 'Who won the World Cup in 2022? Answer in one sentence.' }],
  stream: true,
  temperature: 0.5,
};

export const CHAT_STREAM = exchange({
  endpoint: '/v1/chat/completions',
  tags: ['text', 'usage_chunk'],
  request: { ...streamRequest, stream_options: { include_usage: true } },
  sse: chatCompletionStream({ model: 'gpt-4o-2024-08-06', text: CHAT_STREAM_ANSWER, inputTokens: 24 }),
});

export const CHAT_STREAM_PLAIN = exchange({
  endpoint: '/v1/chat/completions',
  tags: ['text'],
  request: streamRequest,
  sse: chatCompletionStream({ model: 'gpt-4o-2024-08-06', text: CHAT_STREAM_ANSWER }, { usage: false }),
});

/** The text of ANTHROPIC_TEXT and ANTHROPIC_TEXT_SSE. */
export const ANTHROPIC_TEXT_ANSWER =
  'Tides come from the Moon’s pull on the oceans: the water bulges toward it and on the far side of the Earth, and the Earth turns through both bulges each day.';
const anthropicRequest = {
  model: 'claude-sonnet-5-5',
  max_tokens: 512,
  messages: [{ role: 'user', content: 'Why are there two tides a day? Two sentences.' }],
};

export const ANTHROPIC_TEXT = exchange({
  endpoint: '/v1/messages',
  tags: ['text'],
  request: anthropicRequest,
  response: message({ model: 'claude-sonnet-5-5', text: ANTHROPIC_TEXT_ANSWER, inputTokens: 21, outputTokens: 44 }),
});

/** The text of ANTHROPIC_TEXT_SSE (another answer to the same question, so the two calls' usage differs). */
export const ANTHROPIC_STREAM_ANSWER =
  'The Moon pulls the oceans into two bulges, one facing it and one on the opposite side. As the Earth turns, each coast passes through both bulges, so it sees two high tides a day.';

export const ANTHROPIC_TEXT_SSE = exchange({
  endpoint: '/v1/messages',
  tags: ['text'],
  request: { ...anthropicRequest, stream: true },
  sse: messageStream({ model: 'claude-sonnet-5-5', text: ANTHROPIC_STREAM_ANSWER, inputTokens: 21, outputTokens: 49 }),
});
