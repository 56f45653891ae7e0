/**
 * A failed model call with no span of its own (OpenInference and OpenLLMetry end no LLM span for a call the SDK threw
 * on): the real producer packages around the real openai client against a loopback server that hangs past the
 * client's timeout or answers OpenAI's 429 at call 3 (fixtures/unspanned-failure.cjs, in a child process so that the
 * instrumentation patches the real module). The type follows the SDK's exception; the step is the failed call, the
 * one after the last good LLM span.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import { readTraces } from '../../src/traces/read';
import { llmSpans } from '../../src/traces/steps';

describe.each(['openinference', 'traceloop'])('a failed call without its span, from %s', (producer) => {
  it('timeout and 429 on the agent span: the type from the exception, the step after the last good call', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'faultline-unspanned-')), 'traces.json');
    execFileSync(process.execPath, [join(__dirname, 'fixtures', 'unspanned-failure.cjs'), file, producer], {
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 60_000,
    });
    const rule = createDiagnoser('rule');
    const got: Record<string, { type: string; step: number | null; llm: number }> = {};
    for await (const trace of readTraces([file])) {
      const agent = trace.spans.find((s) => s.attributes['app.task'] !== undefined)!;
      const d = await diagnoseTrace(rule, trace);
      got[String(agent.attributes['app.task'])] = { type: d.faultType, step: d.step, llm: llmSpans(trace).length };
    }
    expect(got).toEqual({
      timeout: { type: 'timeout', step: 3, llm: 2 },
      rate_limit: { type: 'error', step: 3, llm: 2 },
    });
  }, 90_000);
});
