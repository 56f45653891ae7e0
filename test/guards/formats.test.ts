/**
 * HTTP guards judge every LLM wire format, not only chat completions and Anthropic: through the real clients
 * (openai 6 `responses.create`, @google/genai, ollama) against a loopback server answering with recorded bodies, a
 * truncation the fault step injects is caught by the guard and retried, and the application gets the complete
 * answer; a clean answer on a guarded route arrives byte for byte, and a compressed one is judged on its decoded body.
 * Every call has a deadline.
 */
import { Ollama, type ChatRequest, type GenerateRequest } from 'ollama';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDetectors, detectionContext } from '../../detectors/index';
import { llmObservationFromWire, type LlmProtocol } from '../../detectors/wire';
import { loadCorpus, type CorpusRecord } from '../support/corpus';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { guardEvents, setupGuardHarness, type GuardHarness } from './harness';

/** The recorded body as a live server sends it: fresh timestamps (an old one is a staleness finding of its own). */
function live(r: CorpusRecord): string {
  const now = Math.floor(Date.now() / 1000);
  return JSON.stringify(r.response)
    .replace(/"(created_at|completed_at)":\d+/g, `"$1":${now}`)
    .replace(/"created_at":"[^"]+"/g, `"created_at":"${new Date().toISOString()}"`);
}

/** A text answer of `protocol` that no detector flags when it arrives fresh. */
function cleanText(file: 'openai-responses.jsonl' | 'gemini.jsonl' | 'ollama.jsonl', protocol: LlmProtocol, path: string): CorpusRecord {
  return loadCorpus(file).find((r) => {
    if (r.status !== 200 || r.response === undefined || !r.tags.includes('text') || r.tags.includes('tool_calls') || !r.endpoint.includes(path)) return false;
    if (r.tags.some((t) => t.startsWith('finish_') && t !== 'finish_stop' && t !== 'finish_completed')) return false;
    const obs = llmObservationFromWire(protocol, r.request, { status: 200, chunks: [live(r)] }, undefined, Date.now());
    return runDetectors(obs, detectionContext()).length === 0;
  })!;
}

const RESPONSES = cleanText('openai-responses.jsonl', 'openai.responses', '/responses');
const GEMINI = cleanText('gemini.jsonl', 'gemini.generate_content', ':generateContent');
const OLLAMA_CHAT = cleanText('ollama.jsonl', 'ollama.chat', '/api/chat');
const OLLAMA_GENERATE = cleanText('ollama.jsonl', 'ollama.generate', '/api/generate');

let h: GuardHarness;
let server: LlmServer;
let body: string;
const sleeps: number[] = [];

beforeAll(async () => {
  // Back-off is asserted, not waited for.
  h = setupGuardHarness({ sleep: async (ms) => void sleeps.push(ms), random: () => 0.5 });
  server = await startLlmServer(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }));
});
afterAll(async () => {
  await server?.close();
  await h?.shutdown();
});

const deadline = <T>(p: Promise<T>, ms = 5000): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref())]);

type GenAi = InstanceType<Awaited<typeof import('@google/genai', { with: { 'resolution-mode': 'import' } })>['GoogleGenAI']>;
let ai: GenAi;
beforeAll(async () => {
  const { GoogleGenAI } = await import('@google/genai');
  ai = new GoogleGenAI({ apiKey: 'test-key', httpOptions: { baseUrl: server.url } });
});
const openai = () => new OpenAI({ apiKey: 'sk-test', baseURL: `${server.url}/v1`, maxRetries: 0 });
const ollama = () => new Ollama({ host: server.url });

interface Case {
  name: string;
  record: CorpusRecord;
  /** The call through the real client; returns the answer's text. */
  call(): Promise<string>;
  /** The same call as raw bytes. */
  url: string;
  text: string;
}

const textOf = {
  responses: (r: CorpusRecord) =>
    (r.response as { output: Array<{ type: string; content?: Array<{ type: string; text?: string }> }> }).output
      .flatMap((i) => (i.type === 'message' ? (i.content ?? []) : []))
      .filter((c) => c.type === 'output_text')
      .map((c) => c.text)
      .join(''),
  gemini: (r: CorpusRecord) =>
    (r.response as { candidates: Array<{ content: { parts: Array<{ text?: string; thought?: boolean }> } }> }).candidates[0]!.content.parts
      .filter((p) => typeof p.text === 'string' && p.thought !== true)
      .map((p) => p.text)
      .join(''),
};

const CASES: Case[] = [
  { name: 'OpenAI Responses', record: RESPONSES, url: '/v1/responses', text: textOf.responses(RESPONSES), call: async () => (await openai().responses.create(RESPONSES.request as never)).output_text },
  {
    name: 'Gemini generateContent',
    record: GEMINI,
    url: `/v1beta/models/${GEMINI.model}:generateContent`,
    text: textOf.gemini(GEMINI),
    call: async () => (await ai.models.generateContent({ model: GEMINI.model!, contents: 'x' })).text ?? '',
  },
  {
    name: 'Ollama /api/chat',
    record: OLLAMA_CHAT,
    url: '/api/chat',
    text: (OLLAMA_CHAT.response as { message: { content: string } }).message.content,
    call: async () => (await ollama().chat({ ...(OLLAMA_CHAT.request as unknown as ChatRequest), stream: false })).message.content,
  },
  {
    name: 'Ollama /api/generate',
    record: OLLAMA_GENERATE,
    url: '/api/generate',
    text: (OLLAMA_GENERATE.response as { response: string }).response,
    call: async () => (await ollama().generate({ ...(OLLAMA_GENERATE.request as unknown as GenerateRequest), stream: false })).response ?? '',
  },
];

describe.each(CASES)('a guarded $name call', (c) => {
  it('a truncation the fault step injects is caught, retried, and the application gets the complete answer', async () => {
    h.config = { routes: [{ name: 'all', retry: { maxRetries: 2, baseDelayMs: 100 } }] };
    body = live(c.record);
    const before = server.requests.length;
    sleeps.length = 0;
    h.exporter.reset();
    const { result } = await h.task({ rules: [{ fault: 'llm_truncate_single' }] }, () => deadline(c.call()));
    expect(result).toBe(c.text);
    expect(server.requests.length - before).toBe(2);
    expect(sleeps).toHaveLength(1);
    const spans = await h.waitForSpans((s) => s.some((x) => guardEvents(x).length > 0));
    const span = spans.find((x) => guardEvents(x).length > 0)!;
    expect(guardEvents(span)).toEqual([expect.objectContaining({ action: 'retry', reason: expect.stringMatching(/^truncate /) })]);
  });

  it('a clean answer on the guarded route is judged and delivered byte for byte', async () => {
    h.config = { routes: [{ name: 'all', retry: { maxRetries: 2 } }] };
    body = live(c.record);
    const before = server.requests.length;
    const { result } = await h.task(undefined, () => deadline(fetch(`${server.url}${c.url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...c.record.request, ...(c.url.startsWith('/api/') ? { stream: false } : {}) }) }).then((r) => r.text())));
    expect(result).toBe(body);
    expect(server.requests.length - before).toBe(1);
  });
});

describe('compressed answers on a guarded route', () => {
  it('a gzip answer is judged on its decoded body: a clean one is delivered once, byte for byte', async () => {
    const { gzipSync } = await import('node:zlib');
    h.config = { routes: [{ name: 'all', retry: { maxRetries: 2 } }] };
    const c = CASES[0]!;
    const plain = live(c.record);
    const before = server.requests.length;
    server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(plain) }));
    try {
      const { result } = await h.task(undefined, () => deadline(c.call()));
      expect(result).toBe(c.text);
      expect(server.requests.length - before).toBe(1);
    } finally {
      server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }));
    }
  });

  it('a gzip answer the server cut short (incomplete, max_output_tokens) is caught and retried', async () => {
    const { gzipSync } = await import('node:zlib');
    h.config = { routes: [{ name: 'all', retry: { maxRetries: 2 } }] };
    const c = CASES[0]!;
    const plain = live(c.record);
    const cut = JSON.parse(plain) as { status: string; incomplete_details: unknown; output: Array<{ type: string; content?: Array<{ type: string; text?: string }> }> };
    cut.status = 'incomplete';
    cut.incomplete_details = { reason: 'max_output_tokens' };
    for (const part of cut.output.flatMap((i) => i.content ?? [])) if (part.type === 'output_text') part.text = part.text!.slice(0, 10);
    const before = server.requests.length;
    let n = 0;
    server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(n++ === 0 ? JSON.stringify(cut) : plain) }));
    try {
      const { result } = await h.task(undefined, () => deadline(c.call()));
      expect(result).toBe(c.text);
      expect(server.requests.length - before).toBe(2);
    } finally {
      server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }));
    }
  });
});
