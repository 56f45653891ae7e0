/**
 * Do no harm: with faultline enabled and no fault planned, what the application receives is byte-identical to what
 * the server sent, for every corpus record, through the real SDKs and raw fetch; the request the server gets is
 * byte-identical to what the app sent. The conformance tier; encoded bodies, malformed JSON, truncated SSE, HTML
 * error pages and a 10 MB body are unusual-bodies.test.ts.
 */
import Anthropic from '@anthropic-ai/sdk';
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { loadCorpus, recordBody, type CorpusRecord } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

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

beforeAll(async () => {
  diag.setLogger(capture, DiagLogLevel.WARN);
  otel = setupOtel();
  inst = new FaultlineInstrumentation({ captureMessageContent: true });
  inst.enable();
  server = await startLlmServer();
});

afterAll(async () => {
  inst.disable();
  await server.close();
  await otel.shutdown();
  diag.disable();
});

beforeEach(() => {
  problems.length = 0;
});

async function rawFetch(path: string, request: unknown): Promise<{ status: number; text: string; sent: string }> {
  const sent = JSON.stringify(request);
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: sent,
  });
  return { status: res.status, text: await res.text(), sent };
}

function served(rec: CorpusRecord): void {
  server.respond(() => corpusReply(rec));
}

describe.each([
  ['openai-chat.jsonl', '/v1/chat/completions'],
  ['openai-chat-stream.jsonl', '/v1/chat/completions'],
  ['anthropic-messages.jsonl', '/v1/messages'],
] as const)('%s', (file, path) => {
  const records = loadCorpus(file);

  it(`raw fetch: every record arrives unchanged (${records.length} records)`, async () => {
    let spans = 0;
    for (const rec of records) {
      served(rec);
      otel.exporter.reset();
      const before = server.requests.length;
      const r = await rawFetch(path, rec.request);
      expect(r.status).toBe(rec.status);
      expect(r.text).toBe(recordBody(rec));
      expect(server.requests[before]?.body.toString()).toBe(r.sent);
      spans += ours(await otel.waitForSpans((s) => ours(s).length === 1)).length;
    }
    expect(spans).toBe(records.length);
    expect(problems).toEqual([]);
  });

  it('real SDK client: every record arrives unchanged', async () => {
    const openai = new OpenAI({ apiKey: 'k', baseURL: `${server.url}/v1`, maxRetries: 0 });
    const anthropic = new Anthropic({
      apiKey: 'k',
      baseURL: server.url,
      maxRetries: 0,
      openTelemetry: false,
      timeout: 600_000,
    });
    for (const rec of records) {
      served(rec);
      const call = file.startsWith('openai')
        ? openai.chat.completions.create(rec.request as never)
        : anthropic.messages.create(rec.request as never);
      if (rec.status >= 400) {
        const err = (await call.then(
          () => undefined,
          (e: unknown) => e,
        )) as { status?: number; error?: unknown };
        expect(err?.status).toBe(rec.status);
        continue;
      }
      const res = await call.asResponse();
      expect(await res.text()).toBe(recordBody(rec));
    }
    expect(problems).toEqual([]);
  });
});
