/**
 * No timer of ours keeps the process alive past the application's own work: a 429 asking to retry after 8 s, the
 * application aborting at 500 ms under the retry guard, and the process exits at once (it used to stay until the
 * back-off timer fired, 8.3 s). A child process under `--require faultline/register`, as a user runs it.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runNode } from '../support/child';
import { DIST } from '../support/dist';
import { startLlmServer, type LlmServer } from '../support/llm-server';

const REGISTER = join(DIST, 'src/register.js');
let server: LlmServer;
beforeAll(async () => {
  server = await startLlmServer(() => ({
    status: 429,
    headers: { 'content-type': 'application/json', 'retry-after': '8' },
    body: '{"error":{"message":"slow down","type":"rate_limit"}}',
  }));
});
afterAll(async () => {
  await server.close();
});

it('an app that aborts a call waiting out a Retry-After: 8 back-off exits within 2 s', async () => {
  if (!existsSync(REGISTER)) throw new Error('run `npm run build` first: dist/src/register.js missing');
  const dir = mkdtempSync(join(tmpdir(), 'faultline-abort-exit-'));
  writeFileSync(join(dir, 'guards.json'), JSON.stringify({ routes: [{ retry: { maxRetries: 2 } }] }));
  writeFileSync(
    join(dir, 'app.cjs'),
    `fetch(process.argv[2] + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
       body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }), signal: AbortSignal.timeout(500) })
       .then((r) => console.log('status', r.status), (e) => console.log('error', e.name));`,
  );
  const t0 = performance.now();
  const r = await runNode(['--require', REGISTER, join(dir, 'app.cjs'), server.url], {
    env: { FAULTLINE_GUARDS: join(dir, 'guards.json'), OTEL_TRACES_EXPORTER: 'none' },
    timeoutMs: 20_000,
  });
  const ms = performance.now() - t0;
  expect(r.stdout, r.stderr).toContain('error TimeoutError');
  expect(r.code, r.stderr).toBe(0);
  expect(ms).toBeLessThan(2500);
});
