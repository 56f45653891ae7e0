/**
 * The JSON Schema validator behind schema_contract is Ajv: its verdicts must equal a standalone Ajv's on real tool
 * definitions (the corpus's), on the keywords the old hand-written subset ignored, and it compiles a schema once per
 * content, not per call.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, test } from 'vitest';
import { compileJsonSchema, validateJsonSchema } from '../../detectors/json-schema';
import { CORPUS } from '../support/shared';

type Json = Record<string, unknown>;

function records(file: string): Json[] {
  return readFileSync(join(CORPUS, file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Json);
}

/** Every (tool schema, arguments) pair the corpus holds: OpenAI chat, Responses and Anthropic tool calls. */
function corpusPairs(): Array<{ schema: object; args: unknown; where: string }> {
  const out: Array<{ schema: object; args: unknown; where: string }> = [];
  const schemaOf = (tools: unknown, name: string): object | undefined => {
    for (const t of Array.isArray(tools) ? (tools as Json[]) : []) {
      const fn = (t.function ?? t) as Json;
      if (fn.name === name) return (fn.parameters ?? fn.input_schema) as object | undefined;
    }
    return undefined;
  };
  for (const r of records('openai-chat.jsonl')) {
    const req = r.request as Json;
    for (const c of ((r.response as Json | undefined)?.choices as Json[] | undefined) ?? []) {
      for (const tc of ((c.message as Json | undefined)?.tool_calls as Json[] | undefined) ?? []) {
        const fn = tc.function as Json;
        const schema = schemaOf(req.tools, String(fn.name));
        try {
          if (schema)
            out.push({ schema, args: JSON.parse(String(fn.arguments)), where: `openai-chat ${String(r.id)}` });
        } catch {
          /* arguments that are not JSON are another detector's */
        }
      }
    }
  }
  for (const r of records('openai-responses.jsonl')) {
    const req = r.request as Json;
    for (const item of ((r.response as Json | undefined)?.output as Json[] | undefined) ?? []) {
      if (item.type !== 'function_call') continue;
      const schema = schemaOf(req.tools, String(item.name));
      try {
        if (schema) out.push({ schema, args: JSON.parse(String(item.arguments)), where: `responses ${String(r.id)}` });
      } catch {
        /* not JSON */
      }
    }
  }
  for (const r of records('anthropic-messages.jsonl')) {
    const req = r.request as Json;
    for (const block of ((r.response as Json | undefined)?.content as Json[] | undefined) ?? []) {
      if (block.type !== 'tool_use') continue;
      const schema = schemaOf(req.tools, String(block.name));
      if (schema) out.push({ schema, args: block.input, where: `anthropic ${String(r.id)}` });
    }
  }
  return out;
}

/** A standalone Ajv's verdict, of the draft the schema declares (draft-07 unless it says 2020-12). */
function ajvValid(schema: object, value: unknown): boolean {
  const declared = String((schema as { $schema?: unknown }).$schema ?? '');
  const AjvClass = declared.includes('2020-12') ? Ajv2020 : Ajv;
  const ajv = new AjvClass({
    strict: false,
    allErrors: true,
    validateFormats: false,
    validateSchema: false,
    logger: false,
  });
  return ajv.validate(schema, value);
}

/** Variants that break a schema in the usual ways: a required key dropped, a value of the wrong type. */
function variants(schema: object, args: unknown): unknown[] {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return [];
  const out: unknown[] = [];
  const required = (schema as { required?: unknown }).required;
  if (Array.isArray(required) && typeof required[0] === 'string') {
    const copy = { ...(args as Json) };
    delete copy[required[0]];
    out.push(copy);
  }
  const first = Object.keys(args)[0];
  if (first !== undefined) out.push({ ...(args as Json), [first]: { unexpected: [1, 2] } });
  return out;
}

describe('JSON Schema validation (Ajv)', () => {
  test('equals a standalone Ajv on every tool call of the corpus and on broken variants of each', () => {
    const pairs = corpusPairs();
    expect(pairs.length).toBeGreaterThan(40);
    let invalid = 0;
    for (const { schema, args, where } of pairs) {
      for (const value of [args, ...variants(schema, args)]) {
        const ours = validateJsonSchema(schema, value).length === 0;
        expect(ours, where).toBe(ajvValid(schema, value));
        if (!ours) invalid++;
      }
    }
    expect(invalid).toBeGreaterThan(20); // the variants do break schemas: the comparison covers both verdicts
  });

  test('patternProperties with additionalProperties: false accepts keys the patterns allow', () => {
    const schema = { type: 'object', patternProperties: { '^x-': { type: 'string' } }, additionalProperties: false };
    expect(validateJsonSchema(schema, { 'x-trace': 'on' })).toEqual([]);
    expect(validateJsonSchema(schema, { other: 'on' }).map((i) => i.keyword)).toEqual(['additionalProperties']);
    expect(validateJsonSchema(schema, { 'x-trace': 3 }).map((i) => i.path)).toEqual(['$.x-trace']);
  });

  test.each([
    ['not', { not: { type: 'string' } }, 5, 'five'],
    [
      'if/then',
      { if: { properties: { unit: { const: 'c' } } }, then: { required: ['celsius'] } },
      { unit: 'f' },
      { unit: 'c' },
    ],
    ['uniqueItems', { type: 'array', uniqueItems: true }, [1, 2], [1, 1]],
    ['multipleOf', { type: 'number', multipleOf: 0.5 }, 2.5, 2.3],
    [
      'dependentRequired (2019-09)',
      { $schema: 'https://json-schema.org/draft/2019-09/schema', dependentRequired: { a: ['b'] } },
      { a: 1, b: 2 },
      { a: 1 },
    ],
    ['prefixItems (2020-12)', { prefixItems: [{ type: 'string' }, { type: 'integer' }] }, ['a', 1], ['a', 'b']],
    ['tuple items (draft-07)', { items: [{ type: 'string' }, { type: 'integer' }] }, ['a', 1], [1, 1]],
    [
      'a local $ref',
      { $defs: { n: { type: 'integer' } }, properties: { n: { $ref: '#/$defs/n' } } },
      { n: 1 },
      { n: 'x' },
    ],
  ])('honours %s', (_name, schema, good, bad) => {
    expect(validateJsonSchema(schema, good)).toEqual([]);
    expect(validateJsonSchema(schema, bad).length).toBeGreaterThan(0);
  });

  test('compiles once per schema content, not per object', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const check = compileJsonSchema(schema);
    expect(compileJsonSchema(structuredClone(schema))).toBe(check);
    expect(compileJsonSchema({ ...schema, required: [] })).not.toBe(check);
  });

  test('a schema Ajv cannot compile accepts everything; two schemas may share an $id', () => {
    expect(validateJsonSchema({ $ref: '#/$defs/missing' }, 1)).toEqual([]);
    expect(validateJsonSchema({ type: 'string', pattern: '(' }, 1)).toEqual([]);
    expect(validateJsonSchema({ $id: 'https://x/a', type: 'string' }, 1).length).toBe(1);
    expect(validateJsonSchema({ $id: 'https://x/a', type: 'integer' }, 1)).toEqual([]);
  });

  test('issues say what and where, never the value', () => {
    const schema = {
      type: 'object',
      properties: { city: { enum: ['Paris'] }, code: { type: 'string', pattern: '^[A-Z]{3}$' } },
    };
    const issues = validateJsonSchema(schema, { city: 'Secret Town', code: 'secret-code' });
    expect(issues.map((i) => i.path)).toEqual(['$.city', '$.code']);
    for (const i of issues) expect(`${i.path} ${i.message}`).not.toMatch(/Secret|secret|Paris|A-Z/);
  });
});
