// Bench-only: the least any HTTP-level GenAI instrumentation must do per chat call, with no span and no OTel at all.
// A layer on the global dispatcher of Node's fetch that collects the request body and JSON.parses it (model, stream
// flag, tools, …) and reads a copy of the response: JSON.parse of a JSON answer, or of every `data:` event of a stream.
// It is what faultline does before it records anything; a module-patching instrumentation gets both objects from the
// SDK already parsed. The interceptor bench runs it side by side with the real configurations as a floor.
// With `{ span: true }` it also wraps each call in one span with no attributes, entered as the active context around
// the dispatch and ended with the response: the least an HTTP-level GenAI instrumentation that emits spans pays.
'use strict';
const { StringDecoder } = require('node:string_decoder');

function contentType(raw) {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (String(raw[i]).toLowerCase() === 'content-type') return String(raw[i + 1]);
  }
  return '';
}

/** Wraps a legacy handler (what Node 20/22's fetch hands its dispatcher) and reads what it receives. */
function readingHandler(handler, span) {
  const decoder = new StringDecoder('utf8');
  let sse = false;
  let pending = '';
  const texts = [];
  return {
    onConnect: (abort, context) => handler.onConnect?.(abort, context),
    onResponseStarted: () => handler.onResponseStarted?.(),
    onBodySent: (size, total) => handler.onBodySent?.(size, total),
    onRequestSent: () => handler.onRequestSent?.(),
    onUpgrade: (status, headers, socket) => handler.onUpgrade?.(status, headers, socket),
    onHeaders(status, headers, resume, text) {
      sse = contentType(headers ?? []).includes('text/event-stream');
      return handler.onHeaders?.(status, headers, resume, text) ?? true;
    },
    onData(chunk) {
      const r = handler.onData?.(chunk) ?? true;
      const text = decoder.write(chunk);
      if (!sse) {
        texts.push(text);
        return r;
      }
      pending += text;
      let end;
      while ((end = pending.indexOf('\n\n')) !== -1) {
        for (const line of pending.slice(0, end).split('\n')) {
          if (line.startsWith('data:') && line !== 'data: [DONE]') JSON.parse(line.slice(5));
        }
        pending = pending.slice(end + 2);
      }
      return r;
    },
    onComplete(trailers) {
      handler.onComplete?.(trailers);
      if (!sse) JSON.parse(texts.join('') + decoder.end());
      span?.end();
    },
    onError(err) {
      handler.onError?.(err);
      span?.end();
    },
  };
}

/**
 * The floor's dispatch function in front of `base`: chat completion calls are read (and, with `span`, wrapped in one
 * span), every other request goes to `base` as it is.
 */
function floorDispatch(base, { span = false } = {}) {
  const api = span ? require('@opentelemetry/api') : undefined;
  return (opts, handler) => {
    if (!String(opts.path).endsWith('/chat/completions') || opts.body == null) return base.dispatch(opts, handler);
    const parent = api?.context.active();
    (async () => {
      if (typeof opts.body === 'string') return Buffer.from(opts.body);
      if (opts.body instanceof Uint8Array)
        return Buffer.from(opts.body.buffer, opts.body.byteOffset, opts.body.byteLength);
      const chunks = [];
      for await (const c of opts.body) chunks.push(c);
      return Buffer.concat(chunks);
    })().then(
      (body) => {
        JSON.parse(body.toString('utf8'));
        if (!api) return base.dispatch({ ...opts, body }, readingHandler(handler));
        const s = api.trace.getTracer('floor').startSpan('chat', { kind: api.SpanKind.CLIENT }, parent);
        return api.context.with(api.trace.setSpan(parent, s), () =>
          base.dispatch({ ...opts, body }, readingHandler(handler, s)),
        );
      },
      (err) => handler.onError?.(err),
    );
    return true;
  };
}

/** A dispatcher that is `base` with `dispatch` replaced. */
function withDispatch(base, dispatch) {
  return new Proxy(base, {
    get(target, key) {
      if (key === 'dispatch') return dispatch;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Put the floor in front of the process-wide dispatcher. */
function install(options = {}) {
  void globalThis.Headers; // Node creates its own dispatcher first, as faultline's fetch-dispatcher.ts does
  const { getGlobalDispatcher, setGlobalDispatcher } = require('undici');
  const base = getGlobalDispatcher();
  setGlobalDispatcher(withDispatch(base, floorDispatch(base, options)));
}

module.exports = { install, floorDispatch, withDispatch };
