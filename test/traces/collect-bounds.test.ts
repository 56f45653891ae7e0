/**
 * `faultline collect` bounded, as a process: 40 concurrent gzip bombs cost it a bounded amount of memory (it took
 * 2.8 GB with a per-request limit only), a client idling mid-request is cut by the read timeout, and on SIGTERM such a
 * client delays exit only until the drain deadline (it kept the process alive for 401 s) — while every span it
 * answered 200 for is in the file. Deadlines everywhere: the symptoms were hangs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, createBrotliCompress, createGzip } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTraces } from '../../src/traces/read';
import { FORMATS } from '../support/shared';
import { startCollect } from './collect-process';

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'faultline-bounds-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `mb` MiB of spaces compressed as a stream by `coding` (gzip about 1/230 of that, br far less). */
async function bomb(mb: number, coding: 'gzip' | 'br' = 'gzip'): Promise<Buffer> {
  const z =
    coding === 'gzip'
      ? createGzip({ level: 1 })
      : createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 1 } });
  const parts: Buffer[] = [];
  z.on('data', (c: Buffer) => parts.push(c));
  const spaces = Buffer.alloc(1024 * 1024, 0x20);
  for (let i = 0; i < mb; i++) if (!z.write(spaces)) await new Promise((r) => z.once('drain', r));
  await new Promise<void>((r) => z.end(() => r()));
  return Buffer.concat(parts);
}

const good = (): Buffer => readFileSync(join(FORMATS, 'node-exporter-otlp-http.json.request.json'));
const post = (url: string, body: Buffer, headers: Record<string, string> = {}): Promise<number> =>
  fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } }).then(
    (r) => r.status,
    () => 0, // the connection was closed on a refused body
  );

/** A client that sends the start of a request and then nothing. */
function idleClient(url: string): { closed: Promise<number>; socket: ReturnType<typeof connect> } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const t0 = Date.now();
  socket.write(
    `POST /v1/traces HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"resourceSpans":[`,
  );
  socket.on('error', () => undefined);
  return { socket, closed: new Promise((resolve) => socket.on('close', () => resolve(Date.now() - t0))) };
}

describe('faultline collect, bounded', () => {
  // gzip (what OTLP exporters send): refused by its size trailer once the whole body is in, before the rest is
  // decoded, so what was decoded by then is all it costs (about 40 MB over the idle process). brotli declares no
  // size: the budget (2 × the 64 MiB body limit) bounds the decoded bytes held at once, whatever the number of
  // requests, and refused bodies' bytes are garbage until V8 frees them, later on Node 24 than on Node 20 (measured:
  // peak 366–374 MB on Node 20, 438–447 MB on Node 24). With a per-request limit only, 40 gzip bombs took 2.8 GB.
  it.each([
    { coding: 'gzip' as const, refused: [413], peakMb: 250 },
    { coding: 'br' as const, refused: [413, 503], peakMb: 600 },
  ])(
    '40 concurrent $coding bombs: refused ($refused), memory bounded, still serving',
    async ({ coding, refused, peakMb }) => {
      const c = await startCollect(['--port', '0', '--out', join(dir, `${coding}-bombs.jsonl`)]);
      try {
        const b = await bomb(128, coding);
        const statuses = await Promise.all(
          Array.from({ length: 40 }, () => post(c.tracesUrl, b, { 'content-encoding': coding })),
        );
        expect(statuses.every((s) => refused.includes(s) || s === 0)).toBe(true);
        expect(statuses.filter((s) => s === 413).length).toBeGreaterThan(0);
        const peak = c.peakRssMb();
        if (peak !== undefined) expect(peak).toBeLessThan(peakMb);
        expect(await post(c.tracesUrl, good())).toBe(200);
      } finally {
        expect((await c.stop()).code).toBe(0);
      }
      expect(c.stdout()).toMatch(/SIGTERM: stopped after \d+ requests, 2 spans written/);
    },
    60_000,
  );

  it('a client idling mid-request is cut after the read timeout', async () => {
    const c = await startCollect(['--port', '0', '--out', join(dir, 'idle.jsonl'), '--read-timeout', '500ms']);
    try {
      const idle = idleClient(c.tracesUrl);
      const after = await Promise.race([idle.closed, new Promise<number>((r) => setTimeout(() => r(-1), 5000))]);
      expect(after).toBeGreaterThanOrEqual(400);
      expect(after).toBeLessThan(3000);
    } finally {
      await c.stop();
    }
  }, 20_000);

  it('SIGTERM with a client idling mid-request: exits at the drain deadline, every accepted span on disk', async () => {
    const out = join(dir, 'drain.jsonl');
    const c = await startCollect(['--port', '0', '--out', out, '--drain-timeout', '1s']);
    expect(await post(c.tracesUrl, good())).toBe(200);
    const idle = idleClient(c.tracesUrl);
    await new Promise((r) => setTimeout(r, 200));
    const { code, ms } = await Promise.race([
      c.stop(),
      new Promise<never>((_, rej) => setTimeout(() => rej(new Error('collect still alive 8 s after SIGTERM')), 8000)),
    ]);
    expect(code).toBe(0);
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(4000);
    expect(await idle.closed).toBeGreaterThan(0);
    expect(c.stdout()).toMatch(/SIGTERM: stopped after 2 requests, 2 spans written to .*, 1 cut/);
    const traces = [];
    for await (const t of readTraces([out])) traces.push(t);
    expect(traces.map((t) => t.spans.length)).toEqual([2]);
  }, 20_000);
});
