'use strict';
/**
 * A loopback OpenAI-compatible chat completions server (127.0.0.1, port 0) for the independent evaluation set: a
 * scripted model (each call's intended answer is registered by the workflow under the call's key, sent in the
 * `x-eval-call` request header) that answers in the real wire format (JSON, or SSE event by event), with realistic
 * latency (grows with the output) and with faults made here, server-side — never by faultline's injector:
 * HTTP errors, a response held until the client gives up, in-band error / timeout notices, empty and filtered
 * answers, cuts (finish_reason length, a stream ended early), tool arguments emptied / cut / renamed / garbled /
 * pointing at another entity, dropped tool calls, mojibake, delay, and a stale replay of the task's previous body.
 */
const { createServer } = require('node:http');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function tokensOf(text) {
  return Math.max(1, Math.ceil(String(text ?? '').length / 4));
}

function promptTokens(body) {
  let n = 0;
  for (const m of body.messages ?? []) n += tokensOf(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? m.tool_calls ?? ''));
  return n + 8 * (body.tools?.length ?? 0);
}

/** The assistant message and finish reason a reply amounts to, after the fault (if any). */
function shape(reply, fault) {
  let content = reply.text ?? null;
  let toolCalls = reply.toolCalls ? reply.toolCalls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments } })) : undefined;
  let finish = toolCalls ? 'tool_calls' : 'stop';
  switch (fault?.kind) {
    case 'inband':
      content = fault.content;
      toolCalls = undefined;
      finish = 'stop';
      break;
    case 'empty':
      content = '';
      toolCalls = undefined;
      finish = 'stop';
      break;
    case 'content_filter':
      content = null;
      toolCalls = undefined;
      finish = 'content_filter';
      break;
    case 'truncate':
      content = content.slice(0, Math.max(1, Math.floor(content.length * fault.ratio)));
      finish = 'length';
      break;
    case 'tool_args':
      toolCalls[0].function.arguments = fault.arguments;
      break;
    case 'tool_drop':
      toolCalls = [];
      content = null;
      break;
    case 'mojibake':
      content = Buffer.from(content, 'utf8').toString('latin1');
      break;
    default:
  }
  const message = { role: 'assistant', content };
  if (toolCalls !== undefined) message.tool_calls = toolCalls;
  return { message, finish };
}

/**
 * @param {{ latency: { base: number, perToken: number, jitter: () => number }, idOf: (key: string) => string }} opts
 */
async function startModelServer(opts) {
  const scripts = new Map(); // key -> { reply, fault, attempts }
  const lastBody = new Map(); // task -> previous response (JSON text) for stale replays
  const open = new Set();
  const server = createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      handle(req, res, raw).catch((err) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err && err.message), type: 'server_error' } }));
      });
    });
  });

  async function handle(req, res, raw) {
    const key = String(req.headers['x-eval-call'] ?? '');
    const script = scripts.get(key);
    if (!script) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no script for ${key}`, type: 'invalid_request_error' } }));
      return;
    }
    script.attempts++;
    const task = key.slice(0, key.lastIndexOf(':'));
    const body = JSON.parse(raw);
    const fault = script.fault;
    const transient = script.transient && script.attempts === 1 ? script.transient : undefined;
    const { message, finish } = shape(script.reply, fault);
    let completion = tokensOf(message.content ?? '') + (message.tool_calls?.length ?? 0) * (8 + tokensOf(message.tool_calls?.[0]?.function.arguments));
    // A cut at the token limit: the model spent max_tokens (when the request set it), or what the whole answer cost.
    if (fault?.kind === 'truncate') completion = body.max_tokens ?? body.max_completion_tokens ?? tokensOf(script.reply.text);
    const wait = (opts.latency.base + opts.latency.perToken * completion) * opts.latency.jitter() + (fault?.kind === 'delay' ? fault.ms : 0);
    const requestId = `req_${opts.idOf(`${key}/${script.attempts}/req`)}`;

    if (transient) {
      // A transient 429 the client retries (a clean run: the retry succeeds).
      await sleep(opts.latency.base * 0.3);
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': '20', 'x-request-id': requestId });
      res.end(JSON.stringify({ error: { message: 'Rate limit reached for requests. Please try again in 20ms.', type: 'requests', param: null, code: 'rate_limit_exceeded' } }));
      return;
    }
    if (fault?.kind === 'http_error') {
      await sleep(opts.latency.base * 0.5);
      res.writeHead(fault.status, { 'content-type': 'application/json', 'x-request-id': requestId });
      res.end(JSON.stringify({ error: { message: fault.message, type: 'server_error', param: null, code: null } }));
      return;
    }
    if (fault?.kind === 'hang') {
      await new Promise((r) => res.on('close', r)); // until the client gives up
      return;
    }
    if (fault?.kind === 'stale' && lastBody.has(task)) {
      await sleep(wait);
      const prev = lastBody.get(task);
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': requestId });
      res.end(prev);
      return;
    }

    const id = `chatcmpl-${opts.idOf(`${key}/${script.attempts}`)}`;
    const created = Math.floor(Date.now() / 1000);
    const model = `${body.model}-2024-07-18`;
    const usage = { prompt_tokens: promptTokens(body), completion_tokens: completion, total_tokens: promptTokens(body) + completion };
    if (!body.stream) {
      await sleep(wait);
      const json = JSON.stringify({ id, object: 'chat.completion', created, model, choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage, system_fingerprint: 'fp_eval' });
      lastBody.set(task, json);
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': requestId });
      res.end(json);
      return;
    }
    // SSE, event by event: role, content deltas spread over the generation time, finish, usage (if asked), [DONE].
    const chunk = (delta, finishReason, extra) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_eval', choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...extra })}\n\n`;
    const text = message.content ?? '';
    const pieces = text.match(/\S*\s*/g)?.filter((p) => p !== '') ?? [];
    const ttfb = opts.latency.base * opts.latency.jitter() + (fault?.kind === 'delay' ? fault.ms : 0);
    await sleep(ttfb);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': requestId });
    res.write(chunk({ role: 'assistant', content: '' }, null));
    const cutAt = fault?.kind === 'stream_cut' ? Math.max(1, Math.floor(pieces.length * fault.fraction)) : pieces.length;
    // Paced against the clock (not by chained sleeps, whose lateness would add up on a busy machine).
    const gap = Math.max(0, (wait - ttfb) / Math.max(1, pieces.length));
    const t0 = Date.now();
    for (let i = 0; i < cutAt; i++) {
      res.write(chunk({ content: pieces[i] }, null));
      if (gap >= 1 && i % 4 === 3) await sleep(Math.max(0, t0 + (i + 1) * gap - Date.now()));
    }
    if (fault?.kind === 'stream_cut') {
      res.end(); // the server stops mid-answer: no finish reason, no [DONE]
      return;
    }
    res.write(chunk({}, finish));
    if (body.stream_options?.include_usage) res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`);
    res.end('data: [DONE]\n\n');
  }

  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    /** Register what call `key` answers, the fault to make on it (if any), and a transient 429 to retry (if any). */
    script(key, reply, fault, transient) {
      scripts.set(key, { reply, fault, transient, attempts: 0 });
    },
    close() {
      for (const res of open) res.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

module.exports = { startModelServer, tokensOf };
