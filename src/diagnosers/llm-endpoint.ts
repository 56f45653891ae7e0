/**
 * The one way faultline asks a model for a verdict: an OpenAI-compatible chat completions endpoint
 * (FAULTLINE_LLM_BASE_URL, FAULTLINE_LLM_API_KEY, FAULTLINE_LLM_MODEL), called with plain fetch, the answer locked to a
 * schema. Used by the LLM diagnoser (llm.ts) and the MAST judge of the monitors (mast-judge.ts).
 *
 *   system + user ──► POST {base}/chat/completions (response_format json_schema, temperature 0)
 *        ▲                          │
 *        └── "your reply was rejected (why)" ◄── not JSON / not the schema / HTTP or network error
 *                                   │
 *                            validate(reply) ok ──► the value
 *
 * Retries back off exponentially; after the last, the reason of the last rejection is returned, never a default value.
 */
import { processEnv } from '../env';
import { FaultlineInputError } from '../errors';

export interface LlmEndpointOptions {
  /** Base URL of an OpenAI-compatible API, e.g. https://api.openai.com/v1. Default FAULTLINE_LLM_BASE_URL. */
  baseUrl?: string;
  /** Default FAULTLINE_LLM_API_KEY (optional for local servers). */
  apiKey?: string;
  /** Default FAULTLINE_LLM_MODEL, else gpt-4o-mini. */
  model?: string;
  /** Retries after the first attempt, on HTTP errors, network errors and invalid output. Default 2. */
  retries?: number;
  /** First backoff in ms (doubled each retry). Default 500. */
  backoffMs?: number;
  /** Per-request timeout in ms. Default 60000. */
  timeoutMs?: number;
  /** Ask for `response_format: json_schema` (some local servers reject it; validation happens regardless). Default true. */
  jsonSchema?: boolean;
  env?: NodeJS.ProcessEnv;
}

export interface LlmEndpoint {
  url: string;
  apiKey: string | undefined;
  model: string;
}

export type Validated<T> = { ok: true; value: T } | { ok: false; error: string };

export interface JsonQuestion<T> {
  system: string;
  user: string;
  /** The response_format schema's name and JSON Schema (the validator decides; this only steers the model). */
  schemaName: string;
  jsonSchema: Record<string, unknown>;
  /** The reply's JSON object checked and turned into the value, or why not. */
  validate(json: unknown): Validated<T>;
}

/** The endpoint of `options`; throws FaultlineInputError when none is configured (`who` names the caller). */
export function llmEndpoint(options: LlmEndpointOptions, who: string): LlmEndpoint {
  const env = options.env ?? processEnv();
  const base = options.baseUrl ?? env.FAULTLINE_LLM_BASE_URL;
  if (!base) {
    throw new FaultlineInputError(
      'FAULTLINE_USAGE',
      `${who} needs an OpenAI-compatible endpoint: set FAULTLINE_LLM_BASE_URL (and FAULTLINE_LLM_API_KEY, FAULTLINE_LLM_MODEL)`,
    );
  }
  let url: URL;
  try {
    url = new URL(base.endsWith('/') ? base : `${base}/`);
  } catch {
    throw new FaultlineInputError('FAULTLINE_USAGE', `FAULTLINE_LLM_BASE_URL is not a URL: ${JSON.stringify(base)}`);
  }
  return {
    url: new URL('chat/completions', url).toString(),
    apiKey: options.apiKey ?? env.FAULTLINE_LLM_API_KEY,
    model: options.model ?? env.FAULTLINE_LLM_MODEL ?? 'gpt-4o-mini',
  };
}

/** Extract the JSON value of a model reply (tolerating a ```json fence around it, nothing else). */
export function replyJson(content: string): Validated<unknown> {
  let text = content.trim();
  const fence = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/.exec(text);
  if (fence) text = fence[1]!.trim();
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, error: `reply is not a JSON object: ${JSON.stringify(text.slice(0, 80))}` };
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One request: the reply's text content, validated; any failure as a short reason (no response body echoed). */
async function attempt<T>(
  endpoint: LlmEndpoint,
  q: JsonQuestion<T>,
  options: LlmEndpointOptions,
  previousError: string | undefined,
): Promise<Validated<T>> {
  const messages = [
    { role: 'system', content: q.system },
    { role: 'user', content: q.user },
  ];
  if (previousError !== undefined)
    messages.push({
      role: 'user',
      content: `Your previous reply was rejected (${previousError}). Reply with the JSON object only.`,
    });
  const body: Record<string, unknown> = { model: endpoint.model, messages, temperature: 0 };
  if (options.jsonSchema ?? true)
    body.response_format = {
      type: 'json_schema',
      json_schema: { name: q.schemaName, strict: true, schema: q.jsonSchema },
    };
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (endpoint.apiKey) headers.authorization = `Bearer ${endpoint.apiKey}`;
  let res: Response;
  try {
    res = await fetch(endpoint.url, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
    });
  } catch (err) {
    return { ok: false, error: `request failed: ${(err as Error).name}: ${(err as Error).message}`.slice(0, 200) };
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) return { ok: false, error: `HTTP ${res.status} from the endpoint` };
  let content: unknown;
  try {
    const json = JSON.parse(text) as { choices?: { message?: { content?: unknown } }[] };
    content = json.choices?.[0]?.message?.content;
  } catch {
    return { ok: false, error: 'the endpoint did not return chat completions JSON' };
  }
  if (typeof content !== 'string') return { ok: false, error: 'the reply has no text content' };
  const json = replyJson(content);
  return json.ok ? q.validate(json.value) : json;
}

/**
 * Ask until a reply validates, at most `retries + 1` times; each retry tells the model why its reply was rejected.
 * `onRejected` hears each failed attempt (for debug logs).
 */
export async function askJson<T>(
  endpoint: LlmEndpoint,
  q: JsonQuestion<T>,
  options: LlmEndpointOptions = {},
  onRejected?: (attempt: number, error: string) => void,
): Promise<Validated<T>> {
  const retries = options.retries ?? 2;
  const backoff = options.backoffMs ?? 500;
  let lastError = 'unknown error';
  for (let i = 0; i <= retries; i++) {
    if (i > 0) await sleep(backoff * 2 ** (i - 1));
    const r = await attempt(endpoint, q, options, i > 0 ? lastError : undefined);
    if (r.ok) return r;
    lastError = r.error;
    onRejected?.(i + 1, r.error);
  }
  return { ok: false, error: `failed after ${retries + 1} attempts: ${lastError}` };
}
