/**
 * gen_ai.provider.name from the request host. The value is "the instrumentation's best knowledge": a host we do not
 * know is NOT labelled `openai` (unlike instrumentations that guess from the SDK); it gets the wire family's generic
 * name, `openai_compatible` or `anthropic_compatible`, and `server.address` says where it went. Self-hosted gateways
 * set `FAULTLINE_PROVIDER_NAME` (or the `providerName` option) to name themselves.
 *
 * Three wire formats are their provider's own: only Google serves the Gemini API (`generateContent`), so an unknown host
 * speaking it is a gateway in front of Google (`gcp.gemini`, or `gcp.vertex_ai` for a Vertex-shaped path, which the
 * caller tells); only Amazon serves Bedrock's runtime API (`model/{id}/converse`), so any host speaking it is in front
 * of Bedrock (`aws.bedrock`); and Ollama's native API (`/api/chat`) is Ollama (`ollama`, not a semconv well-known value).
 */
import { processEnv } from '../../src/env';

export type WireFamily = 'openai' | 'anthropic' | 'gemini' | 'vertex' | 'bedrock' | 'ollama';

const FALLBACK: Record<WireFamily, string> = {
  openai: 'openai_compatible',
  anthropic: 'anthropic_compatible',
  gemini: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
  bedrock: 'aws.bedrock',
  ollama: 'ollama',
};

const EXACT: Record<string, string> = {
  'api.openai.com': 'openai',
  'api.anthropic.com': 'anthropic',
  'api.deepseek.com': 'deepseek',
  'api.groq.com': 'groq',
  'api.mistral.ai': 'mistral_ai',
  'api.x.ai': 'x_ai',
  'api.perplexity.ai': 'perplexity',
  'generativelanguage.googleapis.com': 'gcp.gemini',
  'aiplatform.googleapis.com': 'gcp.vertex_ai',
  'ollama.com': 'ollama',
  'api.cohere.ai': 'cohere',
  'api.cohere.com': 'cohere',
  'api.moonshot.ai': 'moonshot_ai',
  'api.moonshot.cn': 'moonshot_ai',
  'openrouter.ai': 'openrouter',
  'api.together.xyz': 'together_ai',
  'api.fireworks.ai': 'fireworks_ai',
};

const SUFFIX: Array<[suffix: string, name: string]> = [
  ['.openai.azure.com', 'azure.ai.openai'],
  ['.services.ai.azure.com', 'azure.ai.inference'],
  ['.models.ai.azure.com', 'azure.ai.inference'],
  ['.inference.ai.azure.com', 'azure.ai.inference'],
  ['-aiplatform.googleapis.com', 'gcp.vertex_ai'],
  ['.aiplatform.googleapis.com', 'gcp.vertex_ai'],
  ['.amazonaws.com', 'aws.bedrock'],
  ['.cloud.ibm.com', 'ibm.watsonx.ai'],
];

/**
 * Resolve the provider name for a host (`hostname` without port, any case). `override` (or FAULTLINE_PROVIDER_NAME)
 * names hosts we do not know; a known host keeps its name, so an app talking to both a gateway and api.openai.com is
 * labelled right.
 */
export function providerName(hostname: string, family: WireFamily, override?: string): string {
  if (override !== undefined) return resolve(hostname, family, override);
  // Apps call the same few hosts on every call: the answer is kept per host and family (a few entries, bounded).
  const key = `${family} ${hostname}`;
  let name = known.get(key);
  if (name === undefined) {
    name = resolve(hostname, family, undefined);
    if (known.size >= MAX_KNOWN) known.clear();
    known.set(key, name);
  }
  return name;
}

const known = new Map<string, string>();
const MAX_KNOWN = 256;

function resolve(hostname: string, family: WireFamily, override: string | undefined): string {
  const host = hostname.toLowerCase();
  const exact = EXACT[host];
  if (exact !== undefined) return exact;
  for (const [suffix, name] of SUFFIX) {
    if (host.endsWith(suffix) && (name !== 'aws.bedrock' || host.includes('bedrock'))) return name;
  }
  const named = override ?? envProviderName();
  if (named) return named;
  return FALLBACK[family];
}

let fromEnv: { value: string | undefined } | undefined;

/** FAULTLINE_PROVIDER_NAME, read once: process.env is a slow accessor and this runs on every call. */
function envProviderName(): string | undefined {
  fromEnv ??= { value: processEnv().FAULTLINE_PROVIDER_NAME?.trim() || undefined };
  return fromEnv.value;
}
