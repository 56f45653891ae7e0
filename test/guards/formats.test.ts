/**
 * HTTP guards judge every LLM wire format, not only chat completions and Anthropic: through the real clients
 * (openai 6 `responses.create`, @google/genai, ollama) against a loopback server answering with project-written
 * bodies (../support/openai-wire.ts, gemini-wire.ts, ollama-wire.ts), a
 * truncation the fault step injects is caught by the guard and retried, and the application gets the complete
 * answer; a clean answer on a guarded route arrives byte for byte, and a compressed one is judged on its decoded body.
 * Every call has a deadline.
 */
import { Ollama, type ChatRequest, type GenerateRequest } from 'ollama';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDetectors, detectionContext } from '../../detectors/index';
import { llmObservationFromWire, type LlmProtocol } from '../../detectors/wire';
import { generateContent } from '../support/gemini-wire';
import { chat, generate } from '../support/ollama-wire';
import { response } from '../support/openai-wire';
import { exchange } from '../support/wire-text';
import type { CorpusRecord } from '../support/wire-record';
import { startLlmServer, type LlmServer } from '../support/llm-server';
import { guardEvents, setupGuardHarness, type GuardHarness } from './harness';

/** The body as a live server sends it: fresh timestamps (an old one is a staleness finding of its own). */
function live(r: CorpusRecord): string {
  const now = Math.floor(Date.now() / 1000);
  return JSON.stringify(r.response)
    .replace(/"(created_at|completed_at)":\d+/g, `"$1":${now}`)
    .replace(/"created_at":"[^"]+"/g, `"created_at":"${new Date().toISOString()}"`);
}

/** A text answer of `protocol` that no detector flags when it arrives fresh (checked: the guards start from it). */
function cleanText(protocol: LlmProtocol, r: CorpusRecord): CorpusRecord {
  const obs = llmObservationFromWire(protocol, r.request, { status: 200, chunks: [live(r)] }, undefined, Date.now());
  const found = runDetectors(obs, detectionContext());
  if (found.length > 0) throw new Error(`the ${protocol} answer is not clean: ${JSON.stringify(found)}`);
  return r;
}

const ANSWER =
  'A heat pump moves heat instead of making it: a refrigerant absorbs warmth from the outside air, even on a cold ' +
  'day, a compressor raises its temperature, and the house takes that heat in through the indoor coil. Because it ' +
  'moves three or four units of heat for each unit of electricity it uses, it costs less to run than a resistive ' +
  'heater, and in summer the same cycle runs backwards to cool the rooms.';
const ask = 'How does a heat pump heat a house? One paragraph.';

const RESPONSES = cleanText(
  'openai.responses',
  exchange({
    endpoint: '/v1/responses',
    request: { model: 'gpt-4.1', input: ask },
    response: response({ model: 'gpt-4.1-2025-04-14', text: ANSWER }),
  }),
);
const GEMINI = cleanText(
  'gemini.generate_content',
  exchange({
    endpoint: '/v1beta/models/gemini-2.5-flash:generateContent',
    model: 'gemini-2.5-flash',
    request: { contents: [{ role: 'user', parts: [{ text: ask }] }] },
    response: generateContent({ model: 'gemini-2.5-flash', text: ANSWER }),
  }),
);
const OLLAMA_CHAT = cleanText(
  'ollama.chat',
  exchange({
    endpoint: '/api/chat',
    request: { model: 'llama3.2:1b', messages: [{ role: 'user', content: ask }], stream: false },
    response: chat({ model: 'llama3.2:1b', text: ANSWER }),
  }),
);
const OLLAMA_GENERATE = cleanText(
  'ollama.generate',
  exchange({
    endpoint: '/api/generate',
    request: { model: 'llama3.2:1b', prompt: ask, stream: false },
    response: generate({ model: 'llama3.2:1b', text: ANSWER }),
  }),
);

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
  Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref()),
  ]);

type GenAi = InstanceType<
  Awaited<typeof import('@google/genai', { with: { 'resolution-mode': 'import' } })>['GoogleGenAI']
>;
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
    (
      r.response as { candidates: Array<{ content: { parts: Array<{ text?: string; thought?: boolean }> } }> }
    ).candidates[0]!.content.parts.filter((p) => typeof p.text === 'string' && p.thought !== true)
      .map((p) => p.text)
      .join(''),
};

const CASES: Case[] = [
  {
    name: 'OpenAI Responses',
    record: RESPONSES,
    url: '/v1/responses',
    text: textOf.responses(RESPONSES),
    call: async () => (await openai().responses.create(RESPONSES.request as never)).output_text,
  },
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
    call: async () =>
      (await ollama().chat({ ...(OLLAMA_CHAT.request as unknown as ChatRequest), stream: false })).message.content,
  },
  {
    name: 'Ollama /api/generate',
    record: OLLAMA_GENERATE,
    url: '/api/generate',
    text: (OLLAMA_GENERATE.response as { response: string }).response,
    call: async () =>
      (await ollama().generate({ ...(OLLAMA_GENERATE.request as unknown as GenerateRequest), stream: false }))
        .response ?? '',
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
    expect(guardEvents(span)).toEqual([
      expect.objectContaining({ action: 'retry', reason: expect.stringMatching(/^truncate /) }),
    ]);
  });

  it('a clean answer on the guarded route is judged and delivered byte for byte', async () => {
    h.config = { routes: [{ name: 'all', retry: { maxRetries: 2 } }] };
    body = live(c.record);
    const before = server.requests.length;
    const { result } = await h.task(undefined, () =>
      deadline(
        fetch(`${server.url}${c.url}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ...c.record.request, ...(c.url.startsWith('/api/') ? { stream: false } : {}) }),
        }).then((r) => r.text()),
      ),
    );
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
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(plain),
    }));
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
    const cut = JSON.parse(plain) as {
      status: string;
      incomplete_details: unknown;
      output: Array<{ type: string; content?: Array<{ type: string; text?: string }> }>;
    };
    cut.status = 'incomplete';
    cut.incomplete_details = { reason: 'max_output_tokens' };
    for (const part of cut.output.flatMap((i) => i.content ?? []))
      if (part.type === 'output_text') part.text = part.text!.slice(0, 10);
    const before = server.requests.length;
    let n = 0;
    server.respond(() => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(n++ === 0 ? JSON.stringify(cut) : plain),
    }));
    try {
      const { result } = await h.task(undefined, () => deadline(c.call()));
      expect(result).toBe(c.text);
      expect(server.requests.length - before).toBe(2);
    } finally {
      server.respond(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }));
    }
  });
});
