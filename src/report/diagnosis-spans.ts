/**
 * `faultline diagnose --export otlp`: every diagnosis goes back to the tracing backend as a span of the trace it
 * explains, so it shows in Jaeger or Tempo beside that trace. The span is a child of the faulty span (the trace's
 * root when nothing is faulty), carries a link to the faulty span, and spans the faulty span's time, so the
 * waterfall puts it right under what it explains. Its attributes are the diagnosis (`faultline.diagnosis.*`);
 * never `faultline.fault.*`, which is ground truth.
 *
 * Exported with the standard OTLP/HTTP exporters, configured by the usual variables (OTEL_EXPORTER_OTLP_ENDPOINT,
 * _TRACES_ENDPOINT, _HEADERS, _PROTOCOL: http/protobuf by default, http/json); the endpoint can also be given.
 * Spans are sent at the end, in batches, and each batch's result is awaited, so a collector that is down is
 * reported rather than lost silently.
 */
import { ROOT_CONTEXT, SpanKind, TraceFlags, trace, type Attributes, type Link } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Diagnosis } from '../diagnosers/types';
import type { SpanRecord, TraceRecord } from '../traces/model';
import { VERSION } from '../version';
import { processEnv } from '../env';
import { DEFAULT_OTLP_ENDPOINT, signalUrl, signalUrlFromEnv } from '../otlp-endpoint';

export const ATTR_DIAGNOSIS_FAULT_TYPE = 'faultline.diagnosis.fault_type' as const;
export const ATTR_DIAGNOSIS_SPAN_ID = 'faultline.diagnosis.span_id' as const;
export const ATTR_DIAGNOSIS_STEP = 'faultline.diagnosis.step' as const;
export const ATTR_DIAGNOSIS_STEP_KIND = 'faultline.diagnosis.step_kind' as const;
export const ATTR_DIAGNOSIS_CONFIDENCE = 'faultline.diagnosis.confidence' as const;
export const ATTR_DIAGNOSIS_EVIDENCE = 'faultline.diagnosis.evidence' as const;
export const ATTR_DIAGNOSIS_DIAGNOSER = 'faultline.diagnosis.diagnoser' as const;

export const DIAGNOSIS_SPAN_NAME = 'faultline.diagnosis';

export interface DiagnosisExportOptions {
  /** The scope name of the spans (the trace input drops spans of this scope when reading back). */
  scope: string;
  /** OTLP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT; `/v1/traces` is appended). Default: the OTEL_* variables. */
  endpoint?: string;
  env?: NodeJS.ProcessEnv;
  /** Spans per export request (default 512). */
  batchSize?: number;
}

export interface DiagnosisExport {
  add(diagnosis: Diagnosis, trace: TraceRecord): void;
  /** Send everything; resolves with what was sent and the first failure, never rejects. */
  finish(): Promise<{ spans: number; exported: number; error?: string; endpoint: string }>;
}

class Collect implements SpanProcessor {
  readonly spans: ReadableSpan[] = [];
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    this.spans.push(span);
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

function tracesEndpoint(env: NodeJS.ProcessEnv, endpoint?: string): string {
  if (endpoint) return signalUrl(endpoint, 'traces');
  return signalUrlFromEnv(env, 'traces') ?? signalUrl(DEFAULT_OTLP_ENDPOINT, 'traces');
}

function exporterFor(env: NodeJS.ProcessEnv, url: string): SpanExporter {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf')
    .trim()
    .toLowerCase();
  if (protocol === 'http/json') {
    const { OTLPTraceExporter } =
      require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter({ url });
  }
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter({ url });
}

const hrTime = (ms: number): [number, number] => {
  const s = Math.floor(ms / 1000);
  return [s, Math.round((ms - s * 1000) * 1e6)];
};

/** The span a diagnosis hangs under: the faulty span, else the trace's root (the earliest span without a parent in the trace). */
function anchorOf(d: Diagnosis, t: TraceRecord): SpanRecord | undefined {
  const ids = new Set(t.spans.map((s) => s.spanId));
  return (
    (d.spanId !== null ? t.spans.find((s) => s.spanId === d.spanId) : undefined) ??
    t.spans.find((s) => s.parentSpanId === undefined || !ids.has(s.parentSpanId)) ??
    t.spans[0]
  );
}

export function createDiagnosisExport(options: DiagnosisExportOptions): DiagnosisExport {
  const env = options.env ?? processEnv();
  const endpoint = tracesEndpoint(env, options.endpoint);
  const collect = new Collect();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || 'faultline' }),
    spanProcessors: [collect],
  });
  const tracer = provider.getTracer(options.scope, VERSION);
  return {
    add(d, t) {
      const anchor = anchorOf(d, t);
      if (!anchor) return;
      const parent = trace.setSpanContext(ROOT_CONTEXT, {
        traceId: t.traceId,
        spanId: anchor.spanId,
        traceFlags: TraceFlags.SAMPLED,
        isRemote: true,
      });
      const attributes: Attributes = {
        [ATTR_DIAGNOSIS_FAULT_TYPE]: d.faultType,
        [ATTR_DIAGNOSIS_CONFIDENCE]: d.confidence,
        [ATTR_DIAGNOSIS_EVIDENCE]: d.evidence,
        [ATTR_DIAGNOSIS_DIAGNOSER]: d.diagnoser,
      };
      if (d.spanId !== null) attributes[ATTR_DIAGNOSIS_SPAN_ID] = d.spanId;
      if (d.step !== null) attributes[ATTR_DIAGNOSIS_STEP] = d.step;
      if (d.stepKind !== null) attributes[ATTR_DIAGNOSIS_STEP_KIND] = d.stepKind;
      const links: Link[] =
        d.spanId !== null
          ? [{ context: { traceId: t.traceId, spanId: d.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true } }]
          : [];
      const span = tracer.startSpan(
        DIAGNOSIS_SPAN_NAME,
        { kind: SpanKind.INTERNAL, startTime: hrTime(anchor.start), attributes, links },
        parent,
      );
      span.end(hrTime(Math.max(anchor.end, anchor.start)));
    },
    async finish() {
      const spans = collect.spans.splice(0);
      const exporter = exporterFor(env, endpoint);
      const size = options.batchSize ?? 512;
      let exported = 0;
      let error: string | undefined;
      for (let i = 0; i < spans.length && error === undefined; i += size) {
        const batch = spans.slice(i, i + size);
        const result = await new Promise<ExportResult>((resolve) => exporter.export(batch, resolve));
        if (result.code === ExportResultCode.SUCCESS) exported += batch.length;
        else error = result.error?.message ?? 'export failed';
      }
      await exporter.shutdown().catch(() => {});
      await provider.shutdown();
      return { spans: spans.length, exported, endpoint, ...(error !== undefined ? { error } : {}) };
    },
  };
}
