/**
 * Issue 29: an invalid OTLP endpoint from the environment is refused as the configuration file's is (same rule, same
 * "expected an http(s) URL" wording), without crashing the app: one line on stderr says so and that OTLP export is
 * off, the spans go to the trace file, and the exit is not held by an exporter that can never send.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../campaign/support/bin';

beforeAll(() => ensureBuilt(), 120_000);

function app(endpoint: string): Promise<{ code: number | null; stderr: string; ms: number; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'faultline-envurl-'));
  const script = `require(${JSON.stringify(join(ROOT, 'dist/src/register.js'))});
    require(${JSON.stringify(join(ROOT, 'node_modules/@opentelemetry/api'))}).trace.getTracer('t').startSpan('work').end();`;
  const t0 = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-e', script],
      { cwd: dir, env: { PATH: process.env.PATH, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }, timeout: 20_000 },
      (err, _out, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr, ms: Date.now() - t0, dir });
      },
    );
  });
}

describe('OTEL_EXPORTER_OTLP_ENDPOINT that is not an http(s) URL', () => {
  for (const endpoint of ['not a url', 'ftp://user:pw@collector.example:21']) {
    it(`${JSON.stringify(endpoint)}: refused on stderr, app runs, spans in the trace file, exit not held`, async () => {
      const r = await app(endpoint);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain('OTEL_EXPORTER_OTLP_ENDPOINT: expected an http(s) URL like http://localhost:4318');
      expect(r.stderr).toContain('OTLP export is off');
      expect(r.stderr).not.toContain(':pw@');
      expect(existsSync(join(r.dir, 'faultline-traces.jsonl'))).toBe(true);
      expect(r.ms).toBeLessThan(4000);
    }, 30_000);
  }
});
