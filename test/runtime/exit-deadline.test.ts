/**
 * A natural end has one export deadline too (issue 29): an app under `--import faultline/register` that makes one chat
 * call and ends by itself, its OTLP endpoint black-holed (accepts, never answers), refused (a closed port) or
 * answering 503, exits within EXIT_FLUSH_TIMEOUT_MS and a margin (it took 10.75 s / 7.6 s / 5.4 s), with its own exit
 * code and stdout, and says on stderr in one line how many spans the endpoint did not take and where they went
 * instead: the trace file, which `faultline diagnose` reads. The same when the app ends with `process.exit()`. With
 * the file exporter configured too, the trace file already has them: written once, and the line says so. A healthy
 * endpoint: no such line, no file, and a prompt exit.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_FLUSH_TIMEOUT_MS } from '../../src/exit-hooks';
import { readTraces } from '../../src/traces/read';
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

const listen = (s: NetServer | Server): Promise<number> =>
  new Promise((r) => s.listen(0, '127.0.0.1', () => r((s.address() as AddressInfo).port)));
const url = (port: number) => `http://127.0.0.1:${port}`;

beforeAll(async () => {
  model = await startLlmServer(() => ({
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(completion),
  }));
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
     process.stderr.write('work done at ' + Date.now() + '\\n');
     if (process.argv[3] === 'exit') process.exit(3);
     process.exitCode = 3;`,
  );
});
afterAll(async () => {
  for (const s of held) s.destroy();
  await Promise.all([blackHole, unavailable, healthy].map((s) => new Promise((r) => s.close(r))));
  await model.close();
});

let runs = 0;
async function runApp(endpoint: string, how: 'natural' | 'exit' = 'natural', env: NodeJS.ProcessEnv = {}) {
  if (!existsSync(REGISTER)) throw new Error('run `npm run build` first: dist/src/register.mjs missing');
  // Each run its own working directory: the default trace file is ./faultline-traces.jsonl.
  const cwd = join(dir, `run-${++runs}`);
  mkdirSync(cwd);
  const r = await runNode(['--import', REGISTER, join(dir, 'app.mjs'), model.url, how], {
    cwd,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_METRICS_EXPORTER: 'none', ...env },
    timeoutMs: 30_000,
  });
  // From the end of the app's work to the process's end: what the exit deadline bounds (start-up, slow on a loaded
  // machine, is not part of it).
  const doneAt = Number(/work done at (\d+)/.exec(r.stderr)?.[1] ?? NaN);
  return { ...r, ms: Date.now() - doneAt, file: join(cwd, 'faultline-traces.jsonl') };
}

const lostLines = (stderr: string) => stderr.split('\n').filter((l) => /spans? (were|was) not delivered/.test(l));

async function spanIds(file: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const t of readTraces([file])) ids.push(...t.spans.map((s) => s.spanId));
  return ids;
}

describe('an app that ends by itself, its OTLP endpoint failing, exits by the deadline and says what was lost', () => {
  for (const [what, endpoint] of [
    ['black-holed', () => url((blackHole.address() as AddressInfo).port)],
    ['refused', () => url(refusedPort)],
    ['answering 503', () => url((unavailable.address() as AddressInfo).port)],
  ] as const) {
    for (const how of ['natural', 'exit'] as const) {
      it(`${what}, ${how === 'exit' ? 'process.exit()' : 'a natural end'}: the spans are in the trace file instead`, async () => {
        const r = await runApp(endpoint(), how);
        expect(r.stdout).toBe('answer Hello.\n');
        expect(r.code, r.stderr).toBe(3);
        expect(r.ms).toBeLessThan(EXIT_FLUSH_TIMEOUT_MS + MARGIN_MS);
        const lines = lostLines(r.stderr);
        expect(lines, r.stderr).toHaveLength(1);
        const m =
          /^faultline: ([1-9]\d*) spans? (?:were|was) not delivered to the OTLP endpoint \(.+\); written to (.+) instead$/.exec(
            lines[0]!,
          );
        expect(m, lines[0]).not.toBeNull();
        expect(m![2]).toBe(r.file);
        // Read back by faultline's own trace reader (what `diagnose` reads): every span counted is there, once.
        const ids = await spanIds(r.file);
        expect(ids).toHaveLength(Number(m![1]));
        expect(new Set(ids).size).toBe(ids.length);
        expect(readFileSync(r.file, 'utf8')).toContain('gpt-4o-mini');
      });
    }
  }
});

describe('with the file exporter configured too, the trace file already has every span', () => {
  for (const how of ['natural', 'exit'] as const) {
    it(`black-holed, ${how === 'exit' ? 'process.exit()' : 'a natural end'}: written once, and the line says where`, async () => {
      const r = await runApp(url((blackHole.address() as AddressInfo).port), how, {
        OTEL_TRACES_EXPORTER: 'otlp,file',
      });
      expect(r.code, r.stderr).toBe(3);
      expect(r.ms).toBeLessThan(EXIT_FLUSH_TIMEOUT_MS + MARGIN_MS);
      const lines = lostLines(r.stderr);
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^faultline: ([1-9]\d*) spans? (?:were|was) not delivered to the OTLP endpoint \(.+\); the trace file (.+) has them$/,
      );
      expect(lines[0]).toContain(r.file);
      const ids = await spanIds(r.file);
      expect(ids.length).toBeGreaterThan(0);
      expect(new Set(ids).size, 'no span written twice').toBe(ids.length);
    });
  }
});

it('a healthy endpoint: no such line, a prompt exit', async () => {
  const r = await runApp(url((healthy.address() as AddressInfo).port));
  expect(r.stdout).toBe('answer Hello.\n');
  expect(r.code, r.stderr).toBe(3);
  expect(lostLines(r.stderr)).toEqual([]);
  expect(existsSync(r.file), 'no trace file when everything was delivered').toBe(false);
  expect(r.ms).toBeLessThan(MARGIN_MS + 1000);
});
