/**
 * The child process that sends the OTLP spans a process still held when it exited (see exit-safe.ts). A process in
 * `process.exit` or dying of an uncaught exception cannot wait for a socket, but it can wait for a child: the parent
 * runs this with `spawnSync`, writes the serialised request on stdin (a JSON header line, then the body), and waits
 * at most the header's deadline. The request goes through the OTLP exporter's own HTTP delegate, so the endpoint,
 * headers, compression, TLS and retry settings are the same as the parent's exporter reads from OTEL_EXPORTER_OTLP_*.
 * Exit code 0 when the endpoint accepted it.
 */
import { createRequire } from 'node:module';
import type * as NodeHttp from '@opentelemetry/otlp-exporter-base/node-http';

export interface ExitSendHeader {
  /** Explicit traces URL (from the configuration file); undefined: the exporter's own variables decide. */
  url?: string;
  headers?: Record<string, string>;
  contentType: string;
  timeoutMillis: number;
  spans: number;
}

function main(): void {
  const chunks: Buffer[] = [];
  process.stdin.on('data', (c: Buffer) => chunks.push(c));
  process.stdin.on('end', () => {
    const input = Buffer.concat(chunks);
    const nl = input.indexOf(0x0a);
    const header = JSON.parse(input.subarray(0, nl).toString('utf8')) as ExitSendHeader;
    const body = input.subarray(nl + 1);
    // The delegate comes with the OTLP trace exporter, which may keep its own copy of otlp-exporter-base.
    const fromExporter = createRequire(require.resolve('@opentelemetry/exporter-trace-otlp-proto'));
    const http = fromExporter('@opentelemetry/otlp-exporter-base/node-http') as typeof NodeHttp;
    const options = http.convertLegacyHttpOptions(
      { ...(header.url ? { url: header.url } : {}), ...(header.headers ? { headers: header.headers } : {}) },
      'TRACES',
      'v1/traces',
      { 'Content-Type': header.contentType },
    );
    // OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT when it is shorter than what the exiting process waits for.
    options.timeoutMillis = Math.min(options.timeoutMillis, header.timeoutMillis);
    const delegate = http.createOtlpHttpExportDelegate(
      options,
      { serializeRequest: (b: Uint8Array) => b, deserializeResponse: () => ({}) },
      'faultline_exit_span_exporter',
      { name: 'span', countItems: () => header.spans },
      undefined,
    );
    delegate.export(body, (result) => {
      process.exitCode = result.code === 0 ? 0 : 1;
    });
  });
}

if (require.main === module) main();
