/**
 * A natural end has one export deadline too (issue 29): an app under `--import faultline/register` that makes one chat
 * call and ends by itself, its OTLP endpoint black-holed (accepts, never answers), refused (a closed port) or
 * answering 503, exits within EXIT_FLUSH_TIMEOUT_MS and a margin (it took 10.75 s / 7.6 s / 5.4 s), with its own exit
 * code and stdout, and says on stderr in one line how many spans the endpoint did not take. A healthy endpoint: no
 * such line, and a prompt exit.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_FLUSH_TIMEOUT_MS } from '../../src/exit-hooks';
import { runNode } from '../support/child';
import { DIST } from '../support/dist';
import { startLlmServer, type LlmServer } from '../support/llm-server';

const REGISTER = join(DIST, 'src/register.mjs');
const MARGIN_MS = 2500;
const completion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
};

let model: LlmServer;
let blackHole: NetServer;
const held: Socket[] = [];
let refusedPort: number;
let unavailable: Server;
let healthy: Server;
let dir: string;

const listen = (s: NetServer | Server): Promise<number> => new Promise((r) => s.listen(0, '127.0.0.1', () => r((s.address() as AddressInfo).port)));
const url = (port: number) => `http://127.0.0.1:${port}`;

beforeAll(async () => {
  model = await startLlmServer(() => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion) }));
  blackHole = createServer((socket) => {
    held.push(socket); // accepts, reads, never answers
    socket.resume();
  });
  // A port that was just listened on and closed: connecting is refused.
  const probe = createServer();
  refusedPort = await listen(probe);
  await new Promise((r) => probe.close(r));
  unavailable = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(503, { 'content-type': 'text/plain' }).end('unavailable'));
  });
  healthy = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await Promise.all([listen(blackHole), listen(unavailable), listen(healthy)]);
  dir = mkdtempSync(join(tmpdir(), 'faultline-exit-deadline-'));
  writeFileSync(
    join(dir, 'app.mjs'),
    `const res = await fetch(process.argv[2] + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
       body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) });
     const body = await res.json();
     console.log('answer', body.choices[0].message.content);
     process.exitCode = 3;`,
  );
});
afterAll(async () => {
  for (const s of held) s.destroy();
  await Promise.all([blackHole, unavailable, healthy].map((s) => new Promise((r) => s.close(r))));
  await model.close();
});

async function runApp(endpoint: string) {
  if (!existsSync(REGISTER)) throw new Error('run `npm run build` first: dist/src/register.mjs missing');
  const t0 = performance.now();
  const r = await runNode(['--import', REGISTER, join(dir, 'app.mjs'), model.url], {
    cwd: dir,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_METRICS_EXPORTER: 'none' },
    timeoutMs: 30_000,
  });
  return { ...r, ms: performance.now() - t0 };
}

const lostLines = (stderr: string) => stderr.split('\n').filter((l) => /spans? (were|was) not delivered/.test(l));

describe('an app that ends by itself, its OTLP endpoint failing, exits by the deadline and says what was lost', () => {
  for (const [what, endpoint] of [
    ['black-holed', () => url((blackHole.address() as AddressInfo).port)],
    ['refused', () => url(refusedPort)],
    ['answering 503', () => url((unavailable.address() as AddressInfo).port)],
  ] as const) {
    it(what, async () => {
      const r = await runApp(endpoint());
      expect(r.stdout).toBe('answer Hello.\n');
      expect(r.code, r.stderr).toBe(3);
      expect(r.ms).toBeLessThan(EXIT_FLUSH_TIMEOUT_MS + MARGIN_MS);
      const lines = lostLines(r.stderr);
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/^faultline: [1-9]\d* spans? (were|was) not delivered to the OTLP endpoint \(/);
    });
  }
});

it('a healthy endpoint: no such line, a prompt exit', async () => {
  const r = await runApp(url((healthy.address() as AddressInfo).port));
  expect(r.stdout).toBe('answer Hello.\n');
  expect(r.code, r.stderr).toBe(3);
  expect(lostLines(r.stderr)).toEqual([]);
  expect(r.ms).toBeLessThan(MARGIN_MS + 1000);
});
