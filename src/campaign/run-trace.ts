/**
 * A command run's labelled trace: the spans the program wrote (faultline/register's OTLP/JSON lines, kept as
 * written: every field, event and link), joined into the run's trace — the trace id the campaign passed in
 * TRACEPARENT, and every span without a parent in the run hung under the run's root span — plus that root span,
 * which the campaign writes itself: `invoke_workflow <task>`, the run's wall time, its exit code, the campaign labels
 * (labels.ts) and the ground-truth condition. One OTLP/JSON line per run, the shape `faultline eval` reads.
 */
import { readFileSync } from 'node:fs';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  EVENT_FL_DETECTION,
  EVENT_FL_GUARD,
  GEN_AI_OPERATION_INVOKE_WORKFLOW,
} from '../../instrumentation/semconv';
import { groundTruth } from '../diagnosers/ground-truth';
import { num, sortSpans, type SpanRecord, type TraceRecord } from '../traces/model';
import { isLlmSpan } from '../traces/steps';
import { isRecord } from '../traces/normalize';
import { spansOfDocument } from '../traces/readers/document';
import { VERSION } from '../version';

export const RUN_SCOPE = 'faultline/campaign';

export interface RunRoot {
  traceId: string;
  spanId: string;
  name: string;
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number | boolean>;
  /** ERROR with this message (the run crashed, timed out, was killed); unset otherwise. */
  error?: string;
}

export interface RunTrace {
  /** The OTLP/JSON line (without the newline). */
  line: string;
  trace: TraceRecord;
  /** Lines of the program's file that could not be read (a torn last line of a killed run). */
  damaged: number;
}

export interface RunFacts {
  triggered: boolean;
  detections: number;
  guardEvents: number;
  errorSpans: number;
  llmCalls: number;
  tokens: number;
  /** Spans the program wrote (the root excluded). */
  spans: number;
}

type Json = Record<string, unknown>;

function anyValue(v: string | number | boolean): Json {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
}

const ns = (ms: number): string => (BigInt(Math.round(ms * 1000)) * 1000n).toString();

function rootResourceSpans(root: RunRoot): Json {
  return {
    resource: { attributes: [{ key: 'service.name', value: { stringValue: 'faultline-campaign' } }] },
    scopeSpans: [
      {
        scope: { name: RUN_SCOPE, version: VERSION },
        spans: [
          {
            traceId: root.traceId,
            spanId: root.spanId,
            name: root.name,
            kind: 1,
            startTimeUnixNano: ns(root.startMs),
            endTimeUnixNano: ns(Math.max(root.endMs, root.startMs)),
            attributes: Object.entries({
              ...root.attributes,
              [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_INVOKE_WORKFLOW,
            }).map(([key, v]) => ({ key, value: anyValue(v) })),
            status: root.error !== undefined ? { code: 2, message: root.error } : { code: 0 },
          },
        ],
      },
    ],
  };
}

function spansOf(rs: unknown): Json[] {
  if (!isRecord(rs)) return [];
  const out: Json[] = [];
  for (const ss of Array.isArray(rs.scopeSpans) ? rs.scopeSpans : [])
    if (isRecord(ss) && Array.isArray(ss.spans)) for (const s of ss.spans) if (isRecord(s)) out.push(s);
  return out;
}

/** Read the program's span file (missing = no spans) and build the run's trace. */
export function buildRunTrace(file: string, root: RunRoot): RunTrace {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    /* the program wrote no spans */
  }
  const resourceSpans: unknown[] = [];
  let damaged = 0;
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    try {
      const doc: unknown = JSON.parse(raw);
      if (isRecord(doc) && Array.isArray(doc.resourceSpans)) resourceSpans.push(...(doc.resourceSpans as unknown[]));
      else damaged++;
    } catch {
      damaged++;
    }
  }
  // Join: one trace id, and what has no parent within the run hangs under the root.
  const ids = new Set<string>();
  for (const rs of resourceSpans)
    for (const s of spansOf(rs)) if (typeof s.spanId === 'string') ids.add(s.spanId.toLowerCase());
  for (const rs of resourceSpans) {
    for (const s of spansOf(rs)) {
      s.traceId = root.traceId;
      const parent = typeof s.parentSpanId === 'string' ? s.parentSpanId.toLowerCase() : '';
      if (parent === '' || !ids.has(parent)) s.parentSpanId = root.spanId;
    }
  }
  const doc = { resourceSpans: [rootResourceSpans(root), ...resourceSpans] };
  const spans: SpanRecord[] = [];
  try {
    spans.push(...spansOfDocument(doc));
  } catch {
    // A span the reader refuses is damage too: keep the root alone rather than lose the run.
    damaged++;
    spans.length = 0;
    spans.push(...spansOfDocument({ resourceSpans: [rootResourceSpans(root)] }));
    return {
      line: JSON.stringify({ resourceSpans: [rootResourceSpans(root)] }),
      trace: { traceId: root.traceId, spans },
      damaged,
    };
  }
  return { line: JSON.stringify(doc), trace: { traceId: root.traceId, spans: sortSpans(spans) }, damaged };
}

/** What a run's trace says: did the fault fire (the rule `faultline eval` uses), what signalled a problem, the cost. */
export function runFacts(t: TraceRecord): RunFacts {
  const own = t.spans.filter((s) => s.scope.name !== RUN_SCOPE);
  let detections = 0;
  let guardEvents = 0;
  let errorSpans = 0;
  let llmCalls = 0;
  let tokens = 0;
  for (const s of own) {
    if (s.status.code === 'ERROR') errorSpans++;
    for (const e of s.events) {
      if (e.name === EVENT_FL_DETECTION) detections++;
      else if (e.name === EVENT_FL_GUARD) guardEvents++;
    }
    if (isLlmSpan(s)) {
      llmCalls++;
      tokens +=
        (num(s.attributes, 'gen_ai.usage.input_tokens') ?? 0) + (num(s.attributes, 'gen_ai.usage.output_tokens') ?? 0);
    }
  }
  return {
    triggered: groundTruth(t).status === 'faulty',
    detections,
    guardEvents,
    errorSpans,
    llmCalls,
    tokens,
    spans: own.length,
  };
}
