/**
 * Ollama answers written by the project, in the wire format of Ollama's API documentation: `/api/chat` and
 * `/api/generate`, one JSON object, or with `stream` (Ollama's default) NDJSON lines, each a partial answer and the
 * last `done: true` with `done_reason` and the counts and durations (nanoseconds). Plus the `{"error": …}` body.
 *
 *   chat / chatStream           POST /api/chat
 *   generate / generateStream   POST /api/generate
 *   ollamaError                 the body of a 4xx/5xx answer
 */
import { roughTokens, textPieces } from './wire-text';

export interface OllamaToolCallSpec {
  name: string;
  arguments: Record<string, unknown>;
}

export interface OllamaAnswerSpec {
  /** The model tag (e.g. llama3.2:1b). */
  model: string;
  text?: string;
  /** What a thinking model thought first (`message.thinking`, with `think: true`). */
  thinking?: string;
  toolCalls?: OllamaToolCallSpec[];
  /** Default stop. */
  doneReason?: 'stop' | 'length' | 'load' | 'unload';
  promptEvalCount?: number;
  evalCount?: number;
}

type Json = Record<string, unknown>;

const createdAt = () => new Date().toISOString().replace('Z', '000Z');

function counts(a: OllamaAnswerSpec): Json {
  const evalCount = a.evalCount ?? roughTokens(a.text ?? JSON.stringify(a.toolCalls ?? ''));
  return {
    done_reason: a.doneReason ?? 'stop',
    done: true,
    total_duration: 412_000_000,
    load_duration: 21_000_000,
    prompt_eval_count: a.promptEvalCount ?? 26,
    prompt_eval_duration: 64_000_000,
    eval_count: evalCount,
    eval_duration: 310_000_000,
  };
}

const calls = (a: OllamaAnswerSpec) =>
  a.toolCalls?.length
    ? { tool_calls: a.toolCalls.map((c) => ({ function: { name: c.name, arguments: c.arguments } })) }
    : {};

/** The `/api/chat` answer (`stream: false`). */
export function chat(a: OllamaAnswerSpec): Json {
  return {
    model: a.model,
    created_at: createdAt(),
    message: {
      role: 'assistant',
      content: a.text ?? '',
      ...(a.thinking !== undefined ? { thinking: a.thinking } : {}),
      ...calls(a),
    },
    ...counts(a),
  };
}

const ndjson = (o: Json) => `${JSON.stringify(o)}\n`;

/** The NDJSON lines of a streamed `/api/chat`: a line per text piece (tool calls whole), then the `done` line. */
export function chatStream(a: OllamaAnswerSpec): string[] {
  const lines = [
    ...(a.thinking !== undefined ? textPieces(a.thinking) : []).map((thinking) =>
      ndjson({
        model: a.model,
        created_at: createdAt(),
        message: { role: 'assistant', content: '', thinking },
        done: false,
      }),
    ),
    ...textPieces(a.text ?? '')
      .filter((p) => p !== '')
      .map((content) =>
        ndjson({ model: a.model, created_at: createdAt(), message: { role: 'assistant', content }, done: false }),
      ),
  ];
  if (a.toolCalls?.length)
    lines.push(
      ndjson({
        model: a.model,
        created_at: createdAt(),
        message: { role: 'assistant', content: '', ...calls(a) },
        done: false,
      }),
    );
  lines.push(
    ndjson({ model: a.model, created_at: createdAt(), message: { role: 'assistant', content: '' }, ...counts(a) }),
  );
  return lines;
}

/** The `/api/generate` answer (`stream: false`). */
export function generate(a: OllamaAnswerSpec): Json {
  return { model: a.model, created_at: createdAt(), response: a.text ?? '', ...counts(a) };
}

/** The NDJSON lines of a streamed `/api/generate`. */
export function generateStream(a: OllamaAnswerSpec): string[] {
  const lines = textPieces(a.text ?? '')
    .filter((p) => p !== '')
    .map((response) => ndjson({ model: a.model, created_at: createdAt(), response, done: false }));
  lines.push(ndjson({ model: a.model, created_at: createdAt(), response: '', ...counts(a) }));
  return lines;
}

/** Ollama's error body: `{"error": "…"}` (e.g. `model "x" not found, try pulling it first`). */
export function ollamaError(message: string): Json {
  return { error: message };
}
