/**
 * The project-written wire bodies (test/support/*-wire.ts) say nothing the providers do not: every field path of a
 * generated body, stream event or error appears in the recorded traffic of the same format (../shared/corpus), and
 * every generated stream event type is one the providers send. A check on the fixtures the core suite runs on, so it
 * is in the conformance tier.
 */
import { describe, expect, it } from 'vitest';
import { anthropicError, message, messageStream } from '../support/anthropic-wire';
import { loadCorpus, type CorpusFile, type CorpusRecord } from '../support/corpus';
import {
  geminiBatchEmbed,
  geminiEmbedContent,
  ollamaEmbed,
  ollamaEmbeddings,
  openaiEmbeddings,
} from '../support/embeddings-wire';
import { generateContent, generateContentArray, generateContentSse, geminiError } from '../support/gemini-wire';
import { chat, chatStream, generate, generateStream, ollamaError } from '../support/ollama-wire';
import {
  chatCompletion,
  chatCompletionStream,
  openaiError,
  response,
  responseFailedStream,
  responseStream,
} from '../support/openai-wire';

/** The field paths of a JSON value: object keys joined with `.`, array elements as `[]`. */
function paths(v: unknown, at = '', out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) paths(x, `${at}[]`, out);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      const p = at === '' ? k : `${at}.${k}`;
      out.add(p);
      paths(x, p, out);
    }
  }
  return out;
}

/** The JSON data of each SSE event (`data:` lines joined), skipping `[DONE]`. */
function sseData(sse: string): unknown[] {
  return sse
    .split(/\r?\n\r?\n/)
    .map((e) =>
      e
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n'),
    )
    .filter((d) => d !== '' && d !== '[DONE]')
    .map((d) => JSON.parse(d) as unknown);
}

/** Every JSON body, event and stream element a record holds. */
function bodies(r: CorpusRecord): unknown[] {
  if (r.sse !== undefined) return sseData(r.sse);
  if (r.stream !== undefined) {
    if (r.framing === 'json-array') return JSON.parse(r.stream) as unknown[];
    return r.stream
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as unknown);
  }
  return r.response === undefined ? [] : [r.response];
}

function recorded(files: CorpusFile[], keep: (r: CorpusRecord) => boolean): { paths: Set<string>; types: Set<string> } {
  const all = new Set<string>();
  const types = new Set<string>();
  for (const f of files) {
    for (const r of loadCorpus(f).filter(keep)) {
      for (const b of bodies(r)) {
        paths(b, '', all);
        const t = (b as { type?: unknown }).type;
        if (typeof t === 'string') types.add(t);
      }
    }
  }
  return { paths: all, types };
}

function expectKnown(
  generated: unknown[],
  known: { paths: Set<string>; types: Set<string> },
  checkTypes = false,
): void {
  const mine = new Set<string>();
  for (const g of generated) paths(g, '', mine);
  expect([...mine].filter((p) => !known.paths.has(p))).toEqual([]);
  if (checkTypes) {
    const t = generated.map((g) => (g as { type?: unknown }).type).filter((x): x is string => typeof x === 'string');
    expect(t.filter((x) => !known.types.has(x))).toEqual([]);
  }
}

const ok = (r: CorpusRecord) => r.status === 200;
const failed = (r: CorpusRecord) => r.status >= 400;
const events = (list: string[]) => sseData(list.join(''));

describe('the project-written bodies use only fields the providers send', () => {
  it('the check finds a field no provider sends, and an event type none sends', () => {
    const known = recorded(['openai-chat.jsonl'], ok);
    expect(() =>
      expectKnown([{ ...chatCompletion({ model: 'gpt-4o', text: 'x' }), invented: { deep: 1 } }], known),
    ).toThrow(/invented/);
    expect(() =>
      expectKnown(
        [{ type: 'response.invented' }],
        { paths: new Set(['type']), types: new Set(['response.completed']) },
        true,
      ),
    ).toThrow(/response\.invented/);
  });

  it('OpenAI chat completions: JSON, SSE, the error envelope', () => {
    const text = { model: 'gpt-4o-2024-08-06', text: 'Hello there, how are you?', cachedTokens: 3, reasoningTokens: 0 };
    const tools = {
      model: 'gpt-4o-2024-08-06',
      toolCalls: [
        { name: 'f', arguments: '{"a":1}' },
        { name: 'g', arguments: '{}' },
      ],
    };
    expectKnown([chatCompletion(text), chatCompletion(tools)], recorded(['openai-chat.jsonl'], ok));
    expectKnown(
      [...events(chatCompletionStream(text)), ...events(chatCompletionStream(tools))],
      recorded(['openai-chat-stream.jsonl'], ok),
    );
    expectKnown(
      [openaiError(401, 'bad key'), openaiError(400, 'bad', 'temperature')],
      recorded(['openai-chat.jsonl', 'openai-chat-stream.jsonl', 'openai-responses.jsonl'], failed),
    );
  });

  it('OpenAI Responses: JSON and typed SSE events, incomplete and failed streams', () => {
    const known = recorded(['openai-responses.jsonl'], (r) => r.status === 200 || r.status === null);
    const text = { model: 'gpt-4o-2024-08-06', text: 'Hi there.' };
    const tools = {
      model: 'gpt-5-mini',
      reasoning: 'Think.',
      toolCalls: [{ name: 'f', arguments: '{"a":1}' }],
      finishReason: 'length' as const,
    };
    expectKnown([response(text), response(tools)], known);
    expectKnown(
      [
        ...events(responseStream(text)),
        ...events(responseStream(tools)),
        ...events(responseFailedStream('gpt-5-nano', 'insufficient_quota', 'quota')),
      ],
      known,
      true,
    );
  });

  it('Anthropic Messages: JSON, SSE, the error body', () => {
    const known = recorded(['anthropic-messages.jsonl'], ok);
    const m = {
      model: 'claude-sonnet-5-5',
      thinking: 'Hmm.',
      text: 'Hello.',
      toolUses: [{ name: 'f', input: { a: 1 } }],
      cacheReadTokens: 4,
    };
    expectKnown([message(m)], known);
    expectKnown(events(messageStream(m)), known, true);
    expectKnown([anthropicError(529, 'Overloaded')], recorded(['anthropic-messages.jsonl'], failed));
  });

  it('Gemini generateContent: JSON, alt=sse, the JSON-array stream, the error body', () => {
    const known = recorded(['gemini.jsonl'], ok);
    const a = {
      model: 'gemini-2.5-pro',
      text: 'One two three four five six seven.',
      functionCalls: [{ name: 'f', args: { a: 1 } }],
      thoughtsTokens: 9,
    };
    expectKnown([generateContent(a)], known);
    expectKnown(events(generateContentSse(a)), known);
    expectKnown(JSON.parse(generateContentArray(a).join('')) as unknown[], known);
    expectKnown([geminiError(404, 'not found')], recorded(['gemini.jsonl'], failed));
  });

  it('Ollama /api/chat and /api/generate: JSON, NDJSON, the error body', () => {
    const known = recorded(['ollama.jsonl'], ok);
    const a = {
      model: 'qwen3.6:latest',
      thinking: 'Hmm.',
      text: 'Hello there.',
      toolCalls: [{ name: 'f', arguments: { a: 1 } }],
    };
    const lines = (l: string[]) => l.map((x) => JSON.parse(x) as unknown);
    expectKnown([chat(a), generate(a), ...lines(chatStream(a)), ...lines(generateStream(a))], known);
    expectKnown([ollamaError('model "x" not found, try pulling it first')], recorded(['ollama.jsonl'], failed));
  });

  it('embeddings: OpenAI (float and base64), Gemini, Ollama', () => {
    const known = recorded(['embeddings.jsonl'], ok);
    expectKnown(
      [
        openaiEmbeddings({ model: 'text-embedding-3-small', inputs: 2, dimension: 4 }),
        openaiEmbeddings({ model: 'text-embedding-3-small', inputs: 1, dimension: 4, encoding: 'base64' }),
      ],
      known,
    );
    expectKnown([geminiBatchEmbed(2, 4), ollamaEmbeddings(4)], known);
    // Not recorded in the corpus, so checked against their documented shapes: Gemini's single embedContent answer
    // (the batch answer's element under `embedding`) and Ollama's /api/embed.
    expect([...paths(geminiEmbedContent(4))]).toEqual(['embedding', 'embedding.values']);
    expect(known.paths.has('embeddings[].values')).toBe(true);
    expect(Object.keys(ollamaEmbed('all-minilm', 2, 3))).toEqual([
      'model',
      'embeddings',
      'total_duration',
      'load_duration',
      'prompt_eval_count',
    ]);
  });
});
