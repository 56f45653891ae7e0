/**
 * Amazon Bedrock runtime `InvokeModel` (`POST …/model/{modelId}/invoke`) with a model family's own body. The path says
 * Bedrock and the model; the body says the family: an Anthropic messages body (`anthropic_version`, `messages`) is
 * read by the Anthropic messages module, whose answers Bedrock returns as they are, with the model id from the path
 * (the body has none) and `gen_ai.provider.name` `aws.bedrock`. The other families' bodies (Meta Llama, Mistral,
 * Amazon Nova / Titan, Cohere) and `invoke-with-response-stream` are not read yet: no span, the call untouched.
 */
import type { ProtocolModule, ProtocolStart, ResponseReader } from '../internal-types';
import type { Exchange } from '../types';
import { anthropicReader, anthropicStart } from './anthropic-messages';
import { bedrockRoute } from './bedrock-converse';
import { isObject } from './content';
import { providerName } from './provider-name';

export const bedrockInvoke: ProtocolModule = {
  protocol: 'bedrock.invoke',

  matches(method: string, url: URL): boolean {
    return method === 'POST' && bedrockRoute(url)?.action === 'invoke';
  },

  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined {
    const route = bedrockRoute(url);
    // Only the body tells the family: a body not read yet (UNREAD) or of another family is not ours.
    if (route?.action !== 'invoke' || !isObject(body) || typeof body.anthropic_version !== 'string' || !Array.isArray(body.messages)) return undefined;
    return anthropicStart(url, body, headers, captureContent, route.model, providerName(url.hostname, 'bedrock'));
  },

  reader(_exchange: Exchange, captureContent: boolean): ResponseReader {
    return anthropicReader(captureContent);
  },
};
