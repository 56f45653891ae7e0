/**
 * Issue 29: a trace file whose one span carries a 100 MB attribute value was read, but `faultline diagnose` peaked at
 * 1.0 GB RSS (and took 38 s here): the streaming tokenizer held the unfinished string and copied it at every chunk.
 * A streamed string past the bound keeps its head and a marker; the rest is scanned and dropped as it arrives.
 *
 * The tokenizer's part is checked over every chunking (escapes and the closing quote split at any place); the CLI's
 * on a real 100 MB file, its peak RSS measured inside the child (process.resourceUsage) and its diagnosis checked.
 */
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonStreamParser, truncationMarker } from '../../src/traces/json-stream';
import { readSpans } from '../../src/traces/read';
import { MAX_STREAMED_STRING_CHARS } from '../../src/traces/readers/document';
import { cli, ensureBuilt } from '../campaign/support/bin';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function parse(text: string, chunk: number, maxStringChars: number): unknown[] {
  const docs: unknown[] = [];
  const p = new JsonStreamParser({ onDocument: (d) => docs.push(d) }, { maxStringChars });
  for (let i = 0; i < text.length; i += chunk) p.write(text.slice(i, i + chunk));
  p.end();
  return docs;
}

describe('the streaming tokenizer bounds long strings', () => {
  // Escapes around the cut and the end (\\ before the closing quote, \" inside, \u escapes), a long key, a value after.
  const value = 'ab\\"cd\\\\' + 'x'.repeat(40) + '\\u00e9\\"\\\\';
  const text = `{"${'k'.repeat(30)}": 1, "v": "${value}", "after": [true, "s\\\\"]}\n{"n": 2}`;
  const decoded = JSON.parse(`"${value}"`) as string;
  const whole = parse(text, text.length, 10);

  for (let chunk = 1; chunk <= text.length; chunk++) {
    it(`chunks of ${chunk}`, () => {
      const [doc, next] = parse(text, chunk, 10) as [Record<string, unknown>, unknown];
      const key = Object.keys(doc)[0]!;
      expect(key.startsWith('k'.repeat(10)) && key.includes('more characters not read')).toBe(true);
      const v = doc.v as string;
      expect(v.endsWith(' more characters not read]')).toBe(true);
      // The head kept is the decoded start of the value, never a broken escape.
      const head = v.slice(0, v.indexOf('…'));
      expect(decoded.startsWith(head)).toBe(true);
      expect(head.length).toBeGreaterThan(0);
      expect(doc.after).toEqual([true, 's\\']);
      expect(next).toEqual({ n: 2 });
      // The same value whatever the chunking.
      expect([doc, next]).toEqual(whole);
    });
  }

  it('strings within the bound are kept whole', () => {
    expect(parse(text, 7, 1000)).toEqual([JSON.parse(text.split('\n')[0]!), { n: 2 }]);
  });

  it('an unterminated long string is still an error', () => {
    expect(() => parse('{"v": "' + 'x'.repeat(100), 8, 10)).toThrow(/unterminated string/);
  });

  it('the marker counts what was left out', () => {
    const [doc] = parse(`{"v": "${'y'.repeat(1000)}"}`, 64, 100) as [{ v: string }];
    expect(doc.v).toBe('y'.repeat(100) + truncationMarker(900));
  });
});

/** A one-line OTLP/JSON trace file whose one span has an attribute value of `mb` MiB. */
async function bigTrace(file: string, mb: number): Promise<void> {
  const head = JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'app' } }] },
        scopeSpans: [
          {
            scope: { name: 't' },
            spans: [
              {
                traceId: '0af7651916cd43dd8448eb211c80319c',
                spanId: 'b7ad6b7169203331',
                name: 'chat gpt-4o-mini',
                kind: 3,
                startTimeUnixNano: '1700000000000000000',
                endTimeUnixNano: '1700000001000000000',
                status: { code: 2, message: 'upstream failed' },
                attributes: [
                  { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
                  { key: 'gen_ai.request.model', value: { stringValue: 'gpt-4o-mini' } },
                  { key: 'error.type', value: { stringValue: '500' } },
                  { key: 'gen_ai.input.messages', value: { stringValue: '@@BIG@@' } },
                ],
              },
            ],
          },
        ],
      },
    ],
  });
  const [before, after] = head.split('@@BIG@@') as [string, string];
  const out = createWriteStream(file);
  const block = 'lorem ipsum \\"quoted\\" '.repeat(1 << 16).slice(0, 1 << 20);
  out.write(before);
  for (let i = 0; i < mb; i++) if (!out.write(block)) await new Promise<void>((r) => out.once('drain', () => r()));
  out.write(after + '\n');
  await new Promise<void>((r, j) => out.end((e?: Error | null) => (e ? j(e) : r())));
}

describe('a 100 MB attribute value', () => {
  it('is read by the reader with a marker, the span intact', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'faultline-long-'));
    dirs.push(dir);
    const file = join(dir, 'big.jsonl');
    await bigTrace(file, 20);
    const spans = [];
    for await (const s of readSpans(file)) spans.push(s);
    expect(spans).toHaveLength(1);
    const v = spans[0]!.attributes['gen_ai.input.messages'] as string;
    expect(v.length).toBeLessThan(MAX_STREAMED_STRING_CHARS + 100);
    expect(v).toMatch(/^lorem ipsum "quoted" .*… \[\d+ more characters not read\]$/s);
    expect(spans[0]!.attributes['error.type']).toBe('500');
  });

  it('costs `faultline diagnose` a small multiple of its size, and it is diagnosed', { timeout: 60_000 }, async () => {
    ensureBuilt();
    const dir = mkdtempSync(join(tmpdir(), 'faultline-long-'));
    dirs.push(dir);
    const file = join(dir, 'big.jsonl');
    await bigTrace(file, 100);
    const rss = join(dir, 'rss.cjs');
    writeFileSync(
      rss,
      "process.on('exit', () => process.stderr.write(`maxrss ${process.resourceUsage().maxRSS}\\n`));\n",
    );
    const r = await cli(['diagnose', file, '--format', 'json'], { NODE_OPTIONS: `--require ${rss}` }, 50_000);
    expect(r.code, r.stderr).toBe(0);
    const kb = Math.max(...[...r.stderr.matchAll(/maxrss (\d+)/g)].map((m) => Number(m[1])));
    expect(kb).toBeGreaterThan(0);
    // 1.0 GB before; the bound: 3 × the 100 MiB value plus a Node baseline.
    expect(kb / 1024, r.stderr).toBeLessThan(3 * 100 + 100);
    const [d] = JSON.parse(r.stdout) as { spanId: string; faultType: string }[];
    expect(d).toMatchObject({ spanId: 'b7ad6b7169203331', faultType: 'error' });
  });
});
