/**
 * A tiny OpenAI-compatible chat-completions server for the plan demo: the first turn asks for the weather tool, the
 * turn after a tool result answers in text. Deterministic, no network.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface ChatRequest {
  model?: string;
  messages: Array<{ role: string; content?: string | null; tool_call_id?: string }>;
}

let n = 0;

function answer(req: ChatRequest): unknown {
  const last = req.messages[req.messages.length - 1];
  const base = {
    id: `chatcmpl-demo-${++n}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: req.model ?? 'demo-model',
  };
  const usage = { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 };
  if (last?.role === 'tool') {
    return {
      ...base,
      usage,
      choices: [
        {
          index: 0,
          finish_reason: 'stop',
          message: { role: 'assistant', content: `Here is the weather: ${last.content ?? ''}. Have a nice day!` },
        },
      ],
    };
  }
  const city = /weather in ([A-Za-z ]+)/.exec(last?.content ?? '')?.[1]?.trim() ?? 'Paris';
  return {
    ...base,
    usage,
    choices: [
      {
        index: 0,
        finish_reason: 'tool_calls',
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `call_${n}`,
              type: 'function',
              function: { name: 'get_weather', arguments: JSON.stringify({ city }) },
            },
          ],
        },
      },
    ],
  };
}

/** Start the server on 127.0.0.1 (port 0 = any free port). */
export async function startModelServer(port = 0): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const body = JSON.stringify(answer(JSON.parse(Buffer.concat(parts).toString('utf8')) as ChatRequest));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
