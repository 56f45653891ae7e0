/**
 * Issue 29: what the CLI prints from a trace cannot act on the user's terminal, and no URL it prints carries a
 * credential. A trace whose agent name, model, error type and status message carry OSC 0 (retitle), OSC 52
 * (clipboard), ESC[2J (clear) and colour sequences goes through the real bin (`diagnose`, `monitor`, `reliability`):
 * no raw ESC / BEL / C1 reaches stdout or stderr, the escapes show as visible `\x1b`. And `diagnose --export otlp`
 * to a dead endpoint with `user:password@` in the URL names the endpoint without the password.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { TraceBuilder } from '../diagnosers/support/builder';
import { otlpJson } from '../diagnosers/support/otlp-file';
import { cli, ensureBuilt } from '../campaign/support/bin';

const HOSTILE = '\u001b]0;pwned\u0007\u001b]52;c;ZXZpbA==\u0007\u001b[2J\u001b[31mred\u009b';
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

let file = '';

beforeAll(() => {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'faultline-term-'));
  const b = new TraceBuilder();
  b.trace((t) =>
    t.agent(
      `planner${HOSTILE}`,
      (a) => {
        a.chat({ model: `gpt${HOSTILE}`, http: 500, errorType: `Err${HOSTILE}`, statusMessage: `boom${HOSTILE}` });
        a.chat({ model: `gpt${HOSTILE}`, http: 500, errorType: `Err${HOSTILE}`, statusMessage: `boom${HOSTILE}` });
      },
      { fail: `failed${HOSTILE}` },
    ),
  );
  file = join(dir, 'hostile.json');
  // The workflow's name too (monitor shows it): the root span renamed in the file.
  writeFileSync(
    file,
    otlpJson(b.finished).replaceAll('"invoke_workflow task"', JSON.stringify(`invoke_workflow task${HOSTILE}`)),
  );
}, 120_000);

describe('terminal safety of the CLI', () => {
  for (const command of ['diagnose', 'monitor', 'reliability']) {
    it(`${command} prints trace text with its control characters escaped`, async () => {
      const r = await cli([command, file], { NO_COLOR: '1' });
      const out = r.stdout + r.stderr;
      expect(out.length).toBeGreaterThan(0);
      expect(out).not.toMatch(RAW);
      if (command !== 'reliability') expect(out).toContain('\\x1b');
    }, 60_000);
  }

  it('diagnose --export otlp to a dead endpoint does not print the password', async () => {
    // A port that refuses: bound, then closed.
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    for (const how of ['flag', 'env'] as const) {
      const url = `http://alice:s3cr3t-pw@127.0.0.1:${port}`;
      const r = await cli(
        ['diagnose', file, '--export', 'otlp', ...(how === 'flag' ? ['--otlp-endpoint', url] : [])],
        how === 'env' ? { OTEL_EXPORTER_OTLP_ENDPOINT: url } : {},
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('--export otlp');
      expect(r.stdout + r.stderr).not.toContain('s3cr3t-pw');
      expect(r.stderr).toContain('127.0.0.1');
    }
  }, 120_000);
});
