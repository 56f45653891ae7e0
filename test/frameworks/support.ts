/**
 * What the framework tests share: a loopback OpenAI server (chat completions and the Responses API) that answers like
 * the model an agent app talks to (recorded corpus bodies: a get_weather tool call until the tool was called, then a
 * text answer; SSE when the request streams), the example apps in ./apps run in child processes with and without
 * faultline, and the spans they exported.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readTraces } from '../../src/traces/read';
import type { SpanRecord } from '../../src/traces/model';
import { runNode, type ChildResult } from '../support/child';
import { loadCorpus, sseEvents } from '../support/corpus';
import { startLlmServer, type LlmServer, type Reply, type SeenRequest } from '../support/llm-server';

export const ROOT = resolve(__dirname, '../..');
export const APPS = join(__dirname, 'apps');
export const REGISTER_MJS = join(ROOT, 'dist/src/register.mjs');
export const REGISTER_CJS = join(ROOT, 'dist/src/register.js');

const chat = loadCorpus('openai-chat.jsonl');
const streams = loadCorpus('openai-chat-stream.jsonl');
const TOOL_CALL = chat.find((r) => r.id === '395b6ac2f196')!; // gpt-4o: get_weather({"location":"Paris"})
const TOOL_CALL_SSE = streams.find((r) => r.id === 'aacd6b73cf57')!; // gpt-4o: get_weather({"location":"New York, NY"}), streamed
const TEXT = chat.find((r) => r.id === '55dae6f503a5')!; // a long text answer
const TEXT_SSE = streams.find((r) => r.id === '68715d67ef39')!; // a text answer in 12 events, usage chunk, [DONE]
const responses = loadCorpus('openai-responses.jsonl');
const R_TOOL_CALL = responses.find((r) => r.id === '9f0740aa164d')!; // gpt-4o-mini: get_weather({"location":"Tokyo"})
const R_TOOL_CALL_SSE = responses.find((r) => r.id === 'fbfce628fe88')!; // the same, streamed (typed events)
const R_TEXT = responses.find((r) => r.id === '182a460c8401')!; // gpt-4.1: a one-sentence weather answer
const R_TEXT_SSE = responses.find((r) => r.id === '61b63d72ebea')!; // gpt-4o: "4200 + 42 equals 4242.", streamed

/** The tools the server calls, in order, when a request offers them and has not called them yet. */
export const SCRIPTED_TOOLS = ['get_weather', 'transfer_to_worker'] as const;

interface ChatBody {
  stream?: boolean;
  tools?: Array<{ name?: string; function?: { name?: string } }>;
  /** Chat completions. */
  messages?: Array<{ role?: string; tool_calls?: Array<{ function?: { name?: string } }> }>;
  /** The Responses API. */
  input?: unknown;
}

let live = 0;
/**
 * Tool-call ids as a live provider makes them: new in every answer (one recorded id keeps one new id within the
 * answer). The Agents SDK (0.20 and later) refuses an id reused after its output was committed.
 */
function freshCallIds(text: string): string {
  const ids = new Map<string, string>();
  return text.replace(/"(id|call_id)":"(call_|fc_)([A-Za-z0-9]+)"/g, (_m, key: string, prefix: string, old: string) => {
    const id = ids.get(prefix + old) ?? `${prefix}live${++live}`;
    ids.set(prefix + old, id);
    return `"${key}":"${id}"`;
  });
}

/** Served as a live provider would: the recorded body with a fresh `created` time, response id and tool-call ids. */
function fresh(text: string): string {
  const id = `chatcmpl-live${++live}`;
  return freshCallIds(text.replace(/"created":\s*\d+/g, `"created":${Math.floor(Date.now() / 1000)}`).replace(/"id":"chatcmpl-[A-Za-z0-9]+"/g, `"id":"${id}"`));
}

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

/**
 * The answer to one request: a call of the first scripted tool the request offers and has not called (a handoff is
 * a tool call too: the recorded get_weather call renamed), else the text answer.
 */
export function scriptedReply(req: SeenRequest): Reply {
  const body = JSON.parse(req.body.toString('utf8')) as ChatBody;
  const responsesApi = req.url.split('?')[0].endsWith('/responses');
  const offered = (n: string) => body.tools?.some((t) => (t.function?.name ?? t.name) === n) ?? false;
  const called = (n: string) =>
    responsesApi
      ? Array.isArray(body.input) && body.input.some((i: { type?: string; name?: string }) => i.type === 'function_call' && i.name === n)
      : (body.messages?.some((m) => m.role === 'assistant' && m.tool_calls?.some((c) => c.function?.name === n)) ?? false);
  const tool = SCRIPTED_TOOLS.find((n) => offered(n) && !called(n));
  if (responsesApi) return responsesReply(body, tool);
  if (body.stream) {
    const sse = tool === undefined ? TEXT_SSE.sse! : TOOL_CALL_SSE.sse!.replaceAll('"name":"get_weather"', `"name":"${tool}"`);
    return { status: 200, headers: SSE_HEADERS, chunks: sseEvents(fresh(sse)) };
  }
  let response = TEXT.response as Record<string, unknown>;
  if (tool !== undefined) {
    response = structuredClone(TOOL_CALL.response) as Record<string, unknown>;
    (response as { choices: [{ message: { tool_calls: [{ function: { name: string } }] } }] }).choices[0].message.tool_calls[0].function.name = tool;
  }
  return { status: 200, headers: { 'content-type': 'application/json' }, body: fresh(JSON.stringify(response)) };
}

function responsesReply(body: ChatBody, tool: string | undefined): Reply {
  const rename = (text: string) => (tool === undefined ? text : text.replaceAll('"name":"get_weather"', `"name":"${tool}"`));
  if (body.stream) return { status: 200, headers: SSE_HEADERS, chunks: sseEvents(freshResponse(rename((tool === undefined ? R_TEXT_SSE : R_TOOL_CALL_SSE).sse!))) };
  return { status: 200, headers: { 'content-type': 'application/json' }, body: freshResponse(rename(JSON.stringify((tool === undefined ? R_TEXT : R_TOOL_CALL).response))) };
}

/** A Responses API body as a live server would send it: fresh `created_at` / `completed_at`, response and call ids. */
function freshResponse(text: string): string {
  const now = Math.floor(Date.now() / 1000);
  const id = `resp_live${++live}`;
  return freshCallIds(text.replace(/"(created_at|completed_at)":\s*\d+/g, `"$1":${now}`).replace(/"id":"resp_[A-Za-z0-9]+"/g, `"id":"${id}"`));
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
export async function runApp(app: string, server: LlmServer, options: { register?: 'import' | 'require'; env?: Record<string, string> } = {}): Promise<AppRun> {
  dir ??= mkdtempSync(join(tmpdir(), 'faultline-frameworks-'));
  const tracesFile = join(dir, `traces-${process.pid}-${++runs}.jsonl`);
  const args = options.register === 'import' ? ['--import', REGISTER_MJS] : options.register === 'require' ? ['--require', REGISTER_CJS] : [];
  const r = await runNode([...args, join(APPS, app)], {
    cwd: ROOT,
    env: { LLM_URL: server.url, FAULTLINE_TRACES_FILE: tracesFile, OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'undici', ...options.env },
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
  return spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId).sort((a, b) => a.start - b.start);
}

/** The span `s` is a child of. */
export function parentOf(spans: readonly SpanRecord[], s: SpanRecord): SpanRecord | undefined {
  return spans.find((p) => p.traceId === s.traceId && p.spanId === s.parentSpanId);
}

/** Each workflow's tree as `name` lines indented by depth (children in start order): the shape at a glance. */
export function outline(spans: readonly SpanRecord[], root: SpanRecord, depth = 0): string[] {
  return [`${'  '.repeat(depth)}${root.name}`, ...childrenOf(spans, root).flatMap((c) => outline(spans, c, depth + 1))];
}
