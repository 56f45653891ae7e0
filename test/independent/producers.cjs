'use strict';
/**
 * The three producers of the independent set, each as its users run it: the real instrumentation package patching
 * the real openai client (registered before the client is required), the real OTel SDK, and the agent / workflow /
 * tool spans in that producer's own conventions — what its framework integrations or SDK decorators write:
 * - `contrib`: @opentelemetry/instrumentation-openai, content captured as OTLP log records through
 *   @opentelemetry/sdk-logs (`gen_ai.user.message`, `gen_ai.choice`, …); agents and tools as GenAI semconv
 *   `invoke_agent` / `execute_tool` spans;
 * - `traceloop`: @traceloop/instrumentation-openai (OpenLLMetry), content on span attributes; workflows, agents and
 *   tools as the Traceloop SDK's decorators write them (`traceloop.span.kind`, `traceloop.entity.*`);
 * - `openinference`: @arizeai/openinference-instrumentation-openai, `llm.*` attributes; chains, agents and tools as
 *   OpenInference spans (`openinference.span.kind`, `agent.name`, `tool.name`, `input.value` / `output.value`).
 */
const { trace, context, SpanKind, SpanStatusCode } = require('@opentelemetry/api');
const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
const { InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { registerInstrumentations } = require('@opentelemetry/instrumentation');
const { resourceFromAttributes } = require('@opentelemetry/resources');

const PRODUCERS = ['contrib', 'traceloop', 'openinference'];

/** Span ids and trace ids from a seeded generator, so a rerun gives the same ids. */
function seededIds(rng) {
  const hex = (n) => {
    let s = '';
    while (s.length < n) s += Math.floor(rng() * 0x100000000).toString(16).padStart(8, '0');
    return s.slice(0, n);
  };
  return { generateTraceId: () => hex(32), generateSpanId: () => hex(16) };
}

/**
 * Set up tracing (and logs) for one producer. `label` is a span processor that writes the evaluation's ground truth
 * on the span the server faulted (stripped before any diagnoser reads the trace).
 */
function setup(producer, { rng, label, serviceName }) {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    idGenerator: seededIds(rng),
    spanProcessors: [label, new SimpleSpanProcessor(exporter)],
  });
  provider.register();
  let logExporter;
  let loggerProvider;
  if (producer === 'contrib') {
    const { LoggerProvider, SimpleLogRecordProcessor, InMemoryLogRecordExporter } = require('@opentelemetry/sdk-logs');
    logExporter = new InMemoryLogRecordExporter();
    loggerProvider = new LoggerProvider({ resource: resourceFromAttributes({ 'service.name': serviceName }), processors: [new SimpleLogRecordProcessor({ exporter: logExporter })] });
    const { OpenAIInstrumentation } = require('@opentelemetry/instrumentation-openai');
    registerInstrumentations({ loggerProvider, instrumentations: [new OpenAIInstrumentation({ captureMessageContent: true })] });
  } else if (producer === 'traceloop') {
    const { OpenAIInstrumentation } = require('@traceloop/instrumentation-openai');
    registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()] });
  } else if (producer === 'openinference') {
    const { OpenAIInstrumentation } = require('@arizeai/openinference-instrumentation-openai');
    registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()] });
  } else {
    throw new Error(`unknown producer ${producer}: expected one of ${PRODUCERS.join(', ')}`);
  }
  const tracer = trace.getTracer(`eval-${producer}-app`, '1.0.0');
  return { exporter, logExporter, provider, loggerProvider, tracer, conventions: conventions(producer, tracer) };
}

function recordError(span, err) {
  span.recordException(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
}

/** How each producer's ecosystem writes workflow, agent and tool spans. */
function conventions(producer, tracer) {
  const run = async (name, kind, attributes, fn, onResult) => {
    const span = tracer.startSpan(name, { kind, attributes });
    try {
      const out = await context.with(trace.setSpan(context.active(), span), fn);
      if (onResult) onResult(span, out);
      return out;
    } catch (err) {
      if (producer === 'contrib') span.setAttribute('error.type', err.constructor?.name ?? 'Error');
      recordError(span, err);
      throw err;
    } finally {
      span.end();
    }
  };
  if (producer === 'contrib') {
    return {
      workflow: (name, input, fn) => run(`invoke_workflow ${name}`, SpanKind.INTERNAL, { 'gen_ai.operation.name': 'invoke_workflow', 'gen_ai.workflow.name': name, 'gen_ai.provider.name': 'openai' }, fn),
      agent: (name, fn) => run(`invoke_agent ${name}`, SpanKind.INTERNAL, { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': name, 'gen_ai.provider.name': 'openai' }, fn),
      tool: (name, callId, args, fn) =>
        run(`execute_tool ${name}`, SpanKind.INTERNAL, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, 'gen_ai.tool.type': 'function', 'gen_ai.tool.call.id': callId, 'gen_ai.tool.call.arguments': args }, fn, (span, out) =>
          span.setAttribute('gen_ai.tool.call.result', JSON.stringify(out)),
        ),
    };
  }
  if (producer === 'traceloop') {
    let workflowName = '';
    return {
      workflow: (name, input, fn) => {
        workflowName = name;
        return run(`${name}.workflow`, SpanKind.INTERNAL, { 'traceloop.span.kind': 'workflow', 'traceloop.workflow.name': name, 'traceloop.entity.name': name, 'traceloop.entity.path': '', 'traceloop.entity.input': JSON.stringify({ args: [input] }) }, fn, (span, out) =>
          span.setAttribute('traceloop.entity.output', JSON.stringify(out ?? null)),
        );
      },
      agent: (name, fn) => run(`${name}.agent`, SpanKind.INTERNAL, { 'traceloop.span.kind': 'agent', 'traceloop.workflow.name': workflowName, 'traceloop.entity.name': name, 'traceloop.entity.path': workflowName }, fn),
      tool: (name, callId, args, fn) =>
        run(`${name}.tool`, SpanKind.INTERNAL, { 'traceloop.span.kind': 'tool', 'traceloop.workflow.name': workflowName, 'traceloop.entity.name': name, 'traceloop.entity.input': JSON.stringify({ args: [JSON.parse(args)] }) }, fn, (span, out) =>
          span.setAttribute('traceloop.entity.output', JSON.stringify(out)),
        ),
    };
  }
  return {
    workflow: (name, input, fn) => run(name, SpanKind.INTERNAL, { 'openinference.span.kind': 'CHAIN', 'input.value': input, 'input.mime_type': 'text/plain' }, fn, (span, out) => span.setAttribute('output.value', typeof out === 'string' ? out : JSON.stringify(out ?? null))),
    agent: (name, fn) => run(name, SpanKind.INTERNAL, { 'openinference.span.kind': 'AGENT', 'agent.name': name }, fn),
    tool: (name, callId, args, fn) =>
      run(name, SpanKind.INTERNAL, { 'openinference.span.kind': 'TOOL', 'tool.name': name, 'tool.id': callId, 'input.value': args, 'input.mime_type': 'application/json' }, fn, (span, out) => {
        span.setAttribute('output.value', JSON.stringify(out));
        span.setAttribute('output.mime_type', 'application/json');
      }),
  };
}

module.exports = { PRODUCERS, setup };
