/** The slice of the OpenAI chat completions request the mock model reads. */
export interface ChatMessage {
  role: string;
  content?: string | Array<{ type: string; text?: string }> | null;
  name?: string;
  tool_calls?: Array<{ id: string; type?: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

export interface ChatRequest {
  model?: string;
  messages: ChatMessage[];
  tools?: Array<{ type?: string; function: { name: string; description?: string; parameters?: unknown } }>;
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number;
  temperature?: number;
}

export interface MockToolCall {
  name: string;
  /** Arguments object (serialised as JSON) or the raw arguments text. */
  arguments: unknown;
}

/** What the model answers: text, tool calls, or both. */
export interface MockReply {
  content?: string;
  toolCalls?: MockToolCall[];
}

/** Decides the reply from the request alone (deterministic; it must not know about faults). */
export type MockScript = (request: ChatRequest) => MockReply | Promise<MockReply>;
