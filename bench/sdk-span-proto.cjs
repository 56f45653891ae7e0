// Bench-only prototype (issue 30): faultline's chat span made at the SDK level instead of the HTTP level — the span
// started around `Chat.Completions.prototype.create` and finished from the SDK's own parsed answer or stream chunks, as
// @opentelemetry/instrumentation-openai hooks, with the attributes faultline's span layer records on the same call
// (request summary, response summary, usage, the content-free verdicts, the content hash, the two GenAI metrics). It is
// a measurement of the design, not a product path: no fault step, no guards, no trace context on the request, no
// node:http or other SDKs, no byte-level facts (body bytes, content type). `bench/inprocess.bench.mjs` runs it as the
// mode `sdk-span` beside `register` and `otel-openai`, switched batch by batch in one process.
'use strict';
const { join } = require('node:path');

// PROTO_LEAN=1 leaves out the content hash and the content-free verdicts, to see what they cost.
const LEAN = process.env.PROTO_LEAN === '1';

/** Patch the OpenAI class's chat completions once; `enable()` / `disable()` switch the span on and off. */
function sdkSpanPrototype(OpenAI, api, dist) {
  const { answerVerdicts } = require(join(dist, 'instrumentation', 'providers', 'verdicts'));
  const { GenAiMetrics } = require(join(dist, 'instrumentation', 'metrics'));
  const { sha256Hex16 } = require(join(dist, 'src', 'hash'));
  const { openAiMessageCount } = require(join(dist, 'instrumentation', 'providers', 'content'));
  const tracer = api.trace.getTracer('faultline');
  const metrics = new GenAiMetrics();
  const proto = OpenAI.Chat.Completions.prototype;
  const original = proto.create;
  let on = false;
  const servers = new Map(); // baseURL → { url, port, provider }

  function server(baseURL) {
    let s = servers.get(baseURL);
    if (!s) {
      const url = new URL(baseURL);
      const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
      const provider = url.hostname === 'api.openai.com' ? 'openai' : 'openai_compatible';
      servers.set(baseURL, (s = { url, port, provider }));
    }
    return s;
  }

  function requestAttributes(params, s) {
    const a = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': s.provider,
      'server.address': s.url.hostname,
      'server.port': s.port,
      'faultline.request.retry_count': 0,
      'faultline.request.message_count': openAiMessageCount(params.messages),
      'gen_ai.request.model': params.model,
    };
    if (params.stream) a['gen_ai.request.stream'] = true;
    if (Array.isArray(params.tools)) a['faultline.request.tool_names'] = params.tools.map((t) => t.function?.name);
    return a;
  }

  function declared(params) {
    const tools = Array.isArray(params.tools)
      ? params.tools.map((t) => ({ name: t.function?.name, parameters: t.function?.parameters }))
      : undefined;
    const responseSchema =
      params.response_format?.type === 'json_schema' ? params.response_format.json_schema?.schema : undefined;
    return { tools, responseSchema };
  }

  function finish(span, s, params, t0, r) {
    const a = {
      'http.response.status_code': 200,
      'gen_ai.response.id': r.id,
      'gen_ai.response.model': r.model,
      'gen_ai.response.finish_reasons': r.finish,
      'faultline.response.created': r.created,
    };
    const u = r.usage;
    if (u) {
      a['gen_ai.usage.input_tokens'] = u.prompt_tokens;
      a['gen_ai.usage.output_tokens'] = u.completion_tokens;
      a['gen_ai.usage.cache_read.input_tokens'] = u.prompt_tokens_details?.cached_tokens ?? 0;
      a['gen_ai.usage.reasoning.output_tokens'] = u.completion_tokens_details?.reasoning_tokens ?? 0;
    }
    a['faultline.response.output_chars'] = r.text.length;
    a['faultline.response.tool_call_count'] = r.toolCalls.length;
    if (!LEAN)
      a['faultline.response.content_hash'] = sha256Hex16(r.text + r.toolCalls.map((t) => t.arguments).join(''));
    if (r.chunks !== undefined) {
      a['faultline.response.chunk_count'] = r.chunks;
      a['faultline.response.done'] = true;
      a['gen_ai.response.time_to_first_chunk'] = r.ttfc;
    }
    if (!LEAN) Object.assign(a, answerVerdicts(r.text, r.toolCalls, declared(params)));
    span.setAttributes(a);
    const durationMs = performance.now() - t0;
    metrics.record(
      s.url,
      s.port,
      { operation: 'chat', provider: s.provider, model: params.model },
      {
        model: r.model,
        durationMs,
        usage: u ? { inputTokens: u.prompt_tokens, outputTokens: u.completion_tokens } : undefined,
      },
    );
    span.end();
  }

  function fail(span, err) {
    span.recordException(err);
    span.setStatus({ code: api.SpanStatusCode.ERROR });
    span.setAttribute('error.type', err?.constructor?.name ?? 'Error');
    span.end();
  }

  async function* observe(iterator, span, s, params, t0) {
    const r = {
      id: undefined,
      model: undefined,
      created: undefined,
      finish: [],
      usage: undefined,
      text: '',
      toolCalls: [],
      chunks: 0,
      ttfc: 0,
    };
    try {
      for await (const chunk of iterator) {
        if (r.chunks++ === 0) r.ttfc = (performance.now() - t0) / 1000;
        r.id ??= chunk.id;
        r.model ??= chunk.model;
        r.created ??= chunk.created;
        if (chunk.usage) r.usage = chunk.usage;
        const c = chunk.choices?.[0];
        if (c) {
          if (c.finish_reason) r.finish.push(c.finish_reason);
          const d = c.delta;
          if (d?.content) r.text += d.content;
          if (d?.tool_calls)
            for (const tc of d.tool_calls) {
              const t = (r.toolCalls[tc.index] ??= { name: '', arguments: '' });
              if (tc.function?.name) t.name += tc.function.name;
              if (tc.function?.arguments) t.arguments += tc.function.arguments;
            }
        }
        yield chunk;
      }
      finish(span, s, params, t0, r);
    } catch (err) {
      fail(span, err);
      throw err;
    }
  }

  proto.create = function create(params, options) {
    if (!on) return original.call(this, params, options);
    let span, s, t0;
    try {
      s = server(this._client.baseURL);
      t0 = performance.now();
      span = tracer.startSpan(`chat ${params.model}`, {
        kind: api.SpanKind.CLIENT,
        attributes: requestAttributes(params, s),
      });
    } catch {
      return original.call(this, params, options);
    }
    const p = original.call(this, params, options);
    if (params.stream) {
      p.then(
        (stream) => {
          const iter = stream.iterator.bind(stream);
          stream.iterator = () => observe(iter(), span, s, params, t0);
        },
        (err) => fail(span, err),
      );
      return p;
    }
    p.then(
      (res) => {
        const c = res.choices?.[0];
        const toolCalls = (c?.message?.tool_calls ?? []).map((t) => ({
          name: t.function?.name ?? '',
          arguments: t.function?.arguments ?? '',
        }));
        finish(span, s, params, t0, {
          id: res.id,
          model: res.model,
          created: res.created,
          finish: (res.choices ?? []).map((x) => x.finish_reason).filter(Boolean),
          usage: res.usage,
          text: c?.message?.content ?? '',
          toolCalls,
        });
      },
      (err) => fail(span, err),
    );
    return p;
  };
  return {
    enable: () => void (on = true),
    disable: () => void (on = false),
  };
}
module.exports = { sdkSpanPrototype };
