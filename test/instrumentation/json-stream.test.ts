/**
 * The NDJSON / JSON-array stream reader on recorded streams, cut into chunks at every byte position: the units put
 * back together are the body byte for byte, and the elements are what JSON.parse reads from the whole body.
 */
import { describe, expect, it } from 'vitest';
import {
  JsonStreamSplitter,
  jsonStreamElements,
  type JsonStreamFraming,
  type JsonStreamUnit,
} from '../../src/wire/json-stream';
import { loadCorpus } from '../support/corpus';

function split(body: Buffer, framing: JsonStreamFraming, cuts: number[]): JsonStreamUnit[] {
  const units: JsonStreamUnit[] = [];
  const s = new JsonStreamSplitter(framing, (u) => units.push(u));
  let from = 0;
  for (const at of [...cuts, body.length]) {
    s.push(body.subarray(from, at));
    from = at;
  }
  s.end();
  return units;
}

const arrays = loadCorpus('gemini.jsonl').filter((r) => r.framing === 'json-array');
const ndjson = loadCorpus('ollama.jsonl').filter((r) => r.framing === 'ndjson');

describe('JsonStreamSplitter', () => {
  it.each([
    ['json-array', arrays.reduce((a, b) => (a.stream!.length < b.stream!.length ? a : b)).stream!],
    ['ndjson', ndjson.reduce((a, b) => (a.stream!.length < b.stream!.length ? a : b)).stream!],
  ] as const)('%s: every split position gives back the body and the same elements', (framing, text) => {
    const body = Buffer.from(text, 'utf8');
    const whole =
      framing === 'json-array'
        ? (JSON.parse(text) as unknown[])
        : text
            .split('\n')
            .filter((l) => l.trim() !== '')
            .map((l) => JSON.parse(l) as unknown);
    // Every position in the first 600 bytes (the first element boundaries), then 200 more spread over the rest.
    const stride = Math.max(1, Math.floor(body.length / 200));
    const positions = [
      ...Array.from({ length: Math.min(body.length, 600) }, (_, i) => i),
      ...Array.from({ length: Math.floor(body.length / stride) }, (_, i) => i * stride),
    ];
    for (const at of positions) {
      const units = split(body, framing, [at]);
      expect(Buffer.concat(units.map((u) => u.raw)).equals(body), `cut at ${at}`).toBe(true);
      expect(
        units.filter((u) => u.json !== undefined).map((u) => JSON.parse(u.json!) as unknown),
        `cut at ${at}`,
      ).toEqual(whole);
    }
  });

  it('every JSON-array and NDJSON record of the corpus, one byte per chunk', () => {
    for (const r of [...arrays, ...ndjson]) {
      const body = Buffer.from(r.stream!, 'utf8');
      const units = split(
        body,
        r.framing as JsonStreamFraming,
        Array.from({ length: body.length - 1 }, (_, i) => i + 1),
      );
      expect(Buffer.concat(units.map((u) => u.raw)).equals(body), r.id).toBe(true);
      const { elements, malformed, closed } = jsonStreamElements(body, r.framing as JsonStreamFraming);
      expect(malformed, r.id).toBe(0);
      if (r.framing === 'json-array') {
        expect(closed, r.id).toBe(true);
        expect(elements, r.id).toEqual(JSON.parse(r.stream!));
      }
    }
  });

  it('a cut array yields the elements before the cut and the rest as one unterminated unit; strings with brackets do not confuse it', () => {
    const body = '[{"a":"}]","b":[1,{"c":"\\"]"}]}\n,\r\n{"d":2}\n,{"e":';
    const units = split(Buffer.from(body), 'json-array', [5, 17]);
    expect(units.map((u) => u.raw.toString()).join('')).toBe(body);
    expect(units.filter((u) => u.json !== undefined).map((u) => u.json)).toEqual([
      '{"a":"}]","b":[1,{"c":"\\"]"}]}',
      '{"d":2}',
      '{"e":',
    ]);
    const { elements, malformed, closed } = jsonStreamElements(body, 'json-array');
    expect(elements).toEqual([{ a: '}]', b: [1, { c: '"]' }] }, { d: 2 }]);
    expect(malformed).toBe(1);
    expect(closed).toBe(false);
  });

  it('is linear: a 20 MB element in 64 KB chunks', () => {
    const big = `[{"text":"${'x'.repeat(20 * 1024 * 1024)}"}]`;
    const body = Buffer.from(big);
    const t0 = performance.now();
    const units = split(
      body,
      'json-array',
      Array.from({ length: Math.floor(body.length / 65536) }, (_, i) => (i + 1) * 65536),
    );
    expect(units[0]!.json!.length).toBe(big.length - 2);
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});
