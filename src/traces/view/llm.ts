/**
 * One LLM call span → LlmCall, whichever producer wrote it. Precedence, per fact: latest GenAI semconv, then the
 * older GenAI names (`gen_ai.system`, `gen_ai.prompt.N`, `gen_ai.completion.N`, prompt/completion tokens), then
 * OpenInference (`llm.*`, `input.value` / `output.value`), then content carried by span events or joined log records;
 * faultline's own `faultline.response.*` facts fill in what content capture would have said, when present.
 */
import {
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
} from '../../../instrumentation/semconv';
import type { UsageSummary } from '../../../instrumentation/types';
import { str, type AttrValue, type Attributes, type SpanRecord } from '../model';
import {
  eventContent,
  indexedMessages,
  isObj,
  messagesValue,
  messageText,
  openInferenceMessages,
  parseJson,
  systemText,
  toolCallsOf,
  toolDefinitions,
  type GenAiMessage,
} from './content';
import { num, spanFailure } from './failure';
import type { Convention, FaultlineFacts, LlmCall } from './types';

export { looksLikeTimeout, num, spanFailure } from './failure';

function bool(a: Attributes, key: string): boolean | undefined {
  const v = a[key];
  if (v === true || v === 'true') return true;
  if (v === false || v === 'false') return false;
  return undefined;
}

/** A list attribute: an array, a JSON-array string (as some exporters flatten a list), or a single value. */
function list(v: AttrValue | undefined): string[] | undefined {
  if (v === undefined) return undefined;
  if (Array.isArray(v)) return v.map(String);
  if (typeof v === 'string' && v.startsWith('[')) {
    const parsed = parseJson(v);
    if (Array.isArray(parsed)) return parsed.filter((x) => x !== null && x !== undefined).map(String);
  }
  return [String(v)];
}

/** faultline's own facts: which attribute each is read from, and how. */
const FACT_READERS: readonly (readonly [keyof FaultlineFacts, (a: Attributes) => unknown])[] = [
  ['outputChars', (a) => num(a, 'faultline.response.output_chars')],
  ['toolCallCount', (a) => num(a, 'faultline.response.tool_call_count')],
  ['contentHash', (a) => str(a, 'faultline.response.content_hash')],
  ['bodyBytes', (a) => num(a, 'faultline.response.body_bytes')],
  ['contentType', (a) => str(a, 'faultline.response.content_type')],
  ['created', (a) => num(a, 'faultline.response.created')],
  ['chunks', (a) => num(a, 'faultline.response.chunk_count')],
  ['done', (a) => bool(a, 'faultline.response.done')],
  ['aborted', (a) => bool(a, 'faultline.response.aborted')],
  ['malformedEvents', (a) => num(a, 'faultline.response.malformed_events')],
  ['retryCount', (a) => num(a, 'faultline.request.retry_count')],
  ['messageCount', (a) => num(a, 'faultline.request.message_count')],
  ['argumentsParse', (a) => list(a['faultline.tool_call.arguments_parse'])],
  ['toolSchema', (a) => list(a['faultline.tool_call.schema'])],
  ['toolSchemaIssue', (a) => list(a['faultline.tool_call.schema_issue'])],
  ['garbled', (a) => list(a['faultline.response.garbled'])],
  ['blank', (a) => bool(a, 'faultline.response.blank')],
  ['responseSchema', (a) => str(a, 'faultline.response.schema')],
  ['responseSchemaIssue', (a) => str(a, 'faultline.response.schema_issue')],
];

/** Every attribute FACT_READERS reads starts so. */
const FACTS_PREFIX = 'faultline.';

/**
 * The facts present, or undefined. Most producers' spans have none: one pass over the span's keys for the prefix
 * costs less than asking for each of the facts, and the object is made only for a span that has one.
 */
function faultlineFacts(a: Attributes): FaultlineFacts | undefined {
  let any = false;
  for (const k in a) {
    if (k.startsWith(FACTS_PREFIX)) {
      any = true;
      break;
    }
  }
  if (!any) return undefined;
  let f: Record<string, unknown> | undefined;
  for (const [key, read] of FACT_READERS) {
    const v = read(a);
    if (v !== undefined) (f ??= {})[key] = v;
  }
  return f as FaultlineFacts | undefined;
}

/** Each usage count under its names, latest GenAI semconv first. */
const INPUT_TOKENS = [
  'gen_ai.usage.input_tokens',
  'gen_ai.usage.prompt_tokens',
  'llm.usage.prompt_tokens',
  'llm.token_count.prompt',
];
const OUTPUT_TOKENS = [
  'gen_ai.usage.output_tokens',
  'gen_ai.usage.completion_tokens',
  'llm.usage.completion_tokens',
  'llm.token_count.completion',
];
const CACHE_READ_TOKENS = [
  'gen_ai.usage.cache_read.input_tokens',
  'gen_ai.usage.cache_read_input_tokens',
  'llm.token_count.prompt_details.cache_read',
];
const REASONING_TOKENS = [
  'gen_ai.usage.reasoning.output_tokens',
  'gen_ai.usage.reasoning_tokens',
  'llm.token_count.completion_details.reasoning',
];

/** The first of `keys` that holds a finite number. */
function firstNum(a: Attributes, keys: readonly string[]): number | undefined {
  for (const k of keys) {
    const v = num(a, k);
    if (v !== undefined) return v;
  }
  return undefined;
}

function usageOf(a: Attributes, oiOutput: Record<string, unknown> | undefined): UsageSummary {
  const u: UsageSummary = {};
  const usage = oiOutput && isObj(oiOutput.usage) ? oiOutput.usage : undefined;
  const input =
    firstNum(a, INPUT_TOKENS) ?? (typeof usage?.prompt_tokens === 'number' ? usage.prompt_tokens : undefined);
  const output =
    firstNum(a, OUTPUT_TOKENS) ?? (typeof usage?.completion_tokens === 'number' ? usage.completion_tokens : undefined);
  const cache = firstNum(a, CACHE_READ_TOKENS);
  const reasoning = firstNum(a, REASONING_TOKENS);
  if (input !== undefined) u.inputTokens = input;
  if (output !== undefined) u.outputTokens = output;
  if (cache !== undefined) u.cacheReadInputTokens = cache;
  if (reasoning !== undefined) u.reasoningOutputTokens = reasoning;
  return u;
}

function conventionOf(a: Attributes): Convention {
  if (a['faultline.response.output_chars'] !== undefined || a['faultline.response.body_bytes'] !== undefined)
    return 'faultline';
  if (a['openinference.span.kind'] !== undefined) return 'openinference';
  if (
    a['llm.request.type'] !== undefined ||
    a['gen_ai.prompt.0.role'] !== undefined ||
    a['gen_ai.completion.0.role'] !== undefined
  )
    return 'openllmetry';
  return 'genai';
}

/** A JSON object attribute (OpenInference's input.value / output.value / invocation parameters), parsed when small. */
function jsonObject(a: Attributes, key: string): Record<string, unknown> | undefined {
  const v = a[key];
  if (typeof v !== 'string' || v.length > 4_000_000 || !v.trimStart().startsWith('{')) return undefined;
  const parsed = parseJson(v);
  return isObj(parsed) ? parsed : undefined;
}

function splitSystem(msgs: GenAiMessage[] | undefined): { input?: GenAiMessage[]; system?: string } {
  if (!msgs) return {};
  const sys = msgs.filter((m) => m.role === 'system' || m.role === 'developer');
  const out: { input?: GenAiMessage[]; system?: string } = {
    input: msgs.filter((m) => m.role !== 'system' && m.role !== 'developer'),
  };
  if (sys.length > 0) out.system = sys.map(messageText).join('\n');
  return out;
}

/** Read one LLM call span (its step and agent are filled in by viewTrace). */
export function readLlmCall(span: SpanRecord, operation: string, step: number): LlmCall {
  const a = span.attributes;
  const oiIn = a['input.value'] !== undefined ? jsonObject(a, 'input.value') : undefined;
  const oiParams =
    a['llm.invocation_parameters'] !== undefined ? jsonObject(a, 'llm.invocation_parameters') : undefined;
  const oiOut =
    str(a, 'output.mime_type') === 'application/json' ||
    (a['output.value'] !== undefined && a['openinference.span.kind'] !== undefined)
      ? jsonObject(a, 'output.value')
      : undefined;
  const events = eventContent(span.events);

  // Input.
  const inputAll =
    messagesValue(a[ATTR_GEN_AI_INPUT_MESSAGES]) ??
    indexedMessages(a, 'gen_ai.prompt', 'user') ??
    openInferenceMessages(a, 'llm.input_messages', 'user') ??
    events?.input;
  const { input, system: inlineSystem } = splitSystem(inputAll);
  const system = systemText(a[ATTR_GEN_AI_SYSTEM_INSTRUCTIONS]) ?? inlineSystem ?? events?.system;

  // Output: the first source that has it.
  let output =
    messagesValue(a[ATTR_GEN_AI_OUTPUT_MESSAGES], 'assistant') ??
    indexedMessages(a, 'gen_ai.completion', 'assistant') ??
    openInferenceMessages(a, 'llm.output_messages', 'assistant');
  let hasContent = output !== undefined;
  if (!output && events?.output) {
    output = events.output;
    hasContent = events.captured;
  }
  if (!output && oiOut && Array.isArray(oiOut.choices)) {
    output = oiOut.choices
      .map((c) =>
        isObj(c) ? { ...(isObj(c.message) ? c.message : {}), role: 'assistant', finish_reason: c.finish_reason } : {},
      )
      .map((m) => messagesValue([m], 'assistant')?.[0] ?? { role: 'assistant', parts: [] });
    hasContent = true;
  }
  const first = output?.[0];
  const text = first ? messageText(first) : '';
  const toolCalls = first ? toolCallsOf([first]) : [];
  const fl = faultlineFacts(a);

  // Finish reasons.
  const listed = list(a[ATTR_GEN_AI_RESPONSE_FINISH_REASONS] ?? a['gen_ai.response.finish_reason']);
  let finishReasons = (listed ?? []).filter((f) => f !== '' && f !== 'null');
  let finishReasonsRecorded = listed !== undefined;
  if (finishReasons.length === 0) {
    // Elsewhere: a single llm.* attribute some producers write, the output messages, the raw response (output.value).
    const single = str(a, 'llm.finish_reason') ?? str(a, 'llm.stop_reason');
    const fromOutput = (output ?? [])
      .map((m) => m.finish_reason)
      .filter((f): f is string => typeof f === 'string' && f !== '');
    const fromRaw = rawFinishReasons(a, oiOut);
    if (single) finishReasons = [single];
    else if (fromOutput.length > 0) finishReasons = fromOutput;
    else if (fromRaw.length > 0) finishReasons = fromRaw;
    if (finishReasons.length > 0) finishReasonsRecorded = true;
  }

  const call: LlmCall = {
    kind: 'llm',
    span,
    step,
    operation,
    convention: conventionOf(a),
    hasContent,
    text,
    toolCalls,
    tools: toolDefinitions(a, oiIn),
    finishReasons,
    finishReasonsRecorded,
    usage: usageOf(a, oiOut),
    durationMs: Math.max(0, span.end - span.start),
  };
  const provider =
    str(a, 'gen_ai.provider.name') ?? str(a, 'gen_ai.system') ?? str(a, 'llm.provider') ?? str(a, 'llm.system');
  if (provider !== undefined) call.provider = provider.toLowerCase();
  const reqModel =
    str(a, 'gen_ai.request.model') ??
    (typeof oiIn?.model === 'string' ? oiIn.model : undefined) ??
    (typeof oiParams?.model === 'string' ? oiParams.model : undefined);
  const resModel =
    str(a, 'gen_ai.response.model') ??
    (typeof oiOut?.model === 'string' ? oiOut.model : undefined) ??
    str(a, 'llm.model_name');
  if (reqModel !== undefined) call.requestModel = reqModel;
  if (resModel !== undefined) call.responseModel = resModel;
  const stream =
    bool(a, 'gen_ai.request.stream') ??
    bool(a, 'llm.is_streaming') ??
    (oiParams?.stream === true || oiIn?.stream === true
      ? true
      : oiIn !== undefined || oiParams !== undefined
        ? false
        : undefined) ??
    (fl?.chunks !== undefined ? true : undefined);
  if (stream !== undefined) call.stream = stream;
  const maxTokens =
    num(a, 'gen_ai.request.max_tokens') ??
    num(a, 'llm.request.max_tokens') ??
    pickNumber(oiParams ?? oiIn, 'max_tokens', 'max_completion_tokens');
  if (maxTokens !== undefined) call.maxTokens = maxTokens;
  const temperature =
    num(a, 'gen_ai.request.temperature') ??
    num(a, 'llm.request.temperature') ??
    pickNumber(oiParams ?? oiIn, 'temperature');
  if (temperature !== undefined) call.temperature = temperature;
  const responseSchema = jsonSchemaFormat(oiParams) ?? jsonSchemaFormat(oiIn);
  if (responseSchema !== undefined) call.responseSchema = responseSchema;
  if (input !== undefined) call.input = input;
  if (system !== undefined && system !== '') call.system = system;
  if (output !== undefined) call.output = output;
  if (hasContent) {
    call.outputChars = fl?.outputChars ?? text.trim().length;
    call.toolCallCount = fl?.toolCallCount ?? toolCalls.length;
  } else {
    if (fl?.outputChars !== undefined) call.outputChars = fl.outputChars;
    if (fl?.toolCallCount !== undefined) call.toolCallCount = fl.toolCallCount;
    else if (toolCalls.length > 0) call.toolCallCount = toolCalls.length;
  }
  const responseId = str(a, 'gen_ai.response.id') ?? (typeof oiOut?.id === 'string' ? oiOut.id : undefined);
  if (responseId !== undefined) call.responseId = responseId;
  const created = fl?.created ?? (typeof oiOut?.created === 'number' ? oiOut.created : undefined);
  if (created !== undefined) call.created = created;
  const ttfc = num(a, 'gen_ai.response.time_to_first_chunk');
  if (ttfc !== undefined) call.timeToFirstChunkMs = ttfc * 1000;
  const failure = spanFailure(span);
  if (failure) call.failure = failure;
  if (fl) call.faultline = fl;
  return call;
}

/** Finish reasons in a raw response kept as output.value: OpenAI `choices[].finish_reason`, or semconv messages. */
function rawFinishReasons(a: Attributes, parsed: Record<string, unknown> | undefined): string[] {
  if (parsed && Array.isArray(parsed.choices)) {
    return parsed.choices
      .map((c) => (isObj(c) && typeof c.finish_reason === 'string' ? c.finish_reason : ''))
      .filter((f) => f !== '');
  }
  const v = a['output.value'];
  if (typeof v !== 'string' || !v.trimStart().startsWith('[') || v.length > 4_000_000) return [];
  return (messagesValue(v, 'assistant') ?? []).map((m) => m.finish_reason ?? '').filter((f) => f !== '');
}

/** The schema of a request's `response_format: {type: 'json_schema', json_schema: {schema}}` (OpenAI's structured outputs). */
function jsonSchemaFormat(o: Record<string, unknown> | undefined): unknown {
  const rf = o?.response_format;
  if (!isObj(rf) || rf.type !== 'json_schema' || !isObj(rf.json_schema)) return undefined;
  return isObj(rf.json_schema.schema) ? rf.json_schema.schema : undefined;
}

function pickNumber(o: Record<string, unknown> | undefined, ...keys: string[]): number | undefined {
  if (!o) return undefined;
  for (const k of keys) if (typeof o[k] === 'number') return o[k];
  return undefined;
}
