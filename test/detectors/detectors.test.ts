/** Unit tests of each detector on realistic bodies (corpus records and the catalog's exact strings). */
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { detectionContext, runDetectors, validateAgainst, validateJsonSchema } from '../../detectors/index';
import { mojibakeRuns, symbolNoise } from '../../detectors/encoding';
import { classifyNotice } from '../../detectors/in-band-error';
import { scanJson, unclosedFence } from '../../detectors/text';
import type { Finding, LlmObservation } from '../../detectors/types';
import { LLM_SCHEMA_TEXT, PROXY_HTML_TEXT } from '../../src/catalog/agentchaos/experiments';
import { loadCorpus, observe } from './support/corpus';

const corpus = loadCorpus(['openai-chat.jsonl']);
const textRecord = corpus.find(
  (r) => r.status === 200 && r.tags.includes('text') && !r.tags.includes('finish_length'),
)!;
const toolRecord = corpus.find((r) => r.id === '5acc3deaa555')!; // get_weather(location) for San Francisco and Boston

function withContent(content: string, extra: Record<string, unknown> = {}): LlmObservation {
  const body = structuredClone(textRecord.response) as {
    choices: Array<{ message: Record<string, unknown>; finish_reason: string }>;
  };
  body.choices[0]!.message.content = content;
  Object.assign(body.choices[0]!, extra);
  return observe(textRecord, body);
}

function withArgs(args: string): LlmObservation {
  const body = structuredClone(toolRecord.response) as {
    choices: Array<{ message: { tool_calls: Array<{ function: { arguments: string } }> } }>;
  };
  body.choices[0]!.message.tool_calls[0]!.function.arguments = args;
  return observe(toolRecord, body);
}

const by = (fs: Finding[], detector: string) => fs.filter((f) => f.detector === detector);
const ctx = () => detectionContext({ now: Date.UTC(2026, 0, 1) });

describe('encoding', () => {
  test('mojibake is confirmed by re-decoding (golden vector of fault-catalog.md §1.12)', () => {
    const moj = Buffer.from('Café – naïve “quote”', 'utf8').toString('latin1');
    expect(mojibakeRuns(moj).length).toBeGreaterThan(0);
    expect(by(runDetectors(withContent(moj), ctx()), 'encoding')[0]?.faultType).toBe('corrupt');
    expect(mojibakeRuns('Café – naïve “quote” — déjà vu, Ångström, 東京')).toEqual([]);
  });
  test('symbol noise inside words, U+FFFD, NUL', () => {
    expect(symbolNoise('The ans☂er is 4☃2', false)).toBe(2);
    expect(symbolNoise('Warning ⚠ read this ★', false)).toBe(0);
    expect(by(runDetectors(withContent('The result is \uFFFD\uFFFD here.'), ctx()), 'encoding')).toHaveLength(1);
    expect(by(runDetectors(withContent('half a body\u0000\u0000'), ctx()), 'encoding')).toHaveLength(1);
  });
  test('control characters at the edges of plain ASCII: DEL and ESC count, tab, newline and CR do not', () => {
    expect(by(runDetectors(withContent('plain words\u007f here'), ctx()), 'encoding')[0]?.evidence).toBe(
      'control characters in text',
    );
    expect(by(runDetectors(withContent('\u001b[31mred\u001b[0m'), ctx()), 'encoding')).toHaveLength(1);
    expect(by(runDetectors(withContent('col a\tcol b\r\nline two ~ {"k": [1, 2]}'), ctx()), 'encoding')).toEqual([]);
  });
  test('an HTML error page is an error; HTML the model writes is not', () => {
    expect(by(runDetectors(withContent(PROXY_HTML_TEXT), ctx()), 'encoding')[0]?.faultType).toBe('error');
    expect(
      by(
        runDetectors(
          withContent('<!DOCTYPE html>\n<html><head><title>My page</title></head><body>Hi</body></html>'),
          ctx(),
        ),
        'encoding',
      ),
    ).toEqual([]);
  });
});

describe('in-band errors', () => {
  test('catalog strings and real-world cousins', () => {
    expect(
      classifyNotice('[TIMEOUT] The request timed out. The server did not respond within the expected time.')
        ?.faultType,
    ).toBe('timeout');
    expect(classifyNotice('upstream request timeout')?.faultType).toBe('timeout');
    expect(classifyNotice('HTTP 503: Service Unavailable')?.faultType).toBe('error');
    expect(classifyNotice(LLM_SCHEMA_TEXT)?.faultType).toBe('schema');
  });
  test('prose that discusses errors is not a notice', () => {
    expect(
      classifyNotice('An HTTP 500 Internal Server Error means the server failed; retry with backoff.'),
    ).toBeUndefined();
    expect(
      classifyNotice('To handle a timeout, wrap the call in a try/catch and set `timeout: 30_000` on the client.'),
    ).toBeUndefined();
    expect(classifyNotice('{"error": null, "answer": 42}')).toBeUndefined();
  });
});

describe('structure and finish', () => {
  test('JSON scanner', () => {
    expect(scanJson('{"a": [1, 2, {"b": "c"}]}')).toBe('complete');
    expect(scanJson('{"a": [1, 2, {"b": "c')).toBe('incomplete');
    expect(scanJson('{"a": 1]}')).toBe('malformed');
    // Escapes: a quote after an odd run of backslashes is inside the string, after an even run it closes it.
    expect(scanJson(String.raw`{"a": "say \"hi\"", "b": "c:\\"}`)).toBe('complete');
    expect(scanJson(String.raw`{"a": "c:\\\"}`)).toBe('incomplete');
    expect(scanJson(String.raw`["\\"]`)).toBe('complete');
    expect(scanJson(String.raw`["\"]`)).toBe('incomplete');
    expect(scanJson('{"a": "}"} x')).toBe('malformed');
    expect(scanJson('{"a": "]')).toBe('incomplete');
    expect(unclosedFence('```ts\nconst a = 1;\n```\nand\n```py\nprint(1)')).toBe(true);
    expect(unclosedFence('```ts\nconst a = 1;\n```')).toBe(false);
  });
  test('a tool argument cut mid-word or at a name boundary is truncation', () => {
    expect(by(runDetectors(withArgs('{"location": "San Fr"}'), ctx()), 'structural_truncation')).toHaveLength(1);
    expect(by(runDetectors(withArgs('{"location": "San"}'), ctx()), 'structural_truncation')).toHaveLength(1);
    expect(by(runDetectors(withArgs('{"location": "San Francisco"}'), ctx()), 'structural_truncation')).toHaveLength(0);
  });
  test('finish reason length, and output tokens at max_tokens under a "stop"', () => {
    expect(
      by(runDetectors(withContent('The answer is', { finish_reason: 'length' }), ctx()), 'finish_reason')[0]?.faultType,
    ).toBe('truncate');
    const o = withContent('A complete sentence.');
    o.request!.maxTokens = o.response.usage!.outputTokens!;
    expect(by(runDetectors(o, ctx()), 'finish_reason')[0]?.evidence).toMatch(/reached max_tokens/);
  });
  test('empty content, and a tool_calls finish with no tool call', () => {
    expect(by(runDetectors(withContent(''), ctx()), 'empty_output')[0]?.faultType).toBe('empty');
    const body = structuredClone(toolRecord.response) as { choices: Array<{ message: { tool_calls: unknown[] } }> };
    body.choices[0]!.message.tool_calls = [];
    expect(by(runDetectors(observe(toolRecord, body), ctx()), 'empty_output')[0]?.evidence).toMatch(/no tool call/);
  });
});

describe('schema contract and JSON Schema subset', () => {
  const schema = {
    type: 'object',
    properties: {
      city: { type: 'string', minLength: 2 },
      unit: { enum: ['c', 'f'] },
      days: { type: 'integer', minimum: 1, maximum: 14 },
      tags: { type: 'array', items: { type: 'string' }, maxItems: 2 },
      when: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      ref: { $ref: '#/$defs/Ref' },
    },
    required: ['city', 'unit'],
    additionalProperties: false,
    $defs: { Ref: { type: 'object', properties: { id: { type: ['string', 'integer'] } }, required: ['id'] } },
  };
  test('accepts good and rejects each kind of bad', () => {
    expect(
      validateJsonSchema(schema, { city: 'Paris', unit: 'c', days: 3, tags: ['a'], when: null, ref: { id: 4 } }),
    ).toEqual([]);
    const kw = (v: unknown) => validateJsonSchema(schema, v).map((i) => i.keyword);
    expect(kw({ unit: 'c' })).toEqual(['required']);
    expect(kw({ city: 'Paris', unit: 'k' })).toEqual(['enum']);
    expect(kw({ city: 'Paris', unit: 'c', days: 3.5 })).toEqual(['type']);
    expect(kw({ city: 'Paris', unit: 'c', days: 30 })).toEqual(['maximum']);
    expect(kw({ city: 'Paris', unit: 'c', extra: 1 })).toEqual(['additionalProperties']);
    expect(kw({ city: 'Paris', unit: 'c', tags: ['a', 'b', 'c'] })).toEqual(['maxItems']);
    expect(kw({ city: 'Paris', unit: 'c', when: 5 })).toEqual(['anyOf']);
    expect(kw({ city: 'Paris', unit: 'c', ref: {} })).toEqual(['required']);
  });
  test('tool calls are checked against the request tool schema', () => {
    expect(by(runDetectors(withArgs('{}'), ctx()), 'schema_contract')[0]?.evidence).toMatch(
      /missing required property "location"/,
    );
    expect(by(runDetectors(withArgs('{"location": "Boston"}'), ctx()), 'schema_contract')).toEqual([]);
    expect(by(runDetectors(withArgs('{"location": "Boston", "x'), ctx()), 'schema_contract')).toEqual([]); // cut JSON: truncation's
    expect(by(runDetectors(withArgs('{"location": "Boston", "x'), ctx()), 'structural_truncation')).toHaveLength(1);
  });
  test('contracts: zod, Standard Schema and JSON Schema', () => {
    const zs = z.object({ qty: z.number().int() });
    expect(validateAgainst(zs, { qty: 1 })).toEqual([]);
    expect(validateAgainst(zs, { qty: '1' })[0]?.path).toBe('$.qty');
    const standard = {
      '~standard': {
        version: 1,
        vendor: 'x',
        validate: (v: unknown) => (v === 1 ? { value: 1 } : { issues: [{ message: 'not one', path: [] }] }),
      },
    };
    expect(validateAgainst(standard, 2)).toEqual([{ path: '$', message: 'not one' }]);
    expect(validateAgainst({ type: 'object', required: ['a'] }, {})[0]?.message).toMatch(/"a"/);
  });
});

describe('staleness, grounding, latency', () => {
  test('a response id and body replayed for a different request is stale; a constant-id mock is not', () => {
    const first = observe(toolRecord);
    const second = withContent('Hello there, how can I help?');
    second.response.id = first.response.id; // constant-id mock, different body
    expect(by(runDetectors(second, { ...ctx(), earlier: [first] }), 'staleness')).toEqual([]);
    const replay = observe(textRecord, toolRecord.response);
    expect(by(runDetectors(replay, { ...ctx(), earlier: [first] }), 'staleness')[0]?.faultType).toBe('stale');
  });
  test('created long before the request: stale when the route clock is known good or went backwards, a hint alone', () => {
    const fresh = withContent('Earlier answer.');
    fresh.request!.time = fresh.response.created! * 1000 + 800;
    const o = withContent('Fine.');
    o.request!.time = (o.response.created! + 3600) * 1000;
    const alone = by(runDetectors(o, ctx()), 'staleness');
    expect(alone[0]?.confidence).toBeLessThan(0.55);
    const judged = by(runDetectors(o, { ...ctx(), earlier: [fresh] }), 'staleness')[0];
    expect(judged?.evidence).toMatch(/before the request/);
    expect(judged?.confidence).toBe(0.8);
    const later = withContent('A later answer.');
    later.response.created = o.response.created! + 7200;
    later.request!.time = (o.response.created! + 7200) * 1000;
    expect(by(runDetectors(o, { ...ctx(), earlier: [later] }), 'staleness')[0]?.evidence).toMatch(
      /before an earlier answer/,
    );
  });
  test('a server that sends created: 1, or milliseconds, is not stale', () => {
    for (const created of [1, 0, Date.now()]) {
      const first = withContent('One.');
      const o = withContent('Two.');
      for (const x of [first, o]) {
        x.response.created = created;
        x.request!.time = Date.now();
      }
      expect(by(runDetectors(o, { ...ctx(), earlier: [first] }), 'staleness')).toEqual([]);
    }
  });
  test('an entity that appears nowhere in the conversation', () => {
    expect(by(runDetectors(withArgs('{"location": "Pyongyang"}'), ctx()), 'entity_grounding')).toHaveLength(1);
    expect(by(runDetectors(withArgs('{"location": "Boston, MA"}'), ctx()), 'entity_grounding')).toHaveLength(0);
  });
  test('latency outlier against the route baseline', () => {
    const o = withContent('Fine.');
    o.response.durationMs = 5500;
    expect(by(runDetectors(o, { ...ctx(), latency: { medianMs: 500, madMs: 50 } }), 'latency')[0]?.faultType).toBe(
      'delay',
    );
    o.response.durationMs = 900;
    expect(by(runDetectors(o, { ...ctx(), latency: { medianMs: 500, madMs: 50 } }), 'latency')).toEqual([]);
  });
  test('a throwing custom detector does not break detection', () => {
    const bad = {
      name: 'bad',
      applies: () => true,
      detect: () => {
        throw new Error('boom');
      },
    };
    expect(runDetectors(withContent(''), ctx(), [bad, 'empty_output']).map((f) => f.detector)).toEqual([
      'empty_output',
    ]);
  });
});
