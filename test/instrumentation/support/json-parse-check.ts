/**
 * What the parseJsonBody tests share (json-body.test.ts on project-written requests, json-body-corpus.test.ts on the
 * recorded ones): a request grown to a long history, and the check that parseJsonBody and parsePiecewise give exactly
 * JSON.parse's result on the same bytes.
 */
import { expect } from 'vitest';
import { parseJsonBody, parsePiecewise } from '../../../instrumentation/json-body';
import type { CorpusRecord } from '../../support/wire-record';

/** A record's request with its history grown from `pool`'s messages until the body has at least `bytes` bytes. */
export function longHistory(r: CorpusRecord, bytes: number, pool: unknown[]): Record<string, unknown> {
  const messages = [...((r.request.messages as unknown[] | undefined) ?? [])];
  let size = Buffer.byteLength(JSON.stringify({ ...r.request, messages }));
  for (let i = 0; size < bytes; i++) {
    const m = pool[i % pool.length];
    messages.push(m);
    size += Buffer.byteLength(JSON.stringify(m)) + 1;
  }
  return { ...r.request, messages };
}

/**
 * Both parsers on the same bytes: the same value, or both throw a SyntaxError. A JSON object is parsed piecewise
 * (not through the whole-body fallback), anything else is left to JSON.parse.
 */
export function expectSameAsJsonParse(body: string, deep = true): void {
  const buf = Buffer.from(body);
  let expected: unknown;
  try {
    expected = JSON.parse(body);
  } catch {
    expect(parsePiecewise(buf)).toBeUndefined();
    expect(() => parseJsonBody(buf)).toThrow(SyntaxError);
    return;
  }
  const isObject = typeof expected === 'object' && expected !== null && !Array.isArray(expected);
  const piecewise = parsePiecewise(buf);
  // The text of a value holds all of a JSON value (key order too); `deep` also compares prototypes and own keys one by
  // one, which costs seconds on large bodies.
  const same = (v: unknown) =>
    deep ? expect(v).toStrictEqual(expected) : expect(JSON.stringify(v)).toBe(JSON.stringify(expected));
  if (isObject) {
    same(piecewise);
    expect(JSON.stringify(piecewise)).toBe(JSON.stringify(expected)); // key order too
  } else {
    expect(piecewise).toBeUndefined();
  }
  same(parseJsonBody(buf));
}
