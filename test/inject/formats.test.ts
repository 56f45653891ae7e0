/**
 * Each fault family — content (AgentChaos), stream, transport — on each wire format, through the real clients
 * (openai 6 Responses and embeddings, @google/genai, ollama) against a loopback server replaying recorded traffic:
 * the application gets the planned fault, or the error it would get anyway, always under a deadline; a fault with
 * no meaning in a format is reported not applicable and the body passes untouched.
 */
import { Ollama, type ChatRequest, type GenerateRequest } from 'ollama';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ATTR_FL_FAULT_MODE } from '../../instrumentation/semconv';
import { loadCorpus, recordBody, type CorpusRecord } from '../support/corpus';
import { corpusReply, startLlmServer, type LlmServer, type Reply } from '../support/llm-server';
import { callSpans, faultName, setupHarness, type Harness } from './harness';

const responses = loadCorpus('openai-responses.jsonl');
const gemini = loadCorpus('gemini.jsonl');
const ollamaRecords = loadCorpus('ollama.jsonl');
const embeddings = loadCorpus('embeddings.jsonl');
const byId = (list: CorpusRecord[], id: string): CorpusRecord => list.find((r) => r.id === id)!;

const R_TEXT = responses.find(
  (r) =>
    r.response !== undefined &&
    r.status === 200 &&
    r.tags.includes('text') &&
    r.tags.includes('finish_completed') &&
    !r.tags.includes('tool_calls'),
)!;
const R_TOOLS = byId(responses, '14a10a36865a');
const R_STREAM = responses.find(
  (r) =>
    r.sse !== undefined &&
    r.tags.includes('text') &&
    r.tags.includes('finish_completed') &&
    !r.tags.includes('builtin_tools'),
)!;
const G_TEXT = byId(gemini, 'bf76414dc843');
const G_TOOLS = byId(gemini, '1b0f45e4ef40');
const G_STREAM = byId(gemini, '545eaeea40bb'); // 12 data events
const G_ARRAY = byId(gemini, '3f6854fe0cab');
const O_TEXT = byId(ollamaRecords, '8d8dbc91e4d7');
const O_TOOLS = byId(ollamaRecords, '748c70082fcf');
const O_STREAM = byId(ollamaRecords, '491eb5f299c5');
const O_GENERATE = byId(ollamaRecords, '6e3b222f1baa');
const E_FLOAT = embeddings.find(
  (r) => r.endpoint.includes('api.openai.com') && r.tags.includes('float') && r.status === 200,
)!;

let h: Harness;
let server: LlmServer;
let reply: () => Reply;

beforeAll(async () => {
  h = setupHarness();
  server = await startLlmServer(() => reply());
});
afterAll(async () => {
  await server.close();
  await h.shutdown();
});
beforeEach(() => {
  h.exporter.reset();
  server.requests.length = 0;
});

const serve = (r: CorpusRecord | Reply) => {
  reply = () => ('id' in r ? corpusReply(r as CorpusRecord) : (r as Reply));
};
const rule = (fault: string, params: Record<string, unknown> = {}) => ({ rules: [{ fault, params }] });
/** Fails the test instead of hanging when a path never settles. */
const deadline = <T>(p: Promise<T>, ms = 5000): Promise<T> =>
  Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref()),
  ]);
const settle = <T>(p: Promise<T>) =>
  deadline(
    p.then(
      (v) => ({ ok: true as const, v }),
      (e: unknown) => ({ ok: false as const, e: e as Error & { status?: number; status_code?: number } }),
    ),
  );
const report = (taskId: string) => h.injector.triggerReport(taskId).tasks[0]!.rules[0]!;
const spanOf = async () => callSpans(await h.waitForSpans((s) => callSpans(s).length >= 1))[0]!;

const openai = () => new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
const ollama = () => new Ollama({ host: server.url });
type GenAi = InstanceType<
  Awaited<typeof import('@google/genai', { with: { 'resolution-mode': 'import' } })>['GoogleGenAI']
>;
let ai: GenAi;
beforeAll(async () => {
  const { GoogleGenAI } = await import('@google/genai');
  ai = new GoogleGenAI({ apiKey: 'test-key', httpOptions: { baseUrl: server.url } });
});

async function readAll<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

// ---------------------------------------------------------------------------------------------- content faults

describe('AgentChaos content faults in each format', () => {
  it('Responses: llm_truncate_single cuts output_text to 30 % and makes the answer incomplete (max_output_tokens)', async () => {
    serve(R_TEXT);
    const original = (
      R_TEXT.response as { output: Array<{ type: string; content?: Array<{ type: string; text?: string }> }> }
    ).output
      .flatMap((i) => (i.type === 'message' ? (i.content ?? []) : []))
      .filter((c) => c.type === 'output_text')
      .map((c) => c.text)
      .join('');
    const { result, taskId } = await h.task(rule('llm_truncate_single'), () =>
      deadline(openai().responses.create(R_TEXT.request as never)),
    );
    expect(result.output_text).toBe(original.slice(0, Math.max(1, Math.floor(original.length * 0.3))));
    expect(result.status).toBe('incomplete');
    expect(result.incomplete_details?.reason).toBe('max_output_tokens');
    expect(report(taskId)).toMatchObject({ fires: 1, triggered: true });
    const span = await spanOf();
    expect(faultName(span)).toBe('llm_truncate_single');
    expect(span.attributes['gen_ai.response.finish_reasons']).toEqual(['length']);
  });

  it('Responses: tool_empty_single removes the function_call items, the reasoning item stays', async () => {
    serve(R_TOOLS);
    const { result } = await h.task(rule('tool_empty_single'), () =>
      deadline(openai().responses.create(R_TOOLS.request as never)),
    );
    expect(result.output.filter((i) => i.type === 'function_call')).toEqual([]);
    expect(result.output.some((i) => i.type === 'reasoning')).toBe(true);
  });

  it('Gemini: llm_truncate_single → MAX_TOKENS and the text cut; tool_schema_single rewrites functionCall args', async () => {
    serve(G_TEXT);
    const full = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' });
    const { result } = await h.task(rule('llm_truncate_single'), () =>
      deadline(ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' })),
    );
    expect(result.text).toBe(full.text!.slice(0, Math.max(1, Math.floor(full.text!.length * 0.3))));
    expect(result.candidates![0].finishReason).toBe('MAX_TOKENS');
    serve(G_TOOLS);
    const tools = await h.task(rule('tool_schema_single'), () =>
      deadline(ai.models.generateContent({ model: 'gemini-2.5-pro', contents: 'x' })),
    );
    expect(tools.result.functionCalls![0].args).toEqual({ wrong_param: 'unexpected_value' });
    expect(tools.result.functionCalls![1].args).toEqual({ b: 3, a: 5 });
    // The thought signature of the rewritten part is kept.
    expect(JSON.stringify(tools.result.candidates![0].content!.parts![0])).toContain('thoughtSignature');
  });

  it('Ollama chat: llm_truncate_single → done_reason length; tool_error_single → arguments {}', async () => {
    serve(O_TEXT);
    const content = (O_TEXT.response as { message: { content: string } }).message.content;
    const { result } = await h.task(rule('llm_truncate_single'), () =>
      deadline(ollama().chat({ ...(O_TEXT.request as unknown as ChatRequest), stream: false })),
    );
    expect(result.message.content).toBe(content.slice(0, Math.max(1, Math.floor(content.length * 0.3))));
    expect(result.done_reason).toBe('length');
    serve(O_TOOLS);
    const tools = await h.task(rule('tool_error_single'), () =>
      deadline(ollama().chat({ ...(O_TOOLS.request as unknown as ChatRequest), stream: false })),
    );
    expect(tools.result.message.tool_calls![0].function.arguments).toEqual({});
  });

  it('Ollama generate: llm_empty_single empties `response`; a tool fault has no meaning there (not applicable)', async () => {
    serve(O_GENERATE);
    const { result } = await h.task(rule('llm_empty_single'), () =>
      deadline(ollama().generate({ ...(O_GENERATE.request as unknown as GenerateRequest), stream: false })),
    );
    expect(result.response).toBe('');
    h.exporter.reset();
    const { result: untouched, taskId } = await h.task(rule('tool_error_single'), () =>
      deadline(ollama().generate({ ...(O_GENERATE.request as unknown as GenerateRequest), stream: false })),
    );
    expect(untouched.response).toBe((O_GENERATE.response as { response: string }).response);
    expect(report(taskId)).toMatchObject({ fires: 0, notApplicable: 1 });
  });

  it('embeddings: a content fault is not applicable and the body passes byte for byte', async () => {
    serve(E_FLOAT);
    const { result, taskId } = await h.task(rule('llm_truncate_single'), () =>
      deadline(
        openai()
          .embeddings.create({ ...(E_FLOAT.request as object), encoding_format: 'float' } as never)
          .asResponse()
          .then((r) => r.text()),
      ),
    );
    expect(result).toBe(recordBody(E_FLOAT));
    expect(report(taskId)).toMatchObject({ fires: 0, notApplicable: 1 });
  });
});

// ---------------------------------------------------------------------------------------------- stream faults

describe('stream faults in each streamed format', () => {
  it('Responses SSE: stream_cut ends the stream before response.completed; stream_drop_done drops just that event', async () => {
    serve(R_STREAM);
    const cut = await h.task(rule('stream_cut', { afterEvents: 3 }), async () =>
      deadline(
        readAll(
          (await openai().responses.create(R_STREAM.request as never)) as unknown as AsyncIterable<{ type: string }>,
        ),
      ),
    );
    expect(cut.result).toHaveLength(3);
    const span = await spanOf();
    expect(span.attributes).toMatchObject({ [ATTR_FL_FAULT_MODE]: 'stream', 'faultline.response.done': false });
    h.exporter.reset();
    const dropped = await h.task(rule('stream_drop_done'), async () =>
      deadline(
        readAll(
          (await openai().responses.create(R_STREAM.request as never)) as unknown as AsyncIterable<{ type: string }>,
        ),
      ),
    );
    const all = R_STREAM.sse!.split('\n\n').filter((e) => e.includes('data:')).length;
    expect(dropped.result.map((e) => e.type)).not.toContain('response.completed');
    expect(dropped.result).toHaveLength(all - 1);
  });

  it('Gemini SSE: stream_cut after 4 chunks; stream_drop_done has no meaning (no terminal marker)', async () => {
    serve(G_STREAM);
    const cut = await h.task(rule('stream_cut', { afterEvents: 4 }), async () =>
      deadline(readAll(await ai.models.generateContentStream({ model: 'gemini-2.0-flash', contents: 'x' }))),
    );
    expect(cut.result).toHaveLength(4);
    expect(cut.result.some((c) => c.candidates?.[0]?.finishReason !== undefined)).toBe(false);
    const dropped = await h.task(rule('stream_drop_done'), async () =>
      deadline(readAll(await ai.models.generateContentStream({ model: 'gemini-2.0-flash', contents: 'x' }))),
    );
    expect(dropped.result).toHaveLength(12);
    expect(report(dropped.taskId)).toMatchObject({ fires: 0, notApplicable: 1 });
  });

  it('Gemini JSON array: stream_corrupt_chunk garbles one element, the separators and the rest stay', async () => {
    serve(G_ARRAY);
    const url = `${server.url}/v1beta/models/gemini-flash-latest:streamGenerateContent`;
    const { result } = await h.task(rule('stream_corrupt_chunk', { eventIndex: 2 }), async () =>
      deadline((await fetch(url, { method: 'POST', body: JSON.stringify(G_ARRAY.request) })).text()),
    );
    expect(result).toContain('\uFFFD');
    expect(() => JSON.parse(result) as unknown).toThrow();
    const pieces = corpusReply(G_ARRAY).chunks!.map(String);
    expect(result.startsWith(pieces[0]!)).toBe(true);
    expect(result.endsWith(pieces.slice(2).join(''))).toBe(true);
  });

  it('Ollama NDJSON: stream_cut and stream_drop_done → the client’s own "no done" error; stream_stall resumes', async () => {
    serve(O_STREAM);
    const request = { ...(O_STREAM.request as unknown as ChatRequest), stream: true as const };
    const cut = await h.task(rule('stream_cut', { afterEvents: 2 }), () =>
      settle((async () => readAll(await ollama().chat(request)))()),
    );
    expect(cut.result.ok).toBe(false);
    expect(!cut.result.ok && cut.result.e.message).toBe('Did not receive done or success response in stream.');
    const dropped = await h.task(rule('stream_drop_done'), () =>
      settle((async () => readAll(await ollama().chat(request)))()),
    );
    expect(!dropped.result.ok && dropped.result.e.message).toBe('Did not receive done or success response in stream.');
    const t0 = Date.now();
    const stalled = await h.task(rule('stream_stall', { afterEvents: 2, stallMs: 300 }), async () =>
      deadline(readAll(await ollama().chat(request))),
    );
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(stalled.result.at(-1)!.done).toBe(true);
  });

  it('a stream the server sent with a Content-Length: cut, it ends cleanly (the length header goes with the cut)', async () => {
    const body = O_STREAM.stream!;
    serve({
      status: 200,
      headers: { 'content-type': 'application/x-ndjson', 'content-length': String(Buffer.byteLength(body)) },
      chunks: corpusReply(O_STREAM).chunks,
    });
    const { result } = await h.task(rule('stream_cut', { afterEvents: 2 }), async () => {
      const res = await fetch(`${server.url}/api/chat`, { method: 'POST', body: JSON.stringify(O_STREAM.request) });
      return { length: res.headers.get('content-length'), text: await deadline(res.text()) };
    });
    expect(result.text).toBe(
      body
        .split(/(?<=\n)/)
        .slice(0, 2)
        .join(''),
    );
    expect(result.length).toBeNull();
  });

  it('stream faults on a JSON answer are not applicable', async () => {
    serve(O_TEXT);
    const { taskId } = await h.task(rule('stream_cut'), () =>
      deadline(ollama().chat({ ...(O_TEXT.request as unknown as ChatRequest), stream: false })),
    );
    expect(report(taskId)).toMatchObject({ fires: 0, notApplicable: 1 });
  });
});

// ---------------------------------------------------------------------------------------------- transport faults

describe('transport faults in each format’s own error shape', () => {
  it('Responses and embeddings: http_429 is the openai SDK’s RateLimitError', async () => {
    serve(R_TEXT);
    const r = await h.task(rule('http_429'), () => settle(openai().responses.create(R_TEXT.request as never)));
    expect(!r.result.ok && r.result.e).toBeInstanceOf(OpenAI.RateLimitError);
    serve(E_FLOAT);
    const e = await h.task(rule('http_429'), () => settle(openai().embeddings.create(E_FLOAT.request as never)));
    expect(!e.result.ok && e.result.e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(server.requests).toHaveLength(0);
  });

  it('Gemini: http_429 → ApiError 429 RESOURCE_EXHAUSTED; http_503 → 503 UNAVAILABLE; conn_reset → a fetch error', async () => {
    serve(G_TEXT);
    const r = await h.task(rule('http_429'), () =>
      settle(ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' })),
    );
    expect(!r.result.ok && r.result.e.status).toBe(429);
    expect(!r.result.ok && r.result.e.message).toContain('RESOURCE_EXHAUSTED');
    const u = await h.task(rule('http_503'), () =>
      settle(ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' })),
    );
    expect(!u.result.ok && u.result.e.message).toContain('UNAVAILABLE');
    const c = await h.task(rule('conn_reset'), () =>
      settle(ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' })),
    );
    expect(c.result.ok).toBe(false);
    expect(String((c.result as { e: { cause?: { code?: string } } }).e.cause?.code)).toBe('ECONNRESET');
    expect(server.requests).toHaveLength(0);
  });

  it('Ollama: http_500 → ResponseError with Ollama’s {"error": …}; timeout_hang ends at the caller’s timeout', async () => {
    serve(O_TEXT);
    const r = await h.task(rule('http_500'), () =>
      settle(ollama().chat({ ...(O_TEXT.request as unknown as ChatRequest), stream: false })),
    );
    expect(!r.result.ok && r.result.e.status_code).toBe(500);
    expect(!r.result.ok && r.result.e.message).toBe('an error was encountered while running the model');
    const t0 = Date.now();
    const hang = await h.task(rule('timeout_hang'), () =>
      settle(
        fetch(`${server.url}/api/chat`, {
          method: 'POST',
          body: JSON.stringify(O_TEXT.request),
          signal: AbortSignal.timeout(300),
        }),
      ),
    );
    expect(!hang.result.ok && hang.result.e.name).toBe('TimeoutError');
    expect(Date.now() - t0).toBeLessThan(3000);
    const span = await spanOf();
    expect(faultName(span)).toBe('http_500');
  });
});
