/**
 * Published context windows (input + output tokens a model accepts in one request), by model-name prefix, each with
 * the page that publishes it. The context-overflow monitor reads it to tell how close a conversation's
 * `gen_ai.usage.input_tokens` came to the limit; a model not in the table is judged by its provider's refusals only.
 *
 * Served models (vLLM, llama.cpp, Ollama, any OpenAI-compatible server) are named as their weights are
 * (`meta-llama/Llama-3.1-8B-Instruct`), and a server may be started with a smaller window than the model's
 * (`--max-model-len`): the table gives the model's own, an upper bound; the server's refusal says the rest.
 */

/** [model-name prefix, window in tokens, source]. The longest matching prefix wins. */
export const CONTEXT_WINDOWS: ReadonlyArray<readonly [string, number, string]> = [
  // OpenAI: https://platform.openai.com/docs/models (each model's page, "Context window").
  ['gpt-3.5-turbo', 16_385, 'https://platform.openai.com/docs/models/gpt-3.5-turbo'],
  ['gpt-4', 8_192, 'https://platform.openai.com/docs/models/gpt-4'],
  ['gpt-4-32k', 32_768, 'https://platform.openai.com/docs/models/gpt-4 (gpt-4-32k)'],
  ['gpt-4-turbo', 128_000, 'https://platform.openai.com/docs/models/gpt-4-turbo'],
  ['gpt-4o', 128_000, 'https://platform.openai.com/docs/models/gpt-4o (and gpt-4o-mini)'],
  ['gpt-4.5', 128_000, 'https://platform.openai.com/docs/models/gpt-4.5-preview'],
  ['gpt-4.1', 1_047_576, 'https://platform.openai.com/docs/models/gpt-4.1 (and -mini, -nano)'],
  ['gpt-5', 400_000, 'https://platform.openai.com/docs/models/gpt-5 (and -mini, -nano)'],
  ['o1', 200_000, 'https://platform.openai.com/docs/models/o1'],
  ['o1-mini', 128_000, 'https://platform.openai.com/docs/models/o1-mini'],
  ['o1-preview', 128_000, 'https://platform.openai.com/docs/models/o1-preview'],
  ['o3', 200_000, 'https://platform.openai.com/docs/models/o3 (and o3-mini)'],
  ['o4-mini', 200_000, 'https://platform.openai.com/docs/models/o4-mini'],
  // Anthropic: https://docs.anthropic.com/en/docs/about-claude/models/overview ("Context window": 200K for every
  // Claude 3, 3.5, 3.7, 4 model; the 1M beta is opt-in per request and not assumed).
  ['claude-', 200_000, 'https://docs.anthropic.com/en/docs/about-claude/models/overview'],
  // Google: https://ai.google.dev/gemini-api/docs/models ("Input token limit").
  ['gemini-1.5-flash', 1_048_576, 'https://ai.google.dev/gemini-api/docs/models#gemini-1.5-flash'],
  ['gemini-1.5-pro', 2_097_152, 'https://ai.google.dev/gemini-api/docs/models#gemini-1.5-pro'],
  ['gemini-2.0', 1_048_576, 'https://ai.google.dev/gemini-api/docs/models#gemini-2.0-flash'],
  ['gemini-2.5', 1_048_576, 'https://ai.google.dev/gemini-api/docs/models#gemini-2.5-pro (and -flash)'],
  // Meta Llama (model cards, "Context length"): https://github.com/meta-llama/llama-models/tree/main/models
  ['llama2', 4_096, 'https://github.com/meta-llama/llama-models/blob/main/models/llama2/MODEL_CARD.md'],
  ['llama3', 8_192, 'https://github.com/meta-llama/llama-models/blob/main/models/llama3/MODEL_CARD.md'],
  ['llama3.1', 131_072, 'https://github.com/meta-llama/llama-models/blob/main/models/llama3_1/MODEL_CARD.md (128k)'],
  ['llama3.2', 131_072, 'https://github.com/meta-llama/llama-models/blob/main/models/llama3_2/MODEL_CARD.md (128k)'],
  ['llama3.3', 131_072, 'https://github.com/meta-llama/llama-models/blob/main/models/llama3_3/MODEL_CARD.md (128k)'],
  // Mistral: https://docs.mistral.ai/getting-started/models/models_overview/ ("Max tokens").
  ['mistral-large', 131_072, 'https://docs.mistral.ai/getting-started/models/models_overview/'],
  ['mixtral-8x7b', 32_768, 'https://docs.mistral.ai/getting-started/models/models_overview/ (open-mixtral-8x7b)'],
  ['mixtral-8x22b', 65_536, 'https://docs.mistral.ai/getting-started/models/models_overview/ (open-mixtral-8x22b)'],
];

/**
 * The window of a model name, as providers and servers spell it: a routing prefix (`openai/`, `models/`, a Hugging
 * Face organisation such as `meta-llama/`) and Azure / Bedrock vendor prefixes (`anthropic.`, `meta.`) are dropped,
 * `Llama-3.1` and Bedrock's `llama3-1` are `llama3.1`, and Mistral's `open-` prefix is dropped.
 */
export function contextWindowOf(model: string | undefined): number | undefined {
  if (model === undefined) return undefined;
  const m = model
    .toLowerCase()
    .replace(/^.*\//, '')
    .replace(/^(us\.|eu\.|apac\.)?(anthropic|meta|mistral|google)\./, '')
    .replace(/^(meta-)?llama-(\d)/, 'llama$2')
    .replace(/^llama(\d)-(\d)\b/, 'llama$1.$2')
    .replace(/^open-/, '');
  let best: (typeof CONTEXT_WINDOWS)[number] | undefined;
  for (const entry of CONTEXT_WINDOWS)
    if (m.startsWith(entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
  return best?.[1];
}
