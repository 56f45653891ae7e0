/**
 * OTLP export that survives the process exiting. A process in `process.exit()`, or dying of an uncaught exception
 * or an unhandled rejection, runs only synchronous code: the batch span processor's buffer and any request still in
 * flight would be lost. This exporter wraps the OTLP one and keeps every batch until the endpoint acknowledged it;
 * at exit, `sendPendingSync()` serialises what is left and sends it from a child process the exiting one waits for
 * (`spawnSync`, bounded by a deadline): a worker thread cannot start once the process is exiting, a child can.
 *
 * A batch whose request was already on the wire when the process exited may reach the endpoint twice (span ids let
 * a backend tell); a lost one cannot be told from one never sent.
 *
 * What the endpoint did not take (refused, timed out, still unanswered at the exit deadline, or the exit-time send
 * failed) goes to the `fallback` exporter instead: faultline's file exporter, which writes synchronously, so the
 * spans reach the trace file even from inside `process.exit`, in the format `faultline diagnose` reads. A refused
 * batch is written when it is refused, so nothing is held in memory for an endpoint that stays down.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { OtlpProtocol } from '../config';
import { logger } from '../diag';
import type { ExitSendHeader } from './otlp-exit-send';
import { processEnv } from '../env';

const log = logger('export');

const SENDER = join(__dirname, 'otlp-exit-send.js');

export interface ExitSafeOptions {
  protocol: OtlpProtocol;
  /** Explicit traces URL (the configuration file's); undefined: the OTEL_EXPORTER_OTLP_* variables decide. */
  url?: string;
  headers?: Readonly<Record<string, string>>;
  /** Where undelivered spans are written instead (a synchronous exporter); undefined: they are only counted. */
  fallback?: SpanExporter & { readonly path: string };
}

/** What the endpoint did not take: `lost` spans in all, `kept` of them written to `file` instead. */
export interface Undelivered {
  lost: number;
  kept: number;
  file?: string;
}

export interface ExitSendResult {
  spans: number;
  ok: boolean;
  ms: number;
}

export class ExitSafeExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  readonly #options: ExitSafeOptions;
  readonly #pending = new Set<ReadableSpan[]>();
  #failed = 0;
  #lost = 0;
  #kept = 0;
  #exiting = false;

  constructor(inner: SpanExporter, options: ExitSafeOptions) {
    this.#inner = inner;
    this.#options = options;
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.#pending.add(spans);
    // Exiting: the batch waits for sendPendingSync (an HTTP request started now would never be sent, and an
    // exporter that refuses at once, e.g. at its concurrency limit, would drop it).
    if (this.#exiting) return;
    this.#inner.export(spans, (result) => {
      this.#pending.delete(spans);
      if (result.code !== ExportResultCode.SUCCESS) {
        this.#failed += spans.length;
        this.#keep(spans);
      }
      resultCallback(result);
    });
  }

  /** Spans handed to the exporter and not yet acknowledged (or refused) by the endpoint. */
  get pendingSpans(): number {
    let n = 0;
    for (const b of this.#pending) n += b.length;
    return n;
  }

  /** Spans the endpoint refused or never answered for (the batch processor does not retry them): lost. */
  get failedSpans(): number {
    return this.#failed;
  }

  /** Spans the endpoint did not take, and how many of them the fallback file holds. */
  get undelivered(): Undelivered {
    const fallback = this.#options.fallback;
    return { lost: this.#lost, kept: this.#kept, ...(fallback ? { file: fallback.path } : {}) };
  }

  /** Write what the endpoint did not take to the fallback (synchronously: this runs inside `exit` too). */
  #keep(spans: ReadableSpan[]): void {
    this.#lost += spans.length;
    const fallback = this.#options.fallback;
    if (!fallback || spans.length === 0) return;
    try {
      fallback.export(spans, (r) => {
        if (r.code === ExportResultCode.SUCCESS) this.#kept += spans.length;
      });
    } catch (err) {
      log.error('could not write the undelivered spans to the trace file:', err);
    }
  }

  /** At the exit deadline, past which the endpoint had its time: what it still holds goes to the fallback. */
  keepPendingSync(): number {
    const spans = [...this.#pending].flat();
    this.#pending.clear();
    this.#keep(spans);
    return spans.length;
  }

  /** From now on, keep what the span processors hand over for `sendPendingSync` (the exit path). */
  holdForExit(): void {
    this.#exiting = true;
  }

  /**
   * Send every unacknowledged span now and wait for it (at most `timeoutMs`): for the `exit` path, after the span
   * processors handed their buffers over. Never throws.
   */
  sendPendingSync(timeoutMs: number): ExitSendResult {
    const t0 = Date.now();
    const spans = [...this.#pending].flat();
    this.#pending.clear();
    if (spans.length === 0) return { spans: 0, ok: true, ms: 0 };
    try {
      if (!existsSync(SENDER)) throw new Error(`${SENDER} is missing (run from the built package)`);
      const json = this.#options.protocol === 'http/json';
      const serializer = json
        ? (
            require('@opentelemetry/otlp-transformer/build/src/trace/json/trace') as typeof import('@opentelemetry/otlp-transformer/build/src/trace/json/trace')
          ).JsonTraceSerializer
        : (
            require('@opentelemetry/otlp-transformer/build/src/trace/protobuf/trace') as typeof import('@opentelemetry/otlp-transformer/build/src/trace/protobuf/trace')
          ).ProtobufTraceSerializer;
      const body = serializer.serializeRequest(spans);
      if (!body) throw new Error('OTLP serialisation produced nothing');
      const header: ExitSendHeader = {
        ...(this.#options.url ? { url: this.#options.url } : {}),
        ...(this.#options.headers ? { headers: { ...this.#options.headers } } : {}),
        contentType: json ? 'application/json' : 'application/x-protobuf',
        // The child's own request gives up before we stop waiting for the child.
        timeoutMillis: Math.max(100, timeoutMs - 500),
        spans: spans.length,
      };
      // NODE_OPTIONS may carry `--require faultline/register` (campaign runs do): the sender must not start faultline.
      const env = { ...processEnv() };
      delete env.NODE_OPTIONS;
      const r = spawnSync(process.execPath, [SENDER], {
        input: Buffer.concat([Buffer.from(JSON.stringify(header) + '\n'), body]),
        timeout: timeoutMs,
        stdio: ['pipe', 'ignore', 'ignore'],
        env,
        windowsHide: true,
      });
      const ok = r.status === 0;
      if (!ok) this.#keep(spans);
      return { spans: spans.length, ok, ms: Date.now() - t0 };
    } catch (err) {
      log.error('could not send the spans left at exit:', err);
      this.#keep(spans);
      return { spans: spans.length, ok: false, ms: Date.now() - t0 };
    }
  }

  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }

  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }
}
