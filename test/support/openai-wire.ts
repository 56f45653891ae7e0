/**
 * OpenAI answers written by the project, in the wire formats of OpenAI's API reference: a chat completion and its
 * `chat.completion.chunk` SSE stream, a Responses API `response` object and its typed SSE events. Built from what the
 * answer says (text or tool calls, model, usage), so a test states the answer it needs instead of replaying a
 * recorded one: the suites built on these run in a lone clone (the recorded corpus replays are the conformance tier).
 *
 *   chatCompletion / chatCompletionStream   POST /v1/chat/completions, JSON or `stream: true`
 *   response / responseStream               POST /v1/responses, JSON or `stream: true`
 *   responseFailedStream                    a Responses stream ending in `error` and `response.failed`
 *   openaiError                             the error envelope of a 4xx/5xx answer
 *
 * Each call makes fresh ids (`chatcmpl-…`, `call_…`, `resp_…`, `fc_…`, `msg_…`), as a live provider does.
 */
import { freshId, jsonPieces, roughTokens, textPieces, unixNow as now } from './wire-text';

export interface ToolCallSpec {
  name: string;
  /** The arguments as the model writes them: a JSON text. */
  arguments: string;
}

export interface AnswerSpec {
  /** The model the answer names (the provider's dated snapshot, as OpenAI returns it). */
  model: string;
  /** The assistant's text; absent when it calls tools. */
  text?: string;
  toolCalls?: ToolCallSpec[];
  inputTokens?: number;
  outputTokens?: number;
  /** Of the input tokens, those read from the prompt cache (`prompt_tokens_details.cached_tokens`). */
  cachedTokens?: number;
  /** Of the output tokens, the reasoning ones (`completion_tokens_details.reasoning_tokens`). */
  reasoningTokens?: number;
  /** Why generation stopped: `stop` / `tool_calls` by default, `length` when cut at max_tokens, `content_filter`. */
  finishReason?: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  /** Responses API only: a reasoning item before the output, with this summary (`reasoning.summary`). */
  reasoning?: string;
  /** Unix seconds (default: now). */
  created?: number;
}

export { textPieces } from './wire-text';

const usageOf = (a: AnswerSpec) => ({ input: a.inputTokens ?? 40, output: a.outputTokens ?? roughTokens(a.text) });
const finishOf = (a: AnswerSpec) => a.finishReason ?? (a.toolCalls?.length ? 'tool_calls' : 'stop');

const sse = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
const typedSse = (data: { type: string }) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

// --- chat completions -------------------------------------------------------------------------------------------

/** A `chat.completion` object (the JSON body). */
export function chatCompletion(a: AnswerSpec): Record<string, unknown> {
  const u = usageOf(a);
  const toolCalls = a.toolCalls?.map((c) => ({
    id: freshId('call_'),
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  }));
  return {
    id: freshId('chatcmpl-'),
    object: 'chat.completion',
    created: a.created ?? now(),
    model: a.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: a.text ?? null,
          ...(toolCalls ? { tool_calls: toolCalls } : {}),
          refusal: null,
          annotations: [],
        },
        logprobs: null,
        finish_reason: finishOf(a),
      },
    ],
    usage: {
      prompt_tokens: u.input,
      completion_tokens: u.output,
      total_tokens: u.input + u.output,
      prompt_tokens_details: { cached_tokens: a.cachedTokens ?? 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: a.reasoningTokens ?? 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
    service_tier: 'default',
    system_fingerprint: 'fp_project01',
  };
}

/**
 * The SSE events of a streamed chat completion, one string per event: a role chunk, the text or each tool call's
 * name then its arguments in pieces, a finish chunk, the usage chunk (`stream_options.include_usage`), `[DONE]`.
 */
export function chatCompletionStream(a: AnswerSpec, options: { usage?: boolean } = {}): string[] {
  const base = {
    id: freshId('chatcmpl-'),
    object: 'chat.completion.chunk',
    created: a.created ?? now(),
    model: a.model,
    service_tier: 'default',
    system_fingerprint: 'fp_project01',
  };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    sse({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null });
  const events: string[] = [];
  if (a.toolCalls?.length) {
    events.push(chunk({ role: 'assistant', content: null, refusal: null }));
    a.toolCalls.forEach((c, index) => {
      events.push(
        chunk({
          tool_calls: [{ index, id: freshId('call_'), type: 'function', function: { name: c.name, arguments: '' } }],
        }),
      );
      for (const piece of jsonPieces(c.arguments))
        events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    });
    events.push(chunk({}, finishOf(a)));
  } else {
    events.push(chunk({ role: 'assistant', content: '', refusal: null }));
    for (const piece of textPieces(a.text ?? '')) events.push(chunk({ content: piece }));
    events.push(chunk({}, finishOf(a)));
  }
  if (options.usage !== false) {
    const u = usageOf(a);
    events.push(
      sse({
        ...base,
        choices: [],
        usage: {
          prompt_tokens: u.input,
          completion_tokens: u.output,
          total_tokens: u.input + u.output,
          prompt_tokens_details: { cached_tokens: a.cachedTokens ?? 0, audio_tokens: 0 },
          completion_tokens_details: {
            reasoning_tokens: a.reasoningTokens ?? 0,
            audio_tokens: 0,
            accepted_prediction_tokens: 0,
            rejected_prediction_tokens: 0,
          },
        },
      }),
    );
  }
  events.push('data: [DONE]\n\n');
  return events;
}

// --- the Responses API ------------------------------------------------------------------------------------------

type OutputItem = Record<string, unknown> & { id: string; type: string };

function outputItems(a: AnswerSpec): OutputItem[] {
  const reasoning: OutputItem[] =
    a.reasoning !== undefined
      ? [{ id: freshId('rs_'), type: 'reasoning', summary: [{ type: 'summary_text', text: a.reasoning }] }]
      : [];
  return [...reasoning, ...answerItems(a)];
}

function answerItems(a: AnswerSpec): OutputItem[] {
  if (a.toolCalls?.length) {
    return a.toolCalls.map((c) => ({
      id: freshId('fc_'),
      type: 'function_call',
      status: 'completed',
      arguments: c.arguments,
      call_id: freshId('call_'),
      name: c.name,
    }));
  }
  return [
    {
      id: freshId('msg_'),
      type: 'message',
      status: 'completed',
      content: [{ type: 'output_text', annotations: [], logprobs: [], text: a.text ?? '' }],
      role: 'assistant',
    },
  ];
}

type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** How a finished response ends: `incomplete` (max_output_tokens) when the answer was cut at its length. */
const finalStatus = (a: AnswerSpec): ResponseStatus => (a.finishReason === 'length' ? 'incomplete' : 'completed');

function responseObject(
  a: AnswerSpec,
  id: string,
  created: number,
  status: ResponseStatus,
  output: OutputItem[],
  error: { code: string; message: string } | null = null,
): Record<string, unknown> {
  const u = usageOf(a);
  const done = status !== 'in_progress';
  return {
    id,
    object: 'response',
    created_at: created,
    status,
    background: false,
    completed_at: status === 'completed' ? created + 1 : null,
    error,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: null,
    max_output_tokens: null,
    model: a.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    store: true,
    temperature: 1,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage:
      done && status !== 'failed'
        ? {
            input_tokens: u.input,
            input_tokens_details: { cached_tokens: a.cachedTokens ?? 0 },
            output_tokens: u.output,
            output_tokens_details: { reasoning_tokens: a.reasoningTokens ?? 0 },
            total_tokens: u.input + u.output,
          }
        : null,
    user: null,
    metadata: {},
  };
}

/** A Responses API `response` object (the JSON body). */
export function response(a: AnswerSpec): Record<string, unknown> {
  const created = a.created ?? now();
  return responseObject(a, freshId('resp_'), created, finalStatus(a), outputItems(a));
}

/**
 * The typed SSE events of a streamed response, one string per event: `response.created`, `response.in_progress`,
 * per output item `response.output_item.added`, its text (`response.content_part.added`, `response.output_text.delta`
 * …, `.done`, `response.content_part.done`) or arguments (`response.function_call_arguments.delta` …, `.done`),
 * `response.output_item.done`, then `response.completed` with the whole response (`response.incomplete` when the
 * answer was cut at max_output_tokens).
 */
export function responseStream(a: AnswerSpec): string[] {
  const created = a.created ?? now();
  const id = freshId('resp_');
  const items = outputItems(a);
  let seq = 0;
  const ev = (data: Record<string, unknown> & { type: string }) =>
    typedSse({ ...data, sequence_number: seq++ } as { type: string });
  const events = [
    ev({ type: 'response.created', response: responseObject(a, id, created, 'in_progress', []) }),
    ev({ type: 'response.in_progress', response: responseObject(a, id, created, 'in_progress', []) }),
  ];
  items.forEach((item, output_index) => {
    if (item.type === 'reasoning') {
      events.push(ev({ type: 'response.output_item.added', output_index, item: { ...item, summary: [] } }));
    } else if (item.type === 'function_call') {
      events.push(
        ev({
          type: 'response.output_item.added',
          output_index,
          item: { ...item, status: 'in_progress', arguments: '' },
        }),
      );
      for (const delta of jsonPieces(item.arguments as string))
        events.push(ev({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index, delta }));
      events.push(
        ev({
          type: 'response.function_call_arguments.done',
          item_id: item.id,
          output_index,
          arguments: item.arguments,
        }),
      );
    } else {
      const text = (item.content as Array<{ text: string }>)[0].text;
      events.push(
        ev({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', content: [] } }),
      );
      events.push(
        ev({
          type: 'response.content_part.added',
          item_id: item.id,
          output_index,
          content_index: 0,
          part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
        }),
      );
      for (const delta of textPieces(text))
        events.push(
          ev({
            type: 'response.output_text.delta',
            item_id: item.id,
            output_index,
            content_index: 0,
            delta,
            logprobs: [],
          }),
        );
      events.push(
        ev({ type: 'response.output_text.done', item_id: item.id, output_index, content_index: 0, text, logprobs: [] }),
      );
      events.push(
        ev({
          type: 'response.content_part.done',
          item_id: item.id,
          output_index,
          content_index: 0,
          part: { type: 'output_text', annotations: [], logprobs: [], text },
        }),
      );
    }
    events.push(ev({ type: 'response.output_item.done', output_index, item }));
  });
  const status = finalStatus(a);
  events.push(
    ev({
      type: status === 'incomplete' ? 'response.incomplete' : 'response.completed',
      response: responseObject(a, id, created, status, items),
    }),
  );
  return events;
}

/**
 * A streamed response that fails after it began: `response.created`, `response.in_progress`, an `error` event with
 * the provider's code, then `response.failed` carrying the same error (e.g. `insufficient_quota`).
 */
export function responseFailedStream(model: string, code: string, message: string): string[] {
  const a: AnswerSpec = { model };
  const created = a.created ?? now();
  const id = freshId('resp_');
  let seq = 0;
  const ev = (data: Record<string, unknown> & { type: string }) =>
    typedSse({ ...data, sequence_number: seq++ } as { type: string });
  return [
    ev({ type: 'response.created', response: responseObject(a, id, created, 'in_progress', []) }),
    ev({ type: 'response.in_progress', response: responseObject(a, id, created, 'in_progress', []) }),
    // On the wire the event nests the error (`{"type":"error","error":{…}}`), which is what the openai SDK reads.
    ev({ type: 'error', error: { type: code, code, message, param: null } }),
    ev({ type: 'response.failed', response: responseObject(a, id, created, 'failed', [], { code, message }) }),
  ];
}

// --- errors ----------------------------------------------------------------------------------------------------

/** The `type` OpenAI's error envelope gives for a status, as its API reference lists them. */
const ERROR_TYPES: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
  500: { type: 'server_error', code: null },
  503: { type: 'server_error', code: null },
};

/** OpenAI's error envelope: `{"error": {"message", "type", "param", "code"}}`. */
export function openaiError(status: number, message: string, param: string | null = null): Record<string, unknown> {
  const t = ERROR_TYPES[status] ?? { type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null };
  return { error: { message, type: t.type, param, code: t.code } };
}
