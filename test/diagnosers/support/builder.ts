/**
 * Builds realistic multi-agent traces with the real OTel SDK (a private BasicTracerProvider and an
 * InMemorySpanExporter): a workflow root, agents, chat spans and handoff spans with the attributes faultline's
 * instrumentation records, explicit start/end times, optional online detection events and ground truth.
 */
import {
  context,
  trace as otelTrace,
  SpanKind,
  SpanStatusCode,
  type Attributes as OtelAttributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import * as sc from '../../../instrumentation/semconv';
import type { FaultType } from '../../../src/taxonomy';
import type { TraceRecord } from '../../../src/traces/model';
import { toTraces } from '../../support/to-traces';

export interface Detection {
  detector: string;
  faultType: FaultType;
  confidence: number;
  evidence: string;
}

export interface Truth {
  type: FaultType;
  name: string;
  noop?: boolean;
}

export interface ChatSpec {
  durationMs?: number;
  /** Gap before the call starts, ms. */
  gapMs?: number;
  model?: string;
  finishReasons?: string[];
  outputChars?: number;
  toolCalls?: number;
  inputTokens?: number;
  outputTokens?: number;
  /** Content capture: the output text (also sets gen_ai.output.messages). */
  text?: string;
  input?: string;
  http?: number;
  errorType?: string;
  statusMessage?: string;
  stream?: { chunks: number; done: boolean };
  detections?: Detection[];
  truth?: Truth;
  /** Omit faultline.* facts (another producer). */
  foreign?: boolean;
  /** The application cancelled the call (faultline.response.aborted). */
  aborted?: boolean;
}

export interface MessageSpec {
  source: string;
  target: string;
  boundary?: string;
  durationMs?: number;
  gapMs?: number;
  delivered?: number;
  payloadHash?: string;
  deliveredHashes?: string[];
  taskId?: string;
  errorType?: string;
  payload?: string;
  detections?: Detection[];
  /** `faultline.guard` events (a protection's recorded actions). */
  guards?: { action: string; reason: string }[];
  truth?: Truth;
  /** Further span attributes (delivered-copy facts, A2A / MCP attributes). */
  attributes?: OtelAttributes;
  /** Default PRODUCER; CLIENT with a2a.method.name for an A2A call. */
  kind?: SpanKind;
}

let idSeq = 0;

export class TraceBuilder {
  readonly exporter = new InMemorySpanExporter();
  readonly provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.exporter)] });
  readonly tracer = this.provider.getTracer('faultline', '0.1.0');
  /** Every finished SDK span so far (for exporting to files with the real OTLP serializer). */
  readonly finished: ReadableSpan[] = [];

  /** Build one trace: `fn` adds agents/calls; returns it normalised. */
  trace(
    fn: (t: TraceScope) => void,
    options: { taskId?: string; condition?: string; start?: number } = {},
  ): TraceRecord {
    const start = options.start ?? 1_790_000_000_000 + (idSeq++ % 1000) * 100_000;
    const root = this.tracer.startSpan('invoke_workflow task', {
      startTime: start,
      attributes: {
        [sc.ATTR_GEN_AI_OPERATION_NAME]: sc.GEN_AI_OPERATION_INVOKE_WORKFLOW,
        ...(options.taskId ? { [sc.ATTR_FL_TASK_ID]: options.taskId } : {}),
        ...(options.condition ? { [sc.ATTR_FL_FAULT_CONDITION]: options.condition } : {}),
      },
    });
    const scope = new TraceScope(this.tracer, otelTrace.setSpan(context.active(), root), start + 1);
    fn(scope);
    root.end(scope.clock + 1);
    const id = root.spanContext().traceId;
    this.finished.push(...this.exporter.getFinishedSpans());
    const t = toTraces(this.exporter.getFinishedSpans()).find((x) => x.traceId === id)!;
    this.exporter.reset();
    return t;
  }
}

export class TraceScope {
  constructor(
    private readonly tracer: ReturnType<BasicTracerProvider['getTracer']>,
    private readonly ctx: Context,
    public clock: number,
  ) {}

  agent(name: string, fn: (a: TraceScope) => void, options: { fail?: string } = {}): void {
    const span = this.tracer.startSpan(
      `invoke_agent ${name}`,
      {
        startTime: this.clock,
        kind: SpanKind.INTERNAL,
        attributes: {
          [sc.ATTR_GEN_AI_OPERATION_NAME]: sc.GEN_AI_OPERATION_INVOKE_AGENT,
          [sc.ATTR_GEN_AI_AGENT_NAME]: name,
        },
      },
      this.ctx,
    );
    const inner = new TraceScope(this.tracer, otelTrace.setSpan(this.ctx, span), this.clock + 1);
    fn(inner);
    this.clock = inner.clock + 1;
    if (options.fail) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: options.fail });
      span.setAttribute(sc.ATTR_ERROR_TYPE, 'Error');
    }
    span.end(this.clock);
    this.clock += 1;
  }

  tool(name: string, options: { durationMs?: number; fail?: string } = {}): void {
    const span = this.tracer.startSpan(
      `execute_tool ${name}`,
      {
        startTime: this.clock,
        attributes: {
          [sc.ATTR_GEN_AI_OPERATION_NAME]: sc.GEN_AI_OPERATION_EXECUTE_TOOL,
          [sc.ATTR_GEN_AI_TOOL_NAME]: name,
        },
      },
      this.ctx,
    );
    if (options.fail) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: options.fail });
      span.setAttribute(sc.ATTR_ERROR_TYPE, 'ToolError');
    }
    this.clock += options.durationMs ?? 20;
    span.end(this.clock);
    this.clock += 1;
  }

  chat(spec: ChatSpec = {}): string {
    this.clock += spec.gapMs ?? 5;
    const model = spec.model ?? 'gpt-4o-mini';
    const a: OtelAttributes = {
      [sc.ATTR_GEN_AI_OPERATION_NAME]: 'chat',
      [sc.ATTR_GEN_AI_PROVIDER_NAME]: 'openai',
      [sc.ATTR_GEN_AI_REQUEST_MODEL]: model,
      [sc.ATTR_SERVER_ADDRESS]: '127.0.0.1',
      [sc.ATTR_URL_FULL]: 'http://127.0.0.1:4000/v1/chat/completions',
    };
    const span = this.tracer.startSpan(
      `chat ${model}`,
      { kind: SpanKind.CLIENT, startTime: this.clock, attributes: a },
      this.ctx,
    );
    const failed = spec.errorType !== undefined || (spec.http !== undefined && spec.http >= 400);
    if (spec.http !== undefined) span.setAttribute(sc.ATTR_HTTP_RESPONSE_STATUS_CODE, spec.http);
    if (!failed) {
      span.setAttribute(sc.ATTR_GEN_AI_RESPONSE_MODEL, model);
      span.setAttribute(sc.ATTR_GEN_AI_RESPONSE_FINISH_REASONS, spec.finishReasons ?? ['stop']);
      span.setAttribute(sc.ATTR_GEN_AI_USAGE_INPUT_TOKENS, spec.inputTokens ?? 120);
      span.setAttribute(sc.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS, spec.outputTokens ?? 60);
      const chars = spec.outputChars ?? spec.text?.length ?? 240;
      if (!spec.foreign) {
        span.setAttribute(sc.ATTR_FL_RESPONSE_OUTPUT_CHARS, chars);
        span.setAttribute(sc.ATTR_FL_RESPONSE_TOOL_CALL_COUNT, spec.toolCalls ?? 0);
        span.setAttribute(sc.ATTR_FL_RESPONSE_CONTENT_HASH, `h${chars}`);
        if (spec.aborted) span.setAttribute(sc.ATTR_FL_RESPONSE_ABORTED, true);
        if (spec.stream) {
          span.setAttribute(sc.ATTR_GEN_AI_REQUEST_STREAM, true);
          span.setAttribute(sc.ATTR_FL_RESPONSE_CHUNK_COUNT, spec.stream.chunks);
          span.setAttribute(sc.ATTR_FL_RESPONSE_DONE, spec.stream.done);
        }
      }
      if (spec.text !== undefined) {
        const parts: unknown[] = spec.text === '' ? [] : [{ type: 'text', content: spec.text }];
        for (let i = 0; i < (spec.toolCalls ?? 0); i++)
          parts.push({ type: 'tool_call', id: `call_${i}`, name: 'search', arguments: { q: 'x' } });
        span.setAttribute(
          sc.ATTR_GEN_AI_OUTPUT_MESSAGES,
          JSON.stringify([{ role: 'assistant', parts, finish_reason: (spec.finishReasons ?? ['stop'])[0] }]),
        );
      }
      if (spec.input !== undefined)
        span.setAttribute(
          sc.ATTR_GEN_AI_INPUT_MESSAGES,
          JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: spec.input }] }]),
        );
    } else {
      span.setAttribute(sc.ATTR_ERROR_TYPE, spec.errorType ?? String(spec.http));
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: spec.statusMessage ?? (spec.http ? `HTTP ${spec.http}` : spec.errorType!),
      });
    }
    this.clock += spec.durationMs ?? 800;
    addDetections(span, spec.detections, this.clock);
    addTruth(span, spec.truth, this.clock);
    span.end(this.clock);
    this.clock += 1;
    return span.spanContext().spanId;
  }

  message(spec: MessageSpec): string {
    this.clock += spec.gapMs ?? 2;
    const id = `msg-${idSeq++}`;
    const span = this.tracer.startSpan(
      `handoff ${spec.source} -> ${spec.target}`,
      {
        kind: spec.kind ?? SpanKind.PRODUCER,
        startTime: this.clock,
        attributes: {
          [sc.ATTR_FL_MESSAGE_ID]: id,
          [sc.ATTR_FL_MESSAGE_SOURCE]: spec.source,
          [sc.ATTR_FL_MESSAGE_TARGET]: spec.target,
          ...(spec.boundary ? { [sc.ATTR_FL_MESSAGE_BOUNDARY]: spec.boundary } : {}),
          ...(spec.taskId ? { [sc.ATTR_FL_MESSAGE_TASK_ID]: spec.taskId } : {}),
          [sc.ATTR_FL_MESSAGE_PAYLOAD_HASH]: spec.payloadHash ?? 'p1',
          ...(spec.payload ? { [sc.ATTR_FL_MESSAGE_PAYLOAD]: spec.payload } : {}),
          ...spec.attributes,
        },
      },
      this.ctx,
    );
    const delivered = spec.delivered ?? 1;
    span.setAttribute(sc.ATTR_FL_MESSAGE_DELIVERED_COUNT, delivered);
    span.setAttribute(
      sc.ATTR_FL_MESSAGE_DELIVERED_HASHES,
      spec.deliveredHashes ?? Array.from({ length: delivered }, () => spec.payloadHash ?? 'p1'),
    );
    if (spec.errorType) {
      span.setAttribute(sc.ATTR_ERROR_TYPE, spec.errorType);
      span.setStatus({ code: SpanStatusCode.ERROR, message: spec.errorType });
    }
    this.clock += spec.durationMs ?? 3;
    for (const g of spec.guards ?? [])
      span.addEvent(
        sc.EVENT_FL_GUARD,
        {
          [sc.ATTR_FL_GUARD_ACTION]: g.action,
          [sc.ATTR_FL_GUARD_REASON]: g.reason,
          [sc.ATTR_FL_GUARD_ROUTE]: 'execution',
        },
        this.clock,
      );
    addDetections(span, spec.detections, this.clock);
    addTruth(span, spec.truth, this.clock);
    span.end(this.clock);
    this.clock += 1;
    return span.spanContext().spanId;
  }
}

function addDetections(span: Span, ds: Detection[] | undefined, time: number): void {
  for (const d of ds ?? []) {
    span.addEvent(
      sc.EVENT_FL_DETECTION,
      {
        [sc.ATTR_FL_DETECTION_DETECTOR]: d.detector,
        [sc.ATTR_FL_DETECTION_FAULT_TYPE]: d.faultType,
        [sc.ATTR_FL_DETECTION_CONFIDENCE]: d.confidence,
        [sc.ATTR_FL_DETECTION_EVIDENCE]: d.evidence,
        [sc.ATTR_FL_DETECTION_SEVERITY]: 'error',
      },
      time,
    );
  }
}

function addTruth(span: Span, t: Truth | undefined, time: number): void {
  if (!t) return;
  const attrs = {
    [sc.ATTR_FL_FAULT_TYPE]: t.type,
    [sc.ATTR_FL_FAULT_NAME]: t.name,
    [sc.ATTR_FL_FAULT_NOOP]: t.noop ?? false,
    [sc.ATTR_FL_FAULT_RULE]: t.name,
  };
  span.setAttributes(attrs);
  span.addEvent(sc.EVENT_FL_FAULT_INJECTED, attrs, time);
}
