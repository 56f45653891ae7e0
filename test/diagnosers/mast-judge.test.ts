/**
 * The MAST judge (issue 28): an LLM's reading of a trace's dialogue for the modes no span fact shows, through the
 * LLM diagnoser's endpoint settings, its answer locked to a schema. Against a scripted OpenAI-compatible server on
 * 127.0.0.1: what the model is shown (the dialogue fenced as untrusted data, the modes), findings mapped to the line's
 * span and agent, a reply off the schema or out of range retried with the reason, a failing endpoint an error (never
 * "no finding"), a trace without content not observable with the model never called, and `faultline monitor --judge`.
 */
import { writeFileSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMastJudge, dialogue, JUDGED_MODES } from '../../src/diagnosers/mast-judge';
import { isFaultlineError } from '../../src/errors';
import type { TraceRecord } from '../../src/traces/model';
import { runNode } from '../support/child';
import { ROOT, built } from '../traces/dist';
import { TraceBuilder } from './support/builder';
import { otlpJson } from './support/otlp-file';

type Script = { status?: number; content?: string };
let server: Server;
let baseUrl = '';
let script: Script[] = [];
let seen: Array<{
  messages: Array<{ role: string; content: string }>;
  response_format?: { json_schema?: { name?: string } };
}> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let data = '';
    req.on('data', (c: Buffer) => (data += c.toString()));
    req.on('end', () => {
      seen.push(JSON.parse(data) as (typeof seen)[number]);
      const next = script.shift() ?? { status: 500 };
      res.writeHead(next.status ?? 200, { 'content-type': 'application/json' });
      res.end(
        next.status && next.status >= 400
          ? '{"error":{"message":"overloaded","type":"server_error"}}'
          : JSON.stringify({
              id: 'chatcmpl-j',
              object: 'chat.completion',
              created: 1790000000,
              model: 'judge',
              choices: [
                { index: 0, message: { role: 'assistant', content: next.content ?? '' }, finish_reason: 'stop' },
              ],
            }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  script = [];
  seen = [];
});

const b = new TraceBuilder();
/** A planner asks for a weather check; the worker says it will verify the booking and then answers without doing so. */
function withContent(): TraceRecord {
  return b.trace((t) => {
    t.agent('planner', (a) =>
      a.chat({
        input: 'Book a room in Lisbon for 2 nights and confirm the price.',
        text: 'Worker: book the room and confirm the total price before replying.',
      }),
    );
    t.agent('worker', (a) =>
      a.chat({
        input: 'Book the room and confirm the total price.',
        text: 'I will check the price against the hotel tool first. Booked. The total is 240 EUR.',
      }),
    );
  });
}
const withoutContent = () => b.trace((t) => t.agent('worker', (a) => a.chat({})));
const answer = (findings: unknown[]) => JSON.stringify({ findings });
const judge = () => createMastJudge({ baseUrl, retries: 1, backoffMs: 1 });

describe('the MAST judge', () => {
  it('shows the model the dialogue as fenced untrusted data and the judged modes; maps a finding to its line', async () => {
    const trace = withContent();
    script = [
      {
        content: answer([
          {
            mode: '3.2',
            step: 2,
            confidence: 0.7,
            evidence: 'The worker says it will check the price and replies without a tool run.',
          },
        ]),
      },
    ];
    const r = await judge().judge(trace);
    expect(r).toMatchObject({
      observable: true,
      findings: [{ mode: '3.2', name: 'No or incomplete verification', step: 2, agent: 'worker', confidence: 0.7 }],
    });
    const lines = dialogue(trace);
    expect(r.observable && r.findings[0]!.spanId).toBe(lines[1]!.spanId);
    const [system, user] = seen[0]!.messages;
    for (const id of Object.keys(JUDGED_MODES)) expect(system!.content).toContain(`${id} `);
    expect(system!.content).toContain('UNTRUSTED DATA');
    const fence = /"(=====DIALOGUE-[0-9a-f]{16}=====)"/.exec(user!.content)![1]!;
    const body = user!.content.split(fence)[2]!; // instructions, [1] the fence mention, [2] the data
    expect(body).toContain('2. LLM call by worker; last input (user): "Book the room and confirm the total price."');
    expect(body).toContain('output: "I will check the price against the hotel tool first.');
    expect(seen[0]!.response_format?.json_schema?.name).toBe('mast_findings');
  });

  it('no finding is an answer too', async () => {
    script = [{ content: answer([]) }];
    expect(await judge().judge(withContent())).toEqual({ observable: true, findings: [] });
  });

  it('retries a reply off the schema or out of range, telling the model why', async () => {
    script = [
      { content: answer([{ mode: '1.3', step: 1, confidence: 0.9, evidence: 'a loop' }]) },
      { content: answer([{ mode: '2.6', step: 9, confidence: 0.5, evidence: 'x' }]) },
    ];
    await expect(judge().judge(withContent())).rejects.toThrow(
      /the MAST judge failed after 2 attempts: step 9 is out of range: the dialogue has 2 lines/,
    );
    expect(seen[1]!.messages.at(-1)!.content).toMatch(
      /^Your previous reply was rejected \(reply does not match the schema: .*mode/,
    );
  });

  it('a failing endpoint is an error for the trace, never an empty verdict', async () => {
    script = [{ status: 503 }, { status: 503 }];
    await expect(judge().judge(withContent())).rejects.toThrow(/HTTP 503 from the endpoint/);
  });

  it('a trace without captured content is not observable, and the model is not asked', async () => {
    const r = await judge().judge(withoutContent());
    expect(r).toEqual({ observable: false, reason: expect.stringContaining('no message content was captured') });
    expect(seen).toHaveLength(0);
  });

  it('needs an endpoint: a usage error naming the setting', () => {
    let err: unknown;
    try {
      createMastJudge({ env: {} });
    } catch (e) {
      err = e;
    }
    expect(isFaultlineError(err) && err.message).toMatch(
      /the MAST judge \(--judge\) needs an OpenAI-compatible endpoint: set FAULTLINE_LLM_BASE_URL/,
    );
  });
});

describe('faultline monitor --judge', () => {
  const BIN = join(ROOT, 'bin', 'faultline.js');
  beforeAll(() => void built('src/cli/index'), 180_000);

  /** The traces as the OTLP/JSON export of their spans (what the builder's SDK exported). */
  function traceFile(traces: TraceRecord[]): string {
    const dir = mkdtempSync(join(tmpdir(), 'faultline-judge-'));
    const file = join(dir, 'traces.json');
    const ids = new Set(traces.map((t) => t.traceId));
    writeFileSync(file, otlpJson(b.finished.filter((s) => ids.has(s.spanContext().traceId))));
    return file;
  }

  it('lists the judge’s findings apart, marked (judge); a trace without content says not observable', async () => {
    script = [
      {
        content: answer([
          { mode: '2.6', step: 2, confidence: 0.8, evidence: 'Says it will check the price, does not.' },
        ]),
      },
    ];
    const file = traceFile([withContent(), withoutContent()]);
    const r = await runNode([BIN, 'monitor', file, '--judge'], {
      env: { FAULTLINE_LLM_BASE_URL: baseUrl, NO_COLOR: '1' },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("MAST judge (an LLM's reading of the dialogue):");
    expect(r.stdout).toMatch(
      /2\.6 Reasoning-action mismatch at line 2 \(worker\) {2}80 % {2}Says it will check the price, does not\. {2}\(judge\)/,
    );
    expect(r.stdout).toMatch(/not observable: no message content was captured/);
    expect(seen).toHaveLength(1);
  });

  it('JSON output carries the verdict per trace; a failed judgement exits 2 and says why', async () => {
    script = [{ status: 500 }, { status: 500 }, { status: 500 }];
    const file = traceFile([withContent()]);
    const r = await runNode([BIN, 'monitor', file, '--judge', '--format', 'json'], {
      env: { FAULTLINE_LLM_BASE_URL: baseUrl },
    });
    expect(r.code).toBe(2);
    expect((JSON.parse(r.stdout) as { traces: Array<{ judge: { error: string } }> }).traces[0]!.judge.error).toMatch(
      /failed after 3 attempts: HTTP 500/,
    );
    expect(r.stderr).toMatch(/✖ trace [0-9a-f]{32}: the MAST judge failed/);
  });

  it('without an endpoint: a clear error, exit 2, no stack trace', async () => {
    const file = traceFile([withContent()]);
    const r = await runNode([BIN, 'monitor', file, '--judge'], { env: {} });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/FAULTLINE_LLM_BASE_URL/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
