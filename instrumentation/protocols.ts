/** The protocol modules the interceptor asks, in order; the first whose `matches` and `start` accept a request wins. */
import { a2aProtocol } from './agents/a2a';
import { mcpProtocol } from './agents/mcp';
import type { ProtocolModule } from './internal-types';
import { anthropicMessages } from './providers/anthropic-messages';
import { openaiChat } from './providers/openai-chat';
import { openaiResponses } from './providers/openai-responses';

export const protocols: readonly ProtocolModule[] = [openaiChat, openaiResponses, anthropicMessages, a2aProtocol, mcpProtocol];
