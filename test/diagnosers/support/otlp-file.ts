/** Write SDK spans as an OTLP/JSON ExportTraceServiceRequest, with the real serializer the OTLP/HTTP exporter uses. */
import { writeFileSync } from 'node:fs';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

export function otlpJson(spans: ReadableSpan[]): string {
  return Buffer.from(JsonTraceSerializer.serializeRequest(spans)!).toString('utf8');
}

export function writeOtlpJson(path: string, spans: ReadableSpan[]): void {
  writeFileSync(path, otlpJson(spans));
}
