/**
 * Inter-agent instrumentation, public surface: in-process agent turns and workflows, the task scope, and the message
 * channel for handoffs that never touch HTTP. (The A2A and MCP protocol modules plug into the interceptor and are
 * internal.)
 */
export { runAgent, getAgentName, type RunAgentOptions } from './invoke-agent';
export { withTask, runWorkflow, getTaskId, type RunWorkflowOptions } from './task';
export {
  checkpoint,
  workflowSignal,
  WorkflowDeadlineError,
  VerificationFailedError,
  type AgentDeclaration,
  type WorkflowDeclaration,
  type CheckpointOptions,
  type WorkflowRecovery,
} from './declarations';
export {
  MessageChannel,
  configureChannels,
  type ChannelConfig,
  type DeliveryListener,
  type MessageChannelOptions,
  type MessageHandler,
  type MessageInput,
  type ReceiverOptions,
} from './channel';
export { payloadHash, canonicalJson } from './message';
export { AGENT_HEADER, BOUNDARY_HEADER } from './a2a';
export { a2aAgentCardInterceptor, type A2aAgentCardInterceptorOptions } from './a2a-client';
export { instrumentA2aRequestHandler, type A2aRequestHandlerLike, type A2aServerOptions } from './a2a-server';
export { instrumentMcpServer, type McpServerLike, type McpServerOptions } from './mcp-server';
