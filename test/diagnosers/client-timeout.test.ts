/**
 * A call the openai client gave up on, from faultline's own spans: the real openai client (timeout 400 ms) under
 * faultline's register against a loopback server that never answers the call, and against one that answers while a
 * `timeout_hang` plan holds it (fixtures/client-timeout.mjs). The client aborts its own timeout without a reason, so
 * the call's span records a cancel either way; the diagnosis names `timeout` at that call from the trace's evidence
 * (the app's record of the SDK's exception, or a hold beyond every answered call), and a user's cancel stays none.
 * A 429 the SDK's own retry got answered, in a run that completed, is reported as recovered, not as the run's fault.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import { readTraces } from '../../src/traces/read';
import { runNode } from '../support/child';

const ROOT = resolve(__dirname, '../..');
const REGISTER_MJS = join(ROOT, 'dist/src/register.mjs');
let dir: string;

beforeAll(() => {
  if (!existsSync(REGISTER_MJS)) throw new Error('run `npm run build` first: dist/src/register.mjs missing');
  dir = mkdtempSync(join(tmpdir(), 'faultline-client-timeout-'));
  writeFileSync(
    join(dir, 'hang.json'),
    JSON.stringify({
      rules: [
        {
          fault: 'timeout_hang',
          strategy: 'persistent',
          match: { operation: 'chat', model: 'gpt-4o-mini-2024-07-18' },
        },
      ],
    }),
  );
});

describe.each(['real', 'plan'])('the openai client’s timeout (%s hang)', (mode) => {
  it('is a timeout at the call it gave up on; a user’s cancel is none', async () => {
    const file = join(dir, `${mode}.jsonl`);
    const r = await runNode(['--import', REGISTER_MJS, join(__dirname, 'fixtures', 'client-timeout.mjs'), mode], {
      env: {
        FAULTLINE_TRACES_FILE: file,
        OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'undici',
        ...(mode === 'plan' ? { FAULTLINE_PLAN: join(dir, 'hang.json') } : {}),
      },
      timeoutMs: 60_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const rule = createDiagnoser('rule');
    const got: Record<string, { type: string; step: number | null; recovered?: string[] }> = {};
    for await (const trace of readTraces([file])) {
      const root = trace.spans.find((s) => s.attributes['app.task'] !== undefined);
      if (!root) continue;
      const d = await diagnoseTrace(rule, trace);
      got[String(root.attributes['app.task'])] = {
        type: d.faultType,
        step: d.step,
        ...(d.recovered?.length ? { recovered: d.recovered.map((x) => x.faultType) } : {}),
      };
    }
    expect(got).toEqual({
      recorded: { type: 'timeout', step: 3 },
      retried: { type: 'timeout', step: 3 },
      caught: { type: 'timeout', step: 4 },
      cancel: { type: 'none', step: null },
      rate_limited: { type: 'none', step: null, recovered: ['error'] },
    });
  }, 90_000);
});
