/**
 * Privacy holds everywhere (issue 13 Build 9, URL part): API keys and tokens in URL query parameters never reach a
 * span register produces, instrumentation-undici's `url.full` / `url.query` included. The other parameters, the
 * parameter order and the encoding stay as they were.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isCredentialParam, redactQuery, redactUrl } from '../../instrumentation/redact-url';
import { runNode } from '../support/child';
import { CHAT_STREAM, CHAT_TEXT } from '../support/chat-exchanges';
import { DIST } from '../support/dist';
import { corpusReply, startLlmServer, type LlmServer } from '../support/llm-server';
import { otlpJsonSpans } from '../support/otlp-receiver';

vi.setConfig({ testTimeout: 120_000 });

describe('redactQuery', () => {
  it('redacts the credential names people use and keeps everything else byte for byte', () => {
    expect(redactQuery('?key=AIza123&alt=sse')).toBe('?key=REDACTED&alt=sse');
    expect(redactQuery('?api-version=2024-06-01&api-key=abc')).toBe('?api-version=2024-06-01&api-key=REDACTED');
    expect(redactQuery('?access_token=t&page=2&q=a%20b')).toBe('?access_token=REDACTED&page=2&q=a%20b');
    expect(redactQuery('?sv=2022&se=2030&sig=abc%2Bdef')).toBe('?sv=2022&se=2030&sig=REDACTED');
    expect(redactQuery('?X-Amz-Credential=AK%2F1&X-Amz-Signature=ff&X-Amz-Date=1')).toBe(
      '?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&X-Amz-Date=1',
    );
    expect(redactQuery('?AWSAccessKeyId=AK&Signature=s&Expires=1')).toBe(
      '?AWSAccessKeyId=REDACTED&Signature=REDACTED&Expires=1',
    );
    expect(redactQuery('?X-Goog-Signature=s&X-Goog-Credential=c')).toBe(
      '?X-Goog-Signature=REDACTED&X-Goog-Credential=REDACTED',
    );
    expect(redactQuery('?client_secret=s&refresh_token=r&password=p&subscription-key=k&apiKey=k2&auth=a')).toBe(
      '?client_secret=REDACTED&refresh_token=REDACTED&password=REDACTED&subscription-key=REDACTED&apiKey=REDACTED&auth=REDACTED',
    );
    expect(redactQuery('?%61pi_key=x')).toBe('?%61pi_key=REDACTED'); // an encoded name is judged decoded
    expect(redactQuery('?key=&flag&model=gpt-4o')).toBe('?key=&flag&model=gpt-4o'); // nothing to hide
    expect(redactQuery('?model=gpt-4o&stream=true&author=me&keyword=x')).toBe(
      '?model=gpt-4o&stream=true&author=me&keyword=x',
    );
    expect(redactQuery('')).toBe('');
    expect(isCredentialParam('Ocp-Apim-Subscription-Key')).toBe(true);
  });

  it('redactUrl also redacts user:password@', () => {
    expect(redactUrl('https://u:p@host/x?key=1&a=2')).toBe('https://REDACTED:REDACTED@host/x?key=REDACTED&a=2');
    expect(redactUrl('https://host/x?a=2')).toBe('https://host/x?a=2');
  });
});

const SECRETS = [
  'SECRET_A1',
  'SECRET_B2',
  'SECRET_C3',
  'SECRET_D4',
  'SECRET_E5',
  'SECRET_F6',
  'SECRET_G7',
  'SECRET_H8',
  'SECRET_I9',
];

// Every kind of call register sees: an Azure-style chat call, a Gemini-style call, a plain GET, signed URLs, a
// streamed chat call, an MCP call, and one that fails to connect.
const APP = `
const base = process.env.LLM_URL;
const json = { 'content-type': 'application/json' };
const chat = process.env.REQ;
const stream = process.env.REQ_STREAM;
(async () => {
  await (await fetch(base + '/openai/deployments/d/chat/completions?api-version=2024-06-01&api-key=SECRET_A1', { method: 'POST', headers: json, body: chat })).text();
  await (await fetch(base + '/v1beta/models/gemini-2.0-flash:generateContent?key=SECRET_B2', { method: 'POST', headers: json, body: '{"contents":[]}' })).text();
  await (await fetch(base + '/files?access_token=SECRET_C3&page=2')).text();
  await (await fetch(base + '/blob?sv=2022&sig=SECRET_D4')).text();
  await (await fetch(base + '/s3?X-Amz-Credential=SECRET_E5&X-Amz-Signature=SECRET_F6&X-Amz-Date=1')).text();
  await (await fetch(base + '/v1/chat/completions?key=SECRET_G7', { method: 'POST', headers: json, body: stream })).text();
  await (await fetch(base + '/mcp?token=SECRET_H8', { method: 'POST', headers: { ...json, accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_weather', arguments: { city: 'Oslo' } } }) })).text();
  await fetch(process.env.DEAD_URL + '/v1/chat/completions?api_key=SECRET_I9', { method: 'POST', headers: json, body: chat }).catch(() => {});
  process.stdout.write('done');
})();
`;

let server: LlmServer;
let dir: string;
let deadUrl: string;
const rec = CHAT_TEXT;
const streamRec = CHAT_STREAM;

beforeAll(async () => {
  server = await startLlmServer((req) => {
    if (req.url.includes('chat/completions'))
      return JSON.parse(req.body.toString()).stream ? corpusReply(streamRec) : corpusReply(rec);
    if (req.url.startsWith('/mcp'))
      return {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'sunny' }] } }),
      };
    return { headers: { 'content-type': 'application/json' }, body: '{}' };
  });
  // A port nothing listens on (fetch refuses port 1 itself, before any span).
  const dead = createServer();
  await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
  deadUrl = `http://127.0.0.1:${(dead.address() as AddressInfo).port}`;
  await new Promise((r) => dead.close(r));
  dir = mkdtempSync(join(tmpdir(), 'faultline-url-'));
  writeFileSync(join(dir, 'app.cjs'), APP);
});
afterAll(async () => {
  await server?.close();
});

it('under register with HTTP spans and detectors on, no query credential reaches any span', async () => {
  const file = join(dir, 'traces.jsonl');
  const r = await runNode(['--require', join(DIST, 'src/register.js'), join(dir, 'app.cjs')], {
    env: {
      LLM_URL: server.url,
      DEAD_URL: deadUrl,
      REQ: JSON.stringify(rec.request),
      REQ_STREAM: JSON.stringify(streamRec.request),
      FAULTLINE_TRACES_FILE: file,
      OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'undici',
      FAULTLINE_DETECT: 'true',
    },
    timeoutMs: 60_000,
  });
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toBe('done');
  // The app itself sent them: the server saw the keys.
  expect(server.requests.some((q) => q.url.includes('SECRET_A1'))).toBe(true);
  const text = readFileSync(file, 'utf8');
  for (const s of SECRETS) expect(text, s).not.toContain(s);
  const spans = text
    .trim()
    .split('\n')
    .flatMap((l) => otlpJsonSpans(JSON.parse(l)));
  const http = spans.filter((s) => s.scope === '@opentelemetry/instrumentation-undici');
  expect(http.map((s) => s.attributes['url.query'])).toHaveLength(8);
  const queries = http.map((s) => s.attributes['url.query']).sort();
  expect(queries).toEqual(
    [
      '?api-version=2024-06-01&api-key=REDACTED',
      '?key=REDACTED',
      '?access_token=REDACTED&page=2',
      '?sv=2022&sig=REDACTED',
      '?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&X-Amz-Date=1',
      '?key=REDACTED',
      '?token=REDACTED',
      '?api_key=REDACTED',
    ].sort(),
  );
  const azure = http.find((s) => String(s.attributes['url.full']).includes('/openai/deployments/'))!;
  expect(azure.attributes['url.full']).toBe(
    `${server.url}/openai/deployments/d/chat/completions?api-version=2024-06-01&api-key=REDACTED`,
  );
  // The GenAI layer's own spans were made too (chat calls, the MCP call).
  expect(spans.filter((s) => s.scope === 'faultline').length).toBeGreaterThanOrEqual(3);
});
