'use strict';
/**
 * The fault model of the independent evaluation, written from what providers document and from the errors recorded
 * from them, never from faultline's catalog or rules (test/independent/independence.test.ts fails if a string of 12
 * characters or more, or a number of 100 or more, of this file or of model-server.cjs appears in src/catalog,
 * src/diagnosers or detectors). Sources:
 *
 * - OpenAI's error envelope `{error: {message, type, param, code}}` as recorded in ../shared/corpus/openai-chat.jsonl
 *   (its 400 / 401 / 404 bodies: `invalid_request_error`, `param`, `code`) and as OpenAI's "Error codes" guide lists
 *   the statuses: 429 "Rate limit reached for requests" / "You exceeded your current quota", 500 (the server's and
 *   the model's errors), 503 "Slow Down" / "That model is currently overloaded"; the `retry-after` /
 *   `x-ratelimit-*` headers of the "Rate limits" guide; 400 `context_length_exceeded` (the wording the API returns
 *   for a prompt over the model's window).
 * - Gateways and proxies in front of an OpenAI-compatible API: nginx's 502 / 504 pages, Cloudflare's plain
 *   `error code: 502`, AWS API Gateway's `{"message": "Endpoint request timed out"}`, Envoy's `upstream connect error
 *   … reset reason`; a connection reset mid-stream (no finish reason, no `data: [DONE]`); a response held until the
 *   client's own `timeout` aborts it; a cache that replays an earlier answer under a fresh completion id; a proxy
 *   that decodes UTF-8 bytes as ISO-8859-1 (or windows-1252) and re-encodes them (mojibake); a retrying proxy that
 *   delivers an SSE answer twice in one stream.
 * - Stalls: slow providers' latency is heavy-tailed (published latency dashboards of OpenAI-compatible APIs show
 *   p99 several times p50 and multi-second outliers): drawn log-uniformly over 2–30× the set's median call time.
 * - The provider's own limit: `finish_reason: "length"` with the answer cut where the limit fell (the corpus's
 *   `finish_length` records: content cut mid-sentence, completion_tokens equal to the limit).
 * - `finish_reason: "content_filter"` with `content: null` (OpenAI's chat completion object reference).
 * - Model misbehaviour seen in function calling: arguments that are not JSON (single quotes, a trailing comma, an
 *   unclosed brace), JSON that violates the declared schema (a required property missing, a number sent as text, an
 *   undeclared property), an empty answer; a structured handoff (`response_format: json_schema`) missing a required
 *   field.
 *
 * Every wording and every magnitude exists twice, `WORDINGS.base` and `WORDINGS.reworded` (`--variant reworded`): a
 * diagnoser that scores on one and not the other is fitted to words, not to faults. Labels are faultline's taxonomy
 * names (src/taxonomy.ts), used as vocabulary only.
 */

const WORDINGS = {
  base: {
    rateLimit: {
      status: 429,
      message:
        'Rate limit reached for gpt-4o-mini in organization org-eval on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.',
      type: 'requests',
      code: 'rate_limit_exceeded',
    },
    quota: {
      status: 429,
      message: 'You exceeded your current quota, please check your plan and billing details.',
      type: 'insufficient_quota',
      code: 'insufficient_quota',
    },
    // A 500 OpenAI returns when the model's output could not be parsed (its community-reported `model_error` body).
    server: {
      status: 500,
      message:
        'The model produced invalid content. Consider modifying your prompt if you are seeing this error persistently.',
      type: 'model_error',
      code: null,
    },
    // The error-codes guide's other 503, "Slow Down": a sudden increase of the request rate.
    overloaded: {
      status: 503,
      message:
        'Slow Down: a sudden increase in your request rate is impacting service reliability. Please reduce your request rate to its original level and ramp up gradually.',
      type: 'server_error',
      code: 'slow_down',
    },
    context: {
      status: 400,
      message:
        "This model's maximum context length is 16385 tokens. However, your messages resulted in 17021 tokens. Please reduce the length of the messages.",
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
    gateway502: {
      contentType: 'text/html',
      body: '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n',
    },
    gateway504: {
      contentType: 'text/html',
      body: '<html>\r\n<head><title>504 Gateway Time-out</title></head>\r\n<body>\r\n<center><h1>504 Gateway Time-out</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n',
    },
    // Log-uniform stalls over [lo, hi] × the set's median call time.
    stall: [2, 12],
    cutAt: [0.2, 0.55],
    decode: 'latin1',
    replayId: 'fresh',
    replaySource: 'previous',
    emptyText: '',
    badJson: (args) => args.replace(/"/g, "'"), // a Python-style dict
    asText: (n) => String(n),
    extra: { note: 'customer asked twice' },
    dropRequired: 'first',
  },
  reworded: {
    rateLimit: {
      status: 429,
      message:
        'Rate limit reached for gpt-4o-mini in organization org-eval on tokens per min (TPM): Limit 60000, Used 59870, Requested 1432. Please try again in 1.3s. Visit https://platform.openai.com/account/rate-limits to learn more.',
      type: 'tokens',
      code: 'rate_limit_exceeded',
    },
    quota: {
      status: 429,
      message:
        'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
      type: 'insufficient_quota',
      code: 'insufficient_quota',
    },
    server: {
      status: 500,
      message:
        'The server had an error processing your request. Sorry about that! You can retry your request, or contact us through our help center at help.openai.com if you keep seeing this error.',
      type: 'server_error',
      code: null,
    },
    overloaded: {
      status: 503,
      message:
        'That model is currently overloaded with other requests. You can retry your request, or contact us through our help center if the error persists.',
      type: 'server_error',
      code: null,
    },
    context: {
      status: 400,
      message:
        "This model's maximum context length is 8192 tokens, however you requested 9310 tokens (8810 in your prompt; 500 for the completion). Please reduce your prompt; or completion length.",
      type: 'invalid_request_error',
      param: null,
      code: 'context_length_exceeded',
    },
    gateway502: { contentType: 'text/plain; charset=UTF-8', body: 'error code: 502' },
    gateway504: { contentType: 'application/json', body: '{"message": "Endpoint request timed out"}' },
    stall: [3, 20],
    cutAt: [0.45, 0.8],
    decode: 'windows-1252',
    replayId: 'same',
    replaySource: 'first',
    emptyText: '\n',
    badJson: (args) => args.replace(/}$/, ',}'), // a trailing comma
    asText: (n) => `${n} units`,
    extra: { priority: 'rush' },
    dropRequired: 'last',
  },
};

const nonAscii = (s) => [...s].some((ch) => ch.codePointAt(0) > 0x7f);
const isText = (call) => typeof call.reply.text === 'string' && call.reply.text.length > 0;
const isTool = (call) => Array.isArray(call.reply.toolCalls) && call.reply.toolCalls.length > 0;
const schemaOf = (call) =>
  call.body.tools?.find((t) => t.function.name === call.reply.toolCalls[0].name)?.function.parameters;
const between = (r, [lo, hi]) => lo + r() * (hi - lo);
const logBetween = (r, [lo, hi]) => Math.exp(Math.log(lo) + r() * (Math.log(hi) - Math.log(lo)));
const envelope = (e) =>
  JSON.stringify({ error: { message: e.message, type: e.type, param: e.param ?? null, code: e.code } });

/** The rate-limit headers of OpenAI's "Rate limits" guide; `retry-after-ms` scaled to the set's clock. */
function rateHeaders(scale, seconds) {
  return {
    'x-ratelimit-limit-requests': '3',
    'x-ratelimit-remaining-requests': '0',
    'x-ratelimit-reset-requests': `${seconds}s`,
    'retry-after': String(Math.ceil(seconds * scale)),
    'retry-after-ms': String(Math.round(seconds * 1000 * scale)),
  };
}

const httpError = (e, headers = {}) => ({
  kind: 'http',
  status: e.status,
  body: envelope(e),
  contentType: 'application/json',
  headers,
});

/** Schema drift of one tool call's arguments, the ways models get function calling wrong. */
function drift(kind, w, r, args, schema) {
  const props = schema?.properties ?? {};
  const out = { ...args };
  if (kind === 'wrong_type') {
    const nums = Object.keys(out).filter((k) => ['number', 'integer'].includes(props[k]?.type));
    if (nums.length === 0) return undefined;
    const k = nums[Math.floor(r() * nums.length)];
    out[k] = w.asText(out[k]);
    return out;
  }
  if (kind === 'missing_required') {
    const present = (schema?.required ?? []).filter((k) => k in out);
    if (present.length === 0) return undefined;
    delete out[w.dropRequired === 'first' ? present[0] : present[present.length - 1]];
    return out;
  }
  if (schema?.additionalProperties !== false) return undefined;
  return { ...out, ...w.extra };
}

/**
 * The faults. `on(call)`: the call is one the fault can happen on. `make(w, r, call, ctx)`: what the server does
 * (model-server.cjs), or undefined when it cannot on this call. `type`: the label a human would give it. `content`:
 * the fault is only in message content (text or tool arguments) — with content capture off the producers here record
 * nothing of it unless the app's own spans show a consequence; `finish`: the fault shows in the finish reason (see
 * `observable` in generate.cjs).
 */
const FAULTS = [
  {
    name: 'rate_limited',
    type: 'error',
    on: () => true,
    make: (w, _r, _c, ctx) => httpError(w.rateLimit, rateHeaders(ctx.scale, 2)),
  },
  { name: 'quota_exhausted', type: 'error', on: () => true, make: (w) => httpError(w.quota) },
  { name: 'server_500', type: 'error', on: () => true, make: (w) => httpError(w.server) },
  { name: 'overloaded_503', type: 'error', on: () => true, make: (w) => httpError(w.overloaded) },
  { name: 'prompt_over_window', type: 'error', on: () => true, make: (w) => httpError(w.context) },
  { name: 'gateway_502', type: 'error', on: () => true, make: (w) => ({ kind: 'http', status: 502, ...w.gateway502 }) },
  {
    name: 'gateway_504',
    type: 'timeout',
    on: () => true,
    make: (w) => ({ kind: 'http', status: 504, ...w.gateway504 }),
  },
  { name: 'client_gave_up', type: 'timeout', on: () => true, make: () => ({ kind: 'hold' }) },
  {
    name: 'stall',
    type: 'delay',
    on: () => true,
    make: (w, r, _c, ctx) => ({ kind: 'stall', ms: Math.round(logBetween(r, w.stall) * ctx.medianMs) }),
  },
  {
    name: 'reset_mid_stream',
    type: 'truncate',
    on: (c) => c.body.stream === true && isText(c) && c.reply.text.length >= 60,
    make: (w, r) => ({ kind: 'reset', at: between(r, w.cutAt) }),
  },
  {
    name: 'provider_length',
    type: 'truncate',
    finish: true,
    on: (c) => isText(c) && c.reply.text.length >= 60 && c.body.max_tokens === undefined,
    make: (w, r) => ({ kind: 'length', at: between(r, w.cutAt) }),
  },
  {
    name: 'content_filter',
    type: 'empty',
    finish: true,
    on: (c) => c.body.stream !== true,
    make: () => ({ kind: 'filtered' }),
  },
  {
    name: 'empty_answer',
    type: 'empty',
    content: true,
    on: (c) => isText(c) && c.body.stream !== true,
    make: (w) => ({ kind: 'text', text: w.emptyText }),
  },
  {
    name: 'cached_replay',
    type: 'stale',
    content: true,
    on: (c) => isText(c) && c.k >= 2,
    make: (w, _r, _c, ctx) => {
      const earlier = w.replaySource === 'first' ? ctx.answers[0] : ctx.answers[ctx.answers.length - 1];
      return earlier && earlier.text !== ctx.reply.text
        ? { kind: 'replay', text: earlier.text, sameId: w.replayId === 'same' ? earlier.key : undefined }
        : undefined;
    },
  },
  {
    name: 'double_delivery',
    type: 'duplicate',
    content: true,
    on: (c) => c.body.stream === true && isText(c),
    make: () => ({ kind: 'twice' }),
  },
  {
    name: 'mojibake',
    type: 'corrupt',
    content: true,
    on: (c) => (isText(c) && nonAscii(c.reply.text)) || (isTool(c) && nonAscii(c.reply.toolCalls[0].arguments)),
    make: (w) => ({ kind: 'recode', as: w.decode }),
  },
  {
    name: 'args_not_json',
    type: 'schema',
    content: true,
    on: isTool,
    make: (w, _r, c) => ({ kind: 'args', text: w.badJson(c.reply.toolCalls[0].arguments) }),
  },
  ...['missing_required', 'wrong_type', 'extra_property'].map((kind) => ({
    name: `args_${kind}`,
    type: 'schema',
    content: true,
    on: (c) => isTool(c) && schemaOf(c) !== undefined,
    make: (w, r, c) => {
      const args = drift(kind, w, r, JSON.parse(c.reply.toolCalls[0].arguments), schemaOf(c));
      return args && { kind: 'args', text: JSON.stringify(args) };
    },
  })),
  {
    // The triage agent's structured handoff (response_format json_schema) arrives without one of its required fields.
    name: 'handoff_missing_field',
    type: 'schema',
    content: true,
    on: (c) => c.body.response_format?.type === 'json_schema' && isText(c),
    make: (w, _r, c) => {
      const schema = c.body.response_format.json_schema.schema;
      const doc = JSON.parse(c.reply.text);
      const present = schema.required.filter((k) => k in doc);
      delete doc[w.dropRequired === 'first' ? present[0] : present[present.length - 1]];
      return { kind: 'text', text: JSON.stringify(doc) };
    },
  },
];

/** Clean runs that look like faults and are not (issue 27, item 5), one kind per clean task; `plain` is ordinary. */
const NEAR_MISSES = [
  'plain',
  'plain',
  'own_max_tokens',
  'prefix_argument',
  'repeated_poll',
  'retry_recovered',
  'tool_retried',
];

module.exports = { FAULTS, WORDINGS, NEAR_MISSES, rateHeaders, envelope };
