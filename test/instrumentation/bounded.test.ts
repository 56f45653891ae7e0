/**
 * Bounded: a compression bomb costs faultline no more than it costs the application. The span layer decodes an
 * encoded answer as it streams, with an output bound (src/wire/decompress.ts), instead of keeping the
 * compressed copy and inflating it whole at the end: the application streams a 256 MiB gzip or brotli answer with the
 * event loop free and memory flat, and the span still ends. Real fetch, a real loopback server.
 */
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { constants, createBrotliCompress, createGzip, type Gzip, type BrotliCompress } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { loadCorpus } from '../support/corpus';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';
import { deadline } from '../support/upload-server';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
const problems: string[] = [];
const capture: DiagLogger = {
  error: (...a: unknown[]) => problems.push(a.map(String).join(' ')),
  warn: (...a: unknown[]) => problems.push(a.map(String).join(' ')),
  info: () => {},
  debug: () => {},
  verbose: () => {},
};
const rec = loadCorpus('openai-chat.jsonl').find((r) => r.status === 200 && r.tags.includes('text'))!;
const INFLATED = 256 * 1024 * 1024;

/** `head` then 1 MiB pieces of filler up to `size` bytes, compressed as it is produced (the inflated body is never in memory). */
async function bomb(
  coder: Gzip | BrotliCompress,
  head: string,
  fill: number,
  size: number,
): Promise<{ body: Buffer; inflated: number }> {
  const out: Buffer[] = [];
  coder.on('data', (b: Buffer) => out.push(b));
  const done = new Promise<void>((r) => coder.on('end', r));
  const piece = Buffer.alloc(1024 * 1024, fill);
  coder.write(head);
  let inflated = head.length;
  for (; inflated + piece.length <= size; inflated += piece.length) {
    if (!coder.write(piece)) await new Promise((r) => coder.once('drain', r));
  }
  coder.end();
  await done;
  return { body: Buffer.concat(out), inflated };
}

beforeAll(async () => {
  diag.setLogger(capture, DiagLogLevel.WARN);
  otel = setupOtel();
  inst = new FaultlineInstrumentation();
  inst.enable();
  server = await startLlmServer();
});

afterAll(async () => {
  inst.disable();
  await server.close();
  await otel.shutdown();
  diag.disable();
});

const codings = [
  ['gzip', () => createGzip({ level: 1 })],
  ['br', () => createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 1 } })],
] as const;

describe.each(codings)('a %s bomb', (encoding, coder) => {
  it.each([
    ['JSON', 'application/json', '{"id":"chatcmpl-bomb","choices":[{"message":{"content":"', 0x61],
    ['SSE', 'text/event-stream', 'data: {"choices":[{"delta":{"content":"', 0x61],
  ] as const)(
    '%s inflating to 256 MiB streams to the app with the event loop free and memory flat',
    async (_kind, type, head, fill) => {
      const { body, inflated } = await bomb(coder(), head, fill, INFLATED);
      expect(body.length).toBeLessThan(2 * 1024 * 1024);
      server.respond(() => ({ status: 200, headers: { 'content-type': type, 'content-encoding': encoding }, body }));
      otel.exporter.reset();
      problems.length = 0;
      global.gc?.();
      const rss0 = process.memoryUsage().rss;
      let peak = rss0;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      const loop = monitorEventLoopDelay({ resolution: 5 });
      loop.enable();
      let received = 0;
      try {
        const res = await fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(rec.request),
        });
        await deadline(
          (async () => {
            for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) received += chunk.length;
          })(),
          30_000,
          'reading the answer',
        );
        const spans = ours(await otel.waitForSpans((s) => ours(s).length === 1, 10_000));
        expect(spans).toHaveLength(1);
        expect(spans[0]?.attributes['faultline.response.body_bytes']).toBe(body.length);
      } finally {
        loop.disable();
        clearInterval(sampler);
      }
      expect(received).toBe(inflated);
      // Inflating it whole at the end froze the loop for seconds and took a gigabyte; streaming through a decoder that
      // stops at 32 MB costs that much at most.
      expect(loop.max / 1e6).toBeLessThan(500);
      expect((peak - rss0) / 1024 / 1024).toBeLessThan(160);
      expect(problems).toEqual([]);
    },
  );
});
