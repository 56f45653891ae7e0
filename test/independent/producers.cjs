'use strict';
/**
 * The producers of the independent set, each as its users run it: the real instrumentation package patching the real
 * openai client, the real OTel SDK with its batch processors, and the agent / workflow / tool spans in that
 * producer's own conventions (what its framework integrations or SDK decorators write):
 * - `contrib`: @opentelemetry/instrumentation-openai, content as OTLP log records (`gen_ai.user.message`,
 *   `gen_ai.choice`, …) through @opentelemetry/sdk-logs' BatchLogRecordProcessor, written to a file one export per
 *   line as a file exporter writes them (many traces in one line, lines of any length); agents and tools as GenAI
 *   semconv `invoke_agent` / `execute_tool` spans;
 * - `traceloop-0.22` and `traceloop`: @traceloop/instrumentation-openai (OpenLLMetry) 0.22 and the current version,
 *   content on span attributes; workflows, agents and tools as the Traceloop SDK's decorators write them
 *   (`traceloop.span.kind`, `traceloop.entity.*`). 0.22 declares openai `>=4 <6`, so it is attached as the Traceloop
 *   SDK's `instrumentModules` option does it, with `manuallyInstrument(OpenAI)`;
 * - `openinference`: @arizeai/openinference-instrumentation-openai, `llm.*` attributes; chains, agents and tools as
 *   OpenInference spans (`openinference.span.kind`, `agent.name`, `tool.name`, `input.value` / `output.value`).
 *
 * Content off is each package's own switch (`captureMessageContent: false`, `traceContent: false`,
 * `hideInputs` / `hideOutputs`), and the app's own spans then leave tool arguments, results and entity input /
 * output out as those ecosystems do.
 */
const { appendFileSync } = require('node:fs');
const { trace, context, SpanKind, SpanStatusCode } = require('@opentelemetry/api');
const { ExportResultCode } = require('@opentelemetry/core');
const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { registerInstrumentations } = require('@opentelemetry/instrumentation');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { JsonTraceSerializer, JsonLogsSerializer } = require('@opentelemetry/otlp-transformer');

const PRODUCERS = ['contrib', 'traceloop-0.22', 'traceloop', 'openinference'];

/** Span ids and trace ids from a seeded generator, so a rerun gives the same ids. */
function seededIds(rng) {
  const hex = (n) => {
    let s = '';
    while (s.length < n)
      s += Math.floor(rng() * 0x100000000)
        .toString(16)
        .padStart(8, '0');
    return s.slice(0, n);
  };
  return { generateTraceId: () => hex(32), generateSpanId: () => hex(16) };
}

/** An exporter that appends each export as one OTLP/JSON line, as a collector's file exporter writes them. */
function fileExporter(file, serializer) {
  return {
    export(items, done) {
      try {
        appendFileSync(file, Buffer.from(serializer.serializeRequest(items)).toString('utf8') + '\n');
        done({ code: ExportResultCode.SUCCESS });
      } catch (error) {
        done({ code: ExportResultCode.FAILED, error });
      }
    },
    shutdown: () => Promise.resolve(),
    forceFlush: () => Promise.resolve(),
  };
}

/**
 * Set up tracing (and logs) for one producer. `label` is a span processor that writes the ground truth on the span
 * of the call the server faulted (stripped by `faultline diagnose` before any diagnoser reads the trace).
 */
function setup(producer, { rng, label, serviceName, content, tracesFile, logsFile, openai }) {
  const resource = resourceFromAttributes({ 'service.name': serviceName });
  const provider = new NodeTracerProvider({
    resource,
    idGenerator: seededIds(rng),
    spanProcessors: [label, new BatchSpanProcessor(fileExporter(tracesFile, JsonTraceSerializer))],
  });
  provider.register();
  let loggerProvider;
  if (producer === 'contrib') {
    const { LoggerProvider, BatchLogRecordProcessor } = require('@opentelemetry/sdk-logs');
    loggerProvider = new LoggerProvider({
      resource,
      processors: [new BatchLogRecordProcessor({ exporter: fileExporter(logsFile, JsonLogsSerializer) })],
    });
    const { OpenAIInstrumentation } = require('@opentelemetry/instrumentation-openai');
    registerInstrumentations({
      loggerProvider,
      instrumentations: [new OpenAIInstrumentation({ captureMessageContent: content })],
    });
  } else if (producer === 'traceloop' || producer === 'traceloop-0.22') {
    const { OpenAIInstrumentation } = require(
      producer === 'traceloop' ? '@traceloop/instrumentation-openai' : '@traceloop/instrumentation-openai-0-22',
    );
    const instrumentation = new OpenAIInstrumentation({ traceContent: content });
    registerInstrumentations({ instrumentations: [instrumentation] });
    if (producer === 'traceloop-0.22') instrumentation.manuallyInstrument(openai());
  } else if (producer === 'openinference') {
    const { OpenAIInstrumentation } = require('@arizeai/openinference-instrumentation-openai');
    registerInstrumentations({
      instrumentations: [
        new OpenAIInstrumentation(content ? {} : { traceConfig: { hideInputs: true, hideOutputs: true } }),
      ],
    });
  } else {
    throw new Error(`unknown producer ${producer}: expected one of ${PRODUCERS.join(', ')}`);
  }
  const tracer = trace.getTracer(`indep-${producer}-app`, '1.0.0');
  return { provider, loggerProvider, tracer, conventions: conventions(producer, tracer, content) };
}

/** How each producer's ecosystem writes workflow, agent and tool spans. */
function conventions(producer, tracer, content) {
  const run = async (name, attributes, fn, onResult) => {
    const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes });
    try {
      const out = await context.with(trace.setSpan(context.active(), span), fn);
      if (onResult && content) onResult(span, out);
      return out;
    } catch (err) {
      if (producer === 'contrib') span.setAttribute('error.type', err.constructor?.name ?? 'Error');
      span.recordException(err);
      span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
      throw err;
    } finally {
      span.end();
    }
  };
  const text = (v) => (typeof v === 'string' ? v : JSON.stringify(v ?? null));
  if (producer === 'contrib') {
    return {
      workflow: (name, _input, fn) =>
        run(
          `invoke_workflow ${name}`,
          { 'gen_ai.operation.name': 'invoke_workflow', 'gen_ai.workflow.name': name },
          fn,
        ),
      agent: (name, fn) =>
        run(
          `invoke_agent ${name}`,
          { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': name, 'gen_ai.provider.name': 'openai' },
          fn,
        ),
      tool: (name, callId, args, fn) =>
        run(
          `execute_tool ${name}`,
          {
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': name,
            'gen_ai.tool.type': 'function',
            'gen_ai.tool.call.id': callId,
            ...(content ? { 'gen_ai.tool.call.arguments': args } : {}),
          },
          fn,
          (span, out) => span.setAttribute('gen_ai.tool.call.result', text(out)),
        ),
    };
  }
  if (producer.startsWith('traceloop')) {
    let workflowName = '';
    const io = (v) => (content ? { 'traceloop.entity.input': JSON.stringify({ args: [v] }) } : {});
    return {
      workflow: (name, input, fn) => {
        workflowName = name;
        return run(
          `${name}.workflow`,
          {
            'traceloop.span.kind': 'workflow',
            'traceloop.workflow.name': name,
            'traceloop.entity.name': name,
            'traceloop.entity.path': '',
            ...io(input),
          },
          fn,
          (span, out) => span.setAttribute('traceloop.entity.output', JSON.stringify(out ?? null)),
        );
      },
      agent: (name, fn) =>
        run(
          `${name}.agent`,
          {
            'traceloop.span.kind': 'agent',
            'traceloop.workflow.name': workflowName,
            'traceloop.entity.name': name,
            'traceloop.entity.path': workflowName,
          },
          fn,
        ),
      // The Traceloop SDK's @tool decorator records the function's arguments; no tool-call id.
      tool: (name, _callId, args, fn) =>
        run(
          `${name}.tool`,
          {
            'traceloop.span.kind': 'tool',
            'traceloop.workflow.name': workflowName,
            'traceloop.entity.name': name,
            ...(content ? { 'traceloop.entity.input': JSON.stringify({ args: [args] }) } : {}),
          },
          fn,
          (span, out) => span.setAttribute('traceloop.entity.output', JSON.stringify(out)),
        ),
    };
  }
  return {
    workflow: (name, input, fn) =>
      run(
        name,
        {
          'openinference.span.kind': 'CHAIN',
          ...(content ? { 'input.value': input, 'input.mime_type': 'text/plain' } : {}),
        },
        fn,
        (span, out) => span.setAttribute('output.value', text(out)),
      ),
    agent: (name, fn) => run(name, { 'openinference.span.kind': 'AGENT', 'agent.name': name }, fn),
    // OpenInference tool spans carry the tool's name and parameters, no call id.
    tool: (name, _callId, args, fn) =>
      run(
        name,
        {
          'openinference.span.kind': 'TOOL',
          'tool.name': name,
          ...(content ? { 'input.value': args, 'input.mime_type': 'application/json' } : {}),
        },
        fn,
        (span, out) => {
          span.setAttribute('output.value', JSON.stringify(out));
          span.setAttribute('output.mime_type', 'application/json');
        },
      ),
  };
}

module.exports = { PRODUCERS, setup };
