/**
 * The classes of issue 27 from the real producer packages around the real openai client (fixtures/
 * producer-classes.cjs), content captured or not: a tool that rejected the model's arguments names the call that
 * produced them (schema) even without content; an app failure after calls whose output was not recorded is
 * `not_observable` (with content, the cut answer itself is named); a stream that broke off where the producer
 * exported no span is that call's truncation; a length stop at the app's own max_tokens on the run's last call is no
 * fault; another agent's answer replayed verbatim is stale; one passage delivered twice is a duplicate; arguments
 * breaking the declared schema (OpenLLMetry 0.22's `llm.request.functions.N.arguments` too) are schema.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import { readTraces } from '../../src/traces/read';

async function diagnoseAll(producer: string, content: 'on' | 'off'): Promise<Record<string, string>> {
  const file = join(mkdtempSync(join(tmpdir(), 'faultline-classes-')), 'traces.json');
  execFileSync(process.execPath, [join(__dirname, 'fixtures', 'producer-classes.cjs'), file, producer, content], {
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 60_000,
  });
  const rule = createDiagnoser('rule');
  const got: Record<string, string> = {};
  for await (const trace of readTraces([file])) {
    const root = trace.spans.find((s) => s.attributes['app.task'] !== undefined)!;
    const d = await diagnoseTrace(rule, trace);
    got[String(root.attributes['app.task'])] = `${d.faultType}@${d.step ?? '-'}`;
  }
  return got;
}

const always = { rejected: 'schema@1', reset: 'truncate@1', capped_last: 'none@-' };

describe.each(['traceloop', 'traceloop-0.22', 'openinference'])('issue 27 classes from %s', (producer) => {
  it('content on', async () => {
    expect(await diagnoseAll(producer, 'on')).toEqual({
      ...always,
      hidden: 'truncate@2',
      replay: 'stale@3',
      doubled: 'duplicate@1',
      extra_property: 'schema@1',
    });
  }, 90_000);

  it('content off: what the trace shows is named, the app failure after unrecorded output is not_observable, the rest none', async () => {
    expect(await diagnoseAll(producer, 'off')).toEqual({
      ...always,
      hidden: 'not_observable@-',
      replay: 'none@-',
      doubled: 'none@-',
      extra_property: 'none@-',
    });
  }, 90_000);
});

describe('issue 27 classes from @opentelemetry/instrumentation-openai (content as log records, not exported here)', () => {
  it('content off', async () => {
    expect(await diagnoseAll('genai', 'off')).toEqual({
      ...always,
      hidden: 'not_observable@-',
      replay: 'none@-',
      doubled: 'none@-',
      extra_property: 'none@-',
    });
  }, 90_000);
});
