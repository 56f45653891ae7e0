/**
 * Stay in the chain: what the application does with undici after faultline installed still goes through the GenAI
 * span layer. Composing interceptors onto the global dispatcher, calling its request()/stream()/pipeline() directly,
 * and installing a new dispatcher later (through undici's setGlobalDispatcher: wrapped at once; any other way: noticed
 * on the first request that went around the layer, wrapped from then on, reported once). Real undici, a real server.
 */
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Agent, getGlobalDispatcher, interceptors, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FaultlineInstrumentation } from '../../instrumentation';
import { runNode } from '../support/child';
import { recordBody } from '../support/wire-record';
import { CHAT_TEXT } from '../support/chat-exchanges';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { ours, setupOtel, type TestOtel } from '../support/otel';

let otel: TestOtel;
let server: LlmServer;
let inst: FaultlineInstrumentation;
let original: Dispatcher;
const warnings: string[] = [];
const capture: DiagLogger = {
  error: (...a: unknown[]) => warnings.push(a.map(String).join(' ')),
  warn: (...a: unknown[]) => warnings.push(a.map(String).join(' ')),
  info: () => {},
  debug: () => {},
  verbose: () => {},
};
const rec = CHAT_TEXT;
const BODY = JSON.stringify(rec.request);
const SPAN = `chat ${String(rec.request.model)}`;
/** undici's CommonJS exports, as `require('undici')` in an application sees them. */
const undiciCjs = createRequire(__filename)('undici') as { setGlobalDispatcher(d: Dispatcher): void };

beforeAll(async () => {
  diag.setLogger(capture, DiagLogLevel.WARN);
  otel = setupOtel();
  server = await startLlmServer(() => corpusReply(rec));
  original = getGlobalDispatcher();
});

afterAll(async () => {
  await server.close();
  await otel.shutdown();
  diag.disable();
});

beforeEach(() => {
  otel.exporter.reset();
  server.requests.length = 0;
  warnings.length = 0;
  inst = new FaultlineInstrumentation();
  inst.enable();
});

afterEach(() => {
  inst.disable();
  setGlobalDispatcher(original);
});

const fetchChat = async () =>
  (
    await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
    })
  ).text();
const spanNames = async (n: number) =>
  ours(await otel.waitForSpans((s) => ours(s).length >= n, 3000)).map((s) => s.name);

/** A dispatcher of the application's: tags every request so the server shows it was used. */
const tagging = (): Dispatcher =>
  new Agent().compose(
    (dispatch) => (opts, handler) =>
      dispatch(
        { ...opts, headers: { ...(opts.headers as Record<string, string>), 'x-app-dispatcher': 'yes' } },
        handler,
      ),
  );

describe('the installed dispatcher', () => {
  it('composed with interceptors after register (interceptors.retry) still goes through the layer', async () => {
    setGlobalDispatcher(getGlobalDispatcher().compose(interceptors.retry({ maxRetries: 1 })));
    expect(await fetchChat()).toBe(recordBody(rec));
    expect(await spanNames(1)).toEqual([SPAN]);
  });

  it('request(), stream() and pipeline() on it go through the layer', async () => {
    const d = getGlobalDispatcher();
    const opts = {
      origin: server.url,
      path: '/v1/chat/completions',
      method: 'POST' as const,
      headers: { 'content-type': 'application/json' },
      body: BODY,
    };
    const r = await d.request(opts);
    expect(await r.body.text()).toBe(recordBody(rec));

    const parts: Buffer[] = [];
    await d.stream(opts, () => new Writable({ write: (c: Buffer, _e, cb) => (parts.push(c), cb()) }));
    expect(Buffer.concat(parts).toString()).toBe(recordBody(rec));

    const piped: Buffer[] = [];
    const source = new PassThrough();
    source.end(BODY);
    await pipeline(
      source,
      d.pipeline({ ...opts, body: undefined }, ({ body }) => body),
      new Writable({ write: (c: Buffer, _e, cb) => (piped.push(c), cb()) }),
    );
    expect(Buffer.concat(piped).toString()).toBe(recordBody(rec));
    expect(await spanNames(3)).toEqual([SPAN, SPAN, SPAN]);
    expect(server.requests.map((q) => q.body.toString())).toEqual([BODY, BODY, BODY]);
  });
});

describe('a dispatcher installed after register', () => {
  it("through undici's setGlobalDispatcher is wrapped at once: the first call has its span and uses the new dispatcher", async () => {
    undiciCjs.setGlobalDispatcher(tagging());
    expect(await fetchChat()).toBe(recordBody(rec));
    expect(await spanNames(1)).toEqual([SPAN]);
    expect(server.requests[0]?.headers['x-app-dispatcher']).toBe('yes');
    expect(warnings).toEqual([]);
  });

  it('written to the global slot some other way is noticed on the next request, wrapped from then on, reported once', async () => {
    const slot = Symbol.for('undici.globalDispatcher.1');
    (globalThis as Record<symbol, unknown>)[slot] = tagging();
    await fetchChat(); // went around the layer: this is how it is noticed
    await fetchChat();
    await fetchChat();
    expect(await spanNames(2)).toEqual([SPAN, SPAN]);
    expect(server.requests.map((q) => q.headers['x-app-dispatcher'])).toEqual(['yes', 'yes', 'yes']);
    expect(warnings.filter((w) => w.includes('replaced after faultline installed'))).toHaveLength(1);
  });

  it('disable() restores the dispatcher the app installed, without the layer', async () => {
    const mine = tagging();
    undiciCjs.setGlobalDispatcher(mine);
    inst.disable();
    expect(getGlobalDispatcher()).toBe(mine);
    await fetchChat();
    expect(ours(otel.spans())).toHaveLength(0);
  });
});

describe('an application that loads undici after register (as installed: a child process)', () => {
  // register does not load undici itself (a process using only fetch would pay ~120 ms and ~20 MB for it); it takes
  // each copy's setGlobalDispatcher as the copy loads, for ESM imports as for require.
  const APP = `
import { Agent, setGlobalDispatcher, request } from 'undici';
const seen = [];
setGlobalDispatcher(new Agent().compose((dispatch) => (opts, handler) => { seen.push(opts.path); return dispatch(opts, handler); }));
const url = process.env.LLM_URL + '/v1/chat/completions';
const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: process.env.BODY };
const a = await (await fetch(url, init)).text();
const b = await (await request(url, init)).body.text();
console.log(JSON.stringify({ same: a === b, seen }));
`;
  it("an ESM app's setGlobalDispatcher keeps the layer in front, and register alone never loads undici", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'faultline-chain-'));
    writeFileSync(join(dir, 'app.mjs'), APP);
    // The app imports the undici a user's app would find beside faultline.
    symlinkSync(join(__dirname, '../../node_modules'), join(dir, 'node_modules'), 'dir');
    const register = join(__dirname, '../../dist/src/register.mjs');
    const file = join(dir, 'traces.jsonl');
    const r = await runNode(['--import', register, join(dir, 'app.mjs')], {
      env: { LLM_URL: server.url, BODY, FAULTLINE_TRACES_FILE: file },
      timeoutMs: 30_000,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ same: true, seen: ['/v1/chat/completions', '/v1/chat/completions'] });
    const names = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .flatMap((l) =>
        (JSON.parse(l) as { resourceSpans: { scopeSpans: { spans: { name: string }[] }[] }[] }).resourceSpans.flatMap(
          (rs) => rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => s.name)),
        ),
      );
    expect(names).toEqual([SPAN, SPAN]);

    const bare = await runNode(
      [
        '--import',
        register,
        '-e',
        'console.log(Object.keys(require.cache).some((f) => /[\\\\/]undici[\\\\/]index\\.js$/.test(f)))',
      ],
      { env: {}, timeoutMs: 30_000 },
    );
    expect(bare.stdout.trim()).toBe('false');
  }, 60_000);
});
