/**
 * Do no harm on the recorded Responses API, Gemini, Ollama and embeddings traffic: with faultline registered and no
 * fault planned, every record of ../shared/corpus served through the real client (and raw fetch) arrives
 * byte-identical, and the span records what the record holds — read here from the record itself, not through
 * faultline's modules — with content that validates against the GenAI semconv message schemas.
 */
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import Ajv2020 from 'ajv/dist/2020';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { loadCorpus, recordBody, type CorpusFile, type CorpusRecord } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer, type Reply } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';
import { SEMCONV_SCHEMAS } from '../support/shared';

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
const schema = (file: string) => ajv.compile(JSON.parse(readFileSync(join(SEMCONV_SCHEMAS, file), 'utf8')) as object);
const validate = { input: schema('gen-ai-input-messages.json'), output: schema('gen-ai-output-messages.json'), system: schema('gen-ai-system-instructions.json') };

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
  otel.exporter.reset();
});

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

/** The path a record was recorded on (the endpoint's path and `?alt=sse`). */
function pathOf(r: CorpusRecord): string {
  const u = new URL(r.endpoint);
  return u.pathname + u.search;
}

/** The reply for a record, with the vercel/ai payload-line fixtures re-framed as the SSE they came from. */
function replyFor(r: CorpusRecord): Reply {
  if (r.tags.includes('sse_payloads_only')) {
    const events = (r.stream ?? '').split('\n').filter((l) => l.trim() !== '').map((l) => `data: ${l}\n\n`);
    return { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events };
  }
  return corpusReply(r);
}

function bodyFor(r: CorpusRecord): string {
  const reply = replyFor(r);
  return reply.chunks ? reply.chunks.join('') : recordBody(r);
}

/** Every JSON document of a record's response: the JSON body, each SSE data payload, each stream element. */
function documents(r: CorpusRecord): Json[] {
  if (r.response !== undefined) return [obj(r.response)];
  if (r.sse !== undefined) {
    return r.sse
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trim())
      .filter((d) => d !== '[DONE]')
      .map((d) => obj(JSON.parse(d)));
  }
  if (r.framing === 'json-array') return (JSON.parse(r.stream ?? '[]') as unknown[]).map(obj);
  return (r.stream ?? '').split('\n').filter((l) => l.trim() !== '').map((l) => obj(JSON.parse(l)));
}

/** What the record holds, read from its bytes: response id, model, usage, tool-call count, a stream's terminal marker. */
interface Expected {
  id?: string;
  model?: string;
  input?: number;
  output?: number;
  tools?: number;
  done?: boolean;
}

function expectedResponses(r: CorpusRecord): Expected {
  const docs = documents(r);
  const final = r.response !== undefined ? obj(r.response) : obj(docs.find((d) => /^response\.(completed|incomplete|failed)$/.test(String(d.type)))?.response ?? docs[0]?.response);
  const usage = obj(final.usage);
  const e: Expected = { id: final.id as string | undefined, model: final.model as string | undefined };
  if (typeof usage.input_tokens === 'number') e.input = usage.input_tokens;
  if (typeof usage.output_tokens === 'number') e.output = usage.output_tokens;
  if (Array.isArray(final.output)) e.tools = final.output.filter((i) => ['function_call', 'custom_tool_call'].includes(String(obj(i).type))).length;
  if (r.response === undefined) e.done = docs.some((d) => /^response\.(completed|incomplete|failed)$/.test(String(d.type)));
  return e;
}

function checkSpan(span: ReadableSpan, e: Expected, where: string): void {
  const a = span.attributes;
  if (e.id !== undefined) expect(a['gen_ai.response.id'], where).toBe(e.id);
  if (e.model !== undefined) expect(a['gen_ai.response.model'], where).toBe(e.model);
  if (e.input !== undefined) expect(a['gen_ai.usage.input_tokens'], where).toBe(e.input);
  if (e.output !== undefined) expect(a['gen_ai.usage.output_tokens'], where).toBe(e.output);
  if (e.tools !== undefined) expect(a['faultline.response.tool_call_count'], where).toBe(e.tools);
  if (e.done !== undefined) expect(a['faultline.response.done'], where).toBe(e.done);
  for (const [kind, attr] of [['input', 'gen_ai.input.messages'], ['output', 'gen_ai.output.messages'], ['system', 'gen_ai.system_instructions']] as const) {
    const json = a[attr];
    if (json === undefined) continue;
    const ok = validate[kind](JSON.parse(json as string));
    expect(ok, `${where} ${attr}: ${ajv.errorsText(validate[kind].errors)}`).toBe(true);
  }
}

async function rawFetch(r: CorpusRecord): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server.url}${pathOf(r)}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(r.request ?? { model: r.model, input: 'x', stream: true }) });
  return { status: res.status, text: await res.text() };
}

interface Format {
  file: CorpusFile;
  expected(r: CorpusRecord): Expected;
  /** The real client's call for a record, returning the raw body it read (or its error's status). */
  viaClient?(r: CorpusRecord): Promise<string | { status?: number }>;
}

const openai = () => new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });

const FORMATS: Format[] = [
  {
    file: 'openai-responses.jsonl',
    expected: expectedResponses,
    async viaClient(r) {
      if (r.request === null) return { status: 200 }; // response-only fixture: raw fetch only
      const call = openai().responses.create(r.request as never);
      if (r.status >= 400) return call.then(() => ({}), (e: unknown) => ({ status: (e as { status?: number }).status }));
      return (await call.asResponse()).text();
    },
  },
];

describe.each(FORMATS)('$file', (format) => {
  const records = loadCorpus(format.file);

  it(`raw fetch: every record arrives unchanged and its span holds what the record holds (${records.length} records)`, async () => {
    for (const r of records) {
      server.respond(() => replyFor(r));
      otel.exporter.reset();
      const got = await rawFetch(r);
      expect(got.status, r.id).toBe(r.status ?? 200);
      expect(got.text === bodyFor(r), r.id).toBe(true);
      const spans = ours(await otel.waitForSpans((s) => ours(s).length === 1));
      expect(spans, r.id).toHaveLength(1);
      if ((r.status ?? 200) < 400) checkSpan(spans[0], format.expected(r), r.id);
      else expect(spans[0].attributes['error.type'], r.id).toBe(String(r.status));
    }
    expect(problems).toEqual([]);
  });

  it.runIf(format.viaClient !== undefined)('the real client: every record arrives unchanged', async () => {
    for (const r of records) {
      server.respond(() => replyFor(r));
      const got = await format.viaClient!(r);
      if (typeof got === 'string') expect(got === bodyFor(r), r.id).toBe(true);
      else if (r.status >= 400) expect(got.status, r.id).toBe(r.status);
    }
    expect(problems).toEqual([]);
  });
});
