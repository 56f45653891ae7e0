/**
 * `faultline collect --diagnose` when diagnosis falls behind: its diagnoses go to a pipe nobody reads yet, so they
 * back up. While more spans wait for diagnosis than --max-open-spans, a request is refused with 503 and Retry-After
 * (nothing of it stored); once the pipe is read again the same request is taken, and every trace is diagnosed once.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startCollect, type CollectProcess } from './collect-process';

let dir: string;
let collect: CollectProcess | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'faultline-behind-'));
});
afterEach(async () => {
  if (collect !== undefined && collect.child.exitCode === null) await collect.stop('SIGKILL');
  collect = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');

/** An OTLP/JSON request of `traces` traces (ids from `first`), each an agent span and two chat calls. */
function request(first: number, traces: number): string {
  const spans = [];
  for (let t = first; t < first + traces; t++) {
    const traceId = hex(t + 1, 32);
    const root = hex(t * 4 + 1, 16);
    const at = 1_793_491_200_000_000_000n + BigInt(t) * 10_000_000_000n;
    spans.push({
      traceId,
      spanId: root,
      name: 'invoke_agent planner',
      kind: 1,
      startTimeUnixNano: String(at),
      endTimeUnixNano: String(at + 3_000_000_000n),
      attributes: [
        { key: 'gen_ai.operation.name', value: { stringValue: 'invoke_agent' } },
        { key: 'gen_ai.agent.name', value: { stringValue: 'planner' } },
      ],
      status: {},
    });
    for (let c = 0; c < 2; c++) {
      const start = at + BigInt(c + 1) * 1_000_000_000n;
      spans.push({
        traceId,
        spanId: hex(t * 4 + 2 + c, 16),
        parentSpanId: root,
        name: 'chat gpt-4o-mini',
        kind: 3,
        startTimeUnixNano: String(start),
        endTimeUnixNano: String(start + 500_000_000n),
        attributes: [
          { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
          { key: 'gen_ai.request.model', value: { stringValue: 'gpt-4o-mini' } },
          { key: 'gen_ai.response.finish_reasons', value: { arrayValue: { values: [{ stringValue: 'stop' }] } } },
        ],
        status: {},
      });
    }
  }
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'behind' } }] },
        scopeSpans: [{ scope: { name: 'app' }, spans }],
      },
    ],
  });
}

async function post(url: string, body: string): Promise<{ status: number; retryAfter: string | null; text: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), text: await res.text() };
}

describe('faultline collect --diagnose, diagnosis behind', () => {
  it('refuses requests with 503 while too many spans wait for diagnosis, takes them once it catches up, loses nothing', async () => {
    const fifo = join(dir, 'diagnoses.fifo');
    execFileSync('mkfifo', [fifo]);
    const out = join(dir, 'traces.jsonl');
    // The reader is opened first (the collector's open of the pipe waits for one) and reads nothing for now.
    const reader = open(fifo, 'r');
    collect = await startCollect([
      '--port',
      '0',
      '--out',
      out,
      '--diagnose',
      '--diagnoses',
      fifo,
      '--trace-idle',
      '60s',
      '--max-open-spans',
      '30',
    ]);
    const fh = await reader;
    const PER = 10;
    const sent: { first: number; status: number }[] = [];
    let refused: { status: number; retryAfter: string | null; text: string } | undefined;
    // Each request of 30 spans pushes the traces before it out of the assembler (past --max-open-spans) into
    // diagnosis, whose lines fill the pipe (64 KB) and then the stream's buffer.
    for (let first = 0; refused === undefined; first += PER) {
      expect(first, 'a request was refused before 1,000 traces').toBeLessThan(1000);
      const r = await post(collect.tracesUrl, request(first, PER));
      sent.push({ first, status: r.status });
      if (r.status !== 200) refused = r;
    }
    expect(refused).toMatchObject({ status: 503, retryAfter: '1' });
    expect(refused.text).toContain('diagnosis is behind');
    const again = await post(collect.tracesUrl, request(sent.at(-1)!.first, PER));
    expect(again.status).toBe(503);

    // The pipe is read again: diagnosis catches up, and the refused request is taken when its exporter retries.
    let diagnosesText = '';
    const reading = (async () => {
      for await (const chunk of fh.createReadStream()) diagnosesText += chunk.toString();
    })();
    const last = sent.at(-1)!.first;
    const deadline = Date.now() + 15_000;
    for (;;) {
      const r = await post(collect.tracesUrl, request(last, PER));
      if (r.status === 200) break;
      expect(r.status).toBe(503);
      expect(Date.now(), 'the refused request was taken again within 15 s').toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await collect.stop('SIGTERM')).toMatchObject({ code: 0 });
    await reading;

    const traces = last + PER;
    const stored = readFileSync(out, 'utf8').trim().split('\n');
    // Every request answered 200 is stored once; the refused ones not at all.
    expect(stored).toHaveLength(sent.filter((s) => s.status === 200).length + 1);
    const diagnosed = diagnosesText
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { traceId: string }).traceId);
    expect(diagnosed.sort()).toEqual(Array.from({ length: traces }, (_, t) => hex(t + 1, 32)).sort());
  }, 60_000);
});
