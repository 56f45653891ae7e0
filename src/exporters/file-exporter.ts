/**
 * OTLP/JSON-lines file exporter: each export appends one ExportTraceServiceRequest as one JSON line, the format the
 * OpenTelemetry Collector's file exporter writes (and faultline's trace readers accept).
 *
 * - Writes are synchronous, so spans handed over while the process exits (`process.exit`, an uncaught exception)
 *   are on disk before it is gone.
 * - No torn line: a batch is written whole or not at all (a failed write is cut back to where it started), and a
 *   file whose last line was cut short by an earlier crash gets a newline first, so that line stays alone.
 * - A path that cannot be written gets one line on stderr saying so (spans are not recorded); the process is never
 *   held up by it. Missing directories are created by the CLI's `ensureDir` (src/report/output.ts), one level at
 *   a time: Node 20's `mkdirSync(…, { recursive })` never returns for a path under /proc.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
// The JSON serializer alone: the package's index also loads the protobuf serializers (about 100 more modules).
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer/build/src/trace/json/trace';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { closeSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ensureDir } from '../report/output';

export const DEFAULT_TRACES_FILE = 'faultline-traces.jsonl';

export interface FileSpanExporterOptions {
  /** Path to append to; relative paths resolve against the working directory. Default ./faultline-traces.jsonl. */
  path?: string;
  /** Print `faultline: writing traces to <abs path>` on stderr at the first write. Default true. */
  announce?: boolean;
}

const NEWLINE = 0x0a;

function describe(err: unknown): string {
  // ensureDir's error carries the system's as its cause.
  const e = ((err as { cause?: unknown }).cause ?? err) as NodeJS.ErrnoException;
  // "ENOENT: no such file or directory, open '/proc/x'" → "ENOENT: no such file or directory": the path is said once.
  return e?.code ? `${e.code}: ${e.message.replace(/^[A-Z]+: /, '').replace(/, \w+( '.*')?$/, '')}` : String(err);
}

export class FileSpanExporter implements SpanExporter {
  readonly path: string;
  #announce: boolean;
  #shutdown = false;
  #opened = false;
  #reported = false;

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
      this.#append(bytes);
      if (this.#announce) {
        this.#announce = false;
        process.stderr.write(`faultline: writing traces to ${this.path}\n`);
      }
      resultCallback({ code: ExportResultCode.SUCCESS });
    } catch (error) {
      if (!this.#reported) {
        this.#reported = true;
        process.stderr.write(
          `faultline: ✖ cannot write traces to ${this.path} (${describe(error)}): spans are not recorded; set FAULTLINE_TRACES_FILE to a writable path\n`,
        );
      }
      resultCallback({ code: ExportResultCode.FAILED, error: error as Error });
    }
  }

  /** One line, written whole: on a failed or short write the file is cut back to its previous end. */
  #append(bytes: Uint8Array): void {
    if (!this.#opened) ensureDir(dirname(this.path), 'the trace file directory');
    const fd = openSync(this.path, 'a+');
    try {
      const size = fstatSync(fd).size;
      let lead = false;
      if (!this.#opened && size > 0) {
        const last = Buffer.alloc(1);
        lead = readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== NEWLINE;
      }
      this.#opened = true;
      const data = Buffer.concat(lead ? [Buffer.of(NEWLINE), bytes, Buffer.of(NEWLINE)] : [bytes, Buffer.of(NEWLINE)]);
      let written = 0;
      try {
        while (written < data.length) written += writeSync(fd, data, written);
      } catch (err) {
        if (written > 0) {
          try {
            ftruncateSync(fd, size);
          } catch {
            // not a regular file (a pipe, /dev/stdout): nothing to cut back
          }
        }
        throw err;
      }
    } finally {
      closeSync(fd);
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
