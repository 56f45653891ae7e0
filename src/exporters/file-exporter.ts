/**
 * OTLP/JSON-lines file exporter: each export appends one ExportTraceServiceRequest as one JSON line, the format the
 * OpenTelemetry Collector's file exporter writes (and `faultline` trace readers accept). Writes are synchronous
 * appends so nothing is lost when the process exits right after a flush.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export const DEFAULT_TRACES_FILE = 'faultline-traces.jsonl';

export interface FileSpanExporterOptions {
  /** Path to append to; relative paths resolve against the working directory. Default ./faultline-traces.jsonl. */
  path?: string;
  /** Print `faultline: writing traces to <abs path>` on stderr at the first write. Default true. */
  announce?: boolean;
}

export class FileSpanExporter implements SpanExporter {
  readonly path: string;
  #announce: boolean;
  #shutdown = false;

  constructor(options: FileSpanExporterOptions = {}) {
    this.path = resolve(options.path ?? DEFAULT_TRACES_FILE);
    this.#announce = options.announce ?? true;
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    if (this.#shutdown) {
      resultCallback({ code: ExportResultCode.FAILED, error: new Error('FileSpanExporter is shut down') });
      return;
    }
    if (spans.length === 0) {
      resultCallback({ code: ExportResultCode.SUCCESS });
      return;
    }
    try {
      const bytes = JsonTraceSerializer.serializeRequest(spans);
      if (!bytes) throw new Error('OTLP JSON serialisation produced nothing');
      if (this.#announce) {
        this.#announce = false;
        mkdirSync(dirname(this.path), { recursive: true });
        process.stderr.write(`faultline: writing traces to ${this.path}\n`);
      }
      appendFileSync(this.path, Buffer.concat([Buffer.from(bytes), Buffer.from('\n')]));
      resultCallback({ code: ExportResultCode.SUCCESS });
    } catch (error) {
      resultCallback({ code: ExportResultCode.FAILED, error: error as Error });
    }
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    this.#shutdown = true;
    return Promise.resolve();
  }
}
