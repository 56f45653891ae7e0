/**
 * The OpenAI Agents SDK with its own tracing off (issue 26): faultline's agent structure comes from the SDK's trace
 * processor, so a run whose trace is a no-op has only its LLM calls. The real `@openai/agents` app under
 * `--import faultline/register`, with tracing turned off each of the three ways the SDK has — `setTracingDisabled(true)`,
 * `OPENAI_AGENTS_DISABLE_TRACING=1`, and `NODE_ENV=test` (where the SDK turns it off itself) — says so on stderr
 * once, with how to turn it on; with tracing on the line is absent and the structure is there.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LlmServer } from '../support/llm-server';
import { named, runApp, startScriptedServer, type AppRun } from './support';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const LINE = /^faultline: the OpenAI Agents SDK's tracing is off .*setTracingDisabled\(false\)/gm;

let server: LlmServer;
let on: AppRun;
beforeAll(async () => {
  server = await startScriptedServer();
  on = await runApp('agents.mjs', server, { register: 'import' });
});
afterAll(() => server?.close());

describe('the Agents SDK with its tracing off', () => {
  it('tracing on: agent spans, and no such line', () => {
    expect(named(on.spans, 'invoke_agent planner').length).toBeGreaterThan(0);
    expect(on.stderr.match(LINE)).toBeNull();
  });

  const ways: Array<[string, Record<string, string>]> = [
    ['setTracingDisabled(true)', { AGENTS_TRACING_OFF: '1' }],
    ['OPENAI_AGENTS_DISABLE_TRACING=1', { OPENAI_AGENTS_DISABLE_TRACING: '1' }],
    ['NODE_ENV=test', { NODE_ENV: 'test' }],
  ];
  for (const [way, env] of ways) {
    it(`${way}: the app answers as with tracing on, no agent spans, one stderr line saying why and how to turn it on`, async () => {
      const off = await runApp('agents.mjs', server, { register: 'import', env });
      expect(off.out).toEqual(on.out);
      expect(off.spans.filter((s) => s.name.startsWith('invoke_agent'))).toEqual([]);
      expect(off.spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat').length).toBeGreaterThan(0);
      expect(off.stderr.match(LINE)).toHaveLength(1);
    });
  }
});
