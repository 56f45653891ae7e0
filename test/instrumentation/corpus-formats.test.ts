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
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { loadCorpus, recordBody, type CorpusFile, type CorpusRecord } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer, type Reply } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';
import { SEMCONV_SCHEMAS } from '../support/shared';

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
const schema = (file: string) => ajv.compile(JSON.parse(readFileSync(join(SEMCONV_SCHEMAS, file), 'utf8')) as object);
const validate = {
  input: schema('gen-ai-input-messages.json'),
  output: schema('gen-ai-output-messages.json'),
  system: schema('gen-ai-system-instructions.json'),
};

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
    const events = (r.stream ?? '')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => `data: ${l}\n\n`);
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
  return (r.stream ?? '')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => obj(JSON.parse(l)));
}

/** What the record holds, read from its bytes, as the span attributes that must say it. */
type Expected = Record<string, unknown>;

const put = (e: Expected, key: string, v: unknown): void => {
  if (v !== undefined && v !== null) e[key] = v;
};
const n = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

function expectedResponses(r: CorpusRecord): Expected {
  const docs = documents(r);
  const terminal = docs.find((d) => /^response\.(completed|incomplete|failed)$/.test(String(d.type)));
  const final = r.response !== undefined ? obj(r.response) : obj(terminal?.response ?? docs[0]?.response);
  const usage = obj(final.usage);
  const e: Expected = {};
  put(e, 'gen_ai.response.id', final.id);
  put(e, 'gen_ai.response.model', final.model);
  put(e, 'gen_ai.usage.input_tokens', n(usage.input_tokens));
  put(e, 'gen_ai.usage.output_tokens', n(usage.output_tokens));
  // The items the application must act on: function / custom tool calls and the tools it executes itself.
  const clientItems = [
    'function_call',
    'custom_tool_call',
    'computer_call',
    'local_shell_call',
    'shell_call',
    'apply_patch_call',
    'mcp_approval_request',
  ];
  if (Array.isArray(final.output))
    e['faultline.response.tool_call_count'] = final.output.filter(
      (i) => clientItems.includes(String(obj(i).type)) || obj(i).execution === 'client',
    ).length;
  if (r.response === undefined) e['faultline.response.done'] = terminal !== undefined;
  return e;
}

function expectedGemini(r: CorpusRecord): Expected {
  const docs = documents(r);
  const last = [...docs].reverse();
  const usage = obj(last.find((d) => d.usageMetadata !== undefined)?.usageMetadata);
  const e: Expected = {};
  put(e, 'gen_ai.response.id', last.find((d) => typeof d.responseId === 'string')?.responseId);
  put(e, 'gen_ai.response.model', last.find((d) => typeof d.modelVersion === 'string')?.modelVersion);
  if (usage.promptTokenCount !== undefined)
    e['gen_ai.usage.input_tokens'] = (n(usage.promptTokenCount) ?? 0) + (n(usage.toolUsePromptTokenCount) ?? 0);
  if (usage.candidatesTokenCount !== undefined || usage.thoughtsTokenCount !== undefined)
    e['gen_ai.usage.output_tokens'] = (n(usage.candidatesTokenCount) ?? 0) + (n(usage.thoughtsTokenCount) ?? 0);
  put(e, 'gen_ai.usage.reasoning.output_tokens', n(usage.thoughtsTokenCount));
  const parts = docs.flatMap((d) =>
    (Array.isArray(d.candidates) ? d.candidates : [])
      .map(obj)
      .filter((c) => (c.index ?? 0) === 0)
      .flatMap((c) => (Array.isArray(obj(c.content).parts) ? (obj(c.content).parts as unknown[]) : [])),
  );
  e['faultline.response.tool_call_count'] = parts.filter((p) => obj(p).functionCall !== undefined).length;
  if (r.response === undefined) e['faultline.response.done'] = true; // every recorded stream is complete
  return e;
}

function expectedOllama(r: CorpusRecord): Expected {
  const docs = documents(r);
  const done = docs.find((d) => d.done === true) ?? {};
  const e: Expected = {};
  put(e, 'gen_ai.response.model', done.model);
  put(e, 'gen_ai.usage.input_tokens', n(done.prompt_eval_count));
  put(e, 'gen_ai.usage.output_tokens', n(done.eval_count));
  e['faultline.response.tool_call_count'] = docs.reduce(
    (k, d) => k + (Array.isArray(obj(d.message).tool_calls) ? (obj(d.message).tool_calls as unknown[]).length : 0),
    0,
  );
  const text = docs
    .map((d) => (r.endpoint.endsWith('/api/chat') ? obj(d.message).content : d.response))
    .filter((t) => typeof t === 'string')
    .join('');
  e['faultline.response.output_chars'] = text.length;
  if (r.stream !== undefined) e['faultline.response.done'] = true;
  return e;
}

function expectedEmbeddings(r: CorpusRecord): Expected {
  const v = obj(r.response);
  const vectors: unknown[] = Array.isArray(v.data)
    ? v.data.map((d) => obj(d).embedding)
    : Array.isArray(v.embeddings)
      ? v.embeddings.map((x) => obj(x).values ?? x)
      : v.embedding !== undefined
        ? [obj(v.embedding).values ?? v.embedding]
        : [];
  const first = vectors[0];
  const e: Expected = { 'gen_ai.operation.name': 'embeddings', 'faultline.response.embedding_count': vectors.length };
  if (Array.isArray(first)) e['gen_ai.embeddings.dimension.count'] = first.length;
  else if (typeof first === 'string') e['gen_ai.embeddings.dimension.count'] = Buffer.from(first, 'base64').length / 4;
  put(e, 'gen_ai.usage.input_tokens', n(obj(v.usage).prompt_tokens) ?? n(obj(v.usageMetadata).promptTokenCount));
  put(e, 'gen_ai.response.model', v.model);
  return e;
}

function checkSpan(span: ReadableSpan, e: Expected, where: string): void {
  const a = span.attributes;
  for (const [key, value] of Object.entries(e)) expect(a[key], `${where} ${key}`).toEqual(value);
  for (const [kind, attr] of [
    ['input', 'gen_ai.input.messages'],
    ['output', 'gen_ai.output.messages'],
    ['system', 'gen_ai.system_instructions'],
  ] as const) {
    const json = a[attr];
    if (json === undefined) continue;
    const ok = validate[kind](JSON.parse(json as string));
    expect(ok, `${where} ${attr}: ${ajv.errorsText(validate[kind].errors)}`).toBe(true);
  }
}

async function rawFetch(r: CorpusRecord): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server.url}${pathOf(r)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(r.request ?? { model: r.model, input: 'x', stream: true }),
  });
  return { status: res.status, text: await res.text() };
}

interface Format {
  file: CorpusFile;
  expected(r: CorpusRecord): Expected;
  /** What the real client hands the application for a record (a raw body when `raw`), or undefined to skip it. */
  client?(r: CorpusRecord): Promise<unknown>;
  raw?: boolean;
}

const openai = () => new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
const ollama = () => new Ollama({ host: server.url });
const genai = async () => {
  const { GoogleGenAI } = await import('@google/genai');
  return new GoogleGenAI({ apiKey: 'test-key', httpOptions: { baseUrl: server.url } });
};
/** An SDK error as the application sees it (class, status, message). */
const failure = (e: unknown) => ({
  error: (e as Error).constructor.name,
  status: (e as { status?: number; status_code?: number }).status ?? (e as { status_code?: number }).status_code,
  message: (e as Error).message,
});
/** A @google/genai answer without its HTTP headers (a `date` header differs from run to run). */
const plainGenai = (x: unknown) =>
  JSON.parse(JSON.stringify(x, (k, v: unknown) => (k === 'sdkHttpResponse' ? undefined : v))) as unknown;
const modelOf = (r: CorpusRecord) => /models\/([^/:]+):/.exec(r.endpoint)?.[1] ?? r.model ?? 'gemini-2.5-flash';

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const FORMATS: Format[] = [
  {
    file: 'openai-responses.jsonl',
    expected: expectedResponses,
    raw: true,
    async client(r) {
      if (r.request === null) return undefined; // response-only fixture: raw fetch only
      const call = openai().responses.create(r.request as never);
      if (r.status >= 400) return call.then(() => 'no error', failure);
      return (await call.asResponse()).text();
    },
  },
  {
    file: 'gemini.jsonl',
    expected: expectedGemini,
    async client(r) {
      // @google/genai always asks for alt=sse: the JSON-array streams are read by raw fetch only.
      if (r.framing === 'json-array') return undefined;
      const ai = await genai();
      const params = { model: modelOf(r), contents: r.request.contents as never };
      if (r.sse !== undefined)
        return collect(await ai.models.generateContentStream(params)).then((chunks) => chunks.map(plainGenai), failure);
      return ai.models.generateContent(params).then(plainGenai, failure);
    },
  },
  {
    file: 'ollama.jsonl',
    expected: expectedOllama,
    async client(r) {
      const api = r.endpoint.endsWith('/api/chat') ? 'chat' : 'generate';
      const req = { ...r.request, stream: r.stream !== undefined } as never;
      if (r.stream !== undefined)
        return collect(await (ollama()[api] as (q: unknown) => Promise<AsyncIterable<unknown>>)(req));
      return (ollama()[api] as (q: unknown) => Promise<unknown>)(req).catch(failure);
    },
  },
  {
    file: 'embeddings.jsonl',
    expected: expectedEmbeddings,
    async client(r) {
      const host = new URL(r.endpoint).hostname;
      if (r.endpoint.includes(':batchEmbedContents')) {
        const requests = (r.request.requests as Array<{ content: unknown }>).map((q) => q.content);
        return (await genai()).models
          .embedContent({ model: modelOf(r), contents: requests as never })
          .then(plainGenai, failure);
      }
      if (r.endpoint.endsWith('/api/embeddings'))
        return ollama()
          .embeddings(r.request as never)
          .catch(failure);
      void host;
      const call = openai().embeddings.create(r.request as never);
      if (r.status >= 400) return call.then(() => 'no error', failure);
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

  it('the real client: what the application gets is the same as without faultline', async () => {
    let compared = 0;
    for (const r of records) {
      server.respond(() => replyFor(r));
      otel.exporter.reset();
      const got = await format.client!(r);
      if (got === undefined) continue;
      expect(
        ours(await otel.waitForSpans((s) => ours(s).length >= 1)).length,
        `${r.id}: a span of ours`,
      ).toBeGreaterThanOrEqual(1);
      inst.disable();
      const plain = await format.client!(r).finally(() => inst.enable());
      expect(JSON.stringify(got), r.id).toBe(JSON.stringify(plain));
      if (format.raw && typeof got === 'string' && r.status < 400) expect(got === bodyFor(r), r.id).toBe(true);
      compared++;
    }
    expect(compared).toBeGreaterThan(records.length / 2);
    expect(problems).toEqual([]);
  });
});
