/**
 * For MCP servers built on @modelcontextprotocol/sdk (`McpServer` or the low-level `Server`): every tools/call the
 * server receives gets a SERVER span (`tools/call {tool}`, the MCP semconv name) recording what arrived — the tool,
 * the JSON-RPC id, the session, and the content-free facts of the call's params as the client's span records them
 * (keys, size, hash, shape; the JSON itself only with content capture) — under the client's trace context from
 * `params._meta` (as the MCP semconv carries it; the HTTP `traceparent` header otherwise). The tool handler runs
 * inside the span; the span ends with the response, `error.type=tool_error` when the tool reported failure.
 *
 *   const server = instrumentMcpServer(new McpServer({ name: 'tools', version: '1.0.0' }), { contracts: { lookup } });
 *   await server.connect(transport);
 *
 * The hook is the transport the server connects to (its `onmessage` and `send`, which the SDK's Protocol owns after
 * `connect`), so it sees the JSON-RPC messages whatever transport and server class are used. Typed structurally:
 * faultline does not depend on the MCP SDK. Messages pass through unchanged; an error of ours is reported through
 * diag and never reaches the server.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
} from '@opentelemetry/api';
import { logger, safely } from '../../src/diag';
import { now } from '../../src/clock';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  GEN_AI_OPERATION_EXECUTE_TOOL,
} from '../semconv';
import type { AgentMessage } from '../types';
import { messageContentCaptured } from './channel';
import { setString } from './message';
import { startReceiveSpan } from './receive';

const log = logger('mcp-server');

interface TransportLike {
  onmessage?: ((message: unknown, extra?: unknown) => void) | undefined;
  onclose?: (() => void) | undefined;
  send(message: unknown, options?: unknown): Promise<void>;
  sessionId?: string | undefined;
}

export interface McpServerLike {
  connect(transport: never): Promise<void>;
}

export interface McpServerOptions {
  /** Per tool, the contract its arguments must meet (zod, Standard Schema or JSON Schema): checked and recorded on
   * the span. (The SDK checks a tool's own inputSchema too, and answers a tool error when it fails.) */
  contracts?: Record<string, unknown>;
  /** Record the call's params on the span. Default: what faultline was registered with (content capture). */
  captureMessageContent?: boolean;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

const metaGetter: TextMapGetter<Json> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const v = carrier[key] ?? carrier[Object.keys(carrier).find((k) => k.toLowerCase() === key) ?? ''];
    return typeof v === 'string'
      ? v
      : Array.isArray(v)
        ? (v.filter((x) => typeof x === 'string') as string[])
        : undefined;
  },
};

/** Keys of `_meta` that trace propagation added (the client's span layer puts them there). */
const PROPAGATION_KEYS = new Set(['traceparent', 'tracestate', 'baggage']);

/** The params as the client's application built them: without the trace context propagation added to `_meta`. */
function applicationParams(params: Json): Json {
  if (!isObj(params._meta) || !Object.keys(params._meta).some((k) => PROPAGATION_KEYS.has(k))) return params;
  const meta = Object.fromEntries(Object.entries(params._meta).filter(([k]) => !PROPAGATION_KEYS.has(k)));
  const { _meta: _dropped, ...rest } = params;
  return Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest;
}

function parentOf(params: Json, extra: unknown): Context {
  const carriers: Json[] = [];
  if (isObj(params._meta)) carriers.push(params._meta);
  const headers =
    isObj(extra) && isObj(extra.requestInfo) && isObj(extra.requestInfo.headers)
      ? extra.requestInfo.headers
      : undefined;
  if (headers) carriers.push(headers);
  for (const c of carriers) {
    const ctx = propagation.extract(ROOT_CONTEXT, c, metaGetter);
    if (trace.getSpanContext(ctx)) return ctx;
  }
  return context.active();
}

const WRAPPED = Symbol('faultline.mcp-server');

function wrapTransport(transport: TransportLike, options: McpServerOptions): void {
  const t = transport as TransportLike & { [WRAPPED]?: boolean };
  if (t[WRAPPED] || typeof t.onmessage !== 'function') return;
  t[WRAPPED] = true;
  const onmessage = t.onmessage;
  const send = t.send.bind(t);
  const onclose = t.onclose;
  /** Open spans per JSON-RPC id, oldest first (a repeated id gets its own span). */
  const pending = new Map<string, Span[]>();

  t.onmessage = (message: unknown, extra?: unknown) => {
    const started = safely(log, 'tools/call span', () => startCall(message, extra, t, options), undefined);
    if (!started) return onmessage(message, extra);
    const key = started.key;
    pending.set(key, [...(pending.get(key) ?? []), started.span]);
    return context.with(started.context, () => onmessage(message, extra));
  };
  t.send = (message: unknown, sendOptions?: unknown) => {
    safely(
      log,
      'tools/call response',
      () => {
        if (!isObj(message) || message.id === undefined || (!('result' in message) && !('error' in message))) return;
        const key = String(message.id);
        const spans = pending.get(key);
        const span = spans?.shift();
        if (spans?.length === 0) pending.delete(key);
        if (span) endCall(span, message);
      },
      undefined,
    );
    return send(message, sendOptions);
  };
  t.onclose = () => {
    const end = now();
    for (const spans of pending.values()) for (const s of spans) s.end(end);
    pending.clear();
    onclose?.();
  };
}

function startCall(
  message: unknown,
  extra: unknown,
  t: TransportLike,
  options: McpServerOptions,
): { key: string; span: Span; context: Context } | undefined {
  if (!isObj(message) || message.method !== 'tools/call' || message.id === undefined || !isObj(message.params))
    return undefined;
  const params = message.params;
  const tool = typeof params.name === 'string' ? params.name : undefined;
  if (tool === undefined) return undefined;
  const rpcId = String(message.id);
  const payload = applicationParams(params);
  const received: AgentMessage = {
    // MCP carries no message id: the JSON-RPC id within the session names this call.
    id: `mcp:${t.sessionId ?? ''}:${rpcId}`,
    source: '',
    target: tool,
    ...(t.sessionId !== undefined ? { sessionId: t.sessionId } : {}),
    payload,
  };
  const attributes: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_EXECUTE_TOOL,
    [ATTR_MCP_METHOD_NAME]: 'tools/call',
    [ATTR_GEN_AI_TOOL_NAME]: tool,
    [ATTR_JSONRPC_REQUEST_ID]: rpcId,
  };
  setString(attributes, ATTR_MCP_SESSION_ID, t.sessionId);
  const parent = parentOf(params, extra);
  const contract = options.contracts?.[tool];
  const span = startReceiveSpan({
    name: `tools/call ${tool}`,
    kind: SpanKind.SERVER,
    message: received,
    parent,
    captureContent: options.captureMessageContent ?? messageContentCaptured(),
    ...(contract !== undefined ? { contract, contractValue: params.arguments } : {}),
    system: 'mcp',
    attributes,
  });
  return { key: rpcId, span, context: trace.setSpan(parent, span) };
}

function endCall(span: Span, response: Json): void {
  if (isObj(response.error)) {
    const code = response.error.code;
    span.setAttribute(ATTR_RPC_RESPONSE_STATUS_CODE, String(code));
    span.setAttribute(ATTR_ERROR_TYPE, typeof code === 'number' ? String(code) : '_OTHER');
    span.setStatus({ code: SpanStatusCode.ERROR, message: `JSON-RPC error ${String(code)}` });
  } else if (isObj(response.result) && response.result.isError === true) {
    span.setAttribute(ATTR_ERROR_TYPE, 'tool_error');
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'tool_error' });
  }
  span.end(now());
}

/**
 * Instrument an MCP server: its `connect` wraps the transport it is given, after the SDK took it over, so every
 * tools/call gets a receive span. Returns the same server.
 */
export function instrumentMcpServer<S extends McpServerLike>(server: S, options: McpServerOptions = {}): S {
  const connect = (server.connect as (transport: TransportLike) => Promise<void>).bind(server);
  (server as unknown as { connect(t: TransportLike): Promise<void> }).connect = async (transport: TransportLike) => {
    const connecting = connect(transport);
    // The SDK's Protocol installs its onmessage synchronously inside connect, before the transport starts.
    safely(log, 'wrap transport', () => wrapTransport(transport, options), undefined);
    await connecting;
    safely(log, 'wrap transport', () => wrapTransport(transport, options), undefined);
  };
  return server;
}
