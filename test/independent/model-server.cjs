'use strict';
/**
 * A loopback server (127.0.0.1, port 0) speaking OpenAI's Chat Completions wire format — a JSON body, or SSE chunk by
 * chunk ending in `data: [DONE]`, with the response headers the API sends — that answers each call with what the
 * workflow scripted for it (keyed by the `x-indep-call` request header) and makes the call's fault (faults.cjs)
 * server-side: the application, its SDK and its instrumentation see only what a provider, gateway or proxy would
 * send them.
 *
 * Latency: a time to first token with log-normal jitter plus a generation time per output token, both scaled by the
 * set's clock. `max_tokens` is honoured as the API does it (an answer over the limit stops with
 * `finish_reason: "length"` and `completion_tokens` equal to the limit, as in the corpus's `finish_length` records).
 */
const { createServer } = require('node:http');
const { TextDecoder } = require('node:util');

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
/** About four characters a token for English text (OpenAI's tokenizer guide). */
const tokens = (s) => Math.max(1, Math.ceil(String(s ?? '').length / 4));

function promptTokens(body) {
  let n = 0;
  for (const m of body.messages)
    n += 3 + tokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? m.tool_calls ?? ''));
  return n + 9 * (body.tools?.length ?? 0);
}

/** Text whose UTF-8 bytes a proxy read in another single-byte charset and re-encoded as UTF-8. */
function recode(text, as) {
  return new TextDecoder(as).decode(Buffer.from(text, 'utf8'));
}

/** The assistant message, finish reason and output token count, after the API's own limit and the fault. */
function shape(reply, fault, body) {
  let content = reply.text ?? null;
  let toolCalls = reply.toolCalls?.map((t) => ({
    id: t.id,
    type: 'function',
    function: { name: t.name, arguments: t.arguments },
  }));
  let finish = toolCalls ? 'tool_calls' : 'stop';
  let completion;
  const cap = body.max_tokens ?? body.max_completion_tokens;
  if (typeof content === 'string' && cap !== undefined && tokens(content) > cap) {
    content = content.slice(0, cap * 4);
    finish = 'length';
    completion = cap;
  }
  switch (fault?.kind) {
    case 'text':
    case 'replay':
      content = fault.text;
      toolCalls = undefined;
      finish = 'stop';
      break;
    case 'filtered':
      content = null;
      toolCalls = undefined;
      finish = 'content_filter';
      completion = 0;
      break;
    case 'length':
      content = content.slice(0, Math.max(1, Math.round(content.length * fault.at)));
      finish = 'length';
      break;
    case 'args':
      toolCalls[0].function.arguments = fault.text;
      break;
    case 'recode':
      if (typeof content === 'string') content = recode(content, fault.as);
      for (const t of toolCalls ?? []) t.function.arguments = recode(t.function.arguments, fault.as);
      break;
    default:
  }
  if (completion === undefined)
    completion =
      (content ? tokens(content) : 0) + (toolCalls ?? []).reduce((a, t) => a + 5 + tokens(t.function.arguments), 0);
  const message = { role: 'assistant', content, refusal: null };
  if (toolCalls) message.tool_calls = toolCalls;
  return { message, finish, completion };
}

/**
 * @param {{ scale: number, jitter: () => number, idOf: (key: string) => string }} opts
 */
async function startModelServer(opts) {
  const scripts = new Map();
  const open = new Set();
  const ttft = () => 350 * opts.scale * opts.jitter();
  const perToken = 9 * opts.scale;
  const server = createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      handle(req, res, raw).catch((err) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: { message: `loopback model: ${err && err.message}`, type: 'server_error', param: null, code: null },
          }),
        );
      });
    });
  });

  async function handle(req, res, raw) {
    const key = String(req.headers['x-indep-call'] ?? '');
    const script = scripts.get(key);
    if (!script) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: {
            message: `no answer scripted for call ${key}`,
            type: 'invalid_request_error',
            param: null,
            code: null,
          },
        }),
      );
      return;
    }
    script.attempts++;
    const body = JSON.parse(raw);
    const fault = script.fault;
    const common = {
      'x-request-id': `req_${opts.idOf(`${key}#${script.attempts}`)}`,
      'openai-processing-ms': String(Math.round(ttft())),
      'openai-version': '2020-10-01',
    };
    if (script.transient && script.attempts === 1) {
      // A 429 the SDK's own retry gets past (the run succeeds): OpenAI's documented body and headers.
      const { WORDINGS, envelope, rateHeaders } = require('./faults.cjs');
      await sleep(ttft() * 0.3);
      res.writeHead(429, { 'content-type': 'application/json', ...common, ...rateHeaders(opts.scale, 0.4) });
      res.end(envelope(WORDINGS[opts.variant].rateLimit));
      return;
    }
    if (fault?.kind === 'http') {
      await sleep(ttft() * 0.5);
      res.writeHead(fault.status, { 'content-type': fault.contentType, ...common, ...(fault.headers ?? {}) });
      res.end(fault.body);
      return;
    }
    if (fault?.kind === 'hold') {
      await new Promise((r) => res.on('close', r)); // until the client's own timeout aborts the request
      return;
    }
    const { message, finish, completion } = shape(script.reply, fault, body);
    const id = `chatcmpl-${opts.idOf(fault?.kind === 'replay' && fault.sameId ? fault.sameId : `${key}#id`)}`;
    const created = Math.floor(Date.now() / 1000);
    const model = `${body.model}-2024-07-18`;
    const prompt = promptTokens(body);
    const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
    const first = ttft();
    const generation = perToken * completion * opts.jitter();
    const stall = fault?.kind === 'stall' ? fault.ms : 0;
    if (!body.stream) {
      await sleep(first + generation + stall);
      res.writeHead(200, { 'content-type': 'application/json', ...common });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model,
          choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
          usage,
          service_tier: 'default',
          system_fingerprint: 'fp_5d2c1b0a9e',
        }),
      );
      return;
    }
    const chunk = (delta, finishReason) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_5d2c1b0a9e', choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] })}\n\n`;
    let pieces = (message.content ?? '').match(/\S*\s*/g)?.filter((p) => p !== '') ?? [];
    if (fault?.kind === 'twice') pieces = [...pieces, ...pieces];
    const stopAt = fault?.kind === 'reset' ? Math.max(1, Math.floor(pieces.length * fault.at)) : pieces.length;
    await sleep(first + stall);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...common });
    res.write(chunk({ role: 'assistant', content: '', refusal: null }, null));
    const gap = generation / Math.max(1, pieces.length);
    let due = Date.now();
    for (let i = 0; i < stopAt; i++) {
      res.write(chunk({ content: pieces[i] }, null));
      due += gap;
      if (i % 4 === 3) await sleep(due - Date.now());
    }
    if (fault?.kind === 'reset') {
      await sleep(5);
      res.socket.resetAndDestroy(); // TCP RST: no finish reason, no [DONE]
      return;
    }
    res.write(chunk({}, finish));
    if (body.stream_options?.include_usage)
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
      );
    res.end('data: [DONE]\n\n');
  }

  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    /** What call `key` answers, its fault (if any), and whether its first attempt meets a 429 the SDK retries. */
    script(key, reply, fault, transient = false) {
      scripts.set(key, { reply, fault, transient, attempts: 0 });
    },
    close() {
      for (const res of open) res.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

module.exports = { startModelServer, tokens };
