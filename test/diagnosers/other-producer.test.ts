/**
 * Diagnosis of traces written by another instrumentation that follows the GenAI conventions: the OpenTelemetry
 * contrib OpenAI instrumentation around the real openai client (fixtures/other-producer.cjs, in a child process so
 * its require hooks patch the client), exported as OTLP/JSON and read back through the shared readers.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDiagnoser, diagnoseTrace } from '../../src/diagnosers/index';
import type { Diagnosis } from '../../src/diagnosers/types';
import { readTraces } from '../../src/traces/read';
import type { TraceRecord } from '../../src/traces/model';
import { llmSpans } from '../../src/traces/steps';

const byTask = new Map<string, { trace: TraceRecord; d: Diagnosis }>();

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'faultline-other-')), 'contrib-openai.otlp.json');
  execFileSync(process.execPath, [join(__dirname, 'fixtures', 'other-producer.cjs'), file], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const rule = createDiagnoser('rule');
  for await (const trace of readTraces([file])) {
    const root = trace.spans.find((s) => s.parentSpanId === undefined)!;
    byTask.set(String(root.attributes['app.task']), { trace, d: await diagnoseTrace(rule, trace) });
  }
}, 60_000);

describe('traces from @opentelemetry/instrumentation-openai (no faultline attributes)', () => {
  it('are read as three traces of three chat spans, with no faultline.* attribute at all', () => {
    expect([...byTask.keys()].sort()).toEqual(['clean', 'failed', 'truncated']);
    for (const { trace } of byTask.values()) {
      expect(llmSpans(trace)).toHaveLength(3);
      expect(trace.spans.every((s) => Object.keys(s.attributes).every((k) => !k.startsWith('faultline.')))).toBe(true);
    }
  });

  it('clean → none; cut answer → truncate at step 2; HTTP 500 → error at step 3', () => {
    expect(byTask.get('clean')!.d.faultType).toBe('none');
    const t = byTask.get('truncated')!;
    expect(t.d).toMatchObject({
      faultType: 'truncate',
      step: 2,
      stepKind: 'llm',
      spanId: llmSpans(t.trace)[1]!.spanId,
    });
    const f = byTask.get('failed')!;
    expect(f.d).toMatchObject({ faultType: 'error', step: 3, spanId: llmSpans(f.trace)[2]!.spanId });
    expect(f.d.evidence[0]).toContain('InternalServerError');
  });
});
