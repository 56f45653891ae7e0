/**
 * `faultline collect` as a command: prints where it listens and writes, stores what an exporter sends, and on
 * SIGTERM flushes, reports and returns 0. Bad options are coded input errors.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { command } from '../../src/cli/commands/collect';
import { readTraces } from '../../src/traces/read';
import { FORMATS } from '../support/shared';

const dirs: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function until<T>(fn: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('faultline collect', () => {
  it('listens, writes JSON lines, and on SIGTERM flushes and exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'faultline-collect-cmd-'));
    dirs.push(dir);
    const out = join(dir, 'run.jsonl');
    let printed = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed += String(chunk);
      return true;
    });
    const running = command.run({ options: { port: '0', out }, positionals: [] });
    const url = await until(() => /on (http:\/\/127\.0\.0\.1:\d+\/v1\/traces)/.exec(printed)?.[1]);
    expect(printed).toContain(`appending JSON lines to ${out}`);

    const body = readFileSync(FORMATS + '/node-exporter-otlp-proto.request.bin');
    const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/x-protobuf' } });
    expect(res.status).toBe(200);

    process.emit('SIGTERM');
    expect(await running).toBe(0);
    expect(printed).toMatch(/SIGTERM: stopped after 1 request, 2 spans written to /);
    const traces = [];
    for await (const t of readTraces([out])) traces.push(t);
    expect(traces).toHaveLength(1);
    expect(traces[0]!.spans.map((s) => s.name).sort()).toEqual(['agent.run', 'chat gpt-x']);
  });

  it('rejects a bad port with a coded input error', async () => {
    await expect(command.run({ options: { port: 'http' }, positionals: [] })).rejects.toMatchObject({
      code: 'FAULTLINE_USAGE',
      message: '--port: expected a port number 0-65535, got "http"',
    });
  });

  it('a port in use is a clear input error', async () => {
    const { createServer } = await import('node:net');
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), 'faultline-collect-cmd-'));
    dirs.push(dir);
    try {
      await expect(
        command.run({ options: { port: String(port), out: join(dir, 'x.jsonl') }, positionals: [] }),
      ).rejects.toMatchObject({
        code: 'FAULTLINE_USAGE',
        message: `port ${port} on 127.0.0.1 is already in use (pass another --port)`,
      });
    } finally {
      blocker.close();
    }
  });
});
