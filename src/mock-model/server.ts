/**
 * The embedded mock model: an OpenAI-compatible chat completions server on 127.0.0.1, so the examples, campaigns and
 * the demo run offline. It speaks the real wire format (JSON and SSE, tool calls, `stream_options.include_usage`,
 * OpenAI error bodies); *what* it answers comes from a script — by default the example agents' script, which reads the
 * conversation it is given and nothing else (it knows nothing about faults).
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { agentScript } from './script';
import type { ChatRequest, MockScript } from './types';

export type { ChatMessage, ChatRequest, MockReply, MockScript, MockToolCall } from './types';

export interface MockModelOptions {
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** What the model answers; default: the example agents' script. */
  script?: MockScript;
  /** Delay before the first byte of every response, ms (default 0). Models a model's latency. */
  latencyMs?: number;
  /** Characters per SSE content chunk (default 16). */
  chunkChars?: number;
}

export interface MockModel {
  /** OpenAI SDK `baseURL`, e.g. `http://127.0.0.1:43121/v1`. */
  readonly baseURL: string;
  readonly port: number;
  /** Chat completion requests served so far. */
  readonly requests: number;
  close(): Promise<void>;
}

const MODEL_DEFAULT = 'faultline-mock-1';

export async function startMockModel(options: MockModelOptions = {}): Promise<MockModel> {
  const script = options.script ?? agentScript;
  const latencyMs = options.latencyMs ?? 0;
  const chunkChars = Math.max(1, options.chunkChars ?? 16);
  let requests = 0;

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // A script bug must surface as a 500 the client sees, never crash the process.
      if (!res.headersSent) sendError(res, 500, 'server_error', `mock model error: ${String(err)}`);
      else res.destroy();
    });
  });
  // Keep-alive sockets must not hold close() up.
  server.keepAliveTimeout = 1000;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = url.pathname.replace(/\/+$/, '');
    if (req.method === 'GET' && (path === '/v1/models' || path === '/models')) {
      sendJson(res, 200, {
        object: 'list',
        data: [{ id: MODEL_DEFAULT, object: 'model', created: 0, owned_by: 'faultline' }],
      });
      return;
    }
    if (req.method !== 'POST' || (path !== '/v1/chat/completions' && path !== '/chat/completions')) {
      sendError(res, 404, 'invalid_request_error', `unknown endpoint ${req.method ?? ''} ${url.pathname}`);
      return;
    }
    const raw = await readBody(req);
    let body: ChatRequest;
    try {
      body = JSON.parse(raw.toString('utf8')) as ChatRequest;
    } catch {
      sendError(res, 400, 'invalid_request_error', 'request body is not valid JSON');
      return;
    }
    if (!body || !Array.isArray(body.messages) || body.messages.length === 0) {
      sendError(res, 400, 'invalid_request_error', "'messages' must be a non-empty array");
      return;
    }
    requests++;
    const reply = await script(body);
    if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
    const model = typeof body.model === 'string' && body.model !== '' ? body.model : MODEL_DEFAULT;
    const id = `chatcmpl-${createHash('sha256').update(raw).digest('hex').slice(0, 24)}`;
    const created = Math.floor(Date.now() / 1000);
    const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({
      id: `call_${createHash('sha256').update(`${id}:${i}`).digest('hex').slice(0, 20)}`,
      type: 'function' as const,
      function: {
        name: c.name,
        arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
      },
    }));
    const content = reply.content ?? (toolCalls.length > 0 ? null : '');
    const finish = toolCalls.length > 0 ? 'tool_calls' : 'stop';
    const usage = {
      prompt_tokens: estimateTokens(JSON.stringify(body.messages)),
      completion_tokens: estimateTokens((content ?? '') + toolCalls.map((t) => t.function.arguments).join('')),
      total_tokens: 0,
    };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;

    if (body.stream !== true) {
      sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content,
              refusal: null,
              ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
            },
            logprobs: null,
            finish_reason: finish,
          },
        ],
        usage,
        system_fingerprint: 'fp_faultline_mock',
      });
      return;
    }

    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    const includeUsage = body.stream_options?.include_usage === true;
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): void => {
      const frame = {
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        system_fingerprint: 'fp_faultline_mock',
        choices,
        ...extra,
      };
      if (includeUsage && !('usage' in extra)) (frame as Record<string, unknown>).usage = null;
      res.write(`data: ${JSON.stringify(frame)}\n\n`);
    };
    chunk([
      {
        index: 0,
        delta: { role: 'assistant', content: toolCalls.length > 0 ? null : '', refusal: null },
        logprobs: null,
        finish_reason: null,
      },
    ]);
    for (let i = 0; content && i < content.length; i += chunkChars) {
      chunk([{ index: 0, delta: { content: content.slice(i, i + chunkChars) }, logprobs: null, finish_reason: null }]);
    }
    toolCalls.forEach((tc, index) => {
      chunk([
        {
          index: 0,
          delta: {
            tool_calls: [{ index, id: tc.id, type: 'function', function: { name: tc.function.name, arguments: '' } }],
          },
          logprobs: null,
          finish_reason: null,
        },
      ]);
      const args = tc.function.arguments;
      for (let i = 0; i < args.length; i += chunkChars) {
        chunk([
          {
            index: 0,
            delta: { tool_calls: [{ index, function: { arguments: args.slice(i, i + chunkChars) } }] },
            logprobs: null,
            finish_reason: null,
          },
        ]);
      }
    });
    chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }]);
    if (includeUsage) chunk([], { usage });
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    port,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** OpenAI's error body shape, so SDK clients raise their usual typed errors. */
function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { error: { message, type, param: null, code: null } });
}

/** ~4 characters per token, the usual rule of thumb; only for realistic-looking usage numbers. */
function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}
