/** The protocol modules the interceptor asks, in order; the first whose `matches` and `start` accept a request wins. */
import { a2aProtocol } from './agents/a2a';
import { mcpProtocol } from './agents/mcp';
import type { ProtocolModule } from './internal-types';
import { anthropicMessages } from './providers/anthropic-messages';
import { bedrockConverse } from './providers/bedrock-converse';
import { bedrockInvoke } from './providers/bedrock-invoke';
import { geminiEmbeddings, ollamaEmbeddings, openaiEmbeddings } from './providers/embeddings';
import { geminiGenerateContent } from './providers/gemini';
import { ollamaChat, ollamaGenerate } from './providers/ollama';
import { openaiChat } from './providers/openai-chat';
import { openaiResponses } from './providers/openai-responses';

export const protocols: readonly ProtocolModule[] = [
  openaiChat,
  openaiResponses,
  anthropicMessages,
  geminiGenerateContent,
  bedrockConverse,
  bedrockInvoke,
  ollamaChat,
  ollamaGenerate,
  // Ollama's /api/embeddings first: an OpenAI-shaped body on that path falls through to the OpenAI-compatible module.
  ollamaEmbeddings,
  openaiEmbeddings,
  geminiEmbeddings,
  a2aProtocol,
  mcpProtocol,
];
