/**
 * A2A client calls over JSON-RPC (HTTP): one CLIENT `invoke_agent {agent}` span per call carrying the `a2a.*`
 * attributes of the semconv A2A page and the faultline.message.* facts of the message sent.
 *
 * Recognised methods, in both the v1.0 names (what @a2a-js/sdk 1.x sends) and the v0.3 names:
 * SendMessage / message/send, SendStreamingMessage / message/stream (SSE response, read as it arrives),
 * GetTask / tasks/get; plus the send/stream calls of the HTTP+JSON (REST) binding. `a2a.method.name` always carries
 * the v1.0 name. Anything else passes through with no span.
 *
 * The remote agent's name is not on the wire of a call (it is in the Agent Card, fetched separately and not seen by
 * this module), so it comes from an `x-faultline-agent` request header when the application sets one (A2A clients
 * take per-call headers; `a2aAgentCardInterceptor` sets it from the card the @a2a-js/sdk client holds); without it
 * the span is named `invoke_agent`, as the spec says for unnamed agents, and the
 * message target is the server's `host:port`. The sender is the in-process agent running the call (`runAgent`), the
 * boundary label comes from an `x-faultline-boundary` header, the message's task is the faultline task scope
 * (`withTask` / `runWorkflow`) and its session the A2A contextId.
 */
import { SpanKind, type Attributes } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import type { ProtocolModule, ProtocolStart, ResponseReader } from '../internal-types';
import {
  ATTR_A2A_MESSAGE_ID,
  ATTR_A2A_METHOD_NAME,
  ATTR_A2A_PROTOCOL_VERSION,
  ATTR_A2A_TASK_ID,
  ATTR_A2A_TASK_STATE,
  ATTR_ERROR_TYPE,
  ATTR_FL_RESPONSE_DONE,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_RPC_RESPONSE_STATUS_CODE,
  GEN_AI_OPERATION_INVOKE_AGENT,
} from '../semconv';
import type { AgentMessage, Exchange, GenAiMessage, GenAiPart } from '../types';
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
  type JsonRpcRequest,
} from './jsonrpc';
import { header, messageAttributes, newMessageId, setString } from './message';
import { getTaskId } from './task';

/** Request header naming the remote agent (span name, gen_ai.agent.name, message target). */
export const AGENT_HEADER = 'x-faultline-agent';
/** Request header carrying the boundary label (I1..I4 or a user label) of the message. */
export const BOUNDARY_HEADER = 'x-faultline-boundary';

const V1_METHODS: ReadonlySet<string> = new Set(['SendMessage', 'SendStreamingMessage', 'GetTask']);
const LEGACY_TO_V1: Readonly<Record<string, string>> = {
  'message/send': 'SendMessage',
  'message/stream': 'SendStreamingMessage',
  'tasks/get': 'GetTask',
};

/** v0.3 task states (kebab-case) → the `TASK_STATE_*` values the semconv uses. */
function taskState(raw: unknown): string | undefined {
  if (typeof raw !== 'string' || raw === '') return undefined;
  if (raw.startsWith('TASK_STATE_')) return raw;
  return `TASK_STATE_${raw.replace(/-/g, '_').toUpperCase()}`;
}

/** States after which a task stream ends (terminal, or interrupted waiting for the client). */
const FINAL_STATES: ReadonlySet<string> = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_CANCELLED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
]);

interface A2aCall {
  /** v1.0 method name. */
  method: string;
  isV1: boolean;
  params: unknown;
  /** The JSON-RPC envelope; undefined for the HTTP+JSON (REST) binding. */
  rpc?: JsonRpcRequest;
}

/** The REST (HTTP+JSON) binding's send and stream paths; v0.3 puts them under `/v1/`. */
const REST_PATH = /(\/v1)?\/message:(send|stream)$/;

/**
 * The A2A call in a request: a JSON-RPC body, or a REST `POST …/message:send` / `…/message:stream` whose body is the
 * SendMessageRequest itself (v0.3 puts those paths under `/v1/`). Other REST calls (GET /tasks/{id}, …) carry no body
 * to tell them apart from any other API and are not recognised.
 */
function recognise(url: URL, body: unknown): A2aCall | undefined {
  const rpc = asJsonRpcRequest(body);
  if (rpc !== undefined) {
    const isV1 = V1_METHODS.has(rpc.method);
    const method = isV1 ? rpc.method : LEGACY_TO_V1[rpc.method];
    return method === undefined ? undefined : { method, isV1, params: rpc.params, rpc };
  }
  const rest = REST_PATH.exec(url.pathname);
  if (rest === null || !isObject(body) || !isObject(body.message)) return undefined;
  return {
    method: rest[2] === 'send' ? 'SendMessage' : 'SendStreamingMessage',
    isV1: rest[1] === undefined,
    params: body,
  };
}

export const a2aProtocol: ProtocolModule = {
  protocol: 'a2a',

  // JSON-RPC endpoints live at any path, so the headers (a JSON body) and then the bytes (a `jsonrpc` member, or a
  // REST send path with a `message`) rule a POST out before its body is parsed; `start` decides.
  matches(method: string, _url: URL, headers?: Record<string, string>): boolean {
    return mayBeJson(method, headers);
  },

  sniff(body: Buffer, url: URL): boolean {
    return sniffJsonRpc(body) || REST_PATH.test(url.pathname);
  },

  start(url: URL, body: unknown, headers: Record<string, string>, captureContent: boolean): ProtocolStart | undefined {
    const call = recognise(url, body);
    if (call === undefined) return undefined;
    const { method, isV1, rpc } = call;
    const params = isObject(call.params) ? call.params : {};
    const sent = isObject(params.message) ? params.message : undefined;
    const messageId = str(sent?.messageId);
    const a2aTaskId = str(sent?.taskId) ?? (method === 'GetTask' ? str(params.id) : undefined);
    const contextId = str(sent?.contextId);
    const agent = header(headers, AGENT_HEADER);

    const message: AgentMessage = {
      id: messageId ?? newMessageId(),
      source: getAgentName() ?? '',
      target: agent ?? url.host,
      boundary: header(headers, BOUNDARY_HEADER),
      // faultline's task (the workflow run), not the A2A task: the server assigns those, and they never match the run's
      // task id, which consumers compare this with. a2a.task.id carries the A2A one.
      taskId: getTaskId(),
      sessionId: contextId,
      sentAt: Date.now(),
      payload: call.params,
    };

    const attributes: Attributes = {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_INVOKE_AGENT,
      [ATTR_A2A_METHOD_NAME]: method,
      [ATTR_A2A_PROTOCOL_VERSION]: isV1 ? (header(headers, 'a2a-version') ?? '1.0') : '0.3',
      ...serverAttributes(url),
      ...messageAttributes(message, captureContent),
    };
    setString(attributes, ATTR_GEN_AI_AGENT_NAME, agent);
    setString(attributes, ATTR_A2A_MESSAGE_ID, messageId);
    setString(attributes, ATTR_A2A_TASK_ID, a2aTaskId);
    setString(attributes, ATTR_GEN_AI_CONVERSATION_ID, contextId);
    if (rpc?.id !== undefined) attributes[ATTR_JSONRPC_REQUEST_ID] = String(rpc.id);
    if (captureContent && sent !== undefined) {
      attributes[ATTR_GEN_AI_INPUT_MESSAGES] = JSON.stringify([toGenAiMessage(sent)]);
    }

    return {
      name: agent !== undefined ? `${GEN_AI_OPERATION_INVOKE_AGENT} ${agent}` : GEN_AI_OPERATION_INVOKE_AGENT,
      kind: SpanKind.CLIENT,
      attributes,
      stream: method === 'SendStreamingMessage',
      operation: GEN_AI_OPERATION_INVOKE_AGENT,
      provider: 'a2a',
      message,
    };
  },

  reader(exchange: Exchange, captureContent: boolean): ResponseReader {
    return new A2aResponseReader(exchange, captureContent);
  },
};

/** Folds the JSON-RPC response (or each stream event) into the task facts the span reports. */
class A2aResponseReader implements ResponseReader {
  readonly #body = new JsonRpcBody((m) => this.#onMessage(m));
  readonly #capture: boolean;
  readonly #stream: boolean;
  /** HTTP+JSON binding: each JSON document / SSE event is the result itself, not a JSON-RPC envelope. */
  readonly #rest: boolean;
  #results: unknown[] = [];
  #error: JsonRpcError | undefined;
  #taskId: string | undefined;
  #contextId: string | undefined;
  #state: string | undefined;
  #done = false;
  /** Reply content (only gathered when content capture is on). */
  #replies: GenAiMessage[] = [];
  #artifacts = new Map<string, GenAiPart[]>();

  constructor(exchange: Exchange, captureContent: boolean) {
    this.#capture = captureContent;
    this.#stream = exchange.stream;
    this.#rest = asJsonRpcRequest(exchange.request) === undefined;
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
    const errorType = exchangeErrorType(failure, status, this.#error);
    const attributes: Attributes = { ...this.#body.facts() };
    if (status > 0) attributes[ATTR_HTTP_RESPONSE_STATUS_CODE] = status;
    setString(attributes, ATTR_A2A_TASK_ID, this.#taskId);
    setString(attributes, ATTR_A2A_TASK_STATE, this.#state);
    setString(attributes, ATTR_GEN_AI_CONVERSATION_ID, this.#contextId);
    if (this.#stream) attributes[ATTR_FL_RESPONSE_DONE] = this.#done;
    if (this.#error !== undefined && Number.isFinite(this.#error.code)) {
      attributes[ATTR_RPC_RESPONSE_STATUS_CODE] = String(this.#error.code);
    }
    if (errorType !== undefined) attributes[ATTR_ERROR_TYPE] = errorType;
    if (this.#capture) {
      const output = [...this.#replies];
      const artifactParts = [...this.#artifacts.values()].flat();
      if (artifactParts.length > 0) output.push({ role: 'assistant', parts: artifactParts });
      if (output.length > 0) attributes[ATTR_GEN_AI_OUTPUT_MESSAGES] = JSON.stringify(output);
    }
    const result = this.#stream ? this.#results : this.#results[0];
    return {
      attributes,
      outcome: { result, status: status > 0 ? status : undefined, errorType, durationMs },
      error: errorType === undefined ? undefined : describe(errorType, status, this.#error, this.#capture),
    };
  }

  #onMessage(message: unknown): void {
    if (this.#rest) {
      // An error document comes with an HTTP error status, which is what error.type reports.
      if (this.#body.status >= 400) return;
      this.#onResult(message);
      return;
    }
    const error = rpcError(message);
    if (error !== undefined) {
      this.#error = error;
      this.#results.push(isObject(message) ? message.error : undefined);
      return;
    }
    if (isObject(message) && 'result' in message) this.#onResult(message.result);
  }

  #onResult(result: unknown): void {
    this.#results.push(result);
    const event = unwrap(result);
    if (event === undefined) return;
    const v = event.value;
    switch (event.kind) {
      case 'task': {
        this.#noteTask(str(v.id), str(v.contextId));
        if (isObject(v.status)) this.#noteState(v.status.state);
        if (this.#capture && Array.isArray(v.artifacts)) for (const a of v.artifacts) this.#noteArtifact(a, false);
        break;
      }
      case 'message': {
        this.#noteTask(str(v.taskId), str(v.contextId));
        this.#done = true; // a direct reply ends the exchange
        if (this.#capture) this.#replies.push(toGenAiMessage(v));
        break;
      }
      case 'status': {
        this.#noteTask(str(v.taskId), str(v.contextId));
        if (isObject(v.status)) this.#noteState(v.status.state);
        if (v.final === true) this.#done = true; // v0.3 marks the last event
        break;
      }
      case 'artifact': {
        this.#noteTask(str(v.taskId), str(v.contextId));
        if (this.#capture) this.#noteArtifact(v.artifact, v.append === true);
        break;
      }
    }
  }

  #noteTask(taskId: string | undefined, contextId: string | undefined): void {
    if (taskId !== undefined) this.#taskId = taskId;
    if (contextId !== undefined) this.#contextId = contextId;
  }

  #noteState(raw: unknown): void {
    const state = taskState(raw);
    if (state === undefined) return;
    this.#state = state;
    if (FINAL_STATES.has(state)) this.#done = true;
  }

  #noteArtifact(artifact: unknown, append: boolean): void {
    if (!isObject(artifact)) return;
    const id = str(artifact.artifactId) ?? String(this.#artifacts.size);
    const parts = Array.isArray(artifact.parts) ? artifact.parts.map(toGenAiPart) : [];
    this.#artifacts.set(id, append ? [...(this.#artifacts.get(id) ?? []), ...parts] : parts);
  }
}

type A2aEvent =
  | { kind: 'task'; value: Record<string, unknown> }
  | { kind: 'message'; value: Record<string, unknown> }
  | { kind: 'status'; value: Record<string, unknown> }
  | { kind: 'artifact'; value: Record<string, unknown> };

/** One result of either wire version as a tagged event: v1.0 wraps it (`{task}`, `{statusUpdate}`, …), v0.3 tags it
 * with `kind`; a bare Task (v1.0 GetTask) or Message is recognised by its fields. */
function unwrap(result: unknown): A2aEvent | undefined {
  if (!isObject(result)) return undefined;
  if (isObject(result.task)) return { kind: 'task', value: result.task };
  if (isObject(result.message)) return { kind: 'message', value: result.message };
  const status = result.statusUpdate ?? result.status_update;
  if (isObject(status)) return { kind: 'status', value: status };
  const artifact = result.artifactUpdate ?? result.artifact_update;
  if (isObject(artifact)) return { kind: 'artifact', value: artifact };
  switch (result.kind) {
    case 'task':
      return { kind: 'task', value: result };
    case 'message':
      return { kind: 'message', value: result };
    case 'status-update':
      return { kind: 'status', value: result };
    case 'artifact-update':
      return { kind: 'artifact', value: result };
  }
  if (typeof result.id === 'string' && isObject(result.status)) return { kind: 'task', value: result };
  if (typeof result.messageId === 'string') return { kind: 'message', value: result };
  return undefined;
}

/** An A2A message (either version) in the GenAI message shape, for captured content. */
function toGenAiMessage(message: Record<string, unknown>): GenAiMessage {
  const role = String(message.role ?? '')
    .toLowerCase()
    .replace(/^role_/, '');
  return {
    role: role === 'agent' ? 'assistant' : role === '' ? 'user' : role,
    parts: Array.isArray(message.parts) ? message.parts.map(toGenAiPart) : [],
  };
}

function toGenAiPart(part: unknown): GenAiPart {
  if (!isObject(part)) return { type: 'unknown' };
  if (typeof part.text === 'string') return { type: 'text', content: part.text };
  if ('data' in part) return { type: 'data', content: part.data };
  if (isObject(part.file)) return { type: 'file', ...part.file };
  if (typeof part.url === 'string' || typeof part.raw === 'string') {
    return { type: 'file', url: part.url, mediaType: part.mediaType, filename: part.filename };
  }
  return { type: typeof part.kind === 'string' ? part.kind : 'unknown' };
}

/** Span status description: the JSON-RPC message may echo the request, so it is included only with capture on. */
function describe(errorType: string, status: number, error: JsonRpcError | undefined, capture: boolean): string {
  if (error !== undefined && status < 400) {
    return capture && error.message ? `JSON-RPC error ${error.code}: ${error.message}` : `JSON-RPC error ${error.code}`;
  }
  return status >= 400 ? `HTTP ${status}` : errorType;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}
