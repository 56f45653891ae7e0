/*
 * This file contains a copy of the unstable semantic convention definitions used by faultline.
 * The GenAI conventions are experimental and churning (they moved to open-telemetry/semantic-conventions-genai
 * and have no tagged release yet), so, as the OpenTelemetry JS contrib packages do, we copy the names we emit
 * instead of importing `@opentelemetry/semantic-conventions/incubating` at run time.
 *
 * Implemented: GenAI semantic conventions, latest experimental (gen_ai.provider.name, gen_ai.input/output.messages,
 * schema https://opentelemetry.io/schemas/gen-ai/1.42.0), plus the MCP and A2A pages.
 */

// ---------------------------------------------------------------- GenAI
export const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name' as const;
export const ATTR_GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name' as const;
export const ATTR_GEN_AI_CONVERSATION_ID = 'gen_ai.conversation.id' as const;
export const ATTR_GEN_AI_OUTPUT_TYPE = 'gen_ai.output.type' as const;
export const ATTR_GEN_AI_REQUEST_MODEL = 'gen_ai.request.model' as const;
export const ATTR_GEN_AI_REQUEST_MAX_TOKENS = 'gen_ai.request.max_tokens' as const;
export const ATTR_GEN_AI_REQUEST_TEMPERATURE = 'gen_ai.request.temperature' as const;
export const ATTR_GEN_AI_REQUEST_TOP_P = 'gen_ai.request.top_p' as const;
export const ATTR_GEN_AI_REQUEST_TOP_K = 'gen_ai.request.top_k' as const;
export const ATTR_GEN_AI_REQUEST_STOP_SEQUENCES = 'gen_ai.request.stop_sequences' as const;
export const ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY = 'gen_ai.request.frequency_penalty' as const;
export const ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY = 'gen_ai.request.presence_penalty' as const;
export const ATTR_GEN_AI_REQUEST_SEED = 'gen_ai.request.seed' as const;
export const ATTR_GEN_AI_REQUEST_CHOICE_COUNT = 'gen_ai.request.choice.count' as const;
export const ATTR_GEN_AI_REQUEST_STREAM = 'gen_ai.request.stream' as const;
export const ATTR_GEN_AI_RESPONSE_ID = 'gen_ai.response.id' as const;
export const ATTR_GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model' as const;
export const ATTR_GEN_AI_RESPONSE_FINISH_REASONS = 'gen_ai.response.finish_reasons' as const;
export const ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = 'gen_ai.response.time_to_first_chunk' as const;
export const ATTR_GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens' as const;
export const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens' as const;
export const ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = 'gen_ai.usage.cache_read.input_tokens' as const;
export const ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = 'gen_ai.usage.cache_creation.input_tokens' as const;
export const ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = 'gen_ai.usage.reasoning.output_tokens' as const;
export const ATTR_GEN_AI_INPUT_MESSAGES = 'gen_ai.input.messages' as const;
export const ATTR_GEN_AI_OUTPUT_MESSAGES = 'gen_ai.output.messages' as const;
export const ATTR_GEN_AI_SYSTEM_INSTRUCTIONS = 'gen_ai.system_instructions' as const;
export const ATTR_GEN_AI_TOOL_DEFINITIONS = 'gen_ai.tool.definitions' as const;
export const ATTR_GEN_AI_AGENT_ID = 'gen_ai.agent.id' as const;
export const ATTR_GEN_AI_AGENT_NAME = 'gen_ai.agent.name' as const;
export const ATTR_GEN_AI_AGENT_DESCRIPTION = 'gen_ai.agent.description' as const;
export const ATTR_GEN_AI_AGENT_VERSION = 'gen_ai.agent.version' as const;
export const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name' as const;
export const ATTR_GEN_AI_TOOL_CALL_ID = 'gen_ai.tool.call.id' as const;
export const ATTR_GEN_AI_TOOL_TYPE = 'gen_ai.tool.type' as const;
export const ATTR_GEN_AI_TOOL_CALL_ARGUMENTS = 'gen_ai.tool.call.arguments' as const;
export const ATTR_GEN_AI_TOOL_CALL_RESULT = 'gen_ai.tool.call.result' as const;
export const ATTR_GEN_AI_TOKEN_TYPE = 'gen_ai.token.type' as const;
export const ATTR_GEN_AI_EMBEDDINGS_DIMENSION_COUNT = 'gen_ai.embeddings.dimension.count' as const;
export const ATTR_GEN_AI_REQUEST_ENCODING_FORMATS = 'gen_ai.request.encoding_formats' as const;
/** OpenAI page: which OpenAI API the call used (`chat_completions`, `responses`). */
export const ATTR_OPENAI_API_TYPE = 'openai.api.type' as const;
/** Deprecated predecessor of gen_ai.provider.name; read (never written) for traces of older producers. */
export const ATTR_GEN_AI_SYSTEM = 'gen_ai.system' as const;

export const GEN_AI_OPERATION_CHAT = 'chat' as const;
export const GEN_AI_OPERATION_TEXT_COMPLETION = 'text_completion' as const;
export const GEN_AI_OPERATION_GENERATE_CONTENT = 'generate_content' as const;
export const GEN_AI_OPERATION_EMBEDDINGS = 'embeddings' as const;
export const GEN_AI_OPERATION_INVOKE_AGENT = 'invoke_agent' as const;
export const GEN_AI_OPERATION_EXECUTE_TOOL = 'execute_tool' as const;
export const GEN_AI_OPERATION_INVOKE_WORKFLOW = 'invoke_workflow' as const;
/** The operations whose spans count as "LLM call spans" for step numbering. */
export const LLM_OPERATIONS: readonly string[] = [
  GEN_AI_OPERATION_CHAT,
  GEN_AI_OPERATION_TEXT_COMPLETION,
  GEN_AI_OPERATION_GENERATE_CONTENT,
];

export const METRIC_GEN_AI_CLIENT_OPERATION_DURATION = 'gen_ai.client.operation.duration' as const;
export const METRIC_GEN_AI_CLIENT_TOKEN_USAGE = 'gen_ai.client.token.usage' as const;

// ---------------------------------------------------------------- MCP
export const ATTR_MCP_METHOD_NAME = 'mcp.method.name' as const;
export const ATTR_MCP_SESSION_ID = 'mcp.session.id' as const;
export const ATTR_MCP_PROTOCOL_VERSION = 'mcp.protocol.version' as const;
export const ATTR_JSONRPC_REQUEST_ID = 'jsonrpc.request.id' as const;
export const ATTR_RPC_RESPONSE_STATUS_CODE = 'rpc.response.status_code' as const;

// ---------------------------------------------------------------- A2A
export const ATTR_A2A_METHOD_NAME = 'a2a.method.name' as const;
export const ATTR_A2A_MESSAGE_ID = 'a2a.message.id' as const;
export const ATTR_A2A_TASK_ID = 'a2a.task.id' as const;
export const ATTR_A2A_TASK_STATE = 'a2a.task.state' as const;
export const ATTR_A2A_PROTOCOL_VERSION = 'a2a.protocol.version' as const;

// ---------------------------------------------------------------- stable (copied to keep one import site)
export const ATTR_ERROR_TYPE = 'error.type' as const;
export const ATTR_SERVER_ADDRESS = 'server.address' as const;
export const ATTR_SERVER_PORT = 'server.port' as const;
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code' as const;
/** Requests resent within one call (redirects followed, guard retries): the HTTP semconv's resend count. */
export const ATTR_HTTP_REQUEST_RESEND_COUNT = 'http.request.resend_count' as const;
export const ATTR_URL_FULL = 'url.full' as const;
export const ERROR_TYPE_OTHER = '_OTHER' as const;

// ---------------------------------------------------------------- faultline
// Content-free facts recorded on every LLM span (detectors need them when content is not captured).
export const ATTR_FL_RESPONSE_OUTPUT_CHARS = 'faultline.response.output_chars' as const;
export const ATTR_FL_RESPONSE_TOOL_CALL_COUNT = 'faultline.response.tool_call_count' as const;
export const ATTR_FL_RESPONSE_CONTENT_HASH = 'faultline.response.content_hash' as const;
export const ATTR_FL_RESPONSE_BODY_BYTES = 'faultline.response.body_bytes' as const;
export const ATTR_FL_RESPONSE_CONTENT_TYPE = 'faultline.response.content_type' as const;
export const ATTR_FL_RESPONSE_CREATED = 'faultline.response.created' as const;
export const ATTR_FL_RESPONSE_CHUNK_COUNT = 'faultline.response.chunk_count' as const;
export const ATTR_FL_RESPONSE_DONE = 'faultline.response.done' as const;
export const ATTR_FL_RESPONSE_ABORTED = 'faultline.response.aborted' as const;
// SSE events whose `data:` did not parse as JSON (set only when > 0: a corrupted stream).
export const ATTR_FL_RESPONSE_MALFORMED_EVENTS = 'faultline.response.malformed_events' as const;
export const ATTR_FL_REQUEST_MESSAGE_COUNT = 'faultline.request.message_count' as const;
export const ATTR_FL_REQUEST_TOOL_NAMES = 'faultline.request.tool_names' as const;
export const ATTR_FL_REQUEST_RETRY_COUNT = 'faultline.request.retry_count' as const;
// Content-free verdicts on the answer, made at capture time from the content passing through (never recorded
// itself): per tool call, in the response's order, whether its arguments parse as JSON (`ok` / `failed`); against the
// request's declaration of that tool (`valid`, `invalid`, `undeclared` when the request declared no tool of that name,
// `no_schema`, `unparsed`) and the first breach's JSON-Schema keyword and path (`required $.query`; '' when none);
// whether the answer's text or arguments carry garbled characters (`replacement_char`, `mojibake`); whether the
// text is blank (empty or whitespace only) with no tool call; and a structured answer against the request's
// `response_format` schema, with its first breach.
export const ATTR_FL_TOOL_CALL_ARGUMENTS_PARSE = 'faultline.tool_call.arguments_parse' as const;
export const ATTR_FL_TOOL_CALL_SCHEMA = 'faultline.tool_call.schema' as const;
export const ATTR_FL_TOOL_CALL_SCHEMA_ISSUE = 'faultline.tool_call.schema_issue' as const;
export const ATTR_FL_RESPONSE_GARBLED = 'faultline.response.garbled' as const;
export const ATTR_FL_RESPONSE_BLANK = 'faultline.response.blank' as const;
export const ATTR_FL_RESPONSE_SCHEMA = 'faultline.response.schema' as const;
export const ATTR_FL_RESPONSE_SCHEMA_ISSUE = 'faultline.response.schema_issue' as const;
// OpenAI Responses API: the response a request continues (no semconv name; gen_ai.conversation.id is `conversation`).
export const ATTR_FL_REQUEST_PREVIOUS_RESPONSE_ID = 'faultline.request.previous_response_id' as const;
// Embeddings: how many inputs a request embeds, and how many vectors came back.
export const ATTR_FL_REQUEST_INPUT_COUNT = 'faultline.request.input_count' as const;
export const ATTR_FL_RESPONSE_EMBEDDING_COUNT = 'faultline.response.embedding_count' as const;

// In-process and remote agent messages (handoff spans and A2A/MCP spans).
export const ATTR_FL_MESSAGE_ID = 'faultline.message.id' as const;
export const ATTR_FL_MESSAGE_SOURCE = 'faultline.message.source' as const;
export const ATTR_FL_MESSAGE_TARGET = 'faultline.message.target' as const;
export const ATTR_FL_MESSAGE_BOUNDARY = 'faultline.message.boundary' as const;
export const ATTR_FL_MESSAGE_TASK_ID = 'faultline.message.task_id' as const;
export const ATTR_FL_MESSAGE_SESSION_ID = 'faultline.message.session_id' as const;
export const ATTR_FL_MESSAGE_VERSION = 'faultline.message.version' as const;
export const ATTR_FL_MESSAGE_KEYS = 'faultline.message.keys' as const;
export const ATTR_FL_MESSAGE_PAYLOAD_BYTES = 'faultline.message.payload_bytes' as const;
export const ATTR_FL_MESSAGE_PAYLOAD_HASH = 'faultline.message.payload_hash' as const;
/** Opt-in (content capture): the payload as a JSON string. */
export const ATTR_FL_MESSAGE_PAYLOAD = 'faultline.message.payload' as const;
export const ATTR_FL_MESSAGE_DELIVERED_COUNT = 'faultline.message.delivered_count' as const;
export const ATTR_FL_MESSAGE_DELIVERED_HASHES = 'faultline.message.delivered_hashes' as const;
// What crossed the channel, when it is not what was sent (recorded only then, so a clean handoff costs nothing
// extra; before any receiver-side guard replaced or withheld a copy — delivered_count/hashes are what the receiver
// got): the copies' envelope facts (one entry per copy, '' when absent), the top-level keys and the content-free
// structural changes of the first copy whose payload differs (`removed:a.b`, `added:a.c`, `type:a.d`, `value:a.e`,
// `length:a.f` — key paths only, never values), and with content capture the copies' payloads.
export const ATTR_FL_MESSAGE_DELIVERED_IDS = 'faultline.message.delivered_ids' as const;
export const ATTR_FL_MESSAGE_DELIVERED_TASK_IDS = 'faultline.message.delivered_task_ids' as const;
export const ATTR_FL_MESSAGE_DELIVERED_SESSION_IDS = 'faultline.message.delivered_session_ids' as const;
export const ATTR_FL_MESSAGE_DELIVERED_VERSIONS = 'faultline.message.delivered_versions' as const;
export const ATTR_FL_MESSAGE_DELIVERED_KEYS = 'faultline.message.delivered_keys' as const;
export const ATTR_FL_MESSAGE_DELIVERED_CHANGES = 'faultline.message.delivered_changes' as const;
/** Opt-in (content capture): the delivered payloads, one JSON string per copy. */
export const ATTR_FL_MESSAGE_DELIVERED_PAYLOADS = 'faultline.message.delivered_payloads' as const;
// Content-free shape of a payload (`path=kind`, see instrumentation/agents/shape.ts): of the message on every message
// span, and of the first changed copy on a handoff span (only when a copy differs).
export const ATTR_FL_MESSAGE_SHAPE = 'faultline.message.shape' as const;
export const ATTR_FL_MESSAGE_DELIVERED_SHAPE = 'faultline.message.delivered_shape' as const;
// Which end of a message a span records: `send` (handoff, A2A / MCP client) or `receive` (what a receiver got: a
// channel delivery, an A2A / MCP server). A receive span links to the sender's span.
export const ATTR_FL_MESSAGE_SIDE = 'faultline.message.side' as const;
// Epoch ms when the sender handed the message over (as the message says: a replayed message keeps its own).
export const ATTR_FL_MESSAGE_SENT_AT = 'faultline.message.sent_at' as const;
// Receive spans: which delivered copy of one send this is (0-based), and the receiver's declared contract: `valid` /
// `invalid`, with content-free issues `missing:<path>`, `type:<path>`, `extra:<path>`, `value:<path>`.
export const ATTR_FL_MESSAGE_COPY = 'faultline.message.copy' as const;
export const ATTR_FL_MESSAGE_CONTRACT = 'faultline.message.contract' as const;
export const ATTR_FL_MESSAGE_CONTRACT_ISSUES = 'faultline.message.contract_issues' as const;
// Messaging semconv on receive spans (https://opentelemetry.io/docs/specs/semconv/messaging/).
export const ATTR_MESSAGING_SYSTEM = 'messaging.system' as const;
export const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type' as const;
export const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name' as const;
export const ATTR_MESSAGING_MESSAGE_ID = 'messaging.message.id' as const;
export const ATTR_MESSAGING_MESSAGE_BODY_SIZE = 'messaging.message.body.size' as const;

// Task scope (a campaign run, any explicit task scope from the API, or a framework run).
export const ATTR_FL_TASK_ID = 'faultline.task.id' as const;
/** On an agent framework's guardrail span: whether its tripwire was triggered. */
export const ATTR_FL_GUARDRAIL_TRIGGERED = 'faultline.guardrail.triggered' as const;

// Online detections: one span event per finding. Diagnosers may read these.
export const EVENT_FL_DETECTION = 'faultline.detection' as const;
export const ATTR_FL_DETECTION_DETECTOR = 'faultline.detection.detector' as const;
export const ATTR_FL_DETECTION_FAULT_TYPE = 'faultline.detection.fault_type' as const;
export const ATTR_FL_DETECTION_SEVERITY = 'faultline.detection.severity' as const;
export const ATTR_FL_DETECTION_CONFIDENCE = 'faultline.detection.confidence' as const;
export const ATTR_FL_DETECTION_EVIDENCE = 'faultline.detection.evidence' as const;
export const ATTR_FL_DETECTION_LOCATION = 'faultline.detection.location' as const;
/** Workflow monitors: the ARCF failure type and the MAST mode a finding names (detectors/monitors/mast.ts). */
export const ATTR_FL_DETECTION_FAILURE = 'faultline.detection.failure' as const;
export const ATTR_FL_DETECTION_MAST_MODE = 'faultline.detection.mast_mode' as const;

// Guard actions: one span event per action.
export const EVENT_FL_GUARD = 'faultline.guard' as const;
export const ATTR_FL_GUARD_ACTION = 'faultline.guard.action' as const;
export const ATTR_FL_GUARD_ROUTE = 'faultline.guard.route' as const;
export const ATTR_FL_GUARD_REASON = 'faultline.guard.reason' as const;
export const ATTR_FL_GUARD_ATTEMPT = 'faultline.guard.attempt' as const;
export const METRIC_FL_ROUTE_HEALTH = 'faultline.route.health' as const;

// Injected-fault GROUND TRUTH. Everything under this prefix (attributes and event names) is removed before any
// diagnoser sees a trace: see src/diagnosers/strip-ground-truth.ts.
export const FAULT_PREFIX = 'faultline.fault.' as const;
export const ATTR_FL_FAULT_NAME = 'faultline.fault.name' as const; // catalog name, e.g. llm_truncate_single
export const ATTR_FL_FAULT_TYPE = 'faultline.fault.type' as const; // diagnosis taxonomy: truncate, error, ... (see FaultType)
export const ATTR_FL_FAULT_BASE = 'faultline.fault.base' as const; // base fault, e.g. llm_truncate, http_503, non_delivery
export const ATTR_FL_FAULT_CATEGORY = 'faultline.fault.category' as const; // crash | omission | value | communication
export const ATTR_FL_FAULT_TARGET = 'faultline.fault.target' as const; // content | tool_calls | transport | stream | message
export const ATTR_FL_FAULT_STRATEGY = 'faultline.fault.strategy' as const; // single | persistent | intermittent | burst | pos_*
export const ATTR_FL_FAULT_MODE = 'faultline.fault.mode' as const; // content | transport | stream | message
export const ATTR_FL_FAULT_CALL_INDEX = 'faultline.fault.call_index' as const; // 1-based index among calls the rule matched
export const ATTR_FL_FAULT_RULE = 'faultline.fault.rule' as const; // rule name in the plan
export const ATTR_FL_FAULT_NOOP = 'faultline.fault.noop' as const; // true when the fire changed nothing
export const ATTR_FL_FAULT_CONDITION = 'faultline.fault.condition' as const; // campaign condition label on the task root span
export const EVENT_FL_FAULT_INJECTED = 'faultline.fault.injected' as const;
