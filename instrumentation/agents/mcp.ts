/**
 * MCP tool calls over Streamable HTTP: a CLIENT `execute_tool {tool}` span per JSON-RPC `tools/call` POST, with the
 * attributes of the semconv MCP page (mcp.method.name, gen_ai.tool.name, jsonrpc.request.id, mcp.session.id,
 * mcp.protocol.version) and the faultline.message.* facts of the call. The span's trace context is put into
 * `params._meta` (`traceparent`, `tracestate`), where the MCP page says it belongs, unless the application already
 * put a `traceparent` there. The response is read whether the server answers with JSON or with an SSE stream (which
 * may carry notifications before the result). Every other MCP message (initialize, tools/list, notifications, the
 * GET stream) passes through untouched, with no span.
 */
import { SpanKind, type Attributes } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import type { ProtocolModule, ProtocolStart, ResponseReader } from '../internal-types';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_SESSION_ID,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  GEN_AI_OPERATION_EXECUTE_TOOL,
} from '../semconv';
import type { AgentMessage, Exchange } from '../types';
import { BOUNDARY_HEADER } from './a2a';
import { getAgentName } from './invoke-agent';
import {
  JsonRpcBody,
  asJsonRpcRequest,
  exchangeErrorType,
  isObject,
  mayBeJson,
  rpcError,
  sniffJsonRpc,
  serverAttributes,
  type JsonRpcError,
  type JsonRpcId,
} from './jsonrpc';
import { header, messageAttributes, newMessageId, setString } from './message';
import { getTaskId } from './task';

const TOOLS_CALL = 'tools/call';
/** error.type when the tool ran and reported failure (CallToolResult.isError), per the MCP page. */
const TOOL_ERROR = 'tool_error';

export const mcpProtocol: ProtocolModule = {
  protocol: 'mcp',

  // Streamable HTTP endpoints live at any path, so the headers say first: a JSON POST that accepts an SSE answer (the
  // transport requires clients to list text/event-stream) or carries the transport's own headers; then the bytes (a
  // `jsonrpc` member) before the body is parsed; `start` decides.
  matches(method: string, _url: URL, headers?: Record<string, string>): boolean {
    if (!mayBeJson(method, headers)) return false;
    if (headers === undefined) return true;
    const accept = header(headers, 'accept');
    return (
      (accept !== undefined && /text\/event-stream/i.test(accept)) ||
      header(headers, 'mcp-protocol-version') !== undefined ||
      header(headers, 'mcp-session-id') !== undefined
    );
  },

  sniff: sniffJsonRpc,

  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined {
    const rpc = asJsonRpcRequest(body);
    if (rpc === undefined || rpc.method !== TOOLS_CALL || rpc.id === undefined) return undefined;
    const params = rpc.params;
    if (!isObject(params) || typeof params.name !== 'string' || params.name === '') return undefined;
    const tool = params.name;
    const sessionId = header(headers, 'mcp-session-id');

    const message: AgentMessage = {
      id: newMessageId(),
      source: getAgentName() ?? '',
      target: tool,
      boundary: header(headers, BOUNDARY_HEADER),
      taskId: getTaskId(),
      sessionId,
      sentAt: Date.now(),
      payload: params,
    };
    const attributes: Attributes = {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_EXECUTE_TOOL,
      [ATTR_MCP_METHOD_NAME]: TOOLS_CALL,
      [ATTR_GEN_AI_TOOL_NAME]: tool,
      [ATTR_JSONRPC_REQUEST_ID]: String(rpc.id),
      ...serverAttributes(url),
      ...messageAttributes(message, captureContent),
    };
    setString(attributes, ATTR_MCP_SESSION_ID, sessionId);
    setString(attributes, ATTR_MCP_PROTOCOL_VERSION, header(headers, 'mcp-protocol-version'));
    if (captureContent && params.arguments !== undefined) {
      attributes[ATTR_GEN_AI_TOOL_CALL_ARGUMENTS] = JSON.stringify(params.arguments);
    }

    return {
      name: `${GEN_AI_OPERATION_EXECUTE_TOOL} ${tool}`,
      kind: SpanKind.CLIENT,
      attributes,
      // Whether the server streams is its choice, known from the response content type; the reader handles both.
      stream: false,
      operation: GEN_AI_OPERATION_EXECUTE_TOOL,
      provider: 'mcp',
      message,
      rewriteBody: (traceparent, tracestate) =>
        withTraceContext(rpc as unknown as Record<string, unknown>, params, traceparent, tracestate),
    };
  },

  reader(exchange: Exchange, captureContent: boolean): ResponseReader {
    return new McpResponseReader(exchange, captureContent);
  },
};

/** The request with the span's trace context in `params._meta`; undefined (send the original bytes) when the
 * application already propagates its own. Other `_meta` keys (progressToken, …) are kept. */
function withTraceContext(
  rpc: Record<string, unknown>,
  params: Record<string, unknown>,
  traceparent: string,
  tracestate: string | undefined,
): Buffer | undefined {
  const meta = isObject(params._meta) ? params._meta : {};
  if (typeof meta.traceparent === 'string') return undefined;
  const nextMeta: Record<string, unknown> = { ...meta, traceparent };
  if (tracestate !== undefined && tracestate !== '') nextMeta.tracestate = tracestate;
  return Buffer.from(JSON.stringify({ ...rpc, params: { ...params, _meta: nextMeta } }));
}

class McpResponseReader implements ResponseReader {
  readonly #body = new JsonRpcBody((m) => this.#onMessage(m));
  readonly #capture: boolean;
  readonly #id: JsonRpcId | undefined;
  #response: { result?: unknown; error?: JsonRpcError } | undefined;

  constructor(exchange: Exchange, captureContent: boolean) {
    this.#capture = captureContent;
    const id = isObject(exchange.request) ? exchange.request.id : undefined;
    this.#id = typeof id === 'string' || typeof id === 'number' ? id : undefined;
  }

  onStart(status: number, headers: IncomingHttpHeaders): void {
    this.#body.onStart(status, headers);
  }

  onData(chunk: Buffer): void {
    this.#body.onData(chunk);
  }

  onEnd(): void {
    this.#body.onEnd();
  }

  finish(_exchange: Exchange, failure: { errorType?: string; aborted?: boolean } | undefined, durationMs: number) {
    const status = this.#body.status;
    const error = this.#response?.error;
    const result = this.#response?.result;
    const toolFailed = error === undefined && isObject(result) && result.isError === true;
    const errorType = exchangeErrorType(failure, status, error) ?? (toolFailed ? TOOL_ERROR : undefined);
    const attributes: Attributes = { ...this.#body.facts() };
    if (status > 0) attributes[ATTR_HTTP_RESPONSE_STATUS_CODE] = status;
    if (error !== undefined && Number.isFinite(error.code))
      attributes[ATTR_RPC_RESPONSE_STATUS_CODE] = String(error.code);
    if (errorType !== undefined) attributes[ATTR_ERROR_TYPE] = errorType;
    if (this.#capture && result !== undefined) attributes[ATTR_GEN_AI_TOOL_CALL_RESULT] = JSON.stringify(result);
    let description: string | undefined;
    if (errorType !== undefined) {
      if (status >= 400) description = `HTTP ${status}`;
      else if (error !== undefined) {
        description =
          this.#capture && error.message
            ? `JSON-RPC error ${error.code}: ${error.message}`
            : `JSON-RPC error ${error.code}`;
      } else description = errorType;
    }
    return {
      attributes,
      outcome: { result: error ?? result, status: status > 0 ? status : undefined, errorType, durationMs },
      error: description,
    };
  }

  /** Keep the response to our request; an SSE stream may also carry notifications and server requests. */
  #onMessage(message: unknown): void {
    if (!isObject(message) || (this.#id !== undefined && message.id !== this.#id)) return;
    const error = rpcError(message);
    if (error !== undefined) this.#response = { error };
    else if ('result' in message) this.#response = { result: message.result };
  }
}
