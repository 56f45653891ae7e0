/**
 * Embeddings answers written by the project, in the three wire formats of the providers' API references: OpenAI's
 * `list` of `embedding` objects (floats, or base64 little-endian float32 with `encoding_format: "base64"`, the openai
 * SDK's default), Gemini's `embedContent` / `batchEmbedContents`, Ollama's `/api/embed` and older `/api/embeddings`.
 * The vectors are deterministic unit-scale numbers of the asked dimension, one per input.
 *
 *   openaiEmbeddings                      POST /v1/embeddings
 *   geminiEmbedContent / geminiBatchEmbed POST …/models/{model}:embedContent / :batchEmbedContents
 *   ollamaEmbed / ollamaEmbeddings        POST /api/embed / /api/embeddings
 */

type Json = Record<string, unknown>;

/** A deterministic vector of `dimension` values in (-1, 1) for the `n`th input. */
export function vector(n: number, dimension: number): number[] {
  return Array.from({ length: dimension }, (_, i) => Math.round(Math.sin((n + 1) * 12.9898 + i * 78.233) * 1e6) / 1e6);
}

function base64(v: number[]): string {
  const buf = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => buf.writeFloatLE(x, i * 4));
  return buf.toString('base64');
}

export interface OpenAiEmbeddingsSpec {
  model: string;
  inputs: number;
  dimension: number;
  encoding?: 'float' | 'base64';
  promptTokens?: number;
}

/** OpenAI's embeddings answer: `{"object":"list","data":[{"object":"embedding","index","embedding"}],"model","usage"}`. */
export function openaiEmbeddings(s: OpenAiEmbeddingsSpec): Json {
  const tokens = s.promptTokens ?? 5 * s.inputs;
  return {
    object: 'list',
    data: Array.from({ length: s.inputs }, (_, index) => ({
      object: 'embedding',
      index,
      embedding: s.encoding === 'base64' ? base64(vector(index, s.dimension)) : vector(index, s.dimension),
    })),
    model: s.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}

/** Gemini's `embedContent` answer: `{"embedding":{"values"}}`. */
export function geminiEmbedContent(dimension: number): Json {
  return { embedding: { values: vector(0, dimension) } };
}

/** Gemini's `batchEmbedContents` answer: `{"embeddings":[{"values"}]}`, one per request. */
export function geminiBatchEmbed(inputs: number, dimension: number): Json {
  return { embeddings: Array.from({ length: inputs }, (_, n) => ({ values: vector(n, dimension) })) };
}

/** Ollama's `/api/embed` answer: `{"model","embeddings":[[…]],"total_duration","load_duration","prompt_eval_count"}`. */
export function ollamaEmbed(model: string, inputs: number, dimension: number, promptEvalCount = 4 * inputs): Json {
  return {
    model,
    embeddings: Array.from({ length: inputs }, (_, n) => vector(n, dimension)),
    total_duration: 98_000_000,
    load_duration: 12_000_000,
    prompt_eval_count: promptEvalCount,
  };
}

/** Ollama's older `/api/embeddings` answer: `{"embedding":[…]}` (one prompt, no counts). */
export function ollamaEmbeddings(dimension: number): Json {
  return { embedding: vector(0, dimension) };
}
