/**
 * Lose no data (issue 13 Build 6): the crash matrix, in child processes under `--require faultline/register`. Every
 * exit path (process.exit(3), an uncaught throw, an unhandled rejection, SIGTERM and SIGINT with no handler of the
 * app's, SIGTERM with the app's own handler, a normal end) × export (the trace file, OTLP/HTTP JSON and protobuf to a
 * loopback receiver). Each app makes one answered chat call and leaves one in flight (the server holds it): both
 * must arrive, the second ended as interrupted, and the exit code, the signal and the app's own output must be those
 * of the same app run without faultline.
 */
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { decodeExportTraceRequest } from '../../src/traces/readers/otlp-proto';
import { runNode, type ChildResult } from '../support/child';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { DIST } from '../support/dist';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { otlpJsonSpans, startOtlpReceiver } from '../support/otlp-receiver';

vi.setConfig({ testTimeout: 120_000 });

const REGISTER = join(DIST, 'src/register.js');
const rec = CHAT_TEXT;
const MODEL = rec.request.model as string;

const APP = `
const base = process.env.LLM_URL;
const call = (path) => fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: process.env.REQ });
const mode = process.argv[2];
(async () => {
  await (await call('/v1/chat/completions')).text();
  process.stdout.write('answered\\n');
  if (mode === 'end') return;
  call('/hold/v1/chat/completions').catch(() => {});
  // Let the held call leave (its spans start when it is dispatched).
  await new Promise((r) => setTimeout(r, 100));
  switch (mode) {
    case 'exit': process.exit(3);
    case 'throw': setTimeout(() => { throw new Error('boom from the app'); }); break;
    case 'reject': Promise.reject(new Error('rejected by the app')); break;
    case 'SIGTERM': case 'SIGINT': setInterval(() => {}, 1000); process.kill(process.pid, mode); break;
    case 'handled': setInterval(() => {}, 1000); process.on('SIGTERM', () => { process.stdout.write('app cleanup\\n'); process.exit(0); }); process.kill(process.pid, 'SIGTERM'); break;
  }
})();
`;

const MODES = ['exit', 'throw', 'reject', 'SIGTERM', 'SIGINT', 'handled', 'end'] as const;
type Mode = (typeof MODES)[number];
const REASON: Record<Mode, string | undefined> = {
  exit: 'exit',
  throw: 'uncaughtException',
  reject: 'unhandledRejection',
  SIGTERM: 'SIGTERM',
  SIGINT: 'SIGINT',
  handled: 'SIGTERM',
  end: undefined,
};

let server: LlmServer;
let dir: string;
const bare = new Map<Mode, ChildResult>();

interface Span {
  name: string;
  attributes: Record<string, unknown>;
}

function env(extra: Record<string, string>): Record<string, string> {
  // instrumentation-undici's spans too (OTEL_NODE_ENABLED_INSTRUMENTATIONS): they must survive every exit path as well.
  return {
    LLM_URL: server.url,
    REQ: JSON.stringify(rec.request),
    OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'undici',
    ...extra,
  };
}

/** Run `fn` over `items`, `limit` at a time (child processes: the machine is shared). */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

beforeAll(async () => {
  if (!existsSync(REGISTER)) throw new Error('run `npm run build` first: dist/src/register.js missing');
  server = await startLlmServer((req) => (req.url.startsWith('/hold') ? new Promise(() => {}) : corpusReply(rec)));
  dir = mkdtempSync(join(tmpdir(), 'faultline-crash-'));
  writeFileSync(join(dir, 'app.cjs'), APP);
  const runs = await pool(MODES, 4, (mode) =>
    runNode([join(dir, 'app.cjs'), mode], { env: env({}), timeoutMs: 30_000 }),
  );
  MODES.forEach((m, i) => bare.set(m, runs[i]!));
});

afterAll(async () => {
  await server?.close();
});

/** What the app shows of itself: exit code, signal, stdout, and its own error (the first line Node prints for it). */
function appFace(r: ChildResult): {
  code: number | null;
  signal: string | null;
  stdout: string;
  error: string | undefined;
} {
  return { code: r.code, signal: r.signal, stdout: r.stdout, error: /^(Error: .*)$/m.exec(r.stderr)?.[1] };
}

function checkSpans(mode: Mode, spans: Span[], r: ChildResult): void {
  const chats = spans.filter((s) => s.name === `chat ${MODEL}`);
  const posts = spans.filter((s) => s.name === 'POST');
  const inFlight = mode === 'end' ? 0 : 1;
  expect(chats, `${mode}: chat spans\n${r.stderr}`).toHaveLength(1 + inFlight);
  expect(posts, `${mode}: HTTP spans`).toHaveLength(1 + inFlight);
  const interrupted = spans.filter((s) => s.attributes['faultline.interrupted'] !== undefined);
  expect(
    interrupted.map((s) => s.attributes['faultline.interrupted']),
    mode,
  ).toEqual(interrupted.map(() => REASON[mode]));
  expect(interrupted.map((s) => s.name).sort(), mode).toEqual(inFlight ? ['POST', `chat ${MODEL}`] : []);
  expect(chats.filter((s) => s.attributes['faultline.interrupted'] === undefined)).toHaveLength(1);
}

describe.each([
  ['file', 'file'],
  ['OTLP http/json', 'http/json'],
] as const)('export to %s', (_label, how) => {
  it('every exit path keeps every span, and the exit code and the app’s output', async () => {
    const results = await pool(MODES, 4, async (mode) => {
      if (how === 'file') {
        const file = join(dir, `${mode}.jsonl`);
        const r = await runNode(['--require', REGISTER, join(dir, 'app.cjs'), mode], {
          env: env({ FAULTLINE_TRACES_FILE: file }),
          timeoutMs: 30_000,
        });
        const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
        return { mode, r, spans: lines.flatMap((l) => otlpJsonSpans(JSON.parse(l))) };
      }
      const receiver = await startOtlpReceiver();
      try {
        const r = await runNode(['--require', REGISTER, join(dir, 'app.cjs'), mode], {
          env: env({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: how }),
          timeoutMs: 30_000,
        });
        const bodies = receiver.requests.filter((q) => q.path === '/v1/traces');
        return { mode, r, spans: bodies.flatMap((b) => otlpJsonSpans(JSON.parse(b.body.toString()))) };
      } finally {
        await receiver.close();
      }
    });
    for (const { mode, r, spans } of results) {
      expect(appFace(r), mode).toEqual(appFace(bare.get(mode)!));
      checkSpans(mode, spans, r);
    }
  });
});

describe('export to OTLP http/protobuf (the default protocol)', () => {
  it.each(['exit', 'throw', 'reject'] as const)(
    '%s: the spans the process held reach the endpoint before it is gone',
    async (mode) => {
      const receiver = await startOtlpReceiver();
      try {
        const r = await runNode(['--require', REGISTER, join(dir, 'app.cjs'), mode], {
          env: env({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }),
          timeoutMs: 30_000,
        });
        expect(appFace(r)).toEqual(appFace(bare.get(mode)!));
        const bodies = receiver.requests.filter((q) => q.path === '/v1/traces');
        expect(bodies.every((b) => b.contentType === 'application/x-protobuf')).toBe(true);
        checkSpans(
          mode,
          bodies.flatMap((b) => otlpJsonSpans(decodeExportTraceRequest(b.body))),
          r,
        );
      } finally {
        await receiver.close();
      }
    },
  );
});
