/**
 * The openai v4 SDK (devDependency alias `openai-v4`: openai 4.52, node-fetch 2 underneath), loaded by a name
 * TypeScript does not resolve — its declarations bring the @types/node 18 it depends on, which clashes with the
 * project's — with the little of its API the tests use typed here.
 */
export interface OpenAiV4 {
  chat: {
    completions: { create(body: Record<string, unknown>): Promise<AsyncIterable<unknown> & Record<string, unknown>> };
  };
}

export interface OpenAiV4Module {
  OpenAI: new (options: { apiKey: string; baseURL: string; maxRetries?: number }) => OpenAiV4;
  VERSION: string;
  /** Which fetch the SDK runs on: `node` is node-fetch. */
  shimKind(): string | undefined;
  RateLimitError: new (...a: never[]) => Error;
}

const NAME = 'openai-v4';

export async function loadOpenAiV4(): Promise<OpenAiV4Module> {
  const sdk = (await import(NAME)) as {
    default: OpenAiV4Module['OpenAI'] & { RateLimitError: OpenAiV4Module['RateLimitError'] };
  };
  const version = (await import(`${NAME}/version`)) as { VERSION: string };
  const shims = (await import(`${NAME}/_shims/index`)) as { kind?: string };
  return {
    OpenAI: sdk.default,
    VERSION: version.VERSION,
    shimKind: () => shims.kind,
    RateLimitError: sdk.default.RateLimitError,
  };
}
