/**
 * A custom detector written against `faultline/extend` alone (issue 32): its types and `registerDetector` come
 * from the extension entry, with nothing imported from the layers below. It then runs in faultline's own offline
 * path. `faultline/analysis`'s `detectSpans` rebuilds the observations from GenAI spans (OTel semconv content
 * attributes) and hands them, with their task's `DetectionContext`, to the registered detector. The built package
 * resolves both entries by name and they share one registry.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import {
  registerDetector,
  type DetectionContext,
  type Detector,
  type Finding,
  type Observation,
} from '../../src/api/extend';
import { detectSpans, runDetectors, detectionContext, type SpanRecord, type TraceRecord } from '../../src/api/analysis';
import { ROOT } from '../support/dist';

const PHRASE = /as an ai language model/i;

/** A boilerplate refusal opener in an answer; more confident when an earlier answer of the same task had it too. */
const boilerplate: Detector = {
  name: 'boilerplate_opener',
  applies: (obs: Observation) => obs.kind === 'llm' && obs.hasContent,
  detect(obs: Observation, ctx: DetectionContext): Finding[] {
    if (obs.kind !== 'llm' || !PHRASE.test(obs.response.text)) return [];
    const before = ctx.earlier.filter((e) => e.kind === 'llm' && PHRASE.test(e.response.text)).length;
    return [
      {
        detector: 'boilerplate_opener',
        faultType: 'semantic',
        severity: 'warning',
        confidence: before > 0 ? 0.9 : 0.6,
        evidence: `boilerplate opener (${before} earlier in the task)`,
      },
    ];
  },
};

function chat(seq: number, answer: string): SpanRecord {
  return {
    traceId: 'a'.repeat(32),
    spanId: `${seq}`.padStart(16, '0'),
    name: 'chat gpt-4o',
    kind: 'CLIENT',
    start: 1_700_000_000_000 + seq * 1000,
    end: 1_700_000_000_500 + seq * 1000,
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.input.messages': JSON.stringify([
        { role: 'user', parts: [{ type: 'text', content: `question ${seq}` }] },
      ]),
      'gen_ai.output.messages': JSON.stringify([
        { role: 'assistant', parts: [{ type: 'text', content: answer }], finish_reason: 'stop' },
      ]),
      'gen_ai.response.finish_reasons': ['stop'],
    },
    events: [],
    links: [],
    status: { code: 'UNSET' },
    resource: {},
    scope: { name: 'faultline' },
  };
}

describe('a custom detector against faultline/extend', () => {
  registerDetector(boilerplate);
  const trace: TraceRecord = {
    traceId: 'a'.repeat(32),
    spans: [
      chat(1, 'As an AI language model, I cannot browse.'),
      chat(2, 'Paris is the capital of France.'),
      chat(3, 'As an AI language model, I think so.'),
    ],
  };

  test('runs by name over spans, with the task context faultline builds', () => {
    const found = detectSpans(trace, { detectors: ['boilerplate_opener'], includeOnline: false });
    const bySpan = Object.fromEntries([...found].map(([id, fs]) => [id, fs.map((f) => [f.detector, f.confidence])]));
    expect(bySpan[chat(1, '').spanId]).toEqual([['boilerplate_opener', 0.6]]);
    expect(bySpan[chat(2, '').spanId] ?? []).toEqual([]);
    // The third call's context holds the first: the earlier answer raises the confidence.
    expect(bySpan[chat(3, '').spanId]).toEqual([['boilerplate_opener', 0.9]]);
  });

  test('is part of the default set once registered, beside the built-in detectors', () => {
    const found = detectSpans(trace, { includeOnline: false });
    const names = [...found.values()].flat().map((f) => f.detector);
    expect(names.filter((n) => n === 'boilerplate_opener')).toHaveLength(2);
    const direct = runDetectors(
      {
        kind: 'llm',
        hasContent: true,
        response: { finishReasons: ['stop'], text: 'Paris.', toolCalls: [], durationMs: 40 },
      },
      detectionContext(),
      ['boilerplate_opener'],
    );
    expect(direct).toEqual([]);
  });

  test('the built package resolves faultline/extend and faultline/analysis by name, sharing one registry', () => {
    const script = `
const { registerDetector } = require('faultline/extend');
const { runDetectors, detectionContext } = require('faultline/analysis');
registerDetector({ name: 'always', applies: () => true, detect: () => [{ detector: 'always', faultType: 'semantic', severity: 'info', confidence: 1, evidence: 'x' }] });
const f = runDetectors({ kind: 'llm', hasContent: true, response: { finishReasons: [], text: '', toolCalls: [] } }, detectionContext(), ['always']);
process.stdout.write(JSON.stringify(f.map((x) => x.detector)));`;
    const out = execFileSync(process.execPath, ['-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, OTEL_SDK_DISABLED: 'true' },
    });
    expect(JSON.parse(out)).toEqual(['always']);
  });
});
