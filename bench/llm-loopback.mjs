// Bench-only: the workload the per-call benches share. Two corpus records (a JSON chat answer with a system prompt, and
// an SSE stream with tool calls and a usage chunk) and a loopback server replaying them to the openai client: the JSON
// answer whole, the stream one event per turn of the event loop; and the client's side: calls one after the other, each
// timed.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { setImmediate } from 'node:timers';

const CORPUS = process.env.FAULTLINE_CORPUS_DIR ?? '/work/shared/corpus';
/**
 * How long the server thinks before it answers (ms; default 0). A model takes tens of milliseconds or more to its first
 * token; a server that answers at once leaves the client no time waiting for the network, so whatever an instrumentation
 * defers until after a call ends lands on the next call instead.
 */
export const THINK_MS = Number(process.env.BENCH_THINK_MS ?? 0);

export function records() {
  const lines = (f) =>
    readFileSync(join(CORPUS, f), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  const json = lines('openai-chat.jsonl').find(
    (r) => r.status === 200 && r.tags.includes('text') && r.tags.includes('system_prompt'),
  );
  const stream = lines('openai-chat-stream.jsonl').find(
    (r) => r.tags.includes('tool_calls') && r.tags.includes('usage_chunk'),
  );
  return { json, stream };
}

/** The server, listening on 127.0.0.1 (an ephemeral port). */
export function startServer() {
  const { json, stream } = records();
  const jsonBody = JSON.stringify(json.response);
  const events = stream.sse.split(/(?<=\n\n)/);
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      if (THINK_MS > 0) await new Promise((r) => setTimeout(r, THINK_MS));
      if (JSON.parse(body).stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        for (const e of events) {
          res.write(e);
          await new Promise((r) => setImmediate(r));
        }
        res.end();
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(jsonBody) });
        res.end(jsonBody);
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/**
 * `request` as the process's next call sends it: its last message ends with the call's number, as an agent's calls
 * differ (each turn adds to the conversation). A run of identical requests is not what an application sends, and a fault
 * plan's retry recognition treats a request sent again before the last one settled as a possible retry.
 */
let calls = 0;
export function distinct(request) {
  const messages = request.messages.slice();
  const last = messages[messages.length - 1];
  messages[messages.length - 1] = { ...last, content: `${last.content} (${++calls})` };
  return { ...request, messages };
}

/** `n` JSON calls of `request` with the openai `client`, one after the other: each call's wall time (ms). */
export async function jsonCalls(client, request, n) {
  const ms = [];
  for (let i = 0; i < n; i++) {
    const body = distinct(request);
    const t0 = performance.now();
    const r = await client.chat.completions.create(body);
    ms.push(performance.now() - t0);
    if (!r.choices) throw new Error('bad JSON answer');
  }
  return ms;
}

/** `n` streamed calls, each iterated to its end: each call's wall time and time to its first chunk (ms). */
export async function streamedCalls(client, request, n) {
  const ms = [];
  const ttfc = [];
  for (let i = 0; i < n; i++) {
    const body = distinct(request);
    const t0 = performance.now();
    let first;
    for await (const _c of await client.chat.completions.create(body)) first ??= performance.now() - t0;
    if (first === undefined) throw new Error('empty stream');
    ms.push(performance.now() - t0);
    ttfc.push(first);
  }
  return { ms, ttfc };
}
