/**
 * OTLP logs beside the traces: log records written by the real OTel logs SDK and serializer, in a file given among
 * the trace files, join their spans as events with their bodies — as one OTLP/JSON document, as JSON lines, gzip'd —
 * and a damaged logs file is named like a damaged trace file.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { context, trace } from '@opentelemetry/api';
import { LoggerProvider, InMemoryLogRecordExporter, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { JsonLogsSerializer, JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { beforeAll, describe, expect, it } from 'vitest';
import { readTraces } from '../../src/traces/read';
import type { TraceRecord } from '../../src/traces/model';
import { viewTrace } from '../../src/traces/view';
import { isFaultlineError } from '../../src/errors';

const dir = mkdtempSync(join(tmpdir(), 'faultline-logs-'));
let traceFile = '';
let logsDoc = '';
let logsLines = '';

beforeAll(() => {
  const spans = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const logs = new InMemoryLogRecordExporter();
  const logger = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter: logs })] }).getLogger(
    '@opentelemetry/instrumentation-openai',
  );
  const tracer = provider.getTracer('app');
  for (const answer of ['The forecast is sunny.', '']) {
    const root = tracer.startSpan('invoke_agent weather', {
      attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'weather' },
    });
    const ctx = trace.setSpan(context.active(), root);
    const chat = tracer.startSpan(
      'chat gpt-4o-mini',
      {
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.system': 'openai',
          'gen_ai.request.model': 'gpt-4o-mini',
          'gen_ai.response.finish_reasons': ['stop'],
        },
      },
      ctx,
    );
    const at = trace.setSpan(ctx, chat);
    logger.emit({
      context: at,
      attributes: { 'event.name': 'gen_ai.user.message', 'gen_ai.system': 'openai' },
      body: { content: 'Weather in Lisbon?' },
    });
    logger.emit({
      context: at,
      attributes: { 'event.name': 'gen_ai.choice', 'gen_ai.system': 'openai' },
      body: { finish_reason: 'stop', index: 0, message: answer ? { content: answer } : {} },
    });
    chat.end();
    root.end();
  }
  traceFile = join(dir, 'traces.json');
  writeFileSync(traceFile, Buffer.from(JsonTraceSerializer.serializeRequest(spans.getFinishedSpans())!));
  const records = logs.getFinishedLogRecords();
  logsDoc = Buffer.from(JsonLogsSerializer.serializeRequest(records)!).toString('utf8');
  logsLines =
    records.map((r) => Buffer.from(JsonLogsSerializer.serializeRequest([r])!).toString('utf8')).join('\n') + '\n';
});

async function read(files: string[]): Promise<TraceRecord[]> {
  const out: TraceRecord[] = [];
  for await (const t of readTraces(files)) out.push(t);
  return out;
}

function contentOf(traces: TraceRecord[]): { input: string | undefined; text: string; hasContent: boolean }[] {
  return traces.map((t) => {
    const c = viewTrace(t).llm[0]!;
    const first = c.input?.[0]?.parts[0] as { content?: string } | undefined;
    return { input: first?.content, text: c.text, hasContent: c.hasContent };
  });
}

describe('OTLP log records joined to their spans', () => {
  it.each([
    ['one OTLP/JSON document', () => logsDoc, 'logs.json'],
    ['JSON lines', () => logsLines, 'logs.jsonl'],
    ['JSON lines, gzip', () => gzipSync(logsLines), 'logs.jsonl.gz'],
  ])('%s, before or after the trace file', async (_name, body, name) => {
    const logsFile = join(dir, name);
    writeFileSync(logsFile, body());
    for (const files of [
      [logsFile, traceFile],
      [traceFile, logsFile],
    ]) {
      const got = contentOf(await read(files)).sort((a, b) => a.text.length - b.text.length);
      expect(got).toEqual([
        { input: 'Weather in Lisbon?', text: '', hasContent: true },
        { input: 'Weather in Lisbon?', text: 'The forecast is sunny.', hasContent: true },
      ]);
    }
  });

  it('without the logs the same calls carry no content', async () => {
    expect(contentOf(await read([traceFile])).every((c) => !c.hasContent && c.input === undefined)).toBe(true);
  });

  it('a damaged line of a logs file is named with its line; the other lines and the traces are still read', async () => {
    const bad = join(dir, 'bad-logs.jsonl');
    const [first, second] = logsLines.split('\n');
    writeFileSync(bad, `${first}\n{"resourceLogs": [oops\n${second}\n`);
    const traces: TraceRecord[] = [];
    const errors: string[] = [];
    for await (const t of readTraces([bad, traceFile], { onError: (e) => void errors.push(e.message) })) traces.push(t);
    expect(traces).toHaveLength(2);
    // The lines after the damage are still read: the first trace's choice (line 3) joined its span.
    expect(contentOf(traces).some((c) => c.text === 'The forecast is sunny.')).toBe(true);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('bad-logs.jsonl');
    expect(errors[0]).toContain('line 2');
    const err = await read([bad, traceFile]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isFaultlineError(err) && err.code).toBe('FAULTLINE_TRACE_MALFORMED');
  });
});
