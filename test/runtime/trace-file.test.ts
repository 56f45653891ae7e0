/**
 * The trace file (issue 13 Build 6 and Build 10): an unwritable path gets one clear line on stderr, never a hang at
 * exit and never spans dropped without a word; a file whose last line an earlier crash cut short gets the next batch
 * on a line of its own; a failed write is reported once and never reaches the app.
 */
import { ExportResultCode } from '@opentelemetry/core';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FileSpanExporter } from '../../src/exporters/file-exporter';
import { runNode } from '../support/child';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { DIST } from '../support/dist';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { otlpJsonSpans } from '../support/otlp-receiver';
import { setupOtel } from '../support/otel';

vi.setConfig({ testTimeout: 120_000 });

const rec = CHAT_TEXT;
const APP = `
fetch(process.env.LLM_URL + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: process.env.REQ })
  .then((r) => r.text()).then((t) => process.stdout.write(t));
`;

let server: LlmServer;
let dir: string;

beforeAll(async () => {
  server = await startLlmServer(() => corpusReply(rec));
  dir = mkdtempSync(join(tmpdir(), 'faultline-tracefile-'));
  writeFileSync(join(dir, 'app.cjs'), APP);
});
afterAll(async () => {
  await server?.close();
});

const run = (file: string) =>
  runNode(['--require', join(DIST, 'src/register.js'), join(dir, 'app.cjs')], {
    env: { LLM_URL: server.url, REQ: JSON.stringify(rec.request), FAULTLINE_TRACES_FILE: file },
    timeoutMs: 20_000, // Node 20's recursive mkdir under /proc never returns: the deadline is the test
  });

describe('an unwritable trace path', () => {
  it.each(['/proc/faultline-missing-dir/traces.jsonl', '/proc/traces.jsonl'])(
    '%s: one line on stderr, the app unchanged, no hang',
    async (file) => {
      const r = await run(file);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(JSON.stringify(rec.response));
      const ours = r.stderr.split('\n').filter((l) => l.startsWith('faultline:'));
      expect(ours).toEqual([
        `faultline: ✖ cannot write traces to ${file} (ENOENT: no such file or directory): spans are not recorded; set FAULTLINE_TRACES_FILE to a writable path`,
      ]);
      expect(r.stderr).not.toContain('This is a bug');
    },
  );
});

describe('no torn line', () => {
  it('a file whose last line a crash cut short: the next batch starts on a line of its own', async () => {
    const file = join(dir, 'torn.jsonl');
    const good = JSON.stringify({ resourceSpans: [] });
    const torn = '{"resourceSpans":[{"resource":{"attrib';
    writeFileSync(file, `${good}\n${torn}`);
    const r = await run(file);
    expect(r.code, r.stderr).toBe(0);
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines[0]).toBe(good);
    expect(lines[1]).toBe(torn);
    expect(lines.at(-1)).toBe('');
    const spans = lines.slice(2, -1).flatMap((l) => otlpJsonSpans(JSON.parse(l)));
    expect(spans.some((s) => s.name.startsWith('chat '))).toBe(true);
  });

  it('a write that fails is reported once, returns FAILED, never throws', async () => {
    const otel = setupOtel();
    const span = otel.provider.getTracer('t').startSpan('s');
    span.end();
    const [finished] = otel.spans();
    await otel.shutdown();
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const exporter = new FileSpanExporter({ path: '/dev/full' }); // every write: ENOSPC
      const results: number[] = [];
      for (let i = 0; i < 3; i++) exporter.export([finished!], (r) => results.push(r.code));
      expect(results).toEqual([ExportResultCode.FAILED, ExportResultCode.FAILED, ExportResultCode.FAILED]);
      const said = write.mock.calls.map((c) => String(c[0]));
      expect(said).toEqual([
        'faultline: ✖ cannot write traces to /dev/full (ENOSPC: no space left on device): spans are not recorded; set FAULTLINE_TRACES_FILE to a writable path\n',
      ]);
    } finally {
      write.mockRestore();
    }
  });
});
