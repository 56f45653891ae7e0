/**
 * Near-misses that are not faults, from the real producer packages around the real openai client
 * (fixtures/near-miss.cjs): tool arguments that are prefixes of longer values in the conversation as a model
 * legitimately copies them (a git short SHA, a parent directory, a selector's head) are not cut arguments, and a job
 * polled twice with the same arguments is not a stale answer; a title the app capped with its own max_tokens in a run
 * that went on is not a truncation; and a tool that rejected the model's arguments, after which the agent answered
 * without it, is the run's fault, not a recovery; an id with a U+FFFD that also breaks its schema pattern is corrupt.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import { readTraces } from '../../src/traces/read';

describe.each(['genai', 'traceloop', 'openinference'])('near-misses from %s', (producer) => {
  it('a length stop at the app’s own max_tokens, a prefix of a longer value and a repeated poll are no fault; a rejected tool call the agent gave up on is', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'faultline-near-miss-')), 'traces.json');
    execFileSync(process.execPath, [join(__dirname, 'fixtures', 'near-miss.cjs'), file, producer], {
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 60_000,
    });
    const rule = createDiagnoser('rule');
    const got: Record<string, string> = {};
    const recovered: string[] = [];
    for await (const trace of readTraces([file])) {
      const root = trace.spans.find((s) => s.attributes['app.task'] !== undefined)!;
      const d = await diagnoseTrace(rule, trace);
      got[String(root.attributes['app.task'])] = d.faultType;
      recovered.push(...(d.recovered ?? []).map((r) => `${String(root.attributes['app.task'])}: ${r.spanName}`));
    }
    expect(recovered).toEqual([]);
    const fault = expect.not.stringMatching(/^none$/);
    // A garbled id that also breaks its pattern is corrupt where content shows it (instrumentation-openai's is off).
    expect(got).toEqual({
      max_tokens: 'none',
      prefix: 'none',
      repeat: 'none',
      garbled_id: producer === 'genai' ? fault : 'corrupt',
      gave_up: fault,
    });
  }, 90_000);
});
