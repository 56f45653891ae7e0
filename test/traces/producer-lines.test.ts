/**
 * Trace and logs files as producers write them: one export per line, a first line of any length (past the 64 KiB
 * head the format is sniffed from), and a damaged or 50,000-deep line anywhere, first included. What is valid is
 * read; what is not is named by line with a short reason; no reader recurses on the input's depth. Through the
 * library readers and the real CLI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { readTraces } from '../../src/traces/read';
import type { FaultlineInputError } from '../../src/errors';
import { LogJoin } from '../../src/traces/readers/otlp-logs';
import { built, ROOT } from './dist';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'faultline-lines-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TRACE = 'ab'.repeat(16);

function span(i: number, attrs = `[{"key":"gen_ai.request.model","value":{"stringValue":"gpt-4o"}}]`): string {
  const start = 1_700_000_000_000_000_000n + BigInt(i) * 1_000_000_000n;
  return `{"traceId":"${TRACE}","spanId":"${i.toString(16).padStart(16, '0')}","name":"chat gpt-4o","kind":3,"startTimeUnixNano":"${start}","endTimeUnixNano":"${start + 500_000_000n}","attributes":${attrs}}`;
}
const exportLine = (s: string): string =>
  `{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":{"name":"p"},"spans":[${s}]}]}]}`;
/** An AnyValue nested `depth` arrays deep, built as text (JSON.stringify itself would overflow). */
const deepValue = (depth: number): string =>
  '{"arrayValue":{"values":['.repeat(depth) + '{"stringValue":"leaf"}' + ']}}'.repeat(depth);
const bigAttr = `[{"key":"gen_ai.prompt.0.content","value":{"stringValue":"${'x'.repeat(100 * 1024)}"}}]`;

function file(name: string, content: string | Buffer): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

async function read(path: string): Promise<{ spans: string[]; errors: string[] }> {
  const spans: string[] = [];
  const errors: string[] = [];
  for await (const t of readTraces([path], { onError: (e: FaultlineInputError) => errors.push(e.message) }))
    spans.push(...t.spans.map((s) => s.spanId));
  return { spans: spans.sort(), errors };
}

const ids = (...n: number[]): string[] => n.map((i) => i.toString(16).padStart(16, '0'));

describe('JSON lines by content, not by the first line’s size', () => {
  it('a 100 KB first line then more lines: every line read, plain and gzip', async () => {
    const text = [exportLine(span(1, bigAttr)), exportLine(span(2)), exportLine(span(3))].join('\n') + '\n';
    expect(text.indexOf('\n')).toBeGreaterThan(64 * 1024);
    for (const p of [file('long.jsonl', text), file('long.jsonl.gz', gzipSync(text))]) {
      expect(await read(p)).toEqual({ spans: ids(1, 2, 3), errors: [] });
    }
  });

  it('a first line nested 50,000 deep: that line is named with a short reason, the rest are read', async () => {
    const p = file(
      'deep.jsonl',
      [
        exportLine(span(1, `[{"key":"deep","value":${deepValue(50_000)}}]`)),
        exportLine(span(2)),
        exportLine(span(3)),
      ].join('\n') + '\n',
    );
    const { spans, errors } = await read(p);
    expect(spans).toEqual(ids(2, 3));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/line 1: .*nested deeper than 128 levels/);
    expect(errors[0]).not.toMatch(/call stack/);
  });

  it('a damaged (cut) first line, a deep plain attribute in a span-record line, a deep last line: each named, the rest read', async () => {
    const deepPlain = '['.repeat(50_000) + ']'.repeat(50_000);
    const lines = [
      exportLine(span(1, bigAttr)).slice(0, 70_000), // cut inside the 100 KB string
      exportLine(span(2)),
      `{"traceId":"${TRACE}","spanId":"${ids(3)[0]}","name":"x","start":1,"end":2,"attributes":{"a":${deepPlain}}}`,
      exportLine(span(4)),
      exportLine(span(5, `[{"key":"deep","value":${deepValue(50_000)}}]`)),
    ];
    const { spans, errors } = await read(file('damaged.jsonl', lines.join('\n') + '\n'));
    expect(spans).toEqual(ids(2, 4));
    expect(errors.map((e) => /line (\d+)/.exec(e)?.[1])).toEqual(['1', '3', '5']);
    for (const e of errors) expect(e.length).toBeLessThan(300);
  });

  it('a pretty-printed document is still one document', async () => {
    const doc = JSON.stringify(JSON.parse(exportLine(span(1))), null, 2);
    expect(await read(file('pretty.json', doc))).toEqual({ spans: ids(1), errors: [] });
  });
});

describe('OTLP logs one export per line (instrumentation-openai’s batch exporter)', () => {
  const logLine = (i: number, body: string): string =>
    `{"resourceLogs":[{"resource":{"attributes":[]},"scopeLogs":[{"scope":{"name":"openai"},"logRecords":[{"timeUnixNano":"1","traceId":"${TRACE}","spanId":"${ids(i)[0]}","eventName":"gen_ai.choice","body":${body}}]}]}]}`;

  it('a first line over 64 KiB and a first line nested 50,000 deep: the other lines are read, the bad one named', async () => {
    const big = file(
      'logs-big.jsonl',
      [logLine(1, `{"stringValue":"${'y'.repeat(73_000)}"}`), logLine(2, '{"stringValue":"ok"}')].join('\n') + '\n',
    );
    const join1 = new LogJoin();
    await join1.readFile(big);
    expect(join1.size).toBe(2);
    const deep = file(
      'logs-deep.jsonl',
      [logLine(1, deepValue(50_000)), logLine(2, '{"stringValue":"ok"}')].join('\n') + '\n',
    );
    const join2 = new LogJoin();
    const problems: string[] = [];
    await join2.readFile(deep, (e) => problems.push(`${e.path}: ${e.problem}`));
    expect(join2.size).toBe(1);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^line 1: .*nested deeper than 128 levels/);
  });
});

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  built('src/cli/index');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'faultline.js'), ...args],
      { timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('the CLI', () => {
  it('diagnose reads the lines after a first line nested 50,000 deep and names that line', async () => {
    const p = file(
      'cli-deep.jsonl',
      [
        exportLine(span(1, `[{"key":"deep","value":${deepValue(50_000)}}]`)),
        exportLine(span(2)),
        exportLine(span(3)),
      ].join('\n') + '\n',
    );
    const r = await cli(['diagnose', p]);
    expect(r.stderr).toMatch(/line 1: .*nested deeper than 128 levels/);
    expect(r.stderr).not.toMatch(/call stack|\n\s+at /);
    expect(r.stdout).toContain(TRACE);
  }, 90_000);

  it('diagnose reads a file whose first line is 100 KB', async () => {
    const p = file('cli-long.jsonl', [exportLine(span(1, bigAttr)), exportLine(span(2))].join('\n') + '\n');
    const r = await cli(['diagnose', p]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(TRACE);
  }, 90_000);
});
