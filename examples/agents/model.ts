/**
 * The model the example agents call, through the real openai SDK. By default the embedded mock model (offline,
 * scripted so every workflow succeeds when nothing is faulted); OPENAI_BASE_URL, OPENAI_API_KEY and FAULTLINE_MODEL
 * switch to any OpenAI-compatible endpoint (Ollama, vLLM, OpenAI).
 */
import type OpenAI from 'openai';
import { FaultlineInputError } from '../../src/errors';
import { startMockModel } from '../../src/mock-model/server';

/**
 * The openai SDK, loaded when an example first connects: it is an optional peer dependency of faultline (the library
 * never needs it), so a user who installed only faultline gets told what to install.
 */
function openaiSdk(): typeof OpenAI {
  try {
    return (require('openai') as { default: typeof OpenAI }).default;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      'the example agents (demo, campaign presets) call the model through the openai SDK, which is not installed: npm install openai@6',
      { cause: err },
    );
  }
}

export interface ModelConnection {
  readonly client: OpenAI;
  readonly model: string;
  /** True when the embedded mock model serves the calls. */
  readonly embedded: boolean;
  readonly baseURL: string;
  close(): Promise<void>;
}

export interface ConnectOptions {
  baseURL?: string;
  apiKey?: string;
  model?: string;
  /** Per-request timeout of the SDK, ms (default 10 000). */
  timeoutMs?: number;
  /** SDK retries on 429/5xx/timeouts (default 1: one transient failure is absorbed, as with a real client). */
  maxRetries?: number;
  env?: NodeJS.ProcessEnv;
}

export async function connectModel(options: ConnectOptions = {}): Promise<ModelConnection> {
  const env = options.env ?? process.env;
  const external = options.baseURL ?? env.OPENAI_BASE_URL;
  const mock = external ? undefined : await startMockModel();
  const baseURL = external ?? (mock as { baseURL: string }).baseURL;
  const OpenAIClient = openaiSdk();
  const client = new OpenAIClient({
    baseURL,
    apiKey: options.apiKey ?? env.OPENAI_API_KEY ?? 'faultline-mock-key',
    timeout: options.timeoutMs ?? 10_000,
    maxRetries: options.maxRetries ?? 1,
  });
  return {
    client,
    model: options.model ?? env.FAULTLINE_MODEL ?? (mock ? 'faultline-mock-1' : 'gpt-4o-mini'),
    embedded: mock !== undefined,
    baseURL,
    close: async () => {
      await mock?.close();
    },
  };
}
