/**
 * What the framework tests share: a loopback OpenAI server (chat completions and the Responses API) that answers like
 * the model an agent app talks to (answers the project writes in OpenAI's formats: a get_weather tool call until the
 * tool was called, then a text answer; SSE when the request streams), the example apps in ./apps run in child
 * processes with and without faultline, and the spans they exported. Nothing here reads the recorded corpus, so the
 * framework tests run in a lone clone.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readTraces } from '../../src/traces/read';
import type { SpanRecord } from '../../src/traces/model';
import { runNode, type ChildResult } from '../support/child';
import { chatCompletion, chatCompletionStream, response, responseStream } from '../support/openai-wire';
import { startLlmServer, type LlmServer, type Reply, type SeenRequest } from '../support/llm-server';

export const ROOT = resolve(__dirname, '../..');
export const APPS = join(__dirname, 'apps');
export const REGISTER_MJS = join(ROOT, 'dist/src/register.mjs');
export const REGISTER_CJS = join(ROOT, 'dist/src/register.js');

/** The answers the loopback model gives (written by the project in OpenAI's formats: ../support/openai-wire.ts). */
export const ANSWER_TEXT =
  'Paris today: sunny skies and 21°C, with a light westerly breeze through the afternoon. Evenings stay mild, so a ' +
  'light jacket is enough for a walk along the Seine; no rain is expected before the weekend.';
/** The streamed text answer of chat completions (its first pieces: "The", " capital"). */
export const STREAM_TEXT = 'The capital of France is Paris.';
/** The streamed text answer of the Responses API. */
export const RESPONSES_STREAM_TEXT = 'It is sunny and 21°C in Tokyo.';
/** The JSON text answer of the Responses API. */
export const RESPONSES_TEXT = 'The weather in Tokyo is sunny, 21°C.';

/** The tools the server calls, in order, when a request offers them and has not called them yet. */
export const SCRIPTED_TOOLS = ['get_weather', 'transfer_to_worker'] as const;
/** The arguments each scripted tool is called with: JSON answers, streamed answers, the Responses API. */
const ARGUMENTS: Record<(typeof SCRIPTED_TOOLS)[number], { json: string; stream: string; responses: string }> = {
  get_weather: {
    json: '{"location":"Paris"}',
    stream: '{"location":"New York, NY"}',
    responses: '{"location":"Tokyo"}',
  },
  transfer_to_worker: { json: '{}', stream: '{}', responses: '{}' },
};

interface ChatBody {
  stream?: boolean;
  tools?: Array<{ name?: string; function?: { name?: string } }>;
  /** Chat completions. */
  messages?: Array<{ role?: string; tool_calls?: Array<{ function?: { name?: string } }> }>;
  /** The Responses API. */
  input?: unknown;
}

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };
const JSON_HEADERS = { 'content-type': 'application/json' };

/**
 * The answer to one request: a call of the first scripted tool the request offers and has not called (a handoff is
 * a tool call too), else the text answer; fresh ids in every answer, as a live provider makes them (the Agents SDK
 * 0.20 and later refuses a tool-call id reused after its output was committed).
 */
export function scriptedReply(req: SeenRequest): Reply {
  const body = JSON.parse(req.body.toString('utf8')) as ChatBody;
  const responsesApi = req.url.split('?')[0].endsWith('/responses');
  const offered = (n: string) => body.tools?.some((t) => (t.function?.name ?? t.name) === n) ?? false;
  const called = (n: string) =>
    responsesApi
      ? Array.isArray(body.input) &&
        body.input.some((i: { type?: string; name?: string }) => i.type === 'function_call' && i.name === n)
      : (body.messages?.some((m) => m.role === 'assistant' && m.tool_calls?.some((c) => c.function?.name === n)) ??
        false);
  const tool = SCRIPTED_TOOLS.find((n) => offered(n) && !called(n));
  if (responsesApi) {
    const answer =
      tool === undefined
        ? { model: 'gpt-4o-2024-08-06', text: body.stream ? RESPONSES_STREAM_TEXT : RESPONSES_TEXT }
        : {
            model: 'gpt-4o-mini-2024-07-18',
            toolCalls: [{ name: tool, arguments: ARGUMENTS[tool].responses }],
            outputTokens: 15,
          };
    return body.stream
      ? { status: 200, headers: SSE_HEADERS, chunks: responseStream(answer) }
      : { status: 200, headers: JSON_HEADERS, body: JSON.stringify(response(answer)) };
  }
  if (body.stream) {
    const answer =
      tool === undefined
        ? { model: 'gpt-4o-2024-08-06', text: STREAM_TEXT }
        : { model: 'gpt-4o-2024-08-06', toolCalls: [{ name: tool, arguments: ARGUMENTS[tool].stream }] };
    return { status: 200, headers: SSE_HEADERS, chunks: chatCompletionStream(answer) };
  }
  const answer =
    tool === undefined
      ? { model: 'gpt-4.1-mini-2025-04-14', text: ANSWER_TEXT, inputTokens: 695 }
      : {
          model: 'gpt-4o-2024-08-06',
          toolCalls: [{ name: tool, arguments: ARGUMENTS[tool].json }],
          inputTokens: 61,
          outputTokens: 15,
        };
  return { status: 200, headers: JSON_HEADERS, body: JSON.stringify(chatCompletion(answer)) };
}

export function startScriptedServer(): Promise<LlmServer> {
  return startLlmServer(scriptedReply);
}

export interface AppRun extends ChildResult {
  /** The app's printed result, parsed. */
  out: Record<string, unknown>;
  /** The spans faultline exported (none without it). */
  spans: SpanRecord[];
  tracesFile: string;
}

let dir: string | undefined;
let runs = 0;

/** Run `apps/<app>` in a child process: plain, or with `--import` / `--require` faultline/register. */
export async function runApp(
  app: string,
  server: LlmServer,
  options: { register?: 'import' | 'require'; env?: Record<string, string> } = {},
): Promise<AppRun> {
  dir ??= mkdtempSync(join(tmpdir(), 'faultline-frameworks-'));
  const tracesFile = join(dir, `traces-${process.pid}-${++runs}.jsonl`);
  const args =
    options.register === 'import'
      ? ['--import', REGISTER_MJS]
      : options.register === 'require'
        ? ['--require', REGISTER_CJS]
        : [];
  const r = await runNode([...args, join(APPS, app)], {
    cwd: ROOT,
    env: {
      LLM_URL: server.url,
      FAULTLINE_TRACES_FILE: tracesFile,
      OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'undici',
      ...options.env,
    },
    timeoutMs: 100_000,
  });
  if (r.code !== 0) throw new Error(`${app} exited with ${r.code}:\n${r.stderr}`);
  const spans: SpanRecord[] = [];
  if (options.register) for await (const t of readTraces([tracesFile])) spans.push(...t.spans);
  return { ...r, out: JSON.parse(r.stdout) as Record<string, unknown>, spans, tracesFile };
}

/** The spans with this name, in start order. */
export function named(spans: readonly SpanRecord[], name: string): SpanRecord[] {
  return spans.filter((s) => s.name === name).sort((a, b) => a.start - b.start);
}

/** The children of `parent`, in start order. */
export function childrenOf(spans: readonly SpanRecord[], parent: SpanRecord): SpanRecord[] {
  return spans
    .filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId)
    .sort((a, b) => a.start - b.start);
}

/** The span `s` is a child of. */
export function parentOf(spans: readonly SpanRecord[], s: SpanRecord): SpanRecord | undefined {
  return spans.find((p) => p.traceId === s.traceId && p.spanId === s.parentSpanId);
}

/** Each workflow's tree as `name` lines indented by depth (children in start order): the shape at a glance. */
export function outline(spans: readonly SpanRecord[], root: SpanRecord, depth = 0): string[] {
  return [`${'  '.repeat(depth)}${root.name}`, ...childrenOf(spans, root).flatMap((c) => outline(spans, c, depth + 1))];
}
